"""Times that users give (the CLI's ``--start``/``--end``, the service's fields, a cue's edit),
checked in one place: finite seconds no video exceeds. A non-finite time written into the
service's store answered 500 to every later listing; an absurd one makes every writer's output
unreadable (SRT and WebVTT hours have two digits in most readers)."""

from __future__ import annotations

import math
from numbers import Real

from subextract.errors import SubextractError

MAX_SECONDS = 100 * 3600.0  # 100 hours: past any video, inside every subtitle format's clock


def checked_seconds(value: object, name: str) -> float:
    """``value`` as seconds: a real number (not a bool), finite, 0 <= value <= MAX_SECONDS."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise SubextractError(f"{name}: expected seconds (a number), not {type(value).__name__}")
    seconds = float(value)
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_SECONDS:
        raise SubextractError(f"{name}: {value!r} is not a time (seconds from 0 to {MAX_SECONDS:g})")
    return seconds


def cue_times(start: object, end: object) -> tuple[float, float]:
    """A cue's start and end as an edit gives them: each ``checked_seconds``, start before end."""
    first, last = checked_seconds(start, "start"), checked_seconds(end, "end")
    if not first < last:
        raise SubextractError(f"start ({first:g} s) must come before end ({last:g} s)")
    return first, last
