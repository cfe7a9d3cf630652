"""What a proofreader's change makes of cues: an edit of named fields, a merge, a split, an
inserted cue. Pure functions over ``Cue`` values; the store applies them inside one transaction
with the version check, and the routes (``serve/editing.py``) parse the client's JSON into them.

Every refusal is a ``CueRefused`` naming the cue and the reason in one line, so that a page can
mark the very row it concerns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from subextract.schema import Cue

# The longest time an edit may name. A cue past any real video's end is a typing slip (or a
# hostile 1e308), and a non-finite one would make every later download fail.
MAX_SECONDS = 7 * 24 * 3600.0
INSERTED_CONFIDENCE = 1.0  # a cue a person typed in is not a reading to doubt


class CueRefused(Exception):
    """One cue's change refused: ``status`` 400 (invalid), 404 (no such cue) or 409 (stale)."""

    def __init__(self, seq: int | None, status: int, message: str) -> None:
        super().__init__(message)
        self.seq = seq
        self.status = status
        self.message = message

    def record(self) -> dict[str, Any]:
        return {"seq": self.seq, "status": self.status, "error": self.message}


@dataclass(frozen=True)
class CueEdit:
    """The fields a client named for one cue (None: leave it as it is) and the version it saw."""

    seq: int
    version: int | None = None
    start: float | None = None
    end: float | None = None
    text: str | None = None


def seconds(value: Any, name: str, seq: int | None = None) -> float:
    """A time from a client: a finite number of seconds, 0 to MAX_SECONDS."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise CueRefused(seq, 400, f"{name}: a number of seconds")
    if not math.isfinite(value) or not 0 <= value <= MAX_SECONDS:
        raise CueRefused(seq, 400, f"{name}: seconds from 0 to {MAX_SECONDS:g}")
    return float(value)


def lines_of(text: Any, seq: int | None, name: str = "text") -> tuple[str, ...]:
    """A cue's text as its lines: stripped, blank lines dropped, never empty."""
    if not isinstance(text, str):
        raise CueRefused(seq, 400, f"{name}: the cue's text as a string")
    lines = tuple(line.strip() for line in text.splitlines() if line.strip())
    if not lines:
        raise CueRefused(seq, 400, f"{name}: the cue's text, not empty")
    return lines


def parse_edit(values: Any, seq: int | None = None) -> CueEdit:
    """One cue's edit from JSON: any of ``text``, ``start``, ``end``, and ``version`` (the
    version the client saw: a stale one is refused with 409)."""
    if not isinstance(values, Mapping):
        raise CueRefused(seq, 400, "an edit is a JSON object")
    if seq is None:
        seq = values.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq < 2 ** 53:
            raise CueRefused(None, 400, "seq: the number of the cue to edit")
    unknown = sorted(set(values) - {"seq", "version", "text", "start", "end"})
    if unknown:
        raise CueRefused(seq, 400, f"unknown field {unknown[0]!r} (fields: text, start, end, version)")
    changed = set(values) & {"text", "start", "end"}
    if not changed:
        raise CueRefused(seq, 400, "name at least one of \"text\", \"start\", \"end\"")
    version = parse_version(values.get("version"), seq)
    start = seconds(values["start"], "start", seq) if "start" in values else None
    end = seconds(values["end"], "end", seq) if "end" in values else None
    text = values.get("text")
    if "text" in values:
        lines_of(text, seq)
    return CueEdit(seq=seq, version=version, start=start, end=end, text=text)


def parse_version(value: Any, seq: int | None) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2 ** 53:
        raise CueRefused(seq, 400, "version: the cue's version as the client last saw it (a whole number)")
    return value


def relabelled(old: Cue, lines: Sequence[str]) -> tuple[str, ...]:
    """Each line's language: the old cue's for a line it already had, detected anew for a changed one."""
    from subextract.stages.language import detect_language

    known = dict(zip(old.lines, old.languages))
    return tuple(known[line] if line in known else detect_language(line) for line in lines)


def _timed(seq: int | None, start: float, end: float) -> None:
    if not start < end:
        raise CueRefused(seq, 400, f"the cue must end after it starts (start {start:.3f} s, end {end:.3f} s)")


def edited(cue: Cue, edit: CueEdit) -> Cue:
    """``cue`` with the fields ``edit`` names, and only those."""
    start = cue.start if edit.start is None else edit.start
    end = cue.end if edit.end is None else edit.end
    _timed(edit.seq, start, end)
    lines, languages = cue.lines, cue.languages
    if edit.text is not None:
        lines = lines_of(edit.text, edit.seq)
        languages = relabelled(cue, lines)
    return Cue(start, end, lines, languages, cue.confidence, cue.band)


def inserted(values: Any) -> Cue:
    """A cue a client adds: ``start``, ``end``, ``text`` and optionally ``band``."""
    from subextract.stages.language import detect_language

    if not isinstance(values, Mapping):
        raise CueRefused(None, 400, "expected a JSON object with \"start\", \"end\" and \"text\"")
    unknown = sorted(set(values) - {"start", "end", "text", "band"})
    if unknown:
        raise CueRefused(None, 400, f"unknown field {unknown[0]!r} (fields: start, end, text, band)")
    missing = [name for name in ("start", "end", "text") if name not in values]
    if missing:
        raise CueRefused(None, 400, f"{missing[0]}: required")
    start, end = seconds(values["start"], "start"), seconds(values["end"], "end")
    _timed(None, start, end)
    band = values.get("band", 0)
    if not isinstance(band, int) or isinstance(band, bool) or not 0 <= band < 64:
        raise CueRefused(None, 400, "band: the subtitle band's number (0 for the main one)")
    lines = lines_of(values["text"], None)
    return Cue(start, end, lines, tuple(detect_language(line) for line in lines), INSERTED_CONFIDENCE, band)


def merged(cues: Sequence[Cue]) -> Cue:
    """Cues made one, in time order: from the first start to the last end; the text once when
    they all say the same (one subtitle cut in two), else each cue's lines in turn; the weakest
    confidence, as the merged cue is only as sure as its least sure part."""
    ordered = sorted(cues, key=lambda cue: (cue.start, cue.end))
    lines: list[str] = []
    languages: list[str] = []
    for cue in ordered:
        if tuple(lines[-len(cue.lines):]) == cue.lines:
            continue
        lines.extend(cue.lines)
        languages.extend(cue.languages)
    return Cue(ordered[0].start, max(cue.end for cue in ordered), tuple(lines), tuple(languages),
               min(cue.confidence for cue in ordered), ordered[0].band)


def split(cue: Cue, seq: int, at: float, texts: Sequence[str] | None) -> tuple[Cue, Cue]:
    """``cue`` cut at ``at`` seconds into two cues; ``texts`` gives each part's text (a page
    cuts at the caret), otherwise the lines are shared out, and a single line is cut at the
    space nearest the time's share of it (at the character in a script without spaces)."""
    if not cue.start < at < cue.end:
        raise CueRefused(seq, 400, f"at: a time inside the cue ({cue.start:.3f} to {cue.end:.3f} s)")
    if texts is not None:
        first, second = lines_of(texts[0], seq, "texts[0]"), lines_of(texts[1], seq, "texts[1]")
    elif len(cue.lines) > 1:
        half = (len(cue.lines) + 1) // 2
        first, second = cue.lines[:half], cue.lines[half:]
    else:
        first, second = _cut_line(cue.lines[0] if cue.lines else "", (at - cue.start) / (cue.end - cue.start), seq)
    return (Cue(cue.start, at, first, relabelled(cue, first), cue.confidence, cue.band),
            Cue(at, cue.end, second, relabelled(cue, second), cue.confidence, cue.band))


def _cut_line(line: str, share: float, seq: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if len(line) < 2:
        raise CueRefused(seq, 400, "texts: the cue's one line is too short to share out: give both parts' texts")
    target = min(max(round(len(line) * share), 1), len(line) - 1)
    spaces = [i for i, char in enumerate(line) if char.isspace() and 0 < i < len(line) - 1]
    cut = min(spaces, key=lambda i: abs(i - target)) if spaces else target
    return (line[:cut].strip(),), (line[cut:].strip(),)


def parse_texts(value: Any, seq: int) -> tuple[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2 or not all(isinstance(text, str) for text in value):
        raise CueRefused(seq, 400, "texts: the two parts' texts, [before, after]")
    return value[0], value[1]
