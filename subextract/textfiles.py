"""Text files the tool reads whole (a watchlist, a list of videos, a config, a subtitle to score
or translate), read under a size cap: ``--watchlist /dev/zero`` or ``score /dev/zero`` read
until memory ran out (MemoryError), and a huge file given by mistake should be one line too."""

from __future__ import annotations

import os

from subextract.errors import SubextractError

MAX_TEXT_BYTES = 64 * 1024 * 1024  # larger than any subtitle file (a 3-hour film's SRT is ~150 KB)


def read_bytes(path: str | os.PathLike[str], what: str, limit: int = MAX_TEXT_BYTES) -> bytes:
    """At most ``limit`` bytes of ``path``; SubextractError (one line naming ``what``) when it is
    longer, missing or unreadable. A pipe (``<(cmd)``) is read as it comes, up to the limit."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise SubextractError(f"{os.fspath(path)}: cannot read the {what} ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise SubextractError(f"{os.fspath(path)}: the {what} is larger than {_size(limit)}; refusing to read it")
    return data


def read_text(path: str | os.PathLike[str], what: str, limit: int = MAX_TEXT_BYTES) -> str:
    """``read_bytes`` as UTF-8 text (a byte-order mark dropped)."""
    try:
        return read_bytes(path, what, limit).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SubextractError(f"{os.fspath(path)}: the {what} is not UTF-8 text") from None


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit // 1024} KiB"
