"""Which inputs FFmpeg may open: local files, or http(s)/rtmp(s) network streams and nothing else.

FFmpeg reads far more than files and web streams: ``concat:``, ``file:``, ``subfile:``, ``udp:``
and a playlist can name any of those for its segments. A feed that takes URLs from users must
not let one read local files or reach other services, so every FFmpeg input gets a protocol
whitelist (which also binds what a playlist opens) and network inputs a read timeout.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from subextract.errors import SubextractError

NETWORK_SCHEMES = ("http", "https", "rtmp", "rtmps")  # HLS is an .m3u8 playlist over http(s)
# What FFmpeg may open under each kind of input, nested opens (playlist segments, keys) included.
_NETWORK_WHITELIST = "http,https,tcp,tls,crypto,rtmp,rtmps"
_LOCAL_WHITELIST = "file,crypto,data"  # a local playlist must not reach the network either
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
DEFAULT_READ_TIMEOUT = 20.0  # seconds a network read may stall before FFmpeg gives up


def is_url(path: str) -> bool:
    """A ``scheme:`` prefix that is not a local file: FFmpeg would take it for a protocol."""
    return "://" in path or (_SCHEME.match(path) is not None and not os.path.exists(path))


def check_url(url: str) -> None:
    """Refuse every protocol but http, https, rtmp and rtmps, and URLs without a host."""
    match = _SCHEME.match(url)
    scheme = match.group(1).lower() if match else ""
    if scheme not in NETWORK_SCHEMES:
        raise SubextractError(f"{url}: protocol {scheme or '(none)'!r} is not allowed "
                              f"(inputs are local files or {', '.join(NETWORK_SCHEMES)} URLs)")
    if not urlsplit(url).hostname:
        raise SubextractError(f"{url}: URL has no host")


def read_timeout() -> float:
    """``$SUBEXTRACT_READ_TIMEOUT`` seconds, else the default."""
    value = os.environ.get("SUBEXTRACT_READ_TIMEOUT", "")
    try:
        seconds = float(value) if value else DEFAULT_READ_TIMEOUT
    except ValueError:
        raise SubextractError(f"SUBEXTRACT_READ_TIMEOUT={value!r}: not a number of seconds") from None
    return seconds if seconds > 0 else DEFAULT_READ_TIMEOUT


def input_options(path: str) -> dict[str, str]:
    """FFmpeg input options (``-name value`` before ``-i``) that confine what ``path`` may open."""
    if is_url(path):
        return {"protocol_whitelist": _NETWORK_WHITELIST, "rw_timeout": str(int(read_timeout() * 1_000_000))}
    return {"protocol_whitelist": _LOCAL_WHITELIST}


def input_args(path: str) -> list[str]:
    """``input_options`` as command-line arguments."""
    return [arg for name, value in input_options(path).items() for arg in (f"-{name}", value)]
