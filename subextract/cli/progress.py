"""Progress on a terminal: one video's bar (seconds of video, segments, ETA), the batch's bar
(videos done, ETA) and the translation's (cues)."""

from __future__ import annotations

import sys
import time

_BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} s video [{elapsed}<{remaining}{postfix}]"
_COUNTER_FORMAT = "{desc}: {n:.1f} s video [{elapsed}{postfix}]"


class VideoProgress:
    """A tqdm bar on a terminal: what the run is doing, seconds of video decoded, segments found,
    ETA. Redrawn at most every ``interval`` seconds: a redraw per frame writes ~4 KB a second."""

    def __init__(self, enabled: bool, file=None, interval: float = 0.25) -> None:
        self._bar = None
        self._enabled = enabled
        self._file = file
        self._interval = interval
        self._drawn = 0.0
        self._stage = ""

    def stage(self, name: str) -> None:
        """Shown from the start: probing and the pre-scan take seconds before any frame is read."""
        if not self._enabled:
            return
        self._stage = name
        if self._bar is None:
            self._open(None)
        self._bar.set_description_str(name, refresh=False)
        self._draw(force=True)

    def __call__(self, done: float, total: float | None, segments: int) -> None:
        if not self._enabled:
            return
        if self._bar is None:
            self._open(total)
        elif self._bar.total is None and total:  # opened while probing, before the length was known
            self._bar.total = round(total, 1)
            self._bar.bar_format = _BAR_FORMAT
        self._bar.n = min(round(done, 1), self._bar.total) if self._bar.total else round(done, 1)
        self._bar.set_postfix_str(f"{segments} segments", refresh=False)
        self._draw()

    def _open(self, total: float | None) -> None:
        from tqdm import tqdm

        # A live stream has no length: a counter of seconds read instead of a bar with an ETA.
        self._bar = tqdm(total=round(total, 1) if total else None, unit="s", unit_scale=False,
                         file=self._file or sys.stderr, bar_format=_BAR_FORMAT if total else _COUNTER_FORMAT,
                         desc=self._stage or "reading", mininterval=self._interval)

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._drawn >= self._interval:
            self._drawn = now
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.refresh()
            self._bar.close()


class BatchProgress:
    """The batch's overall bar: videos finished of those to do, with the ETA tqdm estimates."""

    def __init__(self, enabled: bool, total: int, file=None) -> None:
        self._bar = None
        if enabled and total:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="video", desc="subextract batch", file=file or sys.stderr,
                             dynamic_ncols=True)

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def write(self, text: str) -> None:
        """A line above the bar (tqdm redraws the bar below it)."""
        if self._bar is not None:
            self._bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class TranslationProgress:
    """Cues translated, on a terminal."""

    def __init__(self, enabled: bool, target: str) -> None:
        self._enabled = enabled
        self._label = f"translating into {target}"
        self._bar = None

    def __call__(self, done: int, total: int) -> None:
        if not self._enabled:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="cue", desc=self._label, file=sys.stderr)
        self._bar.n = done
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
