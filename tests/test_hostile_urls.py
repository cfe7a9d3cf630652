"""Hostile network inputs, all on 127.0.0.1: playlists whose segments, keys or redirects point at
an internal service (another port of this machine, standing in for a private address), names
that resolve to loopback, and the error text of unreachable ports. The "internal" server must
never receive a request; refusals are one line; the allowed path still works."""

from __future__ import annotations

import http.server
import ipaddress
import re
import socket
import socketserver
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from conftest import run_ffmpeg
from subextract.errors import SubextractError
from subextract.stages.netguard import NetworkPolicy, non_public_kind, parse_allowances
from test_cli import assert_one_error_line, run_cli

SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"


class _Recording(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; ``/redirect/...`` answers 302 to ``redirects[path]``; every request is recorded."""

    redirects: dict[str, str] = {}

    def __init__(self, *args, requests: list[str], **kwargs) -> None:
        self._requests = requests
        super().__init__(*args, **kwargs)

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self._requests.append(self.path)
        if self.path in self.redirects:
            self.send_response(302)
            self.send_header("Location", self.redirects[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()


class Server:
    def __init__(self, folder: Path) -> None:
        self.requests: list[str] = []
        handler = partial(_Recording, directory=str(folder), requests=self.requests)
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def hls(tmp_path_factory) -> Path:
    """The first 4 s of a sample as HLS (2 s MPEG-TS segments)."""
    folder = tmp_path_factory.mktemp("hls")
    run_ffmpeg("-i", str(SAMPLES / "en_two_line.mp4"), "-t", "4", "-c", "copy", "-f", "hls", "-hls_time", "2",
               "-hls_list_size", "0", "-hls_segment_filename", str(folder / "seg%d.ts"), str(folder / "index.m3u8"))
    return folder


@pytest.fixture
def servers(hls) -> Iterator[tuple[Server, Server]]:
    """(the stream's server, standing in for a public host; an "internal" admin service)."""
    public, internal = Server(hls), Server(hls)
    _Recording.redirects = {}
    yield public, internal
    public.close()
    internal.close()


def playlist_pointing_at(hls: Path, name: str, segment_url) -> str:
    text = (hls / "index.m3u8").read_text()
    (hls / name).write_text(re.sub(r"^(seg\d+\.ts)$", lambda m: segment_url(m.group(1)), text, flags=re.M))
    return name


def refused_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("subextract: error: "), err
    return lines[0]


def allow_only(server: Server) -> list[str]:
    return ["--allow-private-network", f"127.0.0.1:{server.port}"]


# --------------------------------------------------------------------------------------------
# Refused
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_url_itself_on_loopback_is_refused_without_the_opt_in(servers, tmp_path, host):
    public, _ = servers
    code, out, err = run_cli(f"http://{host}:{public.port}/index.m3u8", "-o", tmp_path / "x.srt", "-q")
    assert_one_error_line(code, out, err, "loopback address", "--allow-private-network")
    assert public.requests == []
    assert not (tmp_path / "x.srt").exists()


@pytest.mark.parametrize("scheme, host", [("http", "127.0.0.1"), ("http", "localhost"), ("http", "[::1]"),
                                          ("http", "[::ffff:127.0.0.1]"), ("https", "127.0.0.1")])
def test_a_segment_on_an_internal_address_is_never_requested(servers, hls, scheme, host, tmp_path):
    """https goes through the proxy by CONNECT: refused there before any byte reaches the host."""
    public, internal = servers
    name = playlist_pointing_at(hls, "evil.m3u8",
                                lambda seg: f"{scheme}://{host}:{internal.port}/admin/delete_all.ts")
    code, out, err = run_cli(f"{public.url}/{name}", "-o", tmp_path / "x.srt", "-q", *allow_only(public))
    line = refused_line(err)
    assert code == 2 and out == ""
    assert "may not reach" in line and "address" in line
    assert ("/admin/delete_all.ts" if scheme == "http" else f":{internal.port}") in line
    assert internal.requests == []
    assert public.requests == [f"/{name}"]


def test_a_key_on_an_internal_address_is_never_requested(servers, hls, tmp_path):
    public, internal = servers
    text = (hls / "index.m3u8").read_text().replace(
        "#EXTINF", f'#EXT-X-KEY:METHOD=AES-128,URI="{internal.url}/keys/secret",IV=0x{"0" * 32}\n#EXTINF', 1)
    (hls / "keyed.m3u8").write_text(text)
    code, out, err = run_cli(f"{public.url}/keyed.m3u8", "-o", tmp_path / "x.srt", "-q", *allow_only(public))
    assert code == 2 and "may not reach" in refused_line(err) and "/keys/secret" in err
    assert internal.requests == []


def test_a_redirect_to_an_internal_address_is_not_followed(servers, tmp_path):
    public, internal = servers
    _Recording.redirects = {"/go.m3u8": f"{internal.url}/index.m3u8"}
    code, out, err = run_cli(f"{public.url}/go.m3u8", "-o", tmp_path / "x.srt", "-q", *allow_only(public))
    assert code == 2 and "may not reach" in refused_line(err), err
    assert public.requests == ["/go.m3u8"] and internal.requests == []


def test_a_redirect_between_allowed_places_is_followed(servers, tmp_path):
    public, _ = servers
    _Recording.redirects = {"/go.m3u8": "/index.m3u8"}
    out = tmp_path / "x.srt"
    code, _, err = run_cli(f"{public.url}/go.m3u8", "-o", out, "-q", "--end", "3", "--region", "bottom",
                           *allow_only(public))
    assert code == 0, err
    assert "/go.m3u8" in public.requests and "/index.m3u8" in public.requests
    assert "You are not paid enough to worry." in out.read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------
# Allowed
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_with_the_opt_in_the_stream_is_read(servers, host, tmp_path):
    public, _ = servers
    out = tmp_path / "x.srt"
    url = f"http://{host}:{public.port}/index.m3u8"
    code, _, err = run_cli(url, "-o", out, "-q", "--end", "3", "--region", "bottom", "--allow-private-network")
    assert code == 0, err
    assert {"/index.m3u8", "/seg0.ts"} <= set(public.requests)
    assert "You are not paid enough to worry." in out.read_text(encoding="utf-8")


def test_unreachable_ports_all_read_alike(monkeypatch, tmp_path):
    """Closed, open-but-silent and open-then-closed ports give the same words: the error text
    does not tell what is listening."""
    monkeypatch.setenv("SUBEXTRACT_READ_TIMEOUT", "1")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    hangup = socket.socket()
    hangup.bind(("127.0.0.1", 0))
    hangup.listen()

    def hang_up() -> None:
        while True:
            try:
                connection, _ = hangup.accept()
            except OSError:
                return
            connection.close()

    threading.Thread(target=hang_up, daemon=True).start()
    messages = set()
    try:
        for port in (closed_port, silent.getsockname()[1], hangup.getsockname()[1]):
            code, _, err = run_cli(f"http://127.0.0.1:{port}/x.m3u8", "-o", tmp_path / "x.srt", "-q",
                                   "--allow-private-network")
            assert code == 2
            messages.add(refused_line(err).replace(str(port), "PORT"))
    finally:
        silent.close()
        hangup.close()
    assert len(messages) == 1, messages


# --------------------------------------------------------------------------------------------
# The address rule
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("address, kind", [
    ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"),
    ("192.168.1.1", "private"), ("169.254.169.254", "link-local"), ("100.64.0.1", "carrier-grade NAT"),
    ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"), ("0.0.0.0", "unspecified"),
    ("240.0.0.1", "reserved"), ("::1", "loopback"), ("fe80::1", "link-local"), ("fc00::1", "private"),
    ("ff02::1", "multicast"), ("ff0e::1", "multicast"), ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.0.0.1", "private"), ("2002:7f00:1::", "loopback"), ("::", "unspecified"),
    ("8.8.8.8", None), ("93.184.215.14", None), ("2606:4700::6810:85e5", None)])
def test_address_kinds(address, kind):
    assert non_public_kind(ipaddress.ip_address(address)) == kind


def test_a_public_address_passes_and_allowances_open_only_what_they_name():
    policy = NetworkPolicy()
    assert policy.vet("93.184.215.14", 443) == [ipaddress.ip_address("93.184.215.14")]
    with pytest.raises(SubextractError, match="is a private address"):
        policy.vet("10.0.0.5", 8080)
    narrow = NetworkPolicy(allowances=parse_allowances("10.0.0.5:8080,192.168.0.0/16,[fd00::1]:443"))
    narrow.vet("10.0.0.5", 8080)
    narrow.vet("192.168.7.7", 1)
    narrow.vet("fd00::1", 443)
    for host, port in (("10.0.0.5", 8081), ("10.0.0.6", 8080), ("fd00::1", 80), ("127.0.0.1", 8080)):
        with pytest.raises(SubextractError):
            narrow.vet(host, port)
    with pytest.raises(SubextractError, match="not ADDRESS"):
        parse_allowances("intranet:80")


# --------------------------------------------------------------------------------------------
# Local files are opened only by real container demuxers
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, text, kind", [
    ("upload.mp4", "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n{other}\n#EXT-X-ENDLIST\n", "HLS playlist"),
    ("list.m3u8", "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n{other}\n#EXT-X-ENDLIST\n", "HLS playlist"),
    ("upload.mkv", "ffconcat version 1.0\nfile '{other}'\n", "concat list")])
def test_a_local_file_that_is_a_list_of_other_files_is_not_followed(tmp_path, zh_clip, name, text, kind):
    other = tmp_path / "other_user" / "video.ts"  # someone else's file the list names
    other.parent.mkdir()
    run_ffmpeg("-i", str(zh_clip), "-c", "copy", "-f", "mpegts", str(other))
    upload = tmp_path / name
    upload.write_text(text.format(other=other))
    code, out, err = run_cli(upload, "-o", tmp_path / "x.srt", "-q", "--region", "bottom")
    assert_one_error_line(code, out, err, kind, "not a video", "--input-format")
    assert not (tmp_path / "x.srt").exists()


def test_a_playlist_is_read_when_the_user_names_the_format(tmp_path, zh_clip):
    other = tmp_path / "video.ts"
    run_ffmpeg("-i", str(zh_clip), "-c", "copy", "-f", "mpegts", str(other))
    playlist = tmp_path / "mine.m3u8"
    playlist.write_text(f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:6,\n{other}\n#EXT-X-ENDLIST\n")
    code, _, err = run_cli(playlist, "-o", tmp_path / "x.srt", "-q", "--region", "bottom", "--input-format", "hls")
    assert code == 0, err
    assert "今天天气很好" in (tmp_path / "x.srt").read_text(encoding="utf-8")


@pytest.mark.parametrize("size", ["1x1", "4x4", "10x10"])
def test_a_tiny_picture_is_named_as_such(tmp_path, size):
    video = tmp_path / f"tiny_{size}.mp4"
    run_ffmpeg("-f", "lavfi", "-i", f"color=c=gray:s={size}:r=25", "-t", "1", "-c:v", "mpeg4", str(video))
    code, out, err = run_cli(video, "-o", tmp_path / "x.srt", "-q")
    assert_one_error_line(code, out, err, f"the picture is {size} pixels, too small")
