"""Which inputs FFmpeg may open: local files, or http(s)/rtmp(s) network streams and nothing else.

FFmpeg reads far more than files and web streams: ``concat:``, ``file:``, ``subfile:``, ``udp:``
and a playlist can name any of those for its segments. A feed that takes URLs from users must
not let one read local files or reach other services, so every FFmpeg input gets a protocol
whitelist (which also binds what a playlist opens), network inputs a read timeout and, for
HTTP(S), the vetting proxy of ``netguard`` for every request they cause.

A local file is opened only by real container demuxers (``-format_whitelist``): a file named
``upload.mp4`` may hold an HLS playlist or a concat list naming other users' files, and whether
FFmpeg would follow them depends on its version. Playlists and lists are read only when the user
names the format (``--input-format hls``).
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from subextract.errors import SubextractError

NETWORK_SCHEMES = ("http", "https", "rtmp", "rtmps")  # HLS is an .m3u8 playlist over http(s)
# What FFmpeg may open under each kind of input, nested opens (playlist segments, keys) included.
_HTTP_WHITELIST = "http,https,tcp,tls,crypto,httpproxy"  # tcp reaches only the proxy; httpproxy: CONNECT
_RTMP_WHITELIST = "rtmp,rtmps,tcp,tls"
_LOCAL_WHITELIST = "file,crypto,data"  # a local playlist must not reach the network either
# Demuxers of real media files: none of them opens another file or URL. Audio-only formats are
# here so that an audio file is told apart ("no video stream") from a playlist.
CONTAINER_FORMATS = ("mov", "matroska", "avi", "asf", "flv", "mpegts", "mpeg", "mpegvideo", "m4v", "h264",
                     "hevc", "vvc", "av1", "obu", "ivf", "ogg", "nut", "mxf", "rm", "dv", "wtv", "gif",
                     "mjpeg", "yuv4mpegpipe", "mp3", "aac", "wav", "flac", "ac3", "eac3", "w64", "caf")
# A network stream may be a playlist whose requests all go through the proxy.
STREAM_FORMATS = ("hls", "dash", "webvtt")
# Named explicitly by the user only: they read the files or URLs they list.
LIST_FORMATS = ("hls", "concat", "image2", "dash")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
DEFAULT_READ_TIMEOUT = 20.0  # seconds a network read may stall before FFmpeg gives up
# Streams FFmpeg may open in one input. Each costs a demuxer and a decoder context: a 1.2 MB file
# of 1000 tiny video streams took FFmpeg to 1.2 GB and 20 s just to probe. A film with every
# dub and subtitle track has a few dozen.
MAX_STREAMS = 64


def is_url(path: str) -> bool:
    """A ``scheme:`` prefix that is not a local file: FFmpeg would take it for a protocol."""
    return "://" in path or (_SCHEME.match(path) is not None and not os.path.exists(path))


def check_url(url: str) -> None:
    """Refuse every protocol but http, https, rtmp and rtmps, URLs without a host, and URLs with
    control characters (a NUL made the host lookup raise ValueError, a line break forges a log line)."""
    if not url.isprintable():
        raise SubextractError(f"{url!r}: a URL may not hold control characters (escape them: %00, %0A)")
    match = _SCHEME.match(url)
    scheme = match.group(1).lower() if match else ""
    if scheme not in NETWORK_SCHEMES:
        raise SubextractError(f"{url}: protocol {scheme or '(none)'!r} is not allowed "
                              f"(inputs are local files or {', '.join(NETWORK_SCHEMES)} URLs)")
    if not urlsplit(url).hostname:
        raise SubextractError(f"{url}: URL has no host")
    from subextract.stages.netguard import check_url_host

    check_url_host(url)


def read_timeout() -> float:
    """``$SUBEXTRACT_READ_TIMEOUT`` seconds, else the default."""
    value = os.environ.get("SUBEXTRACT_READ_TIMEOUT", "")
    try:
        seconds = float(value) if value else DEFAULT_READ_TIMEOUT
    except ValueError:
        raise SubextractError(f"SUBEXTRACT_READ_TIMEOUT={value!r}: not a number of seconds") from None
    return seconds if seconds > 0 else DEFAULT_READ_TIMEOUT


_explicit_format: str | None = None


def set_input_format(name: str | None) -> None:
    """``--input-format``: the demuxer the user named for local inputs (a playlist, a concat list),
    for this process; None: real containers only."""
    global _explicit_format
    _explicit_format = name


def input_format() -> str | None:
    return _explicit_format


def needs_proxy(path: str) -> bool:
    return is_url(path) and path.lower().startswith(("http:", "https:"))


def input_options(path: str, proxy: str | None = None) -> dict[str, str]:
    """FFmpeg input options (``-name value`` before ``-i``) that confine what ``path`` may open;
    ``proxy``: the vetting proxy's URL an HTTP(S) input's requests all go through."""
    return {**_confined(path, proxy), "max_streams": str(MAX_STREAMS)}


def _confined(path: str, proxy: str | None) -> dict[str, str]:
    if is_url(path):
        timeout = {"rw_timeout": str(int(read_timeout() * 1_000_000))}
        if not needs_proxy(path):
            return {"protocol_whitelist": _RTMP_WHITELIST, **timeout}
        if proxy is None:
            raise ValueError("an HTTP(S) input needs the vetting proxy")
        return {"protocol_whitelist": _HTTP_WHITELIST, "format_whitelist": ",".join(CONTAINER_FORMATS + STREAM_FORMATS),
                "http_proxy": proxy, **timeout}
    if _explicit_format is not None:
        return {"protocol_whitelist": _LOCAL_WHITELIST, "f": _explicit_format,
                "format_whitelist": ",".join((*CONTAINER_FORMATS, _explicit_format))}
    return {"protocol_whitelist": _LOCAL_WHITELIST, "format_whitelist": ",".join(CONTAINER_FORMATS)}


def ffmpeg_input(path: str) -> str:
    """What FFmpeg is given as ``-i`` for ``path``: a local file whose name starts like a protocol
    (``concat:x.mp4``, ``movie:1.mp4``) as ``file:NAME``, so FFmpeg opens the file rather than the
    protocol (it had said "no video stream" of a real video)."""
    return f"file:{path}" if not is_url(path) and _SCHEME.match(path) else path


def input_args(path: str, proxy: str | None = None) -> list[str]:
    """``input_options`` as command-line arguments."""
    return [arg for name, value in input_options(path, proxy).items() for arg in (f"-{name}", value)]


def ffmpeg_environment() -> dict[str, str]:
    """FFmpeg's environment: without ``no_proxy``, which would let it bypass the vetting proxy."""
    return {name: value for name, value in os.environ.items() if name.lower() != "no_proxy"}
