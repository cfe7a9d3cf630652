r"""Moderation feeds: one JSON object per cue, written the moment the cue is final, with the
watchlist terms it matches.

A watchlist is a text file of plain words or phrases, or ``re:`` regular expressions, one a line
(``#`` starts a comment line). Matching ignores case and Unicode width variants (NFKC); a plain
term in a space-separated script matches whole words only ("ass" does not flag "class"), while
in Chinese, Japanese, Thai... it matches anywhere, as those scripts put no spaces between words.

A client's ``re:`` pattern runs on RE2 (google-re2), whose matching time is linear in the text
whatever the pattern: on Python's backtracking ``re`` one pattern (``(.|.|.)*QQQ``) held the
GIL for minutes and froze the whole service. Python's syntax is kept where RE2 has it, with
``\d``, ``\w`` and ``\s`` meaning what they mean in Python (any script's digits, letters and
spaces, not only ASCII); what RE2 cannot do (look-arounds, back-references, Unicode word
boundaries ``\b``) is refused with one line. The plain terms are our own escaped text and
stay on ``re``: their one-character look-arounds cannot backtrack.
"""

from __future__ import annotations

import re
import sys
import threading
import unicodedata

import re2
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

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
    pattern: Any  # re.Pattern (a plain term) or an RE2 pattern (``re:``): both have search()


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
        from subextract.textfiles import read_text

        return cls.parse(read_text(path, "watchlist", MAX_WATCHLIST_BYTES), path)

    def matches(self, text: str) -> list[str]:
        """Labels of the terms found in ``text``, in watchlist order."""
        normalized = _normalized(text)
        return [term.label for term in self.terms if term.pattern.search(normalized)]


MAX_WATCHLIST_BYTES = 1024 * 1024  # a watchlist file's size: a list of terms, not a corpus (/dev/zero never ends)
_RE2_MEMORY = 8 << 20  # bytes one compiled pattern may take (RE2's default): a bigger one is refused

# Python's classes as RE2 writes them (RE2's own are ASCII only): outside a [...] set, and inside one.
_CLASSES = {"d": (r"\p{Nd}", r"\p{Nd}"), "D": (r"\P{Nd}", r"\P{Nd}"),
            "w": (r"[\p{L}\p{N}_]", r"\p{L}\p{N}_"), "W": (r"[^\p{L}\p{N}_]", None),
            "s": (r"[\s\p{Z}\x{1c}-\x{1f}\x{85}]", r"\s\p{Z}\x{1c}-\x{1f}\x{85}"),
            "S": (r"[^\s\p{Z}\x{1c}-\x{1f}\x{85}]", None)}
_REFUSED_ESCAPES = {"b": "a word boundary \\b inside a pattern", "B": "\\B"}
# A word boundary at the very start or end of a pattern, next to a word: consuming the character
# beyond it (or the text's edge) is the same test when all we ask is whether the pattern occurs.
_LEADING_BOUNDARY, _TRAILING_BOUNDARY = r"(?:^|[^\p{L}\p{N}_])", r"(?:[^\p{L}\p{N}_]|$)"
_SYNTAX = set("\\()[]{}.^$|?*+")


def _parse_term(line: str, where: str) -> Term:
    if line.startswith("re:"):
        source = line[3:]
        shown = repr(source) if len(source) <= 80 else repr(source[:80]) + "…"
        pattern = compile_pattern(_normalized(source), f"{where}: {shown}")
        if pattern.search(""):
            raise SubextractError(f"{where}: {shown} matches empty text, so it would flag every cue")
        return Term(line, pattern)
    return Term(line, re.compile(_term_pattern(_normalized(line)), re.IGNORECASE))


def compile_pattern(source: str, where: str):
    """A user's regular expression on RE2, case-insensitive; SubextractError (one line) for
    what RE2 cannot run in linear time or at all."""
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    options.max_mem = _RE2_MEMORY
    try:
        leading, body, trailing = _edge_boundaries(source, where)
        return re2.compile(leading + _python_classes(body, where) + trailing, options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        if "perl operator" in reason or reason.startswith("invalid escape sequence: \\") and reason[-1:].isdigit():
            reason = f"{reason}: look-arounds and back-references are not supported (they cannot run in linear time)"
        raise SubextractError(f"{where}: invalid regular expression ({reason})") from None


def _edge_boundaries(source: str, where: str) -> tuple[str, str, str]:
    """(leading, body, trailing): ``\\b`` at the pattern's start and end (``re:\\bkill(s|ed)?\\b``)
    taken off as RE2 patterns of their own; one next to a literal that is no letter, digit or
    ``_`` is refused (there ``\\b`` would ask for a word on its far side)."""
    leading = trailing = ""
    if source.startswith("\\b"):
        source, leading = source[2:], _LEADING_BOUNDARY
        if source[:1] and source[0] not in _SYNTAX and not (source[0].isalnum() or source[0] == "_"):
            raise SubextractError(f"{where}: \\b before {source[0]!r}, which is not a letter or digit, "
                                  "is not supported")
    backslashes = len(source[:-1]) - len(source[:-1].rstrip("\\"))  # right before the last character
    if source.endswith("b") and backslashes % 2 == 1:
        source, trailing = source[:-2], _TRAILING_BOUNDARY
        if source[-1:] and source[-1] not in _SYNTAX and not (source[-1].isalnum() or source[-1] == "_"):
            raise SubextractError(f"{where}: \\b after {source[-1]!r}, which is not a letter or digit, "
                                  "is not supported")
    return leading, source, trailing


def _python_classes(source: str, where: str) -> str:
    r"""``\d``, ``\w``, ``\s`` and their negations as Python reads them in a str pattern (every
    script), written in RE2's Unicode classes; a class RE2 cannot express in a set, and ``\b``
    (RE2's is ASCII-only: ``\bслово`` would never match), refused."""
    out, i, in_set = [], 0, False
    while i < len(source):
        char = source[i]
        if char == "\\" and i + 1 < len(source):
            letter = source[i + 1]
            if letter in _REFUSED_ESCAPES and not in_set:
                raise SubextractError(f"{where}: {_REFUSED_ESCAPES[letter]} is not supported by the linear-time "
                                      "engine (a plain term, without re:, matches whole words in every script)")
            if letter in _CLASSES:
                replacement = _CLASSES[letter][1 if in_set else 0]
                if replacement is None:
                    raise SubextractError(f"{where}: \\{letter} inside [...] is not supported")
                out.append(replacement)
            else:
                out.append(source[i:i + 2])
            i += 2
            continue
        if char == "[" and not in_set:
            in_set = True
            out.append(char)
            i += 1
            for opening in ("^", "]"):  # "[]a]" and "[^]a]": a leading ] is a member, not the end
                if source.startswith(opening, i):
                    out.append(opening)
                    i += 1
            continue
        if char == "]" and in_set:
            in_set = False
        out.append(char)
        i += 1
    return "".join(out)


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
