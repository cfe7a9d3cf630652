"""Turn OCR'd segments into cues: merge OCR jitter, vote the text, drop flicker."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from subextract.config import AlignSettings
from subextract.schema import Cue, Reading, Segment


@dataclass
class _Group:
    """Neighbouring readings taken for one cue; the text is voted by duration x confidence**n.

    n is the number of characters (spaces aside) of the group's longest reading, the same for
    every reading of the group: a reading's vote is then the joint probability of n characters
    read at its confidence rather than its mean. Tesseract's mean confidences lie between 0.6
    and 0.9 for right and garbled readings alike, so by the mean a long garbled reading
    outweighed a shorter clean one; raised to the n-th power the gap between 0.9 and 0.7 is
    what it is in a whole line read right. n changes when a group absorbs another, so each
    reading keeps its (duration, confidence) pairs and the winner is reckoned when asked.
    """

    start: float
    end: float
    band: int
    text_changed: bool = False  # its first segment's text changed from the one before (Segment.text_changed)
    seen: dict[tuple[str, ...], list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    readings: dict[tuple[str, ...], Reading] = field(default_factory=dict)

    def add(self, segment: Segment, reading: Reading) -> None:
        key = tuple(line.text for line in reading.lines)
        self.seen[key].append((segment.end - segment.start, reading.confidence))
        self.readings.setdefault(key, reading)
        self.end = max(self.end, segment.end)

    def absorb(self, other: "_Group") -> None:
        for key, seen in other.seen.items():
            self.seen[key] += seen
            self.readings.setdefault(key, other.readings[key])
        self.end = max(self.end, other.end)

    @property
    def winner(self) -> Reading:
        return self.readings[_voted(self.seen, self.seen)]


def _voted(candidates: Iterable[tuple[str, ...]],
           seen: Mapping[tuple[str, ...], list[tuple[float, float]]]) -> tuple[str, ...]:
    """The candidate text with the most votes in ``seen`` (n: the longest candidate's length)."""
    candidates = list(candidates)
    n = max(sum(len("".join(text.split())) for text in key) for key in candidates)
    return max(candidates, key=lambda key: _log_vote(seen[key], n))


@dataclass
class VoteHistory:
    """What one band's earlier cues said of their texts, for the cues after them.

    A cue's segments that read alike enough to be one cue are readings of one text; where one
    reading of it was outvoted there, it is a misreading of the winner wherever it stands alone
    later (a repeated subtitle reuses the reading of its first showing, which may be a short
    segment's worse one), and every later cue's vote counts what its texts gathered before.
    Only earlier cues count, so a cue handed out while the video is still read (``CueStream``)
    never changes: the stream keeps one history per band, ``align`` of a whole band one of its own.
    """

    votes: dict[tuple[str, ...], list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    read_as: dict[tuple[str, ...], set[tuple[str, ...]]] = field(default_factory=lambda: defaultdict(set))
    readings: dict[tuple[str, ...], Reading] = field(default_factory=dict)

    def decide(self, group: _Group) -> Reading:
        """The group's text with the earlier cues' votes added, then the group remembered."""
        # In a fixed order: a tie goes the same way on every run (sets of str iterate in hash order).
        earlier = set().union(*(self.read_as[key] for key in group.seen)) - set(group.seen)
        candidates = [*group.seen, *sorted(earlier)]
        pooled = {key: self.votes.get(key, []) + group.seen.get(key, []) for key in candidates}
        chosen = _voted(candidates, pooled)
        reading = group.readings.get(chosen) or self.readings[chosen]
        for key, seen in group.seen.items():
            self.votes[key] += seen
            self.readings.setdefault(key, group.readings[key])
            self.read_as[key] |= set(group.seen) - {key}
        return reading


def _log_vote(seen: list[tuple[float, float]], n: int) -> float:
    """log of the sum of duration x confidence**n over one reading's segments, in logs (0.5**120
    is still a float, 1e-3**120 is not); a confidence counts as at least 1e-3, so a reading
    read without confidence still votes by its duration."""
    terms = [math.log(max(duration, 1e-9)) + n * math.log(max(confidence, 1e-3)) for duration, confidence in seen]
    top = max(terms)
    return top + math.log(sum(math.exp(term - top) for term in terms))


# Back-to-back readings of one line, misread differently, are about as long (letters and digits).
_SAME_LENGTH = 0.8
# Slack for durations and gaps computed from float PTS (1.2 - 1.0 == 0.19999999999999996): segments
# split at one frame share its PTS.
_PTS_SLACK = 1e-6


def _comparable(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _read_alike(a: str, b: str) -> bool:
    """The same letters and digits, however spaced, punctuated or cased: an OCR engine spaces a
    Latin word inside a CJK line one way in one frame and another way in the next, and drops a
    line's final period over a busy picture (a cut behind a line split it where no glyph changed),
    which says nothing of a changed text."""
    return _comparable(a) == _comparable(b)


def _similar(a: _Group, b: _Group, settings: AlignSettings, back_to_back: bool) -> bool:
    """Texts this similar are one cue's readings. Back to back where the segmenter saw no change of
    text (a cut behind the line split it), less similar ones of about one length are too: a
    recogniser weak on the font misreads the line over one of the pictures (Tesseract's Arabic
    over a lawn: 71 and 76 % alike), and the vote keeps the better reading. A line that grows (a
    word or a line added, which the segmenter does not call a change) is longer."""
    first, second = _comparable(a.winner.text), _comparable(b.winner.text)
    ratio = fuzz.ratio(first, second)
    if ratio >= settings.merge_similarity:
        return True
    return back_to_back and not b.text_changed and ratio >= settings.merge_similarity_unchanged \
        and min(len(first), len(second)) >= _SAME_LENGTH * max(len(first), len(second))


def _merge(groups: list[_Group], settings: AlignSettings, bridges: list[tuple[float, float]]) -> list[_Group]:
    """Merge neighbours with similar texts whose gap is small or only held flicker (``bridges``),
    unless the segmenter saw the text change between them and they read differently; but a
    reading between two that read alike, similar to them, is a misreading of that one text
    (``_returns_to``)."""
    merged: list[_Group] = []
    for group in groups:
        last = merged[-1] if merged else None
        if last is not None and _close(last, group, settings, bridges) \
                and _similar(last, group, settings, back_to_back=group.start - last.end <= _PTS_SLACK) \
                and not (group.text_changed and not _read_alike(last.winner.text, group.winner.text)):
            last.absorb(group)
        elif len(merged) > 1 and _returns_to(merged[-2], last, group, settings, bridges):
            merged.pop()
            merged[-1].absorb(last)
            merged[-1].absorb(group)
        else:
            merged.append(group)
    return merged


def _close(first: _Group, second: _Group, settings: AlignSettings, bridges: list[tuple[float, float]]) -> bool:
    """Whether ``second`` follows ``first`` within the merge gap, or across held flicker only."""
    return second.start - first.end <= settings.merge_gap or \
        any(s <= first.end + settings.merge_gap and e >= second.start - settings.merge_gap for s, e in bridges)


def _returns_to(before: _Group, between: _Group, after: _Group, settings: AlignSettings,
                bridges: list[tuple[float, float]]) -> bool:
    """Whether ``after`` reads as ``before`` does and ``between``, right between them, as a
    misreading of it (``merge_similarity`` alike): the segmenter called the text changed twice, yet
    it came back letter for letter, so it never changed. Thin strokes over a panning picture were
    split every few frames, and one piece read with a wrong Thai vowel stood as a cue of its own;
    a text replaced by a similar one (a counter, a line that grows) does not come back."""
    return _close(before, between, settings, bridges) and _close(between, after, settings, bridges) \
        and _read_alike(before.winner.text, after.winner.text) and _similar(before, between, settings, back_to_back=False)


def align(pairs: Sequence[tuple[Segment, Reading]], settings: AlignSettings,
          history: VoteHistory | None = None) -> list[Cue]:
    """``pairs`` are one band's segments in time order with their readings; ``history``, the
    band's cues before them (``VoteHistory``), is added to.

    Merging runs before and after flicker is dropped, so a one-segment misread between two
    readings of one subtitle neither splits the cue nor survives as a cue of its own.
    """
    history = history if history is not None else VoteHistory()
    singles = []
    for segment, reading in pairs:
        if reading.lines:
            group = _Group(start=segment.start, end=segment.end, band=segment.band, text_changed=segment.text_changed)
            group.add(segment, reading)
            singles.append(group)
    groups = _merge(singles, settings, bridges=[])
    is_flicker = [g.end - g.start < settings.min_duration - _PTS_SLACK for g in groups]
    flicker = [(g.start, g.end) for g, short in zip(groups, is_flicker) if short]
    groups = _merge([g for g, short in zip(groups, is_flicker) if not short], settings, bridges=flicker)
    cues = []
    for group in groups:
        reading = history.decide(group)
        cues.append(Cue(start=group.start, end=group.end, lines=tuple(line.text for line in reading.lines),
                        languages=tuple(line.language for line in reading.lines),
                        confidence=round(reading.confidence, 4), band=group.band))
    return cues
