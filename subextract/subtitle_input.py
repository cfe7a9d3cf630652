"""Subtitle files as users bring them to ``translate`` and ``score``: what this tool writes (SRT,
WebVTT, ASS) in the encodings film and anime subtitles come in (UTF-8, UTF-16 with a BOM, GBK,
Big5, …), read into timed text. SRT and WebVTT are parsed strictly by ``scoring.parse_cues`` (a
malformed block is an error, never skipped); ASS/SSA by pysubs2, its override tags dropped."""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass
from pathlib import Path

import pysubs2

from subextract.scoring import CueFileError, TimedText, parse_cues

MAX_SUBTITLE_BYTES = 64 * 1024 * 1024  # a film's subtitles are under 1 MB; a bigger file is no subtitle file
ASS_SUFFIXES = (".ass", ".ssa")
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


@dataclass(frozen=True)
class SubtitleFile:
    cues: list[TimedText]
    encoding: str  # the encoding the text was read in ("utf-8", "gb18030", "big5", "utf-16" …)

    @property
    def unusual_encoding(self) -> bool:
        """Read in something other than UTF-8 (worth telling the user: a wrong guess garbles text)."""
        return self.encoding not in ("utf-8", "utf-8-sig", "ascii")


def read_subtitles(path: str | os.PathLike[str]) -> SubtitleFile:
    """The cues of an SRT, WebVTT (``.vtt``) or ASS/SSA (``.ass``, ``.ssa``) file, in any
    encoding; CueFileError with one line naming the file otherwise."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SUBTITLE_BYTES + 1)
    except OSError as err:
        raise CueFileError(f"{path}: {err.strerror or err}") from err
    if len(data) > MAX_SUBTITLE_BYTES:
        raise CueFileError(f"{path}: larger than {MAX_SUBTITLE_BYTES // (1024 * 1024)} MB: not a subtitle file")
    text, encoding = decode_subtitle_bytes(data, path)
    if path.suffix.lower() in ASS_SUFFIXES:
        return SubtitleFile(_parse_ass(text, path), encoding)
    return SubtitleFile(parse_cues(text, path), encoding)


def decode_subtitle_bytes(data: bytes, path: Path) -> tuple[str, str]:
    """(text, encoding): a byte-order mark decides, then UTF-8 if the bytes are UTF-8, else
    charset-normalizer's best guess (legacy CJK encodings are told apart well on subtitle-sized text)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding).lstrip("\ufeff"), encoding
            except UnicodeDecodeError:
                raise CueFileError(f"{path}: not valid {encoding} text after its byte-order mark") from None
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    if b"\0" in data:
        raise CueFileError(f"{path}: binary data, not a subtitle file")
    from charset_normalizer import from_bytes

    guess = from_bytes(data).best()
    if guess is None:
        raise CueFileError(f"{path}: not text in any encoding recognised (save it as UTF-8)")
    return str(guess), guess.encoding


def _parse_ass(text: str, path: Path) -> list[TimedText]:
    try:
        subs = pysubs2.SSAFile.from_string(text, format_="ass")
    except (pysubs2.Pysubs2Error, ValueError) as err:
        raise CueFileError(f"{path}: not a valid ASS/SSA file ({err})") from None
    return [TimedText(event.start / 1000, event.end / 1000, event.plaintext)
            for event in sorted(subs.events, key=lambda event: event.start) if not event.is_comment]
