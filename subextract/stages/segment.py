"""Group consecutive frames whose subtitle band shows the same text into segments.

OCR runs once per segment, so this stage decides the OCR cost. Comparing raw band pixels (or a
perceptual hash of them) mistakes a moving background for a new subtitle, so frames are compared
through a *text mask* (``stages/mask.py``; ``stages/appearance.py`` decides how this video's
subtitles are drawn and the plane they stand out in). The mask of a subtitle stays put while the
picture behind it moves. Text that the mask loses over a bright picture is followed by how far
its known strokes still stand above their surroundings. The imagehash of the mask serves as a
quick identity, so a repeated line can reuse an earlier reading.

The segmenter is a per-frame state machine: one open segment per band, confirmed after a few
frames, closed by a change of text (a cut, an added or replaced line) or its end, with its fade
frames (``_Fading``) given back to it.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from subextract.config import SegmentSettings
from subextract.schema import Segment
from subextract.stages.mask import (BESIDE, TOLERANCE, adds_line, analysis_view, below_band_minimum, centred,
                                    exact_lost_share, fading_out, glyph_replaced, has_dense_line, has_text_line, holds_text_line,
                                    is_line_like, line_like, lost_share, mask_hash, min_text_pixels, still_shown,
                                    stroke_lift, text_lines, text_mask)

logger = logging.getLogger(__name__)

# Single frames a segment carries beside its median picture, for the OCR engine's second look at
# a line the median reads without confidence (Tesseract: 14 % of the lines of the multi-script
# videos; the most agreed of three readings cut their CER where one frame's noise misled it).
_SECOND_LOOK_FRAMES = 2


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

    def spread(self, count: int) -> tuple[np.ndarray, ...]:
        """``count`` of the kept frames spread evenly inside the run (its first and last frames
        are the likeliest to hold a fade or the next text), or none where fewer are kept."""
        kept = len(self.frames)
        if kept < count + 1:
            return ()
        return tuple(self.frames[(i + 1) * kept // (count + 1)] for i in range(count))

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
    text_changed: bool = False  # split off the segment before it where a glyph of that one's text changed
    # The latest frame's added line (_added_line), asked for twice a frame: (its mask, frames, line).
    added_memo: tuple[np.ndarray, int, np.ndarray | None] | None = None

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
        self._last: Segment | None = None  # the latest segment closed
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
        return min_text_pixels(mask.size, self.settings)

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
        has_text = strokes >= self._min_pixels(mask) or (holds_text and is_line_like(
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
                and not fading_out(current.core, mask, self.settings.fade_new_share,
                                   self.settings.fade_line_share)
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
            elif settled and (replaced := self._glyph_replaced(current, mask, pts)) is not None:
                yield from self._split_at(current, *replaced, text_changed=True)
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

    def _split_at(self, segment: _OpenSegment, start: float, before: float | None,
                  text_changed: bool = False) -> Iterator[Segment]:
        """The new text appeared at ``start`` (``before`` is the frame before it): close the old
        segment there, start the new one there."""
        carried = [frame for frame in segment.recent if frame.pts >= start]
        segment.recent = deque(frame for frame in segment.recent if frame.pts < start)
        segment.last_shown = before if before is not None else segment.start
        successor = self._new_segment(start, before)
        successor.text_changed = text_changed
        yield from self.finish(start)
        for frame in carried:
            self._add(successor, frame)
        self._open = successor

    def _track_gain(self, segment: _OpenSegment, mask: np.ndarray, pts: float) -> bool:
        """True once a line's worth of strokes absent from the core has persisted for
        ``confirm_frames`` frames."""
        added = self._added_line(segment, mask)
        if segment.gain is not None and added is not None:
            persisting = segment.gain & cv2.dilate(added.view(np.uint8), TOLERANCE).view(bool)
            if line_like(persisting, 0.5 * np.count_nonzero(segment.gain), self.settings.min_line_density):
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
        that holds and packed like it (the same text half hidden keeps only core pixels). Where
        the core's strokes are gone at their very pixels, a line among other strokes (thin
        strokes over a picture spoil the one box) holding as many as make text will do: the
        same text half hidden by a bright picture keeps most of them."""
        if exact_lost_share(mask, segment.core) < self.settings.replacement_new_share:
            return False
        own = mask & ~segment.core
        if is_line_like(own, self.settings.text_hold * self._min_pixels(mask), self.settings.min_line_density):
            return True
        return exact_lost_share(segment.core, mask) > self.settings.exact_change_threshold and \
            has_dense_line(own, self._min_pixels(mask), self.settings.min_line_density)

    def _added_line(self, segment: _OpenSegment, mask: np.ndarray) -> np.ndarray | None:
        """The line's worth of strokes ``mask`` adds to the core, unless most of them were strokes
        of this segment in several earlier frames: the part of the text a bright picture hid for
        a while (and that dropped out of the core meanwhile) coming back."""
        memo = segment.added_memo
        if memo is not None and memo[0] is mask and memo[1] == segment.frames:
            return memo[2]
        added = adds_line(segment.core, mask, self.settings)
        if added is not None and segment.votes is not None:
            returning = added & (segment.votes >= self.settings.confirm_frames)
            if np.count_nonzero(returning) >= 0.5 * np.count_nonzero(added):
                added = None
        segment.added_memo = (mask, segment.frames, added)  # the mask held: its id is not reused meanwhile
        return added

    def _absorb_gain(self, segment: _OpenSegment) -> None:
        """A segment of a frame or two whose strokes the new ones keep was the faint start of the
        same text (a fade-in): its core is made again from the frames with the added strokes."""
        for frame in segment.recent:
            if frame.pts >= segment.gain_start:
                segment.vote(frame.mask)
        segment.gain, segment.gain_frames = None, 0

    def _track_replacement(self, segment: _OpenSegment, mask: np.ndarray, pts: float) -> bool:
        """True once ``confirm_frames`` frames in a row have lost most core strokes at their exact
        pixels to strokes packed as densely as text, in one box or in one line among other strokes
        (background that shifts is sparser), and partly of their own (the same text half hidden
        by a bright picture keeps only core pixels)."""
        if exact_lost_share(segment.core, mask) <= self.settings.exact_change_threshold or \
                exact_lost_share(mask, segment.core) < self.settings.replacement_new_share or \
                not line_like(mask, self._min_pixels(mask), self.settings.min_line_density):
            segment.replaced_frames = 0
            return False
        if segment.replaced_frames == 0:
            segment.replaced_start, segment.replaced_before = pts, self._previous_pts
        segment.replaced_frames += 1
        return segment.replaced_frames >= self.settings.confirm_frames

    def _glyph_replaced(self, segment: _OpenSegment, mask: np.ndarray, pts: float) -> tuple[float, float] | None:
        """(the first frame's PTS, the PTS of the frame before it) when this frame and the ones
        before it (``confirm_frames`` in all) changed a glyph of the core at one place since the
        frame before them (``glyph_replaced``): a line replaced by one that differs in a character
        or two (a counter, a name before each line) loses too few strokes for the other tests."""
        count = self.settings.confirm_frames - 1
        frames = list(segment.recent)[-count - 1:]
        if len(frames) < count + 1 or not glyph_replaced(segment.core, frames[0].mask,
                                                         [*(frame.mask for frame in frames[1:]), mask],
                                                         self.settings.repeat_glyph_change):
            return None
        return (frames[1].pts, frames[0].pts) if count else (pts, frames[0].pts)

    def _ring(self, core: np.ndarray) -> np.ndarray:
        return cv2.dilate(core.view(np.uint8), BESIDE).view(bool) & ~core

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

    def _replaces(self, last: Segment | None, start: float, core: np.ndarray) -> bool:
        """Whether a segment starting at ``start`` with ``core`` shows another text than ``last``
        right before it: each keeps few of the other's strokes at their very pixels (a line
        moved by a character, as centred lines do when one grows). The same text split by a
        change of the picture behind keeps them, and so does its fade-in or a passing object."""
        return last is not None and last.end == start and last.mask.shape == core.shape \
            and exact_lost_share(last.mask, core) > self.settings.exact_change_threshold \
            and exact_lost_share(core, last.mask) > self.settings.exact_change_threshold

    def _close(self, end_pts: float) -> Iterator[Segment]:
        segment, self._open = self._open, None
        if segment is None or segment.core is None:
            return
        for frame in segment.recent:
            segment.keeper.offer(frame.band)
        if not segment.keeper.frames or \
                np.count_nonzero(segment.core) < self.settings.text_hold * self._min_pixels(segment.core):
            logger.info("band %d, %.2f-%.2f s: strokes seen, too few stable ones for text (raise or lower "
                        "segment.min_text_share)", self.band_index, segment.start, end_pts)
            return
        if not has_text_line(segment.core, self.settings.min_line_density):
            logger.info("band %d, %.2f-%.2f s: strokes seen, none packed like a text line (segment.min_line_density)",
                        self.band_index, segment.start, end_pts)
            return
        if below_band_minimum(np.count_nonzero(segment.core), segment.core.size, self.settings) \
                and not holds_text_line(segment.core, self.settings):
            logger.info("band %d, %.2f-%.2f s: few stable strokes, strewn: no line holds as many as the "
                        "subtitles' (segment.line_text_share)", self.band_index, segment.start, end_pts)
            return
        logger.debug("band %d, %.2f-%.2f s: segment of %d frames", self.band_index, segment.start, end_pts,
                     segment.keeper.seen)
        image, core = segment.keeper.median(), segment.core
        self._last_end = end_pts
        last = self._last
        self._last = Segment(band=self.band_index, start=segment.start, end=end_pts,
                             frame_count=segment.keeper.seen, settled=segment.frames >= self.settings.confirm_frames,
                             before_start=segment.before_start,
                             last_shown=segment.last_shown, image=image,
                             mask_hash=mask_hash(core), mask=core,
                             lines=centred(text_lines(core, image.shape, self.settings.min_line_density),
                                           image.shape[1], self.settings.centred_lines),
                             text_changed=segment.text_changed or self._replaces(last, segment.start, core),
                             frames=segment.keeper.spread(_SECOND_LOOK_FRAMES))
        yield self._last
