"""Which inputs FFmpeg may open (``stages/source.py``), as units: every refusal shown, no FFmpeg run."""

from __future__ import annotations

import os
import re

import pytest

from subextract.errors import SubextractError
from subextract.stages import source
from subextract.stages.source import CONTAINER_FORMATS, DEFAULT_READ_TIMEOUT, NETWORK_SCHEMES, STREAM_FORMATS, \
    MAX_STREAMS, check_url, ffmpeg_environment, ffmpeg_input, input_args, input_options, is_url, needs_proxy, \
    read_timeout, set_input_format

HTTP_WHITELIST = "http,https,tcp,tls,crypto,httpproxy"  # tcp reaches only the vetting proxy
RTMP_WHITELIST = "rtmp,rtmps,tcp,tls"
LOCAL_WHITELIST = "file,crypto,data"
PROXY = "http://127.0.0.1:9"
PUBLIC = "93.184.215.14"  # a public address: no name to resolve on a machine without DNS


@pytest.mark.parametrize("scheme", NETWORK_SCHEMES)
def test_every_network_scheme_is_allowed_in_any_case(scheme):
    for url in (f"{scheme}://{PUBLIC}/live", f"{scheme.upper()}://{PUBLIC}/live"):
        assert is_url(url)
        check_url(url)


@pytest.mark.parametrize("url, named", [
    ("file:///etc/passwd", "'file'"),
    ("FILE:///etc/passwd", "'file'"),
    ("concat:a.mp4|b.mp4", "'concat'"),
    ("data:video/mp4;base64,AAAA", "'data'"),
    ("pipe:0", "'pipe'"),
    ("tcp://10.0.0.1:80", "'tcp'"),
    ("ftp://example.com/a.mp4", "'ftp'"),
    ("httpx://example.com/a.mp4", "'httpx'"),
    ("://example.com/a.mp4", "'(none)'"),
])
def test_other_protocols_are_refused_with_their_name(url, named):
    with pytest.raises(SubextractError) as refused:
        check_url(url)
    message = str(refused.value)
    assert message == (f"{url}: protocol {named} is not allowed "
                       f"(inputs are local files or {', '.join(NETWORK_SCHEMES)} URLs)")


@pytest.mark.parametrize("url", ["http://", "https:///path", "rtmp://:1935/app"])
def test_a_url_without_a_host_is_refused(url):
    with pytest.raises(SubextractError, match=re.escape(f"{url}: URL has no host")):
        check_url(url)


@pytest.mark.parametrize("url", ["http://example.com/a\x00.mp4", "https://example.com/\nFORGED log line"])
def test_a_url_with_control_characters_is_refused_before_its_host_is_read(url):
    with pytest.raises(SubextractError) as refused:
        check_url(url)
    assert str(refused.value) == f"{url!r}: a URL may not hold control characters (escape them: %00, %0A)"


@pytest.mark.parametrize("path, url", [
    ("http://example.com/a.mp4", True),
    ("concat:a.mp4|b.mp4", True),  # a protocol prefix FFmpeg would act on
    ("c:video.mp4", True),  # no such file: FFmpeg would take "c" for a protocol
    ("movie.mp4", False),
    ("folder/movie.mp4", False),
    ("/abs/movie.mp4", False),
    ("1:2.mp4", False),  # a scheme starts with a letter
    ("", False),
])
def test_what_counts_as_a_url(path, url):
    assert is_url(path) is url


def test_an_existing_file_with_a_colon_is_a_file_but_a_double_slash_is_always_a_url(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c:video.mp4").write_bytes(b"x")
    assert not is_url("c:video.mp4")
    (tmp_path / "http:").mkdir()
    (tmp_path / "http:" / "x").write_bytes(b"x")  # the kernel reads "http://x" as the file http:/x
    assert is_url("http://x")


def test_a_local_file_named_like_a_protocol_is_given_to_ffmpeg_as_a_file(tmp_path, monkeypatch):
    """``concat:x.mp4`` on disk is opened as ``file:concat:x.mp4`` (FFmpeg would take the name for
    its concat protocol); plain names and URLs go as they are."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "concat:x.mp4").write_bytes(b"x")
    assert ffmpeg_input("concat:x.mp4") == "file:concat:x.mp4"
    for path in ("movie.mp4", "folder/movie.mp4", str(tmp_path / "concat:x.mp4"), f"http://{PUBLIC}/live.m3u8",
                 "rtmp://example.com/app"):
        assert ffmpeg_input(path) == path


def test_network_inputs_get_the_network_whitelist_and_the_read_timeout(monkeypatch):
    monkeypatch.delenv("SUBEXTRACT_READ_TIMEOUT", raising=False)
    timeout = str(int(DEFAULT_READ_TIMEOUT * 1_000_000))
    options = input_options("https://example.com/live.m3u8", proxy=PROXY)
    streams = {"max_streams": str(MAX_STREAMS)}
    assert options == {**streams, "protocol_whitelist": HTTP_WHITELIST, "http_proxy": PROXY, "rw_timeout": timeout,
                       "format_whitelist": ",".join(CONTAINER_FORMATS + STREAM_FORMATS)}
    assert input_options("rtmp://example.com/live") == {**streams, "protocol_whitelist": RTMP_WHITELIST,
                                                        "rw_timeout": timeout}
    assert input_args("rtmp://example.com/live") == ["-protocol_whitelist", RTMP_WHITELIST, "-rw_timeout", timeout,
                                                     "-max_streams", str(MAX_STREAMS)]


def test_an_http_input_without_the_vetting_proxy_is_refused():
    with pytest.raises(ValueError, match="^an HTTP\\(S\\) input needs the vetting proxy$"):
        input_options("https://example.com/live.m3u8")


@pytest.mark.parametrize("url, proxied", [("http://example.com/a", True), ("HTTPS://example.com/a", True),
                                          ("rtmp://example.com/a", False), ("httpfile.mp4", False)])
def test_only_http_inputs_go_through_the_vetting_proxy(url, proxied, monkeypatch):
    monkeypatch.delenv("SUBEXTRACT_READ_TIMEOUT", raising=False)
    assert needs_proxy(url) is proxied
    if proxied:
        assert input_args(url, PROXY)[4:6] == ["-http_proxy", PROXY]


def test_a_format_the_user_names_is_the_only_list_format_a_local_input_may_use(tmp_path):
    listing = tmp_path / "list.m3u8"
    listing.write_bytes(b"#EXTM3U\n")
    set_input_format("hls")
    try:
        assert input_options(str(listing)) == {"protocol_whitelist": LOCAL_WHITELIST, "f": "hls",
                                               "format_whitelist": ",".join((*CONTAINER_FORMATS, "hls")),
                                               "max_streams": str(MAX_STREAMS)}
    finally:
        set_input_format(None)
    assert input_options(str(listing)) == {"protocol_whitelist": LOCAL_WHITELIST,
                                           "format_whitelist": ",".join(CONTAINER_FORMATS),
                                           "max_streams": str(MAX_STREAMS)}


def test_ffmpeg_never_sees_no_proxy(monkeypatch):
    for name in ("no_proxy", "NO_PROXY", "No_Proxy"):
        monkeypatch.setenv(name, "*")
    monkeypatch.setenv("HTTP_PROXY_NOTE", "kept")
    environment = ffmpeg_environment()
    assert not {"no_proxy", "NO_PROXY", "No_Proxy"} & set(environment)
    assert environment["HTTP_PROXY_NOTE"] == "kept" and environment["PATH"] == os.environ["PATH"]


def test_local_inputs_may_open_local_files_only(tmp_path):
    video = tmp_path / "movie.mp4"
    video.write_bytes(b"x")
    expected = {"max_streams": str(MAX_STREAMS), "protocol_whitelist": LOCAL_WHITELIST,
                "format_whitelist": ",".join(CONTAINER_FORMATS)}
    assert input_options(str(video)) == expected
    assert input_args(str(video)) == ["-protocol_whitelist", LOCAL_WHITELIST, "-format_whitelist",
                                      ",".join(CONTAINER_FORMATS), "-max_streams", str(MAX_STREAMS)]
    assert "http" not in LOCAL_WHITELIST and "tcp" not in LOCAL_WHITELIST
    assert not {"hls", "concat", "image2"} & set(CONTAINER_FORMATS)


@pytest.mark.parametrize("value, seconds", [
    ("", DEFAULT_READ_TIMEOUT),
    ("5", 5.0),
    ("0.25", 0.25),
    ("0", DEFAULT_READ_TIMEOUT),  # FFmpeg takes 0 for "wait for ever"
    ("-3", DEFAULT_READ_TIMEOUT),
])
def test_read_timeout_from_the_environment(monkeypatch, value, seconds):
    monkeypatch.setenv("SUBEXTRACT_READ_TIMEOUT", value)
    assert read_timeout() == seconds
    assert input_options("http://example.com/a", proxy=PROXY)["rw_timeout"] == str(int(seconds * 1_000_000))


def test_read_timeout_unset_is_the_default(monkeypatch):
    monkeypatch.delenv("SUBEXTRACT_READ_TIMEOUT", raising=False)
    assert read_timeout() == DEFAULT_READ_TIMEOUT == source.DEFAULT_READ_TIMEOUT


def test_a_read_timeout_that_is_not_a_number_is_refused(monkeypatch):
    monkeypatch.setenv("SUBEXTRACT_READ_TIMEOUT", "soon")
    with pytest.raises(SubextractError, match=re.escape("SUBEXTRACT_READ_TIMEOUT='soon': not a number of seconds")):
        read_timeout()
