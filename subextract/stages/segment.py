"""Group consecutive frames whose subtitle band shows the same text into segments.

OCR runs once per segment, so this stage decides the OCR cost. Comparing raw band pixels (or a
perceptual hash of them) mistakes a moving background for a new subtitle, so frames are compared
through a *text mask*: bright strokes thinner than a few pixels, with a dark outline, shadow or
box right next to them where the video's subtitles are drawn so (``stages/appearance.py``
decides, and picks the plane the text stands out in). The mask of a subtitle stays put while the
picture behind it moves. Masks are compared with a small dilation tolerance (a hand-written
comparison: a perceptual hash of a wide strip squeezes each glyph into a fraction of a cell and
cannot tell two subtitles of equal length apart). Text that the mask loses over a bright picture
is followed by how far its known strokes still stand above their surroundings. The imagehash of
the mask serves as a quick identity, so a repeated line can reuse an earlier reading.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
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


def stroke_lift(grey: np.ndarray, settings: SegmentSettings) -> np.ndarray:
    """How far each pixel stands above its surroundings within the stroke kernel (a white
    top-hat: large bright areas such as sky lift nothing, thin bright strokes lift a lot)."""
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (settings.stroke_kernel, settings.stroke_kernel))
    return cv2.morphologyEx(grey, cv2.MORPH_TOPHAT, kernel)


def text_mask(grey: np.ndarray, settings: SegmentSettings, lift: np.ndarray | None = None) -> np.ndarray:
    """Pixels that look like subtitle strokes: bright lines thinner than the stroke kernel that
    stand well above their surroundings and, where the video's subtitles are drawn with one
    (``dark_max`` below 255), with a near-black pixel right beside them (the outline, shadow or
    box; bright grass or foliage has none)."""
    lift = stroke_lift(grey, settings) if lift is None else lift
    mask = (grey >= settings.bright_min) & (lift >= settings.contrast_min)
    if settings.dark_max < 255:
        mask &= cv2.erode(grey, _BESIDE) <= settings.dark_max
    return mask


def still_shown(core: np.ndarray, lift: np.ndarray, settings: SegmentSettings) -> bool:
    """Whether a frame still shows the core's text although its mask may not: in every line of
    the core, most strokes still stand above their surroundings (plain text over a bright sky
    keeps a small lift, too small for the mask; where the text has gone, its pixels lift no more
    than the background does)."""
    rows = np.count_nonzero(core, axis=1)
    if not rows.any():
        return False
    lifted = core & (lift >= settings.hold_contrast)
    for x0, y0, x1, y1 in line_boxes(core, core.shape, pad=False):
        strokes = np.count_nonzero(core[y0:y1, x0:x1])
        if strokes and np.count_nonzero(lifted[y0:y1, x0:x1]) < settings.hold_share * strokes:
            return False
    return True


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


def glyph_changed(a: np.ndarray, b: np.ndarray, share: float) -> bool:
    """Whether some glyph-sized window of two masks has, on each side, at least ``share`` of its
    strokes at pixels the other side has none. Burned-in text does not move: two showings of one
    text differ in a few edge pixels here and there, or (part of it lost to a bright picture) on
    one side only, while one changed character ('ten' → 'tea') puts strokes of its own on both
    sides of its window, though with one pixel of tolerance one glyph may cover the other."""
    a_only, b_only = a & ~b, b & ~a
    if not a_only.any() or not b_only.any():
        return False
    heights = [y1 - y0 for _, y0, _, y1 in line_boxes(a | b, a.shape, pad=False)]
    window = (max(3, int(np.median(heights))),) * 2 if heights else (9, 9)
    strokes = cv2.boxFilter((a | b).astype(np.float32), -1, window, normalize=False)
    needed = np.maximum(share * strokes, 0.05 * window[0] * window[1])
    own_a = cv2.boxFilter(a_only.astype(np.float32), -1, window, normalize=False) >= needed
    own_b = cv2.boxFilter(b_only.astype(np.float32), -1, window, normalize=False) >= needed
    return bool((own_a & own_b).any())


def mask_hash(mask: np.ndarray) -> imagehash.ImageHash:
    return imagehash.dhash(Image.fromarray(mask.view(np.uint8) * 255), hash_size=16)


def stroke_contrast(view: np.ndarray, core: np.ndarray, ring: np.ndarray) -> float:
    """How much brighter the core's stroke pixels are than the ring of pixels around them."""
    return float(view[core].mean()) - float(view[ring].mean()) if core.any() and ring.any() else 0.0


def fade_frames(ratios: Sequence[float], limit: int, min_ratio: float, min_step: float) -> int:
    """How many frames of a fade lie outside a segment. ``ratios``: the stroke contrast of the
    frames next to it, nearest first, over the segment's own. A fade frame shows the strokes
    faintly and more strongly than the frame beyond it (the ramp of a fade); a cut shows nothing,
    or background that correlates with the strokes as much in one frame as in the next."""
    count = 0
    while count < limit and count + 1 < len(ratios) and ratios[count] >= min_ratio \
            and ratios[count] - ratios[count + 1] >= min_step:
        count += 1
    return count


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


def fading_out(core: np.ndarray, mask: np.ndarray, max_new_share: float = 0.1,
               min_line_share: float = 0.2) -> bool:
    """Whether ``mask`` is the core's text fading: (almost) no strokes of its own, and every line of
    the core still partly there. A line taken away (a two-line cue becoming one) keeps none of
    its strokes; new text brings strokes of its own."""
    count = np.count_nonzero(mask)
    if count == 0 or np.count_nonzero(added_strokes(core, mask)) > max_new_share * count:
        return False
    kept = core & cv2.dilate(mask.view(np.uint8), _TOLERANCE).view(bool)
    boxes = line_boxes(core, core.shape)
    return bool(boxes) and all(
        np.count_nonzero(kept[y0:y1, x0:x1]) >= min_line_share * np.count_nonzero(core[y0:y1, x0:x1])
        for x0, y0, x1, y1 in boxes)


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


def text_lines(core: np.ndarray, picture_shape: tuple[int, int], min_density: float) -> tuple[Box, ...]:
    """The line boxes (in picture pixels, with the recogniser's margin) of the lines of stable
    strokes packed as densely as a text line's glyphs. Static background that passes a test with
    no outline (highlights on water, a fence) strews its strokes thinly over band-wide "lines":
    a crop of one is not worth recognising, and it would send the whole picture to the detector."""
    tight = line_boxes(core, core.shape, pad=False)
    padded = line_boxes(core, picture_shape)
    return tuple(box for (x0, y0, x1, y1), box in zip(tight, padded)
                 if np.count_nonzero(core[y0:y1, x0:x1]) >= min_density * (y1 - y0) * (x1 - x0))


def centred(lines: Sequence[Box], width: int, tolerance: float) -> tuple[Box, ...]:
    """Line boxes centred on the band's middle (within ``tolerance`` of its width) made
    symmetric about it: subtitles are centred, so where the mask missed one end of a line (a
    busy picture behind it) the crop still holds the whole line."""
    middle = width / 2
    boxes = []
    for x0, y0, x1, y1 in lines:
        if abs((x0 + x1) / 2 - middle) <= tolerance * width:
            x0, x1 = int(min(x0, width - x1)), int(max(x1, width - x0))
        boxes.append((x0, y0, x1, y1))
    return tuple(boxes)


def has_text_line(core: np.ndarray, min_density: float) -> bool:
    """Whether some line of stable strokes is packed as densely as a text line's glyphs."""
    return bool(text_lines(core, core.shape, min_density))


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
    after_gap: bool = False  # opened after a frame without text (not split off another segment)

    core: np.ndarray | None = None  # strokes in at least half of the frames (kept in step with votes)

    def vote(self, mask: np.ndarray) -> None:
        if self.votes is None:
            self.votes = mask.astype(np.uint32)
        else:
            self.votes += mask
        self.frames += 1
        self.core = self.votes * 2 >= self.frames


@dataclass
class _Fading:
    """A segment that ended at a frame without text, held for the frames that may show it fading out."""

    segment: Segment
    ring: np.ndarray  # the pixels around its core strokes (segment.mask)
    contrast: float  # the strokes' contrast in the segment's picture
    frames: list[tuple[float, float]] = field(default_factory=list)  # (pts, contrast ratio) after its end


class Segmenter:
    """Consumes one band's frames in order; yields a Segment each time displayed text ends.

    A segment keeps its *core*: the strokes found in at least half of its frames, which keeps the
    text and drops moving background. The text has changed when much of the core is lost (the
    subtitle went or was replaced), when most of it is lost at the exact pixels for
    ``confirm_frames`` frames (replaced by text as dense), or when new strokes persist for
    ``confirm_frames`` frames (a line was added, or a new subtitle covers the old one's place);
    strokes that come and go are background. A segment whose core
    ends up too small to be text is never OCR'd.

    Fades: text fading in or out is too faint for the mask in its first and last frames. A
    segment that starts after a frame without text looks back, once settled, at up to
    ``fade_frames`` earlier frames, and one that ends at a frame without text is held for as
    many later frames; frames on the ramp of a fade (``fade_frames()``) are added to it.
    """

    def __init__(self, band_index: int, settings: SegmentSettings) -> None:
        self.band_index = band_index
        self.settings = settings
        self._open: _OpenSegment | None = None
        self._previous_pts: float | None = None
        self._fading: _Fading | None = None
        self._last_end: float | None = None  # end of the latest segment yielded
        # Analysis views of the latest frames, for a new segment's look back at a fade-in.
        self._views: deque[tuple[float, np.ndarray]] = deque(
            maxlen=2 * settings.confirm_frames + settings.fade_frames + settings.look_back_frames + 2)

    @property
    def horizon(self) -> float | None:
        """The earliest start a segment still to come can have: the open segment's start, else the
        latest frame's PTS (None before the first frame). Cues before it can be final."""
        starts = [self._open.start if self._open is not None else self._previous_pts]
        if self._fading is not None:
            starts.append(self._fading.segment.start)
        known = [start for start in starts if start is not None]
        return min(known) if known else None

    def _min_pixels(self, mask: np.ndarray) -> float:
        return self.settings.min_text_share * mask.size

    def push(self, pts: float, band: np.ndarray, mask_band: np.ndarray | None = None) -> Iterator[Segment]:
        """Take the next frame's band; ``mask_band``, the same band in the plane the text stands
        out in, when that is not the band's own (the band still makes the OCR picture)."""
        view = analysis_view(band if mask_band is None else mask_band, self.settings.analysis_width)
        lift = stroke_lift(view, self.settings)
        mask = text_mask(view, self.settings, lift)
        strokes = np.count_nonzero(mask)
        # Hysteresis: a short line whose mask hovers at the threshold must not end and restart.
        holds_text = strokes >= self.settings.text_hold * self._min_pixels(mask)
        # Fewer strokes than the minimum still make text when packed like a line's glyphs (a few
        # short words in a tall band).
        has_text = strokes >= self._min_pixels(mask) or (holds_text and _is_line_like(
            mask, self.settings.text_hold * self._min_pixels(mask), self.settings.min_line_density))
        if self._fading is not None:
            yield from self._follow_fade(pts, view, text_follows=has_text)
        current = self._open
        if current is not None and current.frames >= self.settings.confirm_frames \
                and np.count_nonzero(current.core) < self.settings.text_hold * self._min_pixels(mask):
            # Many strokes, too few of them stable to be text: passing background (plain-text
            # videos have no outline test to keep it out). It is no segment; text may start now.
            self._open = current = None
        held = False
        if current is not None:
            # The first frames' masks still hold background strokes that are about to move away:
            # losing them says nothing until the core has settled.
            settled = current.frames >= self.settings.confirm_frames
            lost = settled and lost_share(current.core, mask) > self.settings.change_threshold \
                and not fading_out(current.core, mask)
            if (not holds_text or lost) and settled and current.gain is None \
                    and self._added_line(current, mask) is None \
                    and not self._brings_own_text(current, mask) \
                    and still_shown(current.core, lift, self.settings):
                # The mask lost the text (plain text over a bright picture) but its strokes are
                # still there, and no text of its own has come (dense text replaced in place
                # would leave the old strokes lifted too): the same text goes on, and this frame
                # does not shape its core.
                held = True
                current.last_shown = pts
            elif not holds_text or lost:
                if current.gain is None and current.replaced_frames == 0:
                    yield from self._end(pts, view, text_follows=has_text)
                else:
                    # Lines added, or the core's pixels lost to strokes of their own, a few frames
                    # ago were the new text's first frames: it began there.
                    start, before = (current.gain_start, current.gain_before) if current.gain is not None \
                        else (current.replaced_start, current.replaced_before)
                    yield from self._split_at(current, start, before)
                    if not holds_text:
                        yield from self.finish(pts)
            elif self._track_gain(current, mask, pts):
                if settled or lost_share(current.core, mask) > self.settings.change_threshold:
                    yield from self._split_at(current, current.gain_start, current.gain_before)
                else:
                    self._absorb_gain(current)
            elif settled and self._track_replacement(current, mask, pts):
                yield from self._split_at(current, current.replaced_start, current.replaced_before)
        if not held and (has_text or (holds_text and self._open is not None)):
            if self._open is None:
                self._open = self._new_segment(pts, self._previous_pts)
                self._open.after_gap = True
            self._add(self._open, _Analysed(pts, band, mask))
            if self._open.frames == self.settings.confirm_frames:
                self._trim_start(self._open)
                if self._open.after_gap:
                    self._look_back(self._open, view)
        self._views.append((pts, view))
        self._previous_pts = pts

    def _new_segment(self, start: float, before_start: float | None) -> _OpenSegment:
        return _OpenSegment(start=start, before_start=before_start, keeper=_FrameKeeper(self.settings.keep_frames))

    def _add(self, segment: _OpenSegment, frame: _Analysed) -> None:
        # A frame that adds a line, or has lost the core at its exact pixels, may start the next
        # subtitle: it must not shape this core.
        if segment.core is None or (segment.replaced_frames == 0
                                    and self._added_line(segment, frame.mask) is None):
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
        added = self._added_line(segment, mask)
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

    def _brings_own_text(self, segment: _OpenSegment, mask: np.ndarray) -> bool:
        """Whether ``mask`` holds text of its own: strokes off the core's pixels, as many as text
        that holds and packed like it (the same text half hidden keeps only core pixels)."""
        own = mask & ~segment.core
        return exact_lost_share(mask, segment.core) >= self.settings.replacement_new_share and _is_line_like(
            own, self.settings.text_hold * self._min_pixels(mask), self.settings.min_line_density)

    def _added_line(self, segment: _OpenSegment, mask: np.ndarray) -> np.ndarray | None:
        """The line's worth of strokes ``mask`` adds to the core, unless most of them were strokes
        of this segment in several earlier frames: the part of the text a bright picture hid for
        a while (and that dropped out of the core meanwhile) coming back."""
        added = adds_line(segment.core, mask, self.settings)
        if added is None or segment.votes is None:
            return added
        returning = added & (segment.votes >= self.settings.confirm_frames)
        return None if np.count_nonzero(returning) >= 0.5 * np.count_nonzero(added) else added

    def _absorb_gain(self, segment: _OpenSegment) -> None:
        """A segment of a frame or two whose strokes the new ones keep was the faint start of the
        same text (a fade-in): its core is made again from the frames with the added strokes."""
        for frame in segment.recent:
            if frame.pts >= segment.gain_start:
                segment.vote(frame.mask)
        segment.gain, segment.gain_frames = None, 0

    def _track_replacement(self, segment: _OpenSegment, mask: np.ndarray, pts: float) -> bool:
        """True once ``confirm_frames`` frames in a row have lost most core strokes at their exact
        pixels to strokes packed as densely as text (background that shifts is sparser) and partly
        of their own (the same text half hidden by a bright picture keeps only core pixels)."""
        if exact_lost_share(segment.core, mask) <= self.settings.exact_change_threshold or \
                exact_lost_share(mask, segment.core) < self.settings.replacement_new_share or \
                not _is_line_like(mask, self._min_pixels(mask), self.settings.min_line_density):
            segment.replaced_frames = 0
            return False
        if segment.replaced_frames == 0:
            segment.replaced_start, segment.replaced_before = pts, self._previous_pts
        segment.replaced_frames += 1
        return segment.replaced_frames >= self.settings.confirm_frames

    def _ring(self, core: np.ndarray) -> np.ndarray:
        return cv2.dilate(core.view(np.uint8), _BESIDE).view(bool) & ~core

    def _trim_start(self, segment: _OpenSegment) -> None:
        """A just-settled segment starts at its first frame that shows its core: frames before
        it showed only background that has moved on."""
        leading = [frame for frame in segment.recent if frame.pts >= segment.start]
        for previous, frame in zip([None, *leading], leading):
            if lost_share(segment.core, frame.mask) <= self.settings.change_threshold:
                if previous is not None:
                    segment.start, segment.before_start = frame.pts, previous.pts
                return

    def _look_back(self, segment: _OpenSegment, view: np.ndarray) -> None:
        """Move the start of a just-settled segment back over the frames that already showed its
        text but not to the mask (plain text over a bright picture), then over its fade-in."""
        earlier = [(pts, frame) for pts, frame in reversed(self._views) if pts < segment.start
                   and (self._last_end is None or pts >= self._last_end)]
        shown = 0
        while shown < len(earlier) and still_shown(segment.core, stroke_lift(earlier[shown][1], self.settings),
                                                   self.settings):
            shown += 1
        if shown:
            segment.start = earlier[shown - 1][0]
            segment.before_start = earlier[shown][0] if shown < len(earlier) else None
            earlier = earlier[shown:]
        if not self.settings.fade_frames:
            return
        ring = self._ring(segment.core)
        contrast = stroke_contrast(view, segment.core, ring)
        if contrast <= 0 or not earlier:
            return
        ratios = [stroke_contrast(frame, segment.core, ring) / contrast for _, frame in earlier]
        count = fade_frames(ratios, self.settings.fade_frames, self.settings.fade_min_ratio,
                            self.settings.fade_min_step)
        if count:
            segment.start = earlier[count - 1][0]
            segment.before_start = earlier[count][0] if count < len(earlier) else None

    def _end(self, pts: float, view: np.ndarray, text_follows: bool) -> Iterator[Segment]:
        """Finish the open segment at ``pts``; one ending at a frame without text is held for
        the frames of its fade-out."""
        for segment in self._close(pts):
            if text_follows or not self.settings.fade_frames:
                yield segment
                continue
            picture = analysis_view(segment.image, self.settings.analysis_width)
            ring = self._ring(segment.mask)
            contrast = stroke_contrast(picture, segment.mask, ring) if picture.shape == segment.mask.shape else 0.0
            if contrast <= 0:
                yield segment
                continue
            self._fading = _Fading(segment, ring, contrast)
            yield from self._follow_fade(pts, view, text_follows=False)

    def _follow_fade(self, pts: float, view: np.ndarray, text_follows: bool) -> Iterator[Segment]:
        """Take one more frame after a held segment's end; yield it once its fade is known."""
        fading = self._fading
        if not text_follows:
            fading.frames.append((pts, stroke_contrast(view, fading.segment.mask, fading.ring) / fading.contrast))
            ratios = [ratio for _, ratio in fading.frames]
            count = fade_frames(ratios, self.settings.fade_frames, self.settings.fade_min_ratio,
                                self.settings.fade_min_step)
            if count == len(ratios) - 1 < self.settings.fade_frames and ratios[-1] >= self.settings.fade_min_ratio:
                return  # the latest frame may still be on the ramp: the next one tells
        yield from self._release_fade()

    def _release_fade(self) -> Iterator[Segment]:
        """Yield the held segment, its end moved past the frames of its fade-out."""
        fading, self._fading = self._fading, None
        if fading is None:
            return
        count = fade_frames([r for _, r in fading.frames], self.settings.fade_frames,
                            self.settings.fade_min_ratio, self.settings.fade_min_step)
        segment = fading.segment
        if count:
            segment.last_shown = fading.frames[count - 1][0]
            segment.end = fading.frames[count][0]
        self._last_end = segment.end
        yield segment

    def finish(self, end_pts: float) -> Iterator[Segment]:
        """Close the open segment (if any) at ``end_pts``, the first frame without its text (and
        yield a segment held for its fade-out first)."""
        yield from self._release_fade()
        yield from self._close(end_pts)

    def _close(self, end_pts: float) -> Iterator[Segment]:
        segment, self._open = self._open, None
        if segment is None or segment.core is None:
            return
        for frame in segment.recent:
            segment.keeper.offer(frame.band)
        if not segment.keeper.frames or \
                np.count_nonzero(segment.core) < self.settings.text_hold * self._min_pixels(segment.core) \
                or not has_text_line(segment.core, self.settings.min_line_density):
            return
        image, core = segment.keeper.median(), segment.core
        self._last_end = end_pts
        yield Segment(band=self.band_index, start=segment.start, end=end_pts,
                      frame_count=segment.keeper.seen, settled=segment.frames >= self.settings.confirm_frames,
                      before_start=segment.before_start,
                      last_shown=segment.last_shown, image=image,
                      mask_hash=mask_hash(core), mask=core,
                      lines=centred(text_lines(core, image.shape, self.settings.min_line_density), image.shape[1],
                                    self.settings.centred_lines))
