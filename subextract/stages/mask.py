"""The stroke mask: which pixels of a band are subtitle strokes, and how two masks compare.

A subtitle's strokes are thin and brighter than their surroundings (a white top-hat of the
stroke kernel), with a dark outline, shadow or box beside them where the video's subtitles are
drawn so; burned-in text does not move, so the mask of one subtitle stays put while the picture
behind it changes. The segmenter (``segment.py``), the boundary refinement (``boundary.py``)
and the reuse of readings (``pipeline/run.py``) all speak this vocabulary. Masks are compared
with a small dilation tolerance, written here by hand: a perceptual hash of a wide strip
squeezes each glyph into a fraction of a cell and cannot tell two subtitles of equal length apart.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import imagehash
import numpy as np
from PIL import Image

from subextract.config import SegmentSettings
from subextract.schema import LineBox
from subextract.stages.lines import line_boxes

BESIDE = cv2.getStructuringElement(cv2.MORPH_RECT, (5, 5))


TOLERANCE = cv2.getStructuringElement(cv2.MORPH_RECT, (3, 3))
# A glyph replaced in place is all that changed: its windows hold at least this share of the strokes lost and gained.
_GLYPH_CHANGE_SHARE = 0.5


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
        mask &= cv2.erode(grey, BESIDE) <= settings.dark_max
    return mask


def still_shown(core: np.ndarray, lift: np.ndarray, settings: SegmentSettings, beyond_chance: bool = False) -> bool:
    """Whether a frame still shows the core's text although its mask may not: in every line of
    the core, most strokes still stand above their surroundings (plain text over a bright sky
    keeps a small lift, too small for the mask; where the text has gone, its pixels lift no more
    than the background does). Beside a text line, rows of strokes much shorter than the tallest
    are not lines of the text (``hold_line_height``), nor are rows with no column in common with
    the line holding most strokes. With ``beyond_chance`` (a look back at a new
    text's first frames), each line's strokes count by the share lifted beyond what the picture
    lifts above and below the line (``_lifted_beside``): over a busy picture that is over half of
    any pixels, and frames before a text appeared passed as showing it. There the lines count
    together, stroke by stroke: a row of the picture's strokes the core took in (grass beside a thin
    Arabic line, whose dots make rows of their own) lifts as the picture does, and asked of each line
    the look back stopped frames short of the text's start, where its own line had jumped from 0.15
    to 0.98 lifted."""
    if not core.any():
        return False
    lifted = core & (lift >= settings.hold_contrast)
    boxes = line_boxes(core, core.shape, pad=False)
    if boxes and holds_text_line(core, settings):
        # Beside a text line, rows much shorter than the tallest, and rows wholly beside the
        # columns of the line holding most strokes, are stable strokes of the picture, which a cut
        # takes away (a row of grass to the left of a thin katakana line: its lost lift ended a cue
        # whose own line kept 146 of 149 strokes lifted). The lines of one subtitle, centred or
        # aligned at one edge, share columns. A core of picture strokes alone is judged by all its rows.
        shortest = settings.hold_line_height * max(y1 - y0 for _, y0, _, y1 in boxes)
        boxes = [box for box in boxes if box[3] - box[1] >= shortest]
        mx0, _, mx1, _ = max(boxes, key=lambda box: np.count_nonzero(core[box[1]:box[3], box[0]:box[2]]))
        boxes = [box for box in boxes if box[0] < mx1 and mx0 < box[2]]
    kept, needed = [], []  # per line: its strokes lifted, and how many must be
    for x0, y0, x1, y1 in boxes:
        chance = _lifted_beside(core, lift, (x0, y0, x1, y1), settings.hold_contrast) if beyond_chance else 0.0
        kept.append(np.count_nonzero(lifted[y0:y1, x0:x1]))
        needed.append((chance + settings.hold_share * (1 - chance)) * np.count_nonzero(core[y0:y1, x0:x1]))
    if beyond_chance:
        return bool(sum(kept) >= sum(needed))
    return all(line_kept >= line_needed for line_kept, line_needed in zip(kept, needed))


def _lifted_beside(core: np.ndarray, lift: np.ndarray, box: LineBox, contrast: int) -> float:
    """The share of the picture's pixels above and below a line (half its height each way, over
    its columns, off every stroke) that lift ``contrast``: what the picture alone lifts there
    (leaves, water: over half). Not between the line's strokes: in a dense thin glyph (a Ming
    serif) those are the glyph's own."""
    x0, y0, x1, y1 = box
    reach = max(1, (y1 - y0) // 2)
    rows = np.r_[max(0, y0 - reach):y0, y1:min(core.shape[0], y1 + reach)]
    beside = ~core[rows, x0:x1]
    return float(np.count_nonzero(beside & (lift[rows, x0:x1] >= contrast))) / max(1, np.count_nonzero(beside))


def mask_difference(a: np.ndarray, b: np.ndarray) -> float:
    """The larger share, over the two masks, of stroke pixels with no stroke of the other mask
    within one pixel. One-sided shares keep a new subtitle from hiding behind shared background."""
    a_count, b_count = int(np.count_nonzero(a)), int(np.count_nonzero(b))
    if a_count == 0 or b_count == 0:
        return 0.0 if a_count == b_count else 1.0
    a_u8, b_u8 = a.view(np.uint8), b.view(np.uint8)
    a_only = np.count_nonzero(a_u8 & ~cv2.dilate(b_u8, TOLERANCE).view(bool))
    b_only = np.count_nonzero(b_u8 & ~cv2.dilate(a_u8, TOLERANCE).view(bool))
    return max(a_only / a_count, b_only / b_count)


def glyph_changed(a: np.ndarray, b: np.ndarray, share: float) -> bool:
    """Whether some glyph-sized window of two masks has, on each side, at least ``share`` of its
    strokes at pixels the other side has none. Burned-in text does not move: two showings of one
    text differ in a few edge pixels here and there, or (part of it lost to a bright picture) on
    one side only, while one changed character ('ten' → 'tea') puts strokes of its own on both
    sides of its window, though with one pixel of tolerance one glyph may cover the other."""
    return _changed_window(a & ~b, b & ~a, a | b, share)


def glyph_replaced(core: np.ndarray, before: np.ndarray, masks: Sequence[np.ndarray], share: float,
                   lines: Sequence[LineBox], carried: np.ndarray | None = None) -> bool:
    """Whether consecutive frames (``masks``) all show a glyph of ``core`` changed at one place
    since the frame ``before`` them (``glyph_changed``): in one window on a text line of the core
    (``lines``, tight boxes), core strokes that frame had and none of them has, and strokes of
    their own that every one of them has and it had not. A single frame's mask gains and loses
    edge pixels at random, and specks of a picture drifting behind the text come and go a few at
    a time; a glyph is replaced at once. Strokes gained alone are no change (a fade-in growing,
    strokes a bright picture hid coming back), nor are strokes lost alone (a bright picture taking
    them). A stroke of the picture off the text's lines is no glyph, though it may be replaced at
    once too: footage of a lower frame rate than the video's holds each picture for a few frames,
    and a figure it moves by a step is lost at one place and found at the next. Nor are strokes
    of ``before`` the picture's motion ``carried`` to where they are now (``carried_strokes``)."""
    shown, steady = np.logical_or.reduce(masks), np.logical_and.reduce(masks)
    lost, new = core & before & ~shown, steady & ~core & ~before
    if carried is not None:
        new &= ~carried
    on_lines = _line_area(lines, core.shape)
    changed = _changed_windows(lost & on_lines, new & on_lines, core | steady, share)
    if changed is None:
        return False
    # The glyph is all that changed: a cut, or the picture moving behind the text, changes strokes
    # all over the band, some of which may pass in one window.
    return np.count_nonzero(lost & changed) >= _GLYPH_CHANGE_SHARE * np.count_nonzero(lost) \
        and np.count_nonzero(new & changed) >= _GLYPH_CHANGE_SHARE * np.count_nonzero(new)


def _line_area(lines: Sequence[LineBox], shape: tuple[int, ...]) -> np.ndarray:
    """The pixels of the tight line boxes ``lines``, widened by a line's height on each side and
    half of it above and below: a replaced glyph may reach past the old one (9 -> 10, a -> g)."""
    area = np.zeros(shape[:2], bool)
    for x0, y0, x1, y1 in lines:
        height = y1 - y0
        area[max(0, y0 - height // 2):y1 + height // 2, max(0, x0 - height):x1 + height] = True
    return area


def _changed_window(a_only: np.ndarray, b_only: np.ndarray, strokes: np.ndarray, share: float) -> bool:
    """Whether a window of the line height holds, of both ``a_only`` and ``b_only``, ``share`` of
    its ``strokes`` and 5 % of its area."""
    return _changed_windows(a_only, b_only, strokes, share) is not None


def _changed_windows(a_only: np.ndarray, b_only: np.ndarray, strokes: np.ndarray, share: float) -> np.ndarray | None:
    """The pixels of the windows ``_changed_window`` finds (None: none)."""
    if not a_only.any() or not b_only.any():
        return None
    heights = [y1 - y0 for _, y0, _, y1 in line_boxes(strokes, strokes.shape, pad=False)]
    window = (max(3, int(np.median(heights))),) * 2 if heights else (9, 9)
    counts = cv2.boxFilter(strokes.astype(np.float32), -1, window, normalize=False)
    needed = np.maximum(share * counts, 0.05 * window[0] * window[1])
    own_a = cv2.boxFilter(a_only.astype(np.float32), -1, window, normalize=False) >= needed
    own_b = cv2.boxFilter(b_only.astype(np.float32), -1, window, normalize=False) >= needed
    centres = own_a & own_b
    if not centres.any():
        return None
    return cv2.dilate(centres.view(np.uint8), np.ones(window, np.uint8)).view(bool)


def mask_hash(mask: np.ndarray) -> imagehash.ImageHash:
    return imagehash.dhash(Image.fromarray(mask.view(np.uint8) * 255), hash_size=16)


def lost_share(core: np.ndarray, mask: np.ndarray) -> float:
    """Share of the reference strokes (``core``) with no stroke of ``mask`` within one pixel
    (1.0 for an empty reference)."""
    core_count = int(np.count_nonzero(core))
    if core_count == 0:
        return 1.0
    missing = np.count_nonzero(core.view(np.uint8) & ~cv2.dilate(mask.view(np.uint8), TOLERANCE).view(bool))
    return missing / core_count


def exact_lost_share(core: np.ndarray, mask: np.ndarray) -> float:
    """Share of the reference strokes with no stroke of ``mask`` at the very same pixel. Burned-in
    text does not move, so its strokes stay put; another text of the same density in the same
    place (a two-line cue replaced by another) still keeps most strokes within one pixel, which
    ``lost_share`` forgives, but only a fraction at the same pixel."""
    core_count = int(np.count_nonzero(core))
    return np.count_nonzero(core & ~mask) / core_count if core_count else 1.0


def carried_strokes(reference: np.ndarray, reference_mask: np.ndarray, view: np.ndarray) -> np.ndarray | None:
    """``reference_mask``'s strokes where the picture's motion since ``reference`` carried them: a
    whole-picture shift of a pixel or more (phase correlation of the two analysis views); None
    where the picture did not move. Burned-in text stays put while the picture behind it pans,
    so the strokes a pan carries are the picture's."""
    if reference.shape != view.shape:
        return None
    (dx, dy), _ = cv2.phaseCorrelate(reference.astype(np.float32), view.astype(np.float32))
    if round(dx) == 0 and round(dy) == 0:
        return None
    shift = np.float32([[1, 0, round(dx)], [0, 1, round(dy)]])
    return cv2.warpAffine(reference_mask.view(np.uint8), shift, (view.shape[1], view.shape[0]),
                          flags=cv2.INTER_NEAREST, borderValue=0).view(bool)


def fading_out(core: np.ndarray, mask: np.ndarray, max_new_share: float, min_line_share: float) -> bool:
    """Whether ``mask`` is the core's text fading: (almost) no strokes of its own, and every line of
    the core still partly there, along its length (``_kept_along``). A line taken away (a two-line
    cue becoming one) keeps none of its strokes; new text brings strokes of its own."""
    count = np.count_nonzero(mask)
    if count == 0 or np.count_nonzero(added_strokes(core, mask)) > max_new_share * count:
        return False
    kept = core & cv2.dilate(mask.view(np.uint8), TOLERANCE).view(bool)
    boxes = line_boxes(core, core.shape)
    return bool(boxes) and all(_kept_along(core[y0:y1, x0:x1], kept[y0:y1, x0:x1], min_line_share)
                               for x0, y0, x1, y1 in boxes)


def _kept_along(line: np.ndarray, kept: np.ndarray, share: float) -> bool:
    """Whether a line keeps ``share`` of its strokes, and half as much of them in two of its thirds
    at least (or in each third that has strokes, where fewer have). A fade dims every glyph alike;
    text gone from beside a still bright thing of the picture that touched its line (a sheet on a
    lawn) keeps that thing's strokes in one place: a third of the core, and the cue after the gap
    was taken for the same text still fading."""
    if np.count_nonzero(kept) < share * np.count_nonzero(line):
        return False
    thirds = [(np.count_nonzero(part_kept), np.count_nonzero(part))
              for part_kept, part in zip(np.array_split(kept, 3, axis=1), np.array_split(line, 3, axis=1))]
    with_strokes = sum(total > 0 for _, total in thirds)
    return sum(total > 0 and held >= share / 2 * total for held, total in thirds) >= min(2, with_strokes)


def added_strokes(core: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Strokes of ``mask`` with no reference stroke (``core``) within one pixel."""
    return mask & ~cv2.dilate(core.view(np.uint8), TOLERANCE).view(bool)


def is_line_like(strokes: np.ndarray, min_pixels: float, min_density: float) -> bool:
    """Enough strokes, packed densely in their box, as the glyphs of a text line are (stroke-like
    background, such as the bars of a fence after a cut, spreads thinly over the whole band)."""
    count = np.count_nonzero(strokes)
    if count < min_pixels:
        return False
    ys, xs = np.nonzero(strokes)
    y0, y1 = np.percentile(ys, (5, 95))
    x0, x1 = np.percentile(xs, (5, 95))
    return 0.9 * count / ((y1 - y0 + 1) * (x1 - x0 + 1)) >= min_density


def text_lines(core: np.ndarray, picture_shape: tuple[int, int], min_density: float) -> tuple[LineBox, ...]:
    """The line boxes (in picture pixels, with the recogniser's margin) of the lines of stable
    strokes packed as densely as a text line's glyphs. Static background that passes a test with
    no outline (highlights on water, a fence) strews its strokes thinly over band-wide "lines":
    a crop of one is not worth recognising, and it would send the whole picture to the detector."""
    tight = line_boxes(core, core.shape, pad=False, join_slivers=True)
    padded = line_boxes(core, picture_shape, join_slivers=True)
    return tuple(box for tight_box, box in zip(tight, padded) if _dense(core, tight_box, min_density))


def dense_lines(core: np.ndarray, min_density: float) -> tuple[LineBox, ...]:
    """The tight boxes (in mask pixels) of the core's lines packed as densely as a text line's glyphs."""
    return tuple(box for box in line_boxes(core, core.shape, pad=False) if _dense(core, box, min_density))


def _dense(core: np.ndarray, box: LineBox, min_density: float) -> bool:
    x0, y0, x1, y1 = box
    return np.count_nonzero(core[y0:y1, x0:x1]) >= min_density * (y1 - y0) * (x1 - x0)


def centred(lines: Sequence[LineBox], width: int, tolerance: float) -> tuple[LineBox, ...]:
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
    return bool(dense_lines(core, min_density))


def min_text_pixels(size: int, settings: SegmentSettings) -> float:
    """The fewest mask pixels of a band of ``size`` pixels that make text: a share of the band; or,
    where this video's smallest subtitle line fills fewer (thin strokes: Arabic, Hangul, Thai in a
    tall band), a share of what that line fills, bounded below. A band's area says little of its
    text: a line's strokes grow with the font and the script, not with the band's height. Where
    the band's share keeps every line the pre-scan saw it stays: a lower minimum lets a bright
    picture's strokes open segments (measured: fade-ins of plain text started frames late)."""
    band = settings.min_text_share * size
    if not settings.line_strokes or settings.line_strokes >= band:
        return band
    return min(band, max(settings.min_line_strokes, settings.line_text_share * settings.line_strokes))


def lowers_minimum(size: int, settings: SegmentSettings) -> bool:
    """Whether this video's own minimum (``min_text_pixels``) is below the band's share."""
    return min_text_pixels(size, settings) < settings.min_text_share * size


def below_band_minimum(strokes: int, size: int, settings: SegmentSettings) -> bool:
    """Whether ``strokes`` count as text only by this video's own, lower minimum (``min_text_pixels``):
    fewer than the band's share asks for."""
    return strokes < settings.min_text_share * size and lowers_minimum(size, settings)


def holds_text_line(core: np.ndarray, settings: SegmentSettings) -> bool:
    """Whether one text line of the core holds as many stable strokes as make text (no more than
    text that holds asks of the whole band): the few stable strokes a static picture leaves
    (foliage, a tree's edge against the sky) are strewn over several sparse "lines", a
    subtitle's gather in its lines."""
    needed = min(min_text_pixels(core.size, settings), settings.text_hold * settings.min_text_share * core.size)
    return has_dense_line(core, needed, settings.min_line_density)


def has_dense_line(strokes: np.ndarray, min_pixels: float, min_density: float) -> bool:
    """Whether one line of ``strokes`` packed as densely as a text line's glyphs holds ``min_pixels``
    of them: a line among strokes strewn elsewhere in the band (a picture changing behind it),
    which spoil the one box of ``is_line_like``."""
    return bool(dense_lines_holding(strokes, min_pixels, min_density))


def dense_lines_holding(strokes: np.ndarray, min_pixels: float, min_density: float) -> list[LineBox]:
    """The tight boxes of the lines of ``strokes`` packed as densely as a text line's glyphs that
    hold ``min_pixels`` of them."""
    if np.count_nonzero(strokes) < min_pixels:
        return []
    return [(x0, y0, x1, y1) for x0, y0, x1, y1 in dense_lines(strokes, min_density)
            if np.count_nonzero(strokes[y0:y1, x0:x1]) >= min_pixels]


def line_like(strokes: np.ndarray, min_pixels: float, min_density: float) -> bool:
    """``is_line_like``, or one dense line holding ``min_pixels`` (``has_dense_line``)."""
    return is_line_like(strokes, min_pixels, min_density) or has_dense_line(strokes, min_pixels, min_density)


def adds_line(core: np.ndarray, mask: np.ndarray, settings: SegmentSettings) -> np.ndarray | None:
    """The strokes ``mask`` adds to ``core`` when they amount to a text line, else None. A line's
    worth is the band's share, not the video's own minimum (``min_text_pixels``): with that, a few
    strokes coming and going split a cue of the Arabic sample, and the short first part's
    misreading became the whole cue's (measured). Where the video's minimum is lower, a core with
    no text line of its own (stable strokes of the picture, held open by that minimum) takes it:
    it absorbs no subtitle (measured: a Korean cue began 1.1 s early, in the gap before it); one
    with a text line takes as many strokes as the core holds, if fewer than the band's share.
    Among strokes strewn elsewhere only the dense line is what was added."""
    added = added_strokes(core, mask)
    count, core_count = np.count_nonzero(added), np.count_nonzero(core)
    line = min_text_pixels(mask.size, settings)  # the band's share unless the video's minimum is lower
    if count < max(line, 0.25 * core_count):
        return None  # fewer strokes than any line's worth below: the core's lines need not be looked at
    if lowers_minimum(mask.size, settings) and holds_text_line(core, settings):
        # Where the video's lines fill fewer strokes than the band's share, a line of them added to
        # a core with a text line of its own counts once it holds as many strokes as that core
        # (measured: a cue that began in a gap over a few picture strokes hid its start there).
        line = min(settings.min_text_share * mask.size, max(line, core_count))
    needed = max(line, 0.25 * core_count)
    if count < needed:
        return None
    if is_line_like(added, needed, settings.min_line_density):
        return added
    # Only a line among strokes strewn elsewhere (a picture changing behind it): the line alone is
    # what was added, or the changing strokes it came with, gone the next frame, would make it
    # seem not to persist (measured: an Arabic cue began 1.3 s late).
    lines = dense_lines_holding(added, needed, settings.min_line_density)
    if not lines:
        return None
    within = np.zeros_like(added)
    for x0, y0, x1, y1 in lines:
        within[y0:y1, x0:x1] = added[y0:y1, x0:x1]
    return within
