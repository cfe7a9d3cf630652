"""Where a decode was damaged: FFmpeg's decode errors and the frames it dropped, per time span.

FFmpeg conceals decode errors and exits 0, so a damaged file silently yields wrong pictures and
missing frames. Its error lines carry no time, but they arrive on stderr among the frames
``showinfo`` reports. A decoder logs an error before the damaged frame leaves it, and frame
threading and the queue to the filters delay that frame by up to a few dozen frames, so the
damage starts after the last frame reported before the error, and may reach any frame reported
up to ``LATENCY_FRAMES`` after the last error. A concealed error lives on in every frame predicted
from a damaged one until the next keyframe: the span ends at the first keyframe reported after
that latency. Errors whose spans overlap make one span.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from subextract.schema import DamagedSpan



LATENCY_FRAMES = 24  # frames the decoder's threads and queues may hold between an error line and its frame


class DamageTracker:
    """Fed frames and error lines in stderr order by the decode's stderr reader."""

    def __init__(self, range_start: float, frame_duration: float, latency_frames: int = LATENCY_FRAMES) -> None:
        self._range_start = range_start
        self._latency = latency_frames
        self._since_error = 0  # frames reported since the open span's last error
        self._frame_duration = frame_duration
        self._last_pts: float | None = None
        self._open: list | None = None  # [start, error count, first error] of the span still open
        self._frames_in_open: list[float] = []
        self.spans: list[DamagedSpan] = []

    def frame(self, pts: float, keyframe: bool) -> None:
        if self._open is not None:
            self._frames_in_open.append(pts)
            self._since_error += 1
            if keyframe and self._since_error > self._latency:
                self._close(pts)
        self._last_pts = pts

    def error(self, line: str = "") -> None:
        if self._open is None:
            start = self._last_pts if self._last_pts is not None else self._range_start
            self._open = [start, 0, _without_context(line)]
            self._frames_in_open = [start]
        self._open[1] += 1
        self._since_error = 0

    def finish(self, end: float | None = None) -> list[DamagedSpan]:
        """Close an open span at ``end`` (default: one frame after the last frame decoded)."""
        if self._open is not None:
            last = self._last_pts if self._last_pts is not None else self._range_start
            self._close(end if end is not None else last + self._frame_duration, final=True)
        return self.spans

    def _close(self, end: float, final: bool = False) -> None:
        start, errors, first = self._open
        # A keyframe that closes the span is among its frames already; the end of the decode is not.
        frames = self._frames_in_open + ([end] if final else [])
        span = DamagedSpan(start, max(end, start), int(errors), _missing(frames, self._frame_duration), first)
        self._open, self._frames_in_open = None, []
        if span.end <= span.start:
            return  # errors before a keyframe that starts the decode: no frame shown was touched
        if self.spans and self.spans[-1].end >= span.start:
            previous = self.spans.pop()
            span = DamagedSpan(previous.start, max(previous.end, span.end), previous.errors + span.errors,
                               previous.missing_frames + span.missing_frames, previous.first_error)
        self.spans.append(span)


def _without_context(line: str) -> str:
    """``[h264 @ 0x55d…] error while decoding MB 3 4`` → ``error while decoding MB 3 4``."""
    return re.sub(r"^(\[[^]]*\] ?)+", "", line.strip())[:200]


def _missing(times: Sequence[float], frame_duration: float) -> int:
    """Frames a constant frame rate would have put into the gaps between ``times``; a gap of up
    to 1.5 frames is jitter (variable frame rate), not loss."""
    missing = 0
    for earlier, later in zip(times, times[1:]):
        gap = later - earlier
        if gap > 1.5 * frame_duration:
            missing += round(gap / frame_duration) - 1
    return missing


def touched(spans: Sequence[DamagedSpan], start: float, end: float) -> bool:
    return any(span.overlaps(start, end) for span in spans)
