"""Turn OCR'd segments into cues: merge OCR jitter, vote the text, drop flicker."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from subextract.config import AlignSettings
from subextract.stages.ocr import Reading
from subextract.stages.segment import Segment


@dataclass(frozen=True)
class Cue:
    start: float
    end: float
    lines: tuple[str, ...]
    languages: tuple[str, ...]
    confidence: float
    band: int = 0

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class _Group:
    """Neighbouring readings taken for one cue; the text is voted by duration x confidence."""

    start: float
    end: float
    band: int
    votes: dict[tuple[str, ...], float] = field(default_factory=lambda: defaultdict(float))
    readings: dict[tuple[str, ...], Reading] = field(default_factory=dict)

    def add(self, segment: Segment, reading: Reading) -> None:
        key = tuple(line.text for line in reading.lines)
        self.votes[key] += (segment.end - segment.start) * max(reading.confidence, 1e-3)
        self.readings.setdefault(key, reading)
        self.end = max(self.end, segment.end)

    @property
    def winner(self) -> Reading:
        return self.readings[max(self.votes, key=self.votes.get)]


def _comparable(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def align(pairs: Sequence[tuple[Segment, Reading]], settings: AlignSettings) -> list[Cue]:
    """``pairs`` are one band's segments in time order with their readings."""
    groups: list[_Group] = []
    for segment, reading in pairs:
        if not reading.lines:
            continue
        text = _comparable(reading.text)
        last = groups[-1] if groups else None
        if (last is not None and segment.start - last.end <= settings.merge_gap
                and fuzz.ratio(_comparable(last.winner.text), text) >= settings.merge_similarity):
            last.add(segment, reading)
            continue
        group = _Group(start=segment.start, end=segment.end, band=segment.band)
        group.add(segment, reading)
        groups.append(group)
    cues = []
    for group in groups:
        if group.end - group.start < settings.min_duration:
            continue
        reading = group.winner
        cues.append(Cue(start=group.start, end=group.end, lines=tuple(line.text for line in reading.lines),
                        languages=tuple(line.language for line in reading.lines),
                        confidence=round(reading.confidence, 4), band=group.band))
    return cues
