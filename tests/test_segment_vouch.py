"""The segmenter's decisions on the lines the recall guard vouches for (``Segmenter.vouch``), pinned
to the frame on synthetic 25 fps bands: a line no segment holds ends a settled segment and opens
one of its own there, a still-settling segment becomes the guard's instead, the guard's line is
one of the segment's lines (in their order down the band), and its area of the analysis view is
the detector's box padded and centred. ``test_guard.py`` has the guard's own side."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from test_guard import sky
from test_segment import SETTINGS, _fill, _outline, background

from subextract.stages.mask import stroke_lift, text_mask
from subextract.stages.segment import Segmenter, _box_area

FPS = 25


def frame_number(pts: float | None) -> int | None:
    return None if pts is None else round(pts * FPS)


def segments(pictures, vouches: dict[int, list]) -> list[tuple]:
    """(start, end, frame before the start, last frame shown, lines) of each segment, in frames;
    ``vouches``: frame index -> the line boxes the guard saw in it."""
    segmenter = Segmenter(0, SETTINGS)
    out = []
    for n, picture in enumerate(pictures):
        if n in vouches:
            segmenter.vouch(vouches[n])
        out.extend(segmenter.push(n / FPS, picture))
    out.extend(segmenter.finish(len(pictures) / FPS))
    return [(frame_number(s.start), frame_number(s.end), frame_number(s.before_start), frame_number(s.last_shown),
             s.lines) for s in out]


def yielded_at(pictures, vouches: dict[int, list]) -> list[int]:
    """The frame whose push yielded each segment (the video's end for the finish)."""
    segmenter = Segmenter(0, SETTINGS)
    frames = []
    for n, picture in enumerate(pictures):
        if n in vouches:
            segmenter.vouch(vouches[n])
        frames += [n for _ in segmenter.push(n / FPS, picture)]
    return frames + [len(pictures) for _ in segmenter.finish(len(pictures) / FPS)]


def box_of(fill: np.ndarray) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(fill)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


FAINT_LINE = _fill("GOOD NIGHT", 25)
FAINT_BOX = box_of(FAINT_LINE)  # what the detector would report for it


def bright(i: int, text: bool, faint: bool) -> np.ndarray:
    """A bright drifting picture with an outlined line at the bottom (``text``) and, above it, a
    half-transparent white line that the stroke mask cannot see (``faint``)."""
    picture = sky(i)
    if text:
        fill = _fill("HELLO WORLD", 68)
        picture[_outline(fill)] = 0
        picture[fill] = 250
    if faint:
        picture[FAINT_LINE] = np.round(0.5 * picture[FAINT_LINE] + 0.5 * 255).astype(np.uint8)
    return picture


TEXT_LINE = (208, 37, 432, 78)  # the outlined line's box in the segment's picture
TEXT_BOX = box_of(_fill("HELLO WORLD", 68))  # ... and the detector's
GUARD_LINE = (222, 0, 418, 32)  # the guard's area of the faint line, as a line of the picture


def test_the_faint_line_is_invisible_to_the_mask_and_the_outlined_one_is_not():
    assert np.count_nonzero(text_mask(bright(0, text=False, faint=True), SETTINGS)) == 0
    assert segments([bright(i, text=5 <= i < 35, faint=20 <= i < 35) for i in range(40)], {}) == \
        [(5, 35, 4, 34, (TEXT_LINE,))]


@pytest.mark.parametrize("seen", [8, 22])
def test_a_line_no_settled_segment_holds_ends_it_and_opens_a_segment_where_the_guard_saw_it(seen):
    """The faint line appears at frame 5 or 20 over text settled since frame 7 (confirm_frames
    after 5) and vouched for at frame 7; the guard sees it at frame 8 or 22: the text's segment
    ends there, yielded at once (the text goes on: no fade-out to wait for), and the next, with both
    lines, starts there (it looks back no further than the end of the segment before it). Over a
    segment the text test is sure of and no line has vouched for, the guard's look only checks it:
    the faint line changes nothing (a translucent line over snow beside a core of the picture's
    strokes was cut into 3-frame segments so)."""
    pictures = [bright(i, text=5 <= i < 35, faint=(5 if seen == 8 else 20) <= i < 35) for i in range(40)]
    vouches = {7: [TEXT_BOX], seen: [FAINT_BOX]}
    assert segments(pictures, vouches) == [(5, seen, 4, seen - 1, (TEXT_LINE,)),
                                           (seen, 35, seen - 1, 34, (GUARD_LINE, TEXT_LINE))]
    assert yielded_at(pictures, vouches) == [seen, 35]
    assert segments(pictures, {seen: [FAINT_BOX]}) == [(5, 35, 4, 34, (TEXT_LINE,))]


@pytest.mark.parametrize("seen", [5, 7])
def test_a_segment_still_settling_becomes_the_guards(seen):
    """Both lines from frame 5, the guard's seen in the segment's first frame or its last before it
    settles (confirm_frames): one segment, not cut where the guard looked."""
    pictures = [bright(i, text=5 <= i < 35, faint=5 <= i < 35) for i in range(40)]
    assert segments(pictures, {seen: [FAINT_BOX]}) == [(5, 35, 4, 34, (GUARD_LINE, TEXT_LINE))]


def test_two_lines_the_guard_saw_in_turn_are_both_the_segments():
    """Two faint lines; the guard vouches for one in the segment's first frame and for the other
    in its second: the segment holds both, each strengthened where the mask sees nothing."""
    lower = _fill("HELLO WORLD", 68)

    def picture(i: int, shown: bool) -> np.ndarray:
        out = sky(i)
        if shown:
            for fill in (FAINT_LINE, lower):
                out[fill] = np.round(0.5 * out[fill] + 0.5 * 255).astype(np.uint8)
        return out

    pictures = [picture(i, 5 <= i < 35) for i in range(40)]
    assert segments(pictures, {}) == []
    assert segments(pictures, {5: [FAINT_BOX], 6: [box_of(lower)]}) == \
        [(5, 35, 4, 34, (GUARD_LINE, (211, 41, 429, 75)))]


def test_a_line_gone_before_its_segment_took_a_frame_leaves_the_next_text_its_own_start():
    """The guard saw a line in a frame whose next shows nothing there: no segment; text from frame
    20 starts at 20, not where the guard looked."""
    pictures = [bright(i, text=20 <= i < 35, faint=False) for i in range(40)]
    assert segments(pictures, {10: [FAINT_BOX]}) == [(20, 35, 19, 34, (TEXT_LINE,))]


def test_a_static_textured_wall_behind_a_guard_line_does_not_hold_it():
    """White text without the outline this video's text has (the mask cannot see it) over a
    static textured wall: its strokes stand ~120 levels out, the wall's grain less than half as
    much. The guard's line is held by strokes half as lifted as its own, so the grain is no part
    of it and the line ends with the text."""
    wall = np.clip(130 + np.random.default_rng(5).normal(0, 12, (80, 640)), 0, 255).astype(np.uint8)

    def picture(shown: bool) -> np.ndarray:
        out = wall.copy()
        if shown:
            out[FAINT_LINE] = 230
        return out

    pictures = [picture(5 <= i < 35) for i in range(50)]
    assert np.count_nonzero(text_mask(picture(True), SETTINGS)) == 0
    assert [segment[:2] for segment in segments(pictures, {8: [FAINT_BOX]})] == [(5, 35)]


GRAINY_WALL = np.clip(200 + np.random.default_rng(3).normal(0, 6, (80, 640)), 0, 255).astype(np.uint8)


def on_grainy_wall(shown: bool) -> np.ndarray:
    """The static bright wall with grain and, when ``shown``, the half-transparent white line over it."""
    out = GRAINY_WALL.copy()
    if shown:
        out[FAINT_LINE] = np.round(0.5 * out[FAINT_LINE] + 0.5 * 255).astype(np.uint8)
    return out


@pytest.mark.parametrize("start, seen", [(5, 8), (5, 20), (3, 8)])
def test_a_static_grainy_white_wall_behind_a_translucent_guard_line_does_not_hold_it(start, seen):
    """Half-transparent white text over a static bright wall with grain: the strokes stand ~30
    levels out, barely twice the grain's own lift, so hundreds of the wall's grain pixels clear
    the guard line's hold (``boost_lift``, at least ``hold_contrast``). Those pixels lift as much
    in the frames before the text appeared (confirm_frames of them are enough: from frame 3): they
    are the wall's, not the text's, and the line ends with the text (frame 35), not on the wall's
    grain at the shot's end (50)."""
    pictures = [on_grainy_wall(start <= i < 35) for i in range(50)]
    assert np.count_nonzero(text_mask(on_grainy_wall(True), SETTINGS)) == 0
    area = _box_area(FAINT_BOX, 1.0, GRAINY_WALL.shape, SETTINGS.centred_lines)
    grain = area & (stroke_lift(GRAINY_WALL, SETTINGS) >= SETTINGS.hold_contrast)
    assert np.count_nonzero(grain) >= 5 * SETTINGS.min_line_strokes  # the bare wall alone would hold a line
    # The line's box is the guard's area, as over a clean picture (the grain in the core made it wider).
    assert segments(pictures, {seen: [FAINT_BOX]}) == [(start, 35, start - 1, 34, (GUARD_LINE,))]


@pytest.mark.parametrize("end", [11, 12])
def test_a_short_guard_line_on_a_grainy_wall_keeps_no_grain_in_its_strokes(end):
    """A cue of six or seven frames, vouched for at its fourth: the wall's grain voted in the frames
    before the segment settled (frame 10), and would still be half its strokes at its end (a box
    wider than the line); once known as the wall's, those votes go, and the core with them at
    once (a cue gone in the next frame closes on it)."""
    pictures = [on_grainy_wall(5 <= i < end) for i in range(40)]
    assert segments(pictures, {8: [FAINT_BOX]}) == [(5, end, 4, end - 1, (GUARD_LINE,))]


@pytest.mark.parametrize("change", [20, 50])
def test_a_guard_line_replaced_in_place_on_a_grainy_wall_ends_with_its_successor(change):
    """Two translucent cues in turn at one place of the grainy wall, the guard seeing only the
    first: the second is split off the first and keeps its line's backdrop, so it ends with its
    text too. The frames since the first's start are no evidence of the wall: where the first
    outlasts the frames kept (from frame 50), sought again over them, the backdrop would hold its
    strokes and take the second's where they meet (a box a pixel short)."""
    other = _fill("SEE YOU SOON", 25)
    end = change + 15

    def picture(i: int) -> np.ndarray:
        out = GRAINY_WALL.copy()
        fill = FAINT_LINE if 5 <= i < change else other if change <= i < end else None
        if fill is not None:
            out[fill] = np.round(0.5 * out[fill] + 0.5 * 255).astype(np.uint8)
        return out

    assert segments([picture(i) for i in range(end + 15)], {8: [FAINT_BOX]}) == \
        [(5, change, 4, change - 1, (GUARD_LINE,)), (change, end, change - 1, end - 1, ((216, 0, 424, 32),))]


def test_a_guard_line_shown_from_the_first_frame_keeps_its_strokes():
    """The faint line over the drifting sky from the video's first frame; the look back stops a frame
    short of it (frame 0 is too bright to show it). One frame before the start is no evidence of
    the picture's own strokes: taken as such, they were the text's and split the line at frame 6."""
    def picture(i: int) -> np.ndarray:
        out = sky(i).astype(np.float32)
        out[FAINT_LINE] = 0.4 * 255 + 0.6 * out[FAINT_LINE]
        return np.round(out).astype(np.uint8)

    found = segments([picture(i) if i < 35 else sky(i) for i in range(40)], {3: [FAINT_BOX]})
    assert [segment[4] for segment in found] == [(GUARD_LINE,)]


def test_a_guard_line_the_core_holds_strewn_is_one_of_the_segments_lines_in_order_down_the_band():
    """Bars strewn along a line at the top right (the mask sees them, no text line) beside text at
    the bottom: vouched for, they are a line of the segment, above the text's, whenever the guard
    saw them; the guard's area is as the detector saw it (not centred: far right of the middle)."""
    def picture() -> np.ndarray:
        out = background(0, "flat").copy()
        fill = _fill("HELLO WORLD", 68)
        out[_outline(fill)] = 0
        out[fill] = 250
        for x in range(390, 600, 30):
            cv2.line(out, (x, 8), (x, 22), 250, 1)
        return out

    pictures = [picture() if 5 <= i < 35 else background(0, "flat") for i in range(40)]
    text_line = (211, 41, 429, 75)
    assert segments(pictures, {}) == [(5, 35, 4, 34, (text_line,))]
    # Seen while the segment settles, or after a line of its own vouched for it (a look at a segment
    # the text test is sure of and nothing vouched for only checks it).
    for vouches in ({5: [(380, 5, 610, 25)]}, {8: [box_of(_fill("HELLO WORLD", 68))], 12: [(380, 5, 610, 25)]}):
        assert segments(pictures, vouches) == [(5, 35, 4, 34, ((375, 0, 615, 30), text_line))]


def rows_and_columns(area: np.ndarray) -> tuple[int, int, int, int]:
    """(first row, end row, first column, end column) of a rectangular area."""
    rows, columns = np.flatnonzero(area.any(axis=1)), np.flatnonzero(area.any(axis=0))
    assert np.count_nonzero(area) == len(rows) * len(columns), "not one rectangle"
    return int(rows[0]), int(rows[-1]) + 1, int(columns[0]), int(columns[-1]) + 1


@pytest.mark.parametrize("box, expected", [
    # A band 640 wide analysed 320 wide (scale 0.5): box (100, 20.5, 210, 39.5), padded by a quarter
    # of its 19 rows (4.75) outwards to whole pixels; centred within 20 % of the width, so made
    # symmetric about the middle (x1 = 320 - 100).
    ((200, 41, 420, 79), (15, 45, 95, 225)),
    ((20, 41, 120, 79), (15, 45, 5, 65)),  # at the left: as seen
    ((400, 41, 496, 79), (15, 45, 67, 253)),  # its middle exactly 20 % of the width off the band's: still centred
    ((402, 41, 498, 79), (15, 45, 196, 254)),  # a pixel further: as seen
    ((0, 0, 640, 120), (0, 60, 0, 320)),  # padded past the view: clipped to it
    ((560, 100, 640, 118), (47, 60, 277, 320)),  # and at the right: as seen, clipped
])
def test_a_guard_line_is_padded_and_centred_in_the_analysis_view(box, expected):
    area = _box_area(box, 0.5, (60, 320), SETTINGS.centred_lines)
    assert SETTINGS.centred_lines == 0.2 and area.dtype == bool and area.shape == (60, 320)
    assert rows_and_columns(area) == expected
