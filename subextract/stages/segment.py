"""Group consecutive frames whose subtitle band shows the same text into segments.

OCR runs once per segment, so this stage decides the OCR cost. Comparing raw band pixels (or a
perceptual hash of them) mistakes a moving background for a new subtitle, so frames are compared
through a *text mask*: bright strokes with a dark outline, shadow or box right next to them,
which is how burned-in subtitles are drawn to stay legible. The mask of a subtitle stays put
while the picture behind it moves. Masks are compared with a small dilation tolerance (a
hand-written comparison: a perceptual hash of a wide strip squeezes each glyph into a fraction of
a cell and cannot tell two subtitles of equal length apart). The imagehash of the mask still
serves as the segment's identity, so a repeated line can reuse an earlier reading.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

import cv2
import imagehash
import numpy as np
from PIL import Image

from subextract.config import SegmentSettings
from subextract.stages.lines import Box, line_boxes

_BESIDE = cv2.getStructuringElement(cv2.MORPH_RECT, (5, 5))
_TOLERANCE = cv2.getStructuringElement(cv2.MORPH_RECT, (3, 3))


@dataclass
class Segment:
    band: int
    start: float  # PTS of the first frame showing this content
    end: float  # PTS of the first frame no longer showing it
    frame_count: int
    settled: bool  # seen for at least confirm_frames frames: its strokes are text, not passing background
    before_start: float | None  # PTS of the last analysed frame before ``start`` (None at the range start)
    last_shown: float  # PTS of the last analysed frame showing it
    image: np.ndarray  # the OCR picture: per-pixel median of frames kept across the segment
    mask_hash: imagehash.ImageHash
    mask: np.ndarray = field(repr=False)
    lines: tuple[Box, ...] = ()  # text lines found in the mask, in ``image`` pixels


def analysis_view(band: np.ndarray, width: int) -> np.ndarray:
    if band.shape[1] <= width:
        return band
    height = max(8, round(band.shape[0] * width / band.shape[1]))
    return cv2.resize(band, (width, height), interpolation=cv2.INTER_AREA)


def text_mask(grey: np.ndarray, settings: SegmentSettings) -> np.ndarray:
    """Pixels that look like subtitle strokes: bright lines thinner than the stroke kernel that
    stand well above their surroundings (a white top-hat ignores large bright areas such as sky)
    and with a near-black pixel right beside them (the outline, shadow or box that keeps burned-in
    text legible; bright grass or foliage has none)."""
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (settings.stroke_kernel, settings.stroke_kernel))
    above_surroundings = cv2.morphologyEx(grey, cv2.MORPH_TOPHAT, kernel)
    darkest_beside = cv2.erode(grey, _BESIDE)
    return ((grey >= settings.bright_min) & (above_surroundings >= settings.contrast_min)
            & (darkest_beside <= settings.dark_max))


def mask_difference(a: np.ndarray, b: np.ndarray) -> float:
    """The larger share, over the two masks, of stroke pixels with no stroke of the other mask
    within one pixel. One-sided shares keep a new subtitle from hiding behind shared background."""
    a_count, b_count = int(np.count_nonzero(a)), int(np.count_nonzero(b))
    if a_count == 0 or b_count == 0:
        return 0.0 if a_count == b_count else 1.0
    a_u8, b_u8 = a.view(np.uint8), b.view(np.uint8)
    a_only = np.count_nonzero(a_u8 & ~cv2.dilate(b_u8, _TOLERANCE).view(bool))
    b_only = np.count_nonzero(b_u8 & ~cv2.dilate(a_u8, _TOLERANCE).view(bool))
    return max(a_only / a_count, b_only / b_count)


def mask_hash(mask: np.ndarray) -> imagehash.ImageHash:
    return imagehash.dhash(Image.fromarray(mask.view(np.uint8) * 255), hash_size=16)


class _FrameKeeper:
    """Keeps at most ``limit`` frames spread evenly over a run of unknown length (stride doubles)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.stride = 1
        self.seen = 0
        self.frames: list[np.ndarray] = []

    def offer(self, frame: np.ndarray) -> None:
        if self.seen % self.stride == 0:
            self.frames.append(frame)
            if len(self.frames) > self.limit:
                self.frames = self.frames[::2]
                self.stride *= 2
        self.seen += 1

    def median(self) -> np.ndarray:
        """Per-pixel median (the mean of the middle two for an even count, rounded down), as
        ``np.median`` gives it but ~20x faster: a few frames sorted in place by an odd-even
        transposition network of element-wise min/max, instead of a partition along a strided axis."""
        if len(self.frames) == 1:
            return self.frames[0]
        ranked = [frame.copy() for frame in self.frames]
        count = len(ranked)
        for round_ in range(count):
            for i in range(round_ % 2, count - 1, 2):
                low = np.minimum(ranked[i], ranked[i + 1])
                np.maximum(ranked[i], ranked[i + 1], out=ranked[i + 1])
                ranked[i] = low
        low, high = ranked[(count - 1) // 2], ranked[count // 2]
        return ((low.astype(np.uint16) + high) // 2).astype(np.uint8)


def lost_share(core: np.ndarray, mask: np.ndarray) -> float:
    """Share of the reference strokes (``core``) with no stroke of ``mask`` within one pixel
    (1.0 for an empty reference)."""
    core_count = int(np.count_nonzero(core))
    if core_count == 0:
        return 1.0
    missing = np.count_nonzero(core.view(np.uint8) & ~cv2.dilate(mask.view(np.uint8), _TOLERANCE).view(bool))
    return missing / core_count


def exact_lost_share(core: np.ndarray, mask: np.ndarray) -> float:
    """Share of the reference strokes with no stroke of ``mask`` at the very same pixel. Burned-in
    text does not move, so its strokes stay put; another text of the same density in the same
    place (a two-line cue replaced by another) still keeps most strokes within one pixel, which
    ``lost_share`` forgives, but only a fraction at the same pixel."""
    core_count = int(np.count_nonzero(core))
    return np.count_nonzero(core & ~mask) / core_count if core_count else 1.0


def added_strokes(core: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Strokes of ``mask`` with no reference stroke (``core``) within one pixel."""
    return mask & ~cv2.dilate(core.view(np.uint8), _TOLERANCE).view(bool)


def _is_line_like(strokes: np.ndarray, min_pixels: float, min_density: float) -> bool:
    """Enough strokes, packed densely in their box, as the glyphs of a text line are (stroke-like
    background, such as the bars of a fence after a cut, spreads thinly over the whole band)."""
    count = np.count_nonzero(strokes)
    if count < min_pixels:
        return False
    ys, xs = np.nonzero(strokes)
    y0, y1 = np.percentile(ys, (5, 95))
    x0, x1 = np.percentile(xs, (5, 95))
    return 0.9 * count / ((y1 - y0 + 1) * (x1 - x0 + 1)) >= min_density


def adds_line(core: np.ndarray, mask: np.ndarray, settings: SegmentSettings) -> np.ndarray | None:
    """The strokes ``mask`` adds to ``core`` when they amount to a text line, else None."""
    added = added_strokes(core, mask)
    needed = max(settings.min_text_share * mask.size, 0.25 * np.count_nonzero(core))
    return added if _is_line_like(added, needed, settings.min_line_density) else None


@dataclass(frozen=True)
class _Analysed:
    pts: float
    band: np.ndarray
    mask: np.ndarray


@dataclass
class _OpenSegment:
    start: float
    before_start: float | None
    keeper: _FrameKeeper
    votes: np.ndarray | None = None  # per pixel, how many of the segment's frames had a stroke there
    last_shown: float = 0.0
    frames: int = 0  # frames that voted
    # The latest frames, held back from the keeper until no line can have been added in them.
    recent: deque[_Analysed] = field(default_factory=deque)
    gain: np.ndarray | None = None  # a line's worth of strokes added since ``gain_start``, present ever since
    gain_start: float = 0.0
    gain_before: float | None = None  # PTS of the frame before gain_start
    gain_frames: int = 0
    replaced_start: float = 0.0  # first of the latest frames that all lost most core strokes exactly
    replaced_before: float | None = None
    replaced_frames: int = 0

    core: np.ndarray | None = None  # strokes in at least half of the frames (kept in step with votes)

    def vote(self, mask: np.ndarray) -> None:
        if self.votes is None:
            self.votes = mask.astype(np.uint32)
        else:
            self.votes += mask
        self.frames += 1
        self.core = self.votes * 2 >= self.frames


class Segmenter:
    """Consumes one band's frames in order; yields a Segment each time displayed text ends.

    A segment keeps its *core*: the strokes found in at least half of its frames, which keeps the
    text and drops moving background. The text has changed when much of the core is lost (the
    subtitle went or was replaced), when most of it is lost at the exact pixels for
    ``confirm_frames`` frames (replaced by text as dense), or when new strokes persist for
    ``confirm_frames`` frames (a line was added, or a new subtitle covers the old one's place);
    strokes that come and go are background. A segment whose core
    ends up too small to be text is never OCR'd.
    """

    def __init__(self, band_index: int, settings: SegmentSettings) -> None:
        self.band_index = band_index
        self.settings = settings
        self._open: _OpenSegment | None = None
        self._previous_pts: float | None = None

    @property
    def horizon(self) -> float | None:
        """The earliest start a segment still to come can have: the open segment's start, else the
        latest frame's PTS (None before the first frame). Cues before it can be final."""
        return self._open.start if self._open is not None else self._previous_pts

    def _min_pixels(self, mask: np.ndarray) -> float:
        return self.settings.min_text_share * mask.size

    def push(self, pts: float, band: np.ndarray) -> Iterator[Segment]:
        mask = text_mask(analysis_view(band, self.settings.analysis_width), self.settings)
        strokes = np.count_nonzero(mask)
        has_text = strokes >= self._min_pixels(mask)
        # Hysteresis: a short line whose mask hovers at the threshold must not end and restart.
        holds_text = strokes >= self.settings.text_hold * self._min_pixels(mask)
        current = self._open
        if current is not None:
            # The first frames' masks still hold background strokes that are about to move away:
            # losing them says nothing until the core has settled.
            settled = current.frames >= self.settings.confirm_frames
            if not holds_text or (settled and lost_share(current.core, mask) > self.settings.change_threshold):
                if current.gain is None:
                    yield from self.finish(pts)
                else:
                    # Lines added a few frames ago were the new text's first frames: it began there.
                    yield from self._split_at(current, current.gain_start, current.gain_before)
                    if not holds_text:
                        yield from self.finish(pts)
            elif self._track_gain(current, mask, pts):
                yield from self._split_at(current, current.gain_start, current.gain_before)
            elif settled and self._track_replacement(current, mask, pts):
                yield from self._split_at(current, current.replaced_start, current.replaced_before)
        if has_text or (holds_text and self._open is not None):
            if self._open is None:
                self._open = self._new_segment(pts, self._previous_pts)
            self._add(self._open, _Analysed(pts, band, mask))
        self._previous_pts = pts

    def _new_segment(self, start: float, before_start: float | None) -> _OpenSegment:
        return _OpenSegment(start=start, before_start=before_start, keeper=_FrameKeeper(self.settings.keep_frames))

    def _add(self, segment: _OpenSegment, frame: _Analysed) -> None:
        # A frame that adds a line, or has lost the core at its exact pixels, may start the next
        # subtitle: it must not shape this core.
        if segment.core is None or (segment.replaced_frames == 0
                                    and adds_line(segment.core, frame.mask, self.settings) is None):
            segment.vote(frame.mask)
        segment.last_shown = frame.pts
        segment.recent.append(frame)
        while len(segment.recent) > self.settings.confirm_frames:
            segment.keeper.offer(segment.recent.popleft().band)

    def _split_at(self, segment: _OpenSegment, start: float, before: float | None) -> Iterator[Segment]:
        """The new text appeared at ``start`` (``before`` is the frame before it): close the old
        segment there, start the new one there."""
        carried = [frame for frame in segment.recent if frame.pts >= start]
        segment.recent = deque(frame for frame in segment.recent if frame.pts < start)
        segment.last_shown = before if before is not None else segment.start
        successor = self._new_segment(start, before)
        yield from self.finish(start)
        for frame in carried:
            self._add(successor, frame)
        self._open = successor

    def _track_gain(self, segment: _OpenSegment, mask: np.ndarray, pts: float) -> bool:
        """True once a line's worth of strokes absent from the core has persisted for
        ``confirm_frames`` frames."""
        added = adds_line(segment.core, mask, self.settings)
        if segment.gain is not None and added is not None:
            persisting = segment.gain & cv2.dilate(added.view(np.uint8), _TOLERANCE).view(bool)
            if _is_line_like(persisting, 0.5 * np.count_nonzero(segment.gain), self.settings.min_line_density):
                segment.gain = persisting
                segment.gain_frames += 1
                return segment.gain_frames >= self.settings.confirm_frames
        if added is not None:
            segment.gain, segment.gain_start, segment.gain_before = added, pts, self._previous_pts
            segment.gain_frames = 1
        else:
            segment.gain, segment.gain_frames = None, 0
        return False

    def _track_replacement(self, segment: _OpenSegment, mask: np.ndarray, pts: float) -> bool:
        """True once ``confirm_frames`` frames in a row have lost most core strokes at their exact pixels."""
        if exact_lost_share(segment.core, mask) <= self.settings.exact_change_threshold:
            segment.replaced_frames = 0
            return False
        if segment.replaced_frames == 0:
            segment.replaced_start, segment.replaced_before = pts, self._previous_pts
        segment.replaced_frames += 1
        return segment.replaced_frames >= self.settings.confirm_frames

    def finish(self, end_pts: float) -> Iterator[Segment]:
        """Close the open segment (if any) at ``end_pts``, the first frame without its text."""
        segment, self._open = self._open, None
        if segment is None or segment.core is None:
            return
        for frame in segment.recent:
            segment.keeper.offer(frame.band)
        if not segment.keeper.frames or \
                np.count_nonzero(segment.core) < self.settings.text_hold * self._min_pixels(segment.core):
            return
        image, core = segment.keeper.median(), segment.core
        yield Segment(band=self.band_index, start=segment.start, end=end_pts,
                      frame_count=segment.keeper.seen, settled=segment.frames >= self.settings.confirm_frames,
                      before_start=segment.before_start,
                      last_shown=segment.last_shown, image=image,
                      mask_hash=mask_hash(core), mask=core, lines=line_boxes(core, image.shape))
