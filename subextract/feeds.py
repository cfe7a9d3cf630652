"""Moderation feeds: one JSON object per cue, written the moment the cue is final, with the
watchlist terms it matches.

A watchlist is a text file of plain words or phrases, or ``re:`` regular expressions, one a line
(``#`` starts a comment line). Matching ignores case and Unicode width variants (NFKC); a plain
term in a space-separated script matches whole words only ("ass" does not flag "class"), while
in Chinese, Japanese, Thai... it matches anywhere, as those scripts put no spaces between words.
"""

from __future__ import annotations

import re
import sys
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from subextract.errors import SubextractError
from subextract.schema import Cue
from subextract.stages.write import jsonl_line, jsonl_record, silence_stdout

# Scripts written without spaces between words (first word of the characters' Unicode names).
_UNSPACED_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN")


def _normalized(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _takes_word_boundary(char: str) -> bool:
    return char.isalnum() and not unicodedata.name(char, "").startswith(_UNSPACED_SCRIPTS)


def _term_pattern(term: str) -> str:
    """A plain term as a regex: any run of whitespace (a line break too) between its words, and
    word boundaries at ends written in a space-separated script."""
    body = r"\s+".join(re.escape(word) for word in term.split())
    head = r"(?<!\w)" if _takes_word_boundary(term[0]) else ""
    tail = r"(?!\w)" if _takes_word_boundary(term[-1]) else ""
    return head + body + tail


@dataclass(frozen=True)
class Term:
    label: str  # as written in the watchlist, ``re:`` included
    pattern: re.Pattern[str]


class Watchlist:
    def __init__(self, terms: Sequence[Term]) -> None:
        self.terms = tuple(terms)

    @classmethod
    def parse(cls, text: str, source: str = "watchlist") -> "Watchlist":
        terms = []
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            terms.append(_parse_term(line, f"{source}:{number}"))
        if not terms:
            raise SubextractError(f"{source}: no terms (one word, phrase or re:REGEX a line)")
        return cls(terms)

    @classmethod
    def load(cls, path: str) -> "Watchlist":
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise SubextractError(f"{path}: cannot read the watchlist ({exc.strerror})") from None
        except UnicodeDecodeError:
            raise SubextractError(f"{path}: the watchlist is not UTF-8 text") from None
        return cls.parse(text, path)

    def matches(self, text: str) -> list[str]:
        """Labels of the terms found in ``text``, in watchlist order."""
        normalized = _normalized(text)
        return [term.label for term in self.terms if term.pattern.search(normalized)]


def _parse_term(line: str, where: str) -> Term:
    if line.startswith("re:"):
        source = line[3:]
        try:
            pattern = re.compile(_normalized(source), re.IGNORECASE)
        except re.error as exc:
            raise SubextractError(f"{where}: invalid regular expression {source!r} ({exc})") from None
        if pattern.search(""):
            raise SubextractError(f"{where}: {source!r} matches empty text, so it would flag every cue")
        return Term(line, pattern)
    return Term(line, re.compile(_term_pattern(_normalized(line)), re.IGNORECASE))


def watchlist_option(path: str | None, only_flagged: bool) -> Watchlist | None:
    """The ``--watchlist`` file, checked together with ``--only-flagged``."""
    if only_flagged and not path:
        raise SubextractError("--only-flagged needs --watchlist FILE")
    return Watchlist.load(path) if path else None


class CueFeed:
    """Turns one video's cues into feed records: flagged with watchlist matches, optionally only those."""

    def __init__(self, video: str, watchlist: Watchlist | None = None, only_flagged: bool = False) -> None:
        self.video = video
        self.watchlist = watchlist
        self.only_flagged = only_flagged

    def keeps(self, cue: Cue) -> bool:
        return not self.only_flagged or bool(self._flags(cue))

    def kept(self, cues: Iterable[Cue]) -> list[Cue]:
        return [cue for cue in cues if self.keeps(cue)]

    def flagged(self, cues: Iterable[Cue]) -> int:
        """How many of ``cues`` match the watchlist."""
        return sum(1 for cue in cues if self._flags(cue))

    def record(self, cue: Cue) -> dict | None:
        """The cue's feed record (with ``flags`` when there is a watchlist); None when dropped."""
        flags = self._flags(cue)
        if self.only_flagged and not flags:
            return None
        record = jsonl_record(cue, self.video)
        if flags is not None:
            record["flags"] = flags
        return record

    def render(self, cues: Iterable[Cue]) -> str:
        """The whole feed of a finished video, as a JSONL document."""
        return "".join(jsonl_line(record) for record in map(self.record, cues) if record is not None)

    def streaming_to(self, sinks: Sequence["FeedSink"],
                     listener: Callable[[dict], None] | None = None) -> Callable[[Cue], None]:
        """An ``on_cue`` callback for ``extract``: each kept cue's record written to every sink
        and handed to ``listener``."""
        def on_cue(cue: Cue) -> None:
            record = self.record(cue)
            if record is None:
                return
            for sink in sinks:
                sink.write_line(jsonl_line(record))
            if listener is not None:
                listener(record)
        return on_cue

    def _flags(self, cue: Cue) -> list[str] | None:
        return self.watchlist.matches(cue.text) if self.watchlist is not None else None


class FeedSink:
    """Where feed lines go: stdout (``-``) or a file, each line written whole and flushed at once,
    so a reader can act on a cue while the video is still running; threads may share one sink.

    A file is opened with the first line (``mode`` "w" replaces it, "a" adds to it): a run that
    fails before finding any cue leaves it untouched.
    """

    def __init__(self, target: str, mode: str = "w") -> None:
        self.target = target
        self._mode = mode
        self.lines = 0
        self._stream: TextIO | None = sys.stdout if target == "-" else None
        self._lock = threading.Lock()
        self.error: str | None = None  # why writing failed: every later line fails the same way

    def write_line(self, line: str) -> None:
        with self._lock:
            if self.error is not None:
                raise SubextractError(self.error)
            try:
                if self._stream is None:
                    self._stream = open(self.target, self._mode, encoding="utf-8")
                self._stream.write(line)
                self._stream.flush()
            except OSError as exc:
                self._drop_stream()
                self.error = (f"{self._name}: the reader closed the pipe" if isinstance(exc, BrokenPipeError)
                              else f"{self._name}: cannot write ({exc.strerror})")
                raise SubextractError(self.error) from None
            self.lines += 1

    def _drop_stream(self) -> None:
        """Later writes and the flush at close or exit would fail again: send them nowhere."""
        if self.target == "-":
            silence_stdout()
        elif self._stream is not None:
            try:
                self._stream.close()
            except OSError:
                pass  # what it still held is what could not be written
            self._stream = None

    @property
    def _name(self) -> str:
        return "stdout" if self.target == "-" else self.target

    def close(self) -> None:
        with self._lock:
            if self._stream is not None and self.target != "-":
                try:
                    self._stream.close()
                except OSError as exc:
                    self.error = f"{self._name}: cannot write ({exc.strerror})"
                    raise SubextractError(self.error) from None
