"""Hand out cues while the video is still being read, each as soon as nothing to come can change it.

Why a cue can be final early: ``align`` merges a reading with text into its neighbour only when
the gap between them is at most ``merge_gap``, or when a flicker span touches both of them —
and a flicker span is itself made of readings with text, so none can sit inside the gap. A gap
wider than ``merge_gap`` between consecutive readings with text therefore cuts the alignment in
two: the cues before it come out of ``align`` the same whatever follows. A band's readings are
known up to its *frontier* (the first segment still at OCR, else the earliest start a segment
still to come can have); once the far side of a wide gap is known, everything before it is
aligned and final. Bands are aligned separately; their cues are handed out in (start, band)
order, so a cue waits until every band's frontier has passed its start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from subextract.config import AlignSettings
from subextract.schema import Cue, Reading, Segment
from subextract.stages.align import VoteHistory, align

CueCallback = Callable[[Cue], None]


@dataclass
class _Band:
    index: int
    pending: list[tuple[Segment, int]] = field(default_factory=list)  # after the last cut, in time order
    floor: float = float("-inf")  # no cue still to come from this band starts before this
    history: VoteHistory = field(default_factory=VoteHistory)  # the band's cues handed out so far

    def take_final(self, readings: Mapping[int, Reading], horizon: float | None,
                   settings: AlignSettings) -> list[Cue]:
        """Align and drop the pending segments before the last wide gap whose far side is known."""
        pairs: list[tuple[Segment, Reading]] = []
        frontier = horizon if horizon is not None else float("-inf")
        for segment, key in self.pending:
            if key not in readings:
                frontier = segment.start
                break
            pairs.append((segment, readings[key]))
        texts = [i for i, (_, reading) in enumerate(pairs) if reading.lines]
        cut = 0 if texts else len(pairs)
        for n, i in enumerate(texts):
            next_start = pairs[texts[n + 1]][0].start if n + 1 < len(texts) else frontier
            if next_start - pairs[i][0].end > settings.merge_gap:
                cut = texts[n + 1] if n + 1 < len(texts) else len(pairs)
        after = [i for i in texts if i >= cut]
        self.floor = pairs[after[0]][0].start if after else frontier
        final, self.pending = pairs[:cut], self.pending[cut:]
        return align(final, settings, self.history) if final else []


class CueStream:
    """Feeds ``on_cue`` the cues of a running extraction in the order of the final cue list.

    The decode loop calls ``update`` with everything known so far after each frame; the OCR worker
    calls ``refresh`` when readings come in, so cues still go out while the input stalls (a live
    stream between two deliveries). ``on_cue`` is called from either thread, one call at a time;
    an exception it raises comes back out of the decode loop's next call. ``finish`` gets the
    final list, of which the cues handed out so far must be the beginning.
    """

    def __init__(self, settings: AlignSettings, band_count: int, prepare: Callable[[int, Reading], Reading],
                 on_cue: CueCallback) -> None:
        self._settings = settings
        # The same step (language tags, filter) the final list takes, given (band, reading) in
        # each band's time order, each reading once.
        self._prepare = prepare
        self._on_cue = on_cue
        self._bands = [_Band(i) for i in range(band_count)]
        self._prepared: dict[int, Reading] = {}
        self._final: list[Cue] = []  # final, waiting for the other bands' frontiers
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        # What the decode loop last reported: segments (a list it keeps appending to) up to
        # _known, with the matching horizons; readings (a dict the OCR worker fills).
        self._segments: Sequence[tuple[Segment, int]] = ()
        self._known = self._distributed = 0
        self._horizons: list[float | None] = [None] * band_count
        self._readings: Mapping[int, Reading] = {}
        self.emitted: list[Cue] = []

    def update(self, segments: Sequence[tuple[Segment, int]], readings: Mapping[int, Reading],
               horizons: Sequence[float | None]) -> None:
        """``segments``: all accepted so far with their reading keys; ``readings``: the OCR results
        in so far; ``horizons``: per band, the earliest start of a segment still to come."""
        with self._lock:
            self._raise_error()
            self._segments, self._known, self._readings = segments, len(segments), readings
            self._horizons = list(horizons)
            self._advance()

    def refresh(self) -> None:
        """New readings came in; never raises (it runs on the OCR worker's thread)."""
        with self._lock:
            if self._error is None:
                try:
                    self._advance()
                except BaseException as exc:  # noqa: BLE001 - handed to the decode loop by update()/finish()
                    self._error = exc

    def finish(self, cues: Sequence[Cue]) -> None:
        """Hand out the rest of the final list ``cues``."""
        with self._lock:
            self._raise_error()
            if list(cues[:len(self.emitted)]) != self.emitted:
                raise RuntimeError("streamed cues differ from the final cue list")  # a broken finality rule
            for cue in cues[len(self.emitted):]:
                self._emit(cue)

    def _advance(self) -> None:
        for segment, key in self._segments[self._distributed:self._known]:
            self._bands[segment.band].pending.append((segment, key))
        self._distributed = self._known
        for band, horizon in zip(self._bands, self._horizons):
            self._final.extend(band.take_final(self._prepared_readings(band), horizon, self._settings))
        self._final.sort(key=_order)
        while self._final and all(_order(self._final[0]) < (band.floor, band.index) for band in self._bands):
            self._emit(self._final.pop(0))

    def _prepared_readings(self, band: _Band) -> dict[int, Reading]:
        for _, key in band.pending:
            if key not in self._prepared:
                reading = self._readings.get(key)
                if reading is None:
                    break
                self._prepared[key] = self._prepare(band.index, reading)
        return self._prepared

    def _emit(self, cue: Cue) -> None:
        self.emitted.append(cue)
        self._on_cue(cue)

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error


def _order(cue: Cue) -> tuple[float, int]:
    return cue.start, cue.band
