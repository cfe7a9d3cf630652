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
from subextract.schema import LineBox, Segment
from subextract.stages.lines import line_boxes
from subextract.stages.mask import (BESIDE, TOLERANCE, adds_line, analysis_view, below_band_minimum, carried_strokes,
                                    centred, dense_lines_holding, exact_lost_share, fading_out, glyph_replaced,
                                    has_dense_line, has_text_line, holds_text_line, is_line_like, line_like, lost_share,
                                    mask_hash, min_text_pixels, still_shown, stroke_lift, text_lines, text_mask)

logger = logging.getLogger(__name__)

# A replacement is confirmed by at least this many looks at the band, not repeats of one held picture.
_REPLACEMENT_LOOKS = 2
# New text over a segment's strokes brings at least this share of the strokes the segment has in its place.
_OWN_LINE_SHARE = 0.5


# A line's strokes, however thin or strewn, fill more than 1 % of its box: the box's lift at this
# percentile is theirs.
_LINE_STROKES_PERCENTILE = 99


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
    look: bool = True  # no repeat of a moved picture (Segmenter._repeats_moved_picture)


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
    # ... and a few more, for a glyph change confirmed by looks (_glyph_replaced).
    glyph_window: deque[_Analysed] = field(default_factory=deque)
    gain: np.ndarray | None = None  # a line's worth of strokes added since ``gain_start``, present ever since
    gain_start: float = 0.0
    gain_before: float | None = None  # PTS of the frame before gain_start
    gain_frames: int = 0
    replaced_start: float = 0.0  # first of the latest frames that all lost most core strokes exactly
    replaced_before: float | None = None
    replaced_frames: int = 0
    replaced_looks: int = 0  # ... of which no repeat of a moved picture
    # ... and the frame before the first: its analysis view and mask (what a pan carried, _track_replacement)
    replaced_reference: tuple[np.ndarray, np.ndarray] | None = None
    after_gap: bool = False  # opened after a frame without text (not split off another segment)
    # The recall guard's detector saw a text line over it (Segmenter.vouch): it is text whatever its
    # strokes look like to the tests of _core_problem.
    vouched: bool = False
    area: np.ndarray | None = None  # where the guard saw the line it opened this segment for
    # ... where the mask saw no line: there strokes need only half the lift the line's own have (at
    # least what keeps text shown, hold_contrast), in every frame of the segment.
    boost: np.ndarray | None = None
    boost_lift: int = 0
    # ... and of those, the pixels the picture lifted as much in every frame before the text came (a
    # static textured wall's grain): there before the text and after it, never its strokes.
    backdrop: np.ndarray | None = None
    text_changed: bool = False  # split off the segment before it where a glyph of that one's text changed
    # The recall guard looked at it once settled (Segmenter.vouch); where it saw no line at all, it was
    # denied: strokes the text test takes for text and the detector does not (a still street, leaves),
    # kept as its core was then (the picture's strokes, before any text came).
    looked: bool = False
    denied_core: np.ndarray | None = None
    # Opened for a line the guard saw over a denied segment: that segment's strokes, the picture's own,
    # are no part of this one (its mask leaves them out, so it ends when its own strokes go).
    static: np.ndarray | None = None
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


def _rows_of(core: np.ndarray) -> np.ndarray:
    """A mask of the rows the core's lines take, each with half its height more above and below."""
    rows = np.zeros(core.shape, bool)
    for _, y0, _, y1 in line_boxes(core, core.shape, pad=False):
        reach = (y1 - y0) // 2
        rows[max(0, y0 - reach):y1 + reach] = True
    return rows


def _beside(mask: np.ndarray) -> np.ndarray:
    """``mask`` grown by the one pixel of tolerance burned-in strokes are compared with."""
    return cv2.dilate(mask.view(np.uint8), TOLERANCE).view(bool)


def _box_area(box: LineBox, scale: float, shape: tuple[int, ...], centred_within: float) -> np.ndarray:
    """A line box of the band picture as an area of its analysis view, a quarter of its height
    wider on each side (a detector's box hugs the glyphs), and made symmetric about the band's
    middle when centred within ``centred_within`` of its width (subtitles are centred: where the
    detector saw part of a faint line, the area still holds the rest)."""
    x0, y0, x1, y1 = (v * scale for v in box)
    pad = 0.25 * (y1 - y0)
    width = shape[1]
    if abs((x0 + x1) / 2 - width / 2) <= centred_within * width:
        x0, x1 = min(x0, width - x1), max(x1, width - x0)
    area = np.zeros(shape[:2], bool)
    area[max(0, int(y0 - pad)):min(shape[0], int(np.ceil(y1 + pad))),
         max(0, int(x0 - pad)):min(width, int(np.ceil(x1 + pad)))] = True
    return area


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
        self._vouch: list[LineBox] = []  # lines the recall guard saw in the next frame, in band pixels
        self._looked = False  # the recall guard looked at the next frame (whether it saw lines or not)
        self._held = False  # the latest frame held the open segment on its strokes' lift alone
        self._moved = False  # the latest frame that differed from the one before it moved the picture
        self._repeat = False  # this frame repeats the one before it after a moved picture (_repeats_moved_picture)
        # The latest frame's analysis view and its mask as the open segment's tests saw it (what a pan carried).
        self._last_frame: tuple[np.ndarray, np.ndarray] | None = None
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

    @property
    def sure(self) -> bool:
        """Whether the open segment is text the mask sees well: settled, shown by the latest
        frame's mask, and with a text line of its own (or vouched for by the recall guard).
        Anything else (no segment, one still settling, held on its strokes' lift, or strokes
        with no text line) is where the recall guard looks, and so is a settled segment until the
        guard has looked at it once, and for as long as it saw no line over it."""
        current = self._open
        if current is None or current.core is None or current.frames < self.settings.confirm_frames or self._held:
            return False
        return current.vouched or (current.looked and current.denied_core is None
                                   and self._core_problem(current.core) is None)

    def vouch(self, boxes: Sequence[LineBox]) -> None:
        """Text lines the recall guard's detector saw in the next frame to be pushed, in the pixels
        of its band picture: where no segment covers one, a segment opens there."""
        self._vouch = list(boxes)
        self._looked = True

    def _text_in(self, mask: np.ndarray) -> tuple[bool, bool]:
        """(has_text, holds_text): whether ``mask`` holds strokes enough to open a segment, and
        to go on with one (hysteresis: a short line whose mask hovers at the threshold must not
        end and restart)."""
        strokes = np.count_nonzero(mask)
        holds_text = strokes >= self.settings.text_hold * self._min_pixels(mask)
        # Fewer strokes than the minimum still make text when packed like a line's glyphs (a few
        # short words in a tall band), also where a busy picture strews strokes elsewhere in the
        # band (a six-glyph serif line over a speckled texture: 220 strokes in one dense line, the
        # band's minimum 253, the specks spoiling the one box of ``is_line_like``).
        has_text = strokes >= self._min_pixels(mask) or (holds_text and line_like(
            mask, self.settings.text_hold * self._min_pixels(mask), self.settings.min_line_density))
        return has_text, holds_text

    def push(self, pts: float, band: np.ndarray, mask_band: np.ndarray | None = None) -> Iterator[Segment]:
        """Take the next frame's band; ``mask_band``, the same band in the plane the text stands
        out in, when that is not the band's own (the band still makes the OCR picture)."""
        view = analysis_view(band if mask_band is None else mask_band, self.settings.analysis_width)
        self._repeat = self._repeats_moved_picture(view)
        lift = stroke_lift(view, self.settings)
        plain = text_mask(view, self.settings, lift)
        has_text, holds_text = self._text_in(plain)
        if self._fading is not None:
            yield from self._follow_fade(pts, view, text_follows=has_text)
        if self._looked:
            yield from self._take_vouch(pts, band.shape[1], view, lift, plain)
        current = self._open
        if current is not None and current.static is not None:
            plain = plain & ~current.static
            has_text, holds_text = self._text_in(plain)
        mask = plain
        if current is not None and current.boost is not None:
            mask = plain | (self._boosted(current) & (lift >= current.boost_lift))
        if current is not None and current.area is not None:
            # The guard's line goes on while its area holds a line's worth of strokes.
            holds_text = holds_text or np.count_nonzero(mask & current.area) >= self.settings.min_line_strokes
        if current is not None and current.frames >= self.settings.confirm_frames and not current.vouched \
                and np.count_nonzero(current.core) < self.settings.text_hold * self._min_pixels(mask):
            # Many strokes, too few of them stable to be text: passing background (plain-text
            # videos have no outline test to keep it out). It is no segment; text may start now.
            self._open = current = None
            mask = plain
        held = False
        if current is not None and current.core is not None:  # (a segment the guard opened in this frame has none)
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
                if settled or lost_share(current.core, mask) > self.settings.change_threshold \
                        or exact_lost_share(current.core, mask) > self.settings.exact_change_threshold:
                    yield from self._split_at(current, current.gain_start, current.gain_before)
                else:
                    self._absorb_gain(current)
            elif settled and self._track_replacement(current, mask, view, pts):
                yield from self._split_at(current, current.replaced_start, current.replaced_before)
            elif settled and (replaced := self._glyph_replaced(current, mask, view, pts)) is not None:
                yield from self._split_at(current, *replaced, text_changed=True)
        self._held = held
        opened = self._open
        if opened is not None and opened.core is None and not holds_text:
            self._open = opened = None  # the guard's line, gone before its segment took a frame
        if not held and (has_text or (holds_text and opened is not None)):
            if opened is None:
                opened = self._open = self._new_segment(pts, self._previous_pts)
                opened.after_gap = True
            # The text that went on (or its successor in the guard's area) keeps its own test;
            # text that starts here is seen by the mask's.
            self._add(opened, _Analysed(pts, band, mask if opened.boost is not None else plain, not self._repeat))
            if opened.frames == self.settings.confirm_frames:
                self._trim_start(opened)
                if opened.after_gap:
                    self._look_back(opened, view)
                self._find_backdrop(opened)
        self._views.append((pts, view))
        self._last_frame = view, mask
        self._previous_pts = pts

    def _take_vouch(self, pts: float, band_width: int, view: np.ndarray, lift: np.ndarray,
                    plain: np.ndarray) -> Iterator[Segment]:
        """Act on the lines the recall guard saw in this frame. A line the open segment's core
        holds as a line of its own (not specks strewn over its place) vouches for that segment;
        so does one over which its core holds a line's worth of strokes, strewn: the same text,
        seen weakly by the mask (ending the segment there cut a cue's first frames off). A line
        where its core holds no such strokes ends it, and a segment of the guard's opens here (a
        segment still settling becomes one instead). Where the mask sees no line there, the
        segment's strokes need only half the lift of the line's own (``_OpenSegment.boost``).

        A settled segment the text test is sure of is only checked: vouched for by a line over
        its core's line, or denied where the detector saw no line at all (lines elsewhere are
        left to the mask, as before the guard looked), unless its core has no strokes on any line
        the guard saw and the frame's mask a line of its own on one: that core is the picture's,
        and the line new text over it. Over a denied segment, a line that brings
        strokes of its own is new text over the picture's strokes (a note over a still street adds
        a tenth of the street's strokes, too few for the mask to split): the segment ends, and the
        line's segment leaves those strokes out."""
        boxes, self._vouch, self._looked = self._vouch, [], False
        current = self._open
        settled = current is not None and current.core is not None \
            and current.frames >= self.settings.confirm_frames
        # The text test is sure of it; the guard looks only to vouch for it or deny it (once, and
        # then as long as it is denied), so lines elsewhere change nothing, as before it looked
        # (ending a denied segment at a line elsewhere split a Thai cue, its second half read as nothing).
        checked_only = settled and not current.vouched and not self._held \
            and self._core_problem(current.core) is None
        if settled:
            current.looked = True
        scale = view.shape[1] / band_width
        static = None
        lines = [_box_area(box, scale, view.shape, self.settings.centred_lines) for box in boxes]
        if checked_only and lines and not any(self._has_strokes_on(current.core, line) for line in lines) \
                and any(self._brings_own_line(current.core, plain, line) for line in lines):
            # The guard saw lines, the core has no strokes on any of them, and this frame's mask a
            # line of its own on one: the core is the picture's (a tripod, a sheet on a lawn, passing
            # as text), and that line new text over it (a cue over a still lawn began 0.44 s late, at
            # the next cut). As over a denied segment, the line's segment leaves those strokes out
            # and looks back over the frames that already showed it. (A line the mask does not see,
            # translucent text over snow beside the snow's strokes, says nothing against the core.)
            checked_only = False
            static = _beside(current.core)
        area, boost = np.zeros(view.shape, bool), np.zeros(view.shape, bool)
        new_text = False
        for line in lines:
            if current is not None and current.denied_core is not None \
                    and self._has_strokes_on(current.denied_core, line) \
                    and self._brings_own_line(current.denied_core, plain, line):
                # The core as it was denied: text that came since (the detector missing it at first)
                # has voted into the core, and must not be left out of its own segment.
                static = _beside(current.denied_core)
            elif current is not None and current.core is not None and has_dense_line(
                    current.core & line, self.settings.min_line_strokes, self.settings.min_line_density):
                current.vouched = True
                continue
            elif checked_only:
                continue
            area |= line
            if not has_dense_line(plain & line, self.settings.min_line_strokes, self.settings.min_line_density):
                boost |= line
            new_text = new_text or current is None or current.core is None or static is not None \
                or not self._has_strokes_on(current.core, line)
        if settled and not boxes and not current.vouched and current.denied_core is None:
            # A line elsewhere says nothing of these strokes (the detector may see translucent text
            # the mask missed beside a core of the picture's): only a look that saw none denies them.
            current.denied_core = current.core.copy()
        if not area.any():
            return
        if new_text and (current is None or current.frames >= self.settings.confirm_frames):
            if current is not None:
                yield from self._end(pts, view, text_follows=True)
            logger.debug("band %d, %.2f s: the recall guard saw a text line no segment holds: a segment opens",
                         self.band_index, pts)
            current = self._open = self._new_segment(pts, self._previous_pts)
            current.after_gap = True
            current.static = static
        current.vouched = True
        current.area = area if current.area is None else current.area | area
        if boost.any():
            current.boost = boost if current.boost is None else current.boost | boost
            # The line's strokes are the most lifted pixels of its area; a static picture behind it
            # (a textured wall, grain) lifts less and must not become part of its text.
            current.boost_lift = max(self.settings.hold_contrast,
                                     int(np.percentile(lift[current.boost], _LINE_STROKES_PERCENTILE)) // 2)
            if current.frames >= self.settings.confirm_frames:
                self._find_backdrop(current)

    def _brings_own_line(self, core: np.ndarray, plain: np.ndarray, line: np.ndarray) -> bool:
        """Whether this frame's mask holds a dense line of strokes off the core's pixels in
        ``line``, with at least ``_OWN_LINE_SHARE`` of the strokes the core has there: a note over
        a still street brings about as many as the street has in its place (0.8-1.1 measured),
        while the strokes of the core's own text that it had not kept (thin Thai strokes over a
        changing picture) are a tenth of them: taken for new text, they split a cue, and its
        second part, without the core's strokes, read as nothing."""
        needed = max(self.settings.min_line_strokes, _OWN_LINE_SHARE * np.count_nonzero(core & line))
        return has_dense_line(plain & line & ~_beside(core), needed, self.settings.min_line_density)

    def _has_strokes_on(self, core: np.ndarray, line: np.ndarray) -> bool:
        """Whether ``core`` holds a line's worth of strokes (strewn or not) in the area ``line``."""
        return np.count_nonzero(core & line) >= self.settings.min_line_strokes

    @staticmethod
    def _boosted(segment: _OpenSegment) -> np.ndarray:
        """Where the segment's strokes need only its guard line's lift: its boost less its backdrop."""
        return segment.boost if segment.backdrop is None else segment.boost & ~segment.backdrop

    def _find_backdrop(self, segment: _OpenSegment) -> None:
        """Once a guard's segment knows its start: the pixels of its boost that lifted at least
        ``boost_lift`` in every frame kept from before the start (since the latest segment's end,
        ``confirm_frames`` of them at least) are the picture's own (grain of a static wall: a
        translucent line's strokes may stand barely twice as far out as it does, and hold_contrast
        floors the lift). They held the line on the bare wall to the shot's end; they are no part
        of its text, so they leave its votes too. A moving picture lifts other pixels in each
        frame and keeps (almost) none."""
        if segment.boost is None or segment.votes is None:
            return
        before = [frame for pts, frame in self._views
                  if pts < segment.start and (self._last_end is None or pts >= self._last_end)]
        if len(before) < self.settings.confirm_frames:
            # As for any decision of the segmenter, fewer frames are no evidence: the look back
            # may have stopped a frame short of a text that was there from the first frame.
            return
        backdrop = segment.boost.copy()
        for frame in before:
            backdrop &= stroke_lift(frame, self.settings) >= segment.boost_lift
        segment.backdrop = backdrop
        segment.votes[backdrop] = 0
        segment.core = segment.votes * 2 >= segment.frames

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
        segment.glyph_window.append(frame)
        while len(segment.glyph_window) > 2 * self.settings.confirm_frames:
            segment.glyph_window.popleft()

    def _split_at(self, segment: _OpenSegment, start: float, before: float | None,
                  text_changed: bool = False) -> Iterator[Segment]:
        """The new text appeared at ``start`` (``before`` is the frame before it): close the old
        segment there, start the new one there."""
        carried = [frame for frame in segment.recent if frame.pts >= start]
        segment.recent = deque(frame for frame in segment.recent if frame.pts < start)
        segment.last_shown = before if before is not None else segment.start
        successor = self._new_segment(start, before)
        successor.text_changed = text_changed
        # The guard's line keeps its test.
        successor.vouched, successor.area = segment.vouched, segment.area
        successor.boost, successor.boost_lift, successor.backdrop = segment.boost, segment.boost_lift, segment.backdrop
        successor.static = segment.static
        yield from self.finish(start)
        for frame in carried:
            self._add(successor, frame)
        self._open = successor

    def _repeats_moved_picture(self, view: np.ndarray) -> bool:
        """Whether this frame repeats the one before it (no pixel differs by more than
        ``held_noise``), the last change of the picture having moved more than ``held_moved_share``
        of it. Footage of a lower frame rate than the video's holds each picture two or three
        frames: such a repeat is no new look at the band (``_track_replacement``: over sunlit rock,
        whose texture passes the outline test, one cue was split every 0.24 s: each step of a slow
        pan changed 41 % of the band's pixels, and the identical frames after it confirmed a
        replacement). Text changed over a still picture changes only its own pixels (a few percent
        of the band): the frames that repeat it are looks, as before."""
        if not self._views or self._views[-1][1].shape != view.shape:
            self._moved = False
            return False
        changed = np.count_nonzero(cv2.absdiff(self._views[-1][1], view) > self.settings.held_noise)
        if not changed:
            return self._moved
        self._moved = changed > self.settings.held_moved_share * view.size
        return False

    def _track_gain(self, segment: _OpenSegment, mask: np.ndarray, pts: float) -> bool:
        """True once a line's worth of strokes absent from the core has persisted for
        ``confirm_frames`` frames."""
        added = self._added_line(segment, mask)
        if segment.gain is not None and added is not None:
            persisting = segment.gain & _beside(added)
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
        if exact_lost_share(segment.core, mask) <= self.settings.exact_change_threshold:
            return False
        # A busy picture's strokes in every row of the band join all of them into one sparse
        # "line": the text that replaced the core in place is looked for in the core's own rows
        # too (a forest behind a top line hid a new cue for 1.6 s).
        return has_dense_line(own, self._min_pixels(mask), self.settings.min_line_density) or \
            has_dense_line(own & _rows_of(segment.core), self._min_pixels(mask), self.settings.min_line_density)

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

    def _track_replacement(self, segment: _OpenSegment, mask: np.ndarray, view: np.ndarray, pts: float) -> bool:
        """True once ``confirm_frames`` frames in a row have lost most core strokes at their exact
        pixels to strokes packed as densely as text, in one box or in one line among other strokes
        (background that shifts is sparser), and partly of their own (the same text half hidden
        by a bright picture keeps only core pixels). Two of those frames at least must be no
        repeat of a moved picture (``_repeats_moved_picture``): three frames of one held picture
        are one look, and over sunlit rock the texture a held step of a pan had moved confirmed a
        "replacement" of the same text every 0.24 s. Nor may the picture's motion since the frame
        before the first have carried nearly all of the new strokes there, leaving no line of
        text (``_carried_by_pan``): a core made of a young segment's frames holds the picture's
        strokes too, and a pan of stroke-like texture (foliage, a panned still) took them away and
        brought others, a "replacement" at every step of the pan (the held-out Thai over a panned
        forest: seven segments for one cue; 99 % of the new strokes were the frame before's,
        moved; of text replaced over a pan or a cut at most 45 %)."""
        if exact_lost_share(segment.core, mask) <= self.settings.exact_change_threshold or \
                exact_lost_share(mask, segment.core) < self.settings.replacement_new_share or \
                not line_like(mask, self._min_pixels(mask), self.settings.min_line_density):
            segment.replaced_frames = segment.replaced_looks = 0
            return False
        if segment.replaced_frames == 0:
            segment.replaced_start, segment.replaced_before = pts, self._previous_pts
            segment.replaced_reference = self._last_frame
        if self._carried_by_pan(mask & ~segment.core, view, segment.replaced_reference):
            segment.replaced_frames = segment.replaced_looks = 0
            return False
        segment.replaced_frames += 1
        segment.replaced_looks += not self._repeat
        return segment.replaced_frames >= self.settings.confirm_frames and \
            segment.replaced_looks >= min(_REPLACEMENT_LOOKS, self.settings.confirm_frames)

    def _glyph_replaced(self, segment: _OpenSegment, mask: np.ndarray, view: np.ndarray,
                        pts: float) -> tuple[float, float] | None:
        """(the first frame's PTS, the PTS of the frame before it) when this frame and the ones
        before it (``confirm_frames`` in all, two looks among them at least, as for
        ``_track_replacement``) changed a glyph of the core at one place since the frame before them
        (``glyph_replaced``): a line replaced by one that differs in a character or two (a counter,
        a name before each line) loses too few strokes for the other tests. Repeats of a held
        picture lengthen the frames taken: over sunlit rock in footage holding each picture three
        frames, a step of the pan and its two repeats "changed a glyph" every 0.12 s. Strokes the
        pan carried since the frame before them are no new glyph (``carried_strokes``)."""
        needed = min(_REPLACEMENT_LOOKS, self.settings.confirm_frames)
        earlier = list(segment.glyph_window)
        confirming, looks = [mask], int(not self._repeat)
        while earlier and (len(confirming) < self.settings.confirm_frames or looks < needed):
            frame = earlier.pop()
            confirming.insert(0, frame.mask)
            looks += frame.look
        if not earlier or looks < needed or len(confirming) < self.settings.confirm_frames:
            return None
        lines = dense_lines_holding(segment.core, self._min_pixels(segment.core), self.settings.min_line_density)
        before = earlier[-1]
        if not glyph_replaced(segment.core, before.mask, confirming, self.settings.repeat_glyph_change, lines):
            return None
        # Asked only of a change found: a phase correlation every frame would cost more than the test.
        before_view = next((seen for at, seen in reversed(self._views) if at == before.pts), None)
        carried = carried_strokes(before_view, before.mask, view) if before_view is not None else None
        if carried is not None and not glyph_replaced(segment.core, before.mask, confirming,
                                                      self.settings.repeat_glyph_change, lines, carried):
            return None
        first = segment.glyph_window[len(earlier)].pts if len(confirming) > 1 else pts
        return first, earlier[-1].pts

    def _carried_by_pan(self, new: np.ndarray, view: np.ndarray,
                        reference: tuple[np.ndarray, np.ndarray] | None) -> bool:
        """Whether the picture's motion since ``reference`` carried nearly all of the ``new`` strokes
        (``replacement_carried_share``) and those it did not carry hold no line of text. A fade-in
        over a picture drifting by under a pixel, rounded to one, still leaves a sixth of its
        strokes uncarried; a pan of texture, a thousandth."""
        carried = carried_strokes(*reference, view) if reference is not None else None
        if carried is None:
            return False
        count = np.count_nonzero(new)
        return count > 0 and np.count_nonzero(new & carried) >= self.settings.replacement_carried_share * count \
            and not line_like(new & ~carried, self._min_pixels(new), self.settings.min_line_density)

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
        # Text over a denied segment's strokes began while that segment was open: its frames show it.
        earlier = [(pts, frame) for pts, frame in reversed(self._views) if pts < segment.start
                   and (self._last_end is None or pts >= self._last_end or segment.static is not None)]
        shown = 0
        while shown < len(earlier) and still_shown(segment.core, stroke_lift(earlier[shown][1], self.settings),
                                                   self.settings, beyond_chance=True):
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

    def _lines(self, segment: _OpenSegment, picture_shape: tuple[int, ...]) -> tuple[LineBox, ...]:
        """The segment's text lines in its picture: its core's, and the areas of the lines the
        recall guard saw where the core has none (there it holds only what stood out of them).
        A guard's line over a core line adds nothing: the core's box is the whole line (a small
        box the detector found inside a two-line cue had replaced both lines: one word read)."""
        lines = centred(text_lines(segment.core, picture_shape, self.settings.min_line_density), picture_shape[1],
                        self.settings.centred_lines)
        if segment.boost is None:
            return lines
        guarded = [box for box in line_boxes(segment.boost, picture_shape[:2], pad=False)
                   if not any(box[1] < y1 and y0 < box[3] for _, y0, _, y1 in lines)]
        return tuple(sorted((*lines, *guarded), key=lambda box: box[1]))

    def _core_problem(self, core: np.ndarray) -> str | None:
        """Why stable strokes are no text (a segment with them is not read), or None."""
        if np.count_nonzero(core) < self.settings.text_hold * self._min_pixels(core):
            return "strokes seen, too few stable ones for text (raise or lower segment.min_text_share)"
        if not has_text_line(core, self.settings.min_line_density):
            return "strokes seen, none packed like a text line (segment.min_line_density)"
        if below_band_minimum(np.count_nonzero(core), core.size, self.settings) \
                and not holds_text_line(core, self.settings):
            return "few stable strokes, strewn: no line holds as many as the subtitles' (segment.line_text_share)"
        return None

    def _close(self, end_pts: float) -> Iterator[Segment]:
        segment, self._open = self._open, None
        if segment is None or segment.core is None:
            return
        for frame in segment.recent:
            segment.keeper.offer(frame.band)
        problem = "no frame kept" if not segment.keeper.frames else self._core_problem(segment.core)
        if problem is not None and not (segment.vouched and segment.keeper.frames
                                        and np.count_nonzero(segment.core) >= self.settings.min_line_strokes):
            logger.info("band %d, %.2f-%.2f s: %s", self.band_index, segment.start, end_pts, problem)
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
                             lines=self._lines(segment, image.shape),
                             text_changed=segment.text_changed or self._replaces(last, segment.start, core),
                             frames=segment.keeper.spread(self.settings.second_look_frames))
        yield self._last
