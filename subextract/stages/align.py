"""Turn OCR'd segments into cues: merge OCR jitter, vote the text, drop flicker."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from subextract.config import AlignSettings
from subextract.schema import Cue, Reading, Segment


@dataclass
class _Group:
    """Neighbouring readings taken for one cue; the text is voted by duration x confidence."""

    start: float
    end: float
    band: int
    text_changed: bool = False  # its first segment's text changed from the one before (Segment.text_changed)
    votes: dict[tuple[str, ...], float] = field(default_factory=lambda: defaultdict(float))
    readings: dict[tuple[str, ...], Reading] = field(default_factory=dict)

    def add(self, segment: Segment, reading: Reading) -> None:
        key = tuple(line.text for line in reading.lines)
        self.votes[key] += (segment.end - segment.start) * max(reading.confidence, 1e-3)
        self.readings.setdefault(key, reading)
        self.end = max(self.end, segment.end)

    def absorb(self, other: "_Group") -> None:
        for key, weight in other.votes.items():
            self.votes[key] += weight
            self.readings.setdefault(key, other.readings[key])
        self.end = max(self.end, other.end)

    @property
    def winner(self) -> Reading:
        return self.readings[max(self.votes, key=self.votes.get)]


def _comparable(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _read_alike(a: str, b: str) -> bool:
    """The same characters, however spaced: an OCR engine spaces a Latin word inside a CJK line one
    way in one frame and another way in the next, which says nothing of a changed text."""
    return "".join(a.split()) == "".join(b.split())


def _similar(a: _Group, b: _Group, settings: AlignSettings) -> bool:
    return fuzz.ratio(_comparable(a.winner.text), _comparable(b.winner.text)) >= settings.merge_similarity


def _merge(groups: list[_Group], settings: AlignSettings, bridges: list[tuple[float, float]]) -> list[_Group]:
    """Merge neighbours with similar texts whose gap is small or only held flicker (``bridges``),
    unless the segmenter saw the text change between them and they read differently."""
    merged: list[_Group] = []
    for group in groups:
        last = merged[-1] if merged else None
        gap = group.start - last.end if last is not None else None
        bridged = last is not None and any(s <= last.end + settings.merge_gap and e >= group.start - settings.merge_gap
                                           for s, e in bridges)
        if last is not None and (gap <= settings.merge_gap or bridged) and _similar(last, group, settings) \
                and not (group.text_changed and not _read_alike(last.winner.text, group.winner.text)):
            last.absorb(group)
        else:
            merged.append(group)
    return merged


def align(pairs: Sequence[tuple[Segment, Reading]], settings: AlignSettings) -> list[Cue]:
    """``pairs`` are one band's segments in time order with their readings.

    Merging runs before and after flicker is dropped, so a one-segment misread between two
    readings of one subtitle neither splits the cue nor survives as a cue of its own.
    """
    singles = []
    for segment, reading in pairs:
        if reading.lines:
            group = _Group(start=segment.start, end=segment.end, band=segment.band, text_changed=segment.text_changed)
            group.add(segment, reading)
            singles.append(group)
    groups = _merge(singles, settings, bridges=[])
    # 1 µs of slack: durations come from float PTS (1.2 - 1.0 == 0.19999999999999996).
    is_flicker = [g.end - g.start < settings.min_duration - 1e-6 for g in groups]
    flicker = [(g.start, g.end) for g, short in zip(groups, is_flicker) if short]
    groups = _merge([g for g, short in zip(groups, is_flicker) if not short], settings, bridges=flicker)
    cues = []
    for group in groups:
        reading = group.winner
        cues.append(Cue(start=group.start, end=group.end, lines=tuple(line.text for line in reading.lines),
                        languages=tuple(line.language for line in reading.lines),
                        confidence=round(reading.confidence, 4), band=group.band))
    return cues
