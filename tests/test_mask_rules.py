"""The stroke mask's rules at their thresholds, on masks and pictures drawn pixel by pixel.

Each rule of ``stages/mask.py`` is asked at the value where it turns (a stroke exactly at
``bright_min`` and one grey level below it, a share exactly at the threshold, a box one pixel
wider), so that a rule moved by one step fails here; the segmenter's boundary tests
(test_segment_decisions.py) show what each rule decides in a video."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from test_segment import SETTINGS, background, with_text

from subextract.stages.mask import (adds_line, added_strokes, analysis_view, below_band_minimum, centred,
                                    dense_lines, dense_lines_holding, exact_lost_share, fading_out, glyph_changed,
                                    has_dense_line, has_text_line, holds_text_line, is_line_like, line_like,
                                    lost_share, lowers_minimum, mask_difference, mask_hash, min_text_pixels,
                                    still_shown, stroke_lift, text_lines, text_mask)


def strokes(shape: tuple[int, int], *boxes: tuple[int, int, int, int], step: int = 1) -> np.ndarray:
    """A mask with stroke pixels in each (x0, y0, x1, y1) box, every ``step``-th column."""
    mask = np.zeros(shape, bool)
    for x0, y0, x1, y1 in boxes:
        mask[y0:y1, x0:x1:step] = True
    return mask


# --------------------------------------------------------------------------------------------
# analysis_view, stroke_lift, text_mask
# --------------------------------------------------------------------------------------------

def test_analysis_view_scales_wide_bands_down_to_the_analysis_width():
    band = np.zeros((80, 1280), np.uint8)
    band[:, 1::2] = 200  # one-pixel columns: an area average makes them a flat grey
    view = analysis_view(band, 640)
    assert view.shape == (40, 640) and np.all(view == 100)
    assert analysis_view(band, 1280) is band and analysis_view(band, 2000) is band
    assert analysis_view(np.zeros((10, 1280), np.uint8), 640).shape == (8, 640)  # never fewer than 8 rows
    assert analysis_view(np.zeros((81, 1280), np.uint8), 640).shape == (40, 640)  # rounded: 40.5 -> 40
    assert analysis_view(np.zeros((83, 1280), np.uint8), 640).shape == (42, 640)  # 41.5 -> 42


def test_stroke_lift_lifts_strokes_thinner_than_the_kernel_only():
    kernel = SETTINGS.stroke_kernel
    grey = np.full((40, 120), 50, np.uint8)
    grey[10:30, 20:20 + kernel - 1] = 200  # one pixel thinner than the kernel: a stroke
    grey[10:30, 60:60 + kernel] = 200  # as wide as the kernel: an area
    lift = stroke_lift(grey, SETTINGS)
    assert np.all(lift[10:30, 20:20 + kernel - 1] == 150)
    assert np.all(lift[10:30, 60:60 + kernel] == 0)
    assert np.all(lift[:, :15] == 0)


def stroke(level: int, around: int = 100, outline: int | None = None, distance: int = 1) -> np.ndarray:
    """A one-pixel vertical stroke of ``level`` (column 10, rows 5-15) in a 21x21 picture of
    ``around``, with columns of ``outline`` ``distance`` pixels either side of it."""
    grey = np.full((21, 21), around, np.uint8)
    if outline is not None:
        grey[5:16, 10 - distance] = grey[5:16, 10 + distance] = outline
    grey[5:16, 10] = level
    return grey


def test_text_mask_asks_for_bright_min():
    assert text_mask(stroke(SETTINGS.bright_min, outline=0), SETTINGS)[10, 10]
    assert not text_mask(stroke(SETTINGS.bright_min - 1, outline=0), SETTINGS)[10, 10]


def test_text_mask_asks_for_contrast_min_above_the_surroundings():
    plain = replace(SETTINGS, dark_max=255)
    assert text_mask(stroke(220, around=220 - SETTINGS.contrast_min), plain)[10, 10]
    assert not text_mask(stroke(220, around=220 - SETTINGS.contrast_min + 1), plain)[10, 10]


def test_text_mask_asks_for_a_dark_pixel_within_two_pixels_where_the_video_has_an_outline():
    assert text_mask(stroke(240, outline=SETTINGS.dark_max), SETTINGS)[10, 10]
    assert not text_mask(stroke(240, outline=SETTINGS.dark_max + 1), SETTINGS)[10, 10]
    assert text_mask(stroke(240, outline=0, distance=2), SETTINGS)[10, 10]
    assert not text_mask(stroke(240, outline=0, distance=3), SETTINGS)[10, 10]
    assert not text_mask(stroke(240), SETTINGS)[10, 10]
    # no outline asked for: the same stroke without its outline is text
    assert text_mask(stroke(240), replace(SETTINGS, dark_max=255))[10, 10]


def test_text_mask_takes_a_lift_given_to_it():
    grey = stroke(240, outline=0)
    assert np.array_equal(text_mask(grey, SETTINGS, stroke_lift(grey, SETTINGS)), text_mask(grey, SETTINGS))
    assert not text_mask(grey, SETTINGS, np.zeros_like(grey)).any()


# --------------------------------------------------------------------------------------------
# still_shown: the hold on the strokes' lift
# --------------------------------------------------------------------------------------------

LINE = (100, 20, 300, 40)  # a text line's box in a 60x400 mask


def lift_of(core: np.ndarray, lifted_share: float, level: int, other: int = 0) -> np.ndarray:
    """A lift picture in which the first ``lifted_share`` of the core's pixels (row-major) lift
    ``level`` and the others ``other``."""
    lift = np.zeros(core.shape, np.uint8)
    ys, xs = np.nonzero(core)
    count = round(lifted_share * len(ys))
    lift[ys[:count], xs[:count]] = level
    lift[ys[count:], xs[count:]] = other
    return lift


def test_still_shown_needs_hold_share_of_each_lines_strokes_at_hold_contrast():
    core = strokes((60, 400), LINE, step=2)
    assert still_shown(core, lift_of(core, SETTINGS.hold_share, SETTINGS.hold_contrast), SETTINGS)
    assert not still_shown(core, lift_of(core, SETTINGS.hold_share - 0.01, SETTINGS.hold_contrast), SETTINGS)
    assert not still_shown(core, lift_of(core, 1.0, SETTINGS.hold_contrast - 1), SETTINGS)
    assert not still_shown(np.zeros((60, 400), bool), np.full((60, 400), 255, np.uint8), SETTINGS)


def test_over_a_busy_picture_a_look_back_counts_the_strokes_lifted_beyond_the_pictures_own_share():
    """A picture that lifts 60 % of its pixels (leaves, water) lifts as many of the strokes' own
    pixels where the text has gone: a look back counts only the share beyond that chance, measured
    above and below the line, and hold_share of the rest (0.6 + 0.6 x 0.4 = 0.84 of the strokes).
    The hold counts hold_share of them, whatever the picture."""
    core = strokes((60, 400), LINE, step=4)
    busy = np.random.default_rng(0).random(core.shape) < 0.6
    for core_share, shown in ((0.65, False), (0.83, False), (0.85, True)):
        lift = lift_of(core, core_share, SETTINGS.hold_contrast)
        lift[busy & ~core] = SETTINGS.hold_contrast
        assert still_shown(core, lift, SETTINGS, beyond_chance=True) is shown
        assert still_shown(core, lift, SETTINGS)
    # Over a calm picture (nothing lifted beside the line) hold_share of the strokes is enough.
    assert still_shown(core, lift_of(core, SETTINGS.hold_share, SETTINGS.hold_contrast), SETTINGS, beyond_chance=True)


def test_still_shown_skips_rows_with_no_column_in_common_with_the_text_line():
    """A row of the picture's strokes the core took in to the left of the text line (grass before
    a cut), as tall as a line but sharing none of its columns: the cut takes its lift and the text
    line, all its strokes still lifted, keeps the cue shown. A second line under the first sharing
    columns with it (centred, or both aligned at the left edge) is a line of the text, and its lost
    lift ends the cue."""
    beside = strokes((60, 400), (200, 10, 380, 30), (20, 36, 120, 46), step=2)
    lift = lift_of(beside, 1.0, 255)
    lift[:, :150] = 0
    assert still_shown(beside, lift, SETTINGS)
    for second in ((240, 36, 340, 46), (200, 36, 260, 46)):
        two = strokes((60, 400), (200, 10, 380, 30), second, step=2)
        lift = lift_of(two, 1.0, 255)
        lift[33:] = 0
        assert not still_shown(two, lift, SETTINGS)


def test_a_look_back_counts_the_lines_strokes_together_the_hold_each_line():
    """Before a cue's first settled frame, its text line lifted all along and a row of the
    picture's strokes the core took in beside it lifted half (a thin row of Arabic dots, grass over a
    moving shot, under hold_share alone): the frame showed the text, and the look back goes on
    (it had stopped three frames short of the held-out Arabic cues' starts). The hold, which asks
    whether a cue goes on, still asks it of each line. Two text lines of one size with one of them
    not lifted at all are not shown either way."""
    core = strokes((80, 400), LINE, (120, 44, 280, 54), step=2)
    lift = np.zeros(core.shape, np.uint8)
    lift[:42][core[:42]] = SETTINGS.hold_contrast
    below = np.argwhere(core[42:])
    half = below[: len(below) // 2]
    lift[42 + half[:, 0], half[:, 1]] = SETTINGS.hold_contrast
    assert still_shown(core, lift, SETTINGS, beyond_chance=True)
    assert not still_shown(core, lift, SETTINGS)
    two = strokes((80, 400), LINE, (100, 46, 300, 66), step=2)
    lift = np.zeros(two.shape, np.uint8)
    lift[:42][two[:42]] = SETTINGS.hold_contrast
    assert not still_shown(two, lift, SETTINGS, beyond_chance=True)
    assert not still_shown(two, lift, SETTINGS)


def test_still_shown_skips_rows_of_specks_much_shorter_than_the_text_line():
    """A 20-row text line with a row of specks 8 rows tall beside it (0.4 of its height, under
    hold_line_height): a cut that takes the specks' lift keeps the text shown; specks 9 rows
    tall (0.45 of it, exactly hold_line_height) or 10 are a line of the text, and their lost lift
    ends it. Specks above the line are skipped as well as below it."""
    for speck_rows, shown in ((8, True), (9, False), (10, False)):
        core = strokes((60, 400), LINE, (150, 48, 250, 48 + speck_rows), step=2)
        lift = lift_of(core, 1.0, 255)
        lift[45:] = 0
        assert still_shown(core, lift, SETTINGS) is shown
    above = strokes((60, 400), (150, 2, 250, 10), (100, 25, 300, 45), step=2)
    lift = lift_of(above, 1.0, 255)
    lift[:12] = 0  # the specks lost their lift: the text line keeps it
    assert still_shown(above, lift, SETTINGS)
    lift = lift_of(above, 1.0, 255)
    lift[20:] = 0  # the text line lost it: the specks above do not hold it
    assert not still_shown(above, lift, SETTINGS)


def test_still_shown_judges_a_core_without_a_text_line_by_all_its_rows():
    sparse = strokes((60, 400), (20, 10, 380, 20), (20, 40, 380, 44), step=40)
    assert not holds_text_line(sparse, SETTINGS)
    lift = lift_of(sparse, 1.0, 255)
    assert still_shown(sparse, lift, SETTINGS)
    lift[40:] = 0
    assert not still_shown(sparse, lift, SETTINGS)


# --------------------------------------------------------------------------------------------
# Comparing masks
# --------------------------------------------------------------------------------------------

def test_lost_shares_count_the_reference_strokes_missing_within_one_pixel_or_at_the_pixel():
    core = strokes((20, 100), (10, 5, 50, 15))  # 400 pixels
    shifted = np.roll(core, 1, axis=1)
    assert lost_share(core, shifted) == 0.0 and exact_lost_share(core, shifted) == 10 / 400
    two_off = np.roll(core, 2, axis=1)
    assert lost_share(core, two_off) == 10 / 400 and exact_lost_share(core, two_off) == 20 / 400
    half = core.copy()
    half[:, 30:] = False
    assert lost_share(core, half) == 190 / 400  # column 30 is within a pixel of column 29
    assert exact_lost_share(core, half) == 200 / 400
    empty = np.zeros_like(core)
    assert lost_share(empty, core) == 1.0 and exact_lost_share(empty, core) == 1.0
    assert lost_share(core, empty) == 1.0


def test_mask_difference_of_a_single_stroke():
    two = np.zeros((5, 5), bool)
    two[2, 1:3] = True
    one = np.zeros((5, 5), bool)
    one[2, 2] = True
    assert mask_difference(two, one) == 0.0 and mask_difference(one, two) == 0.0
    far = np.zeros((5, 5), bool)
    far[0, 4] = True
    assert mask_difference(one, far) == 1.0


def test_mask_difference_is_the_larger_one_sided_share():
    a = strokes((20, 100), (10, 5, 50, 15))  # 400
    b = strokes((20, 100), (10, 5, 50, 15), (70, 5, 90, 15))  # 600: 200 of them far from a
    assert mask_difference(a, b) == pytest.approx(200 / 600) and mask_difference(b, a) == pytest.approx(200 / 600)
    c = strokes((20, 100), (10, 5, 30, 15))  # a's left half
    assert mask_difference(a, c) == pytest.approx(190 / 400)


def test_added_strokes_are_those_with_no_reference_stroke_within_one_pixel():
    core = strokes((20, 100), (10, 5, 20, 15))
    mask = strokes((20, 100), (10, 5, 22, 15))
    added = added_strokes(core, mask)
    assert np.count_nonzero(added) == 10 and added[5:15, 21].all()


def test_a_changed_glyph_is_a_change_and_edge_pixels_are_not():
    word = with_text(background(0, "flat"), "TEN")
    a = text_mask(word, SETTINGS)
    assert not glyph_changed(a, a, SETTINGS.repeat_glyph_change)
    frayed = a.copy()
    frayed[np.nonzero(a)[0][::7], np.nonzero(a)[1][::7]] = False  # a few edge pixels lost
    assert not glyph_changed(a, frayed, SETTINGS.repeat_glyph_change)
    other = text_mask(with_text(background(0, "flat"), "TEA"), SETTINGS)
    assert glyph_changed(a, other, SETTINGS.repeat_glyph_change)
    assert not glyph_changed(a, other, 1.01)  # no window holds more than all its strokes
    assert not glyph_changed(a, a & other, SETTINGS.repeat_glyph_change)  # lost on one side only


def glyph_masks(shape: tuple[int, int], common: list[tuple[int, int, int, int]], own_a: list[tuple[int, int, int, int]],
                own_b: list[tuple[int, int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Two masks sharing ``common`` boxes (x0, y0, x1, y1, filled), each with boxes of its own."""
    shared = strokes(shape, *common)
    return shared | strokes(shape, *own_a), shared | strokes(shape, *own_b)


BARS = [(10, 20, 11, 40), (189, 20, 190, 40)]  # two bars make a 20-row line: windows of 20 x 20


def test_a_glyph_changes_where_one_window_has_strokes_of_each_side():
    same_window = glyph_masks((60, 200), BARS, [(50, 25, 54, 30)], [(50, 31, 54, 36)])  # 20 own pixels each
    assert glyph_changed(*same_window, 0.2)  # 20 of 40 strokes, and 5 % of the 400-pixel window: exactly
    apart = glyph_masks((60, 200), BARS, [(50, 25, 54, 30)], [(150, 25, 154, 30)])
    assert not glyph_changed(*apart, 0.2)  # each side's own strokes, but in windows of their own
    few = glyph_masks((60, 200), BARS, [(50, 25, 51, 27)], [(52, 25, 53, 27)])  # 2 pixels each
    assert not glyph_changed(*few, 0.2)  # under 5 % of the window: edge noise
    one_sided = glyph_masks((60, 200), BARS, [(50, 25, 54, 30)], [])
    assert not glyph_changed(*one_sided, 0.0)


def test_a_glyph_window_is_a_line_high():
    """16 own pixels on each side spread over 20 columns: a 20 x 20 window (the line's height) holds
    too few of them for 5 % of its area; a 9 x 9 one would have held enough."""
    spread_a = [(x, 25, x + 1, 29) for x in (50, 55, 60, 65)]
    spread_b = [(x, 31, x + 1, 35) for x in (50, 55, 60, 65)]
    assert not glyph_changed(*glyph_masks((60, 200), BARS, spread_a, spread_b), 0.2)


def test_without_a_line_the_glyph_window_is_nine_pixels():
    """Strokes in rows too short for a line (3 rows): the window is 9 x 9. Own strokes 10 columns
    (or rows) apart never share one; 9 apart they do."""
    wide = glyph_masks((30, 100), [], [(50, 10, 51, 13), (59, 10, 60, 13)], [(51, 10, 52, 13), (58, 10, 59, 13)])
    assert not glyph_changed(*wide, 0.2)
    narrow = glyph_masks((30, 100), [], [(50, 10, 51, 13), (58, 10, 59, 13)], [(51, 10, 52, 13), (57, 10, 58, 13)])
    assert glyph_changed(*narrow, 0.2)
    tall = glyph_masks((30, 100), [], [(50, 10, 53, 11), (50, 19, 53, 20)], [(54, 10, 57, 11), (54, 19, 57, 20)])
    assert not glyph_changed(*tall, 0.2)


def test_glyph_windows_count_past_255_strokes():
    """A 40-row line filling the band's height: a window holds 1600 strokes, and 320 own pixels a
    side are a fifth of it (changed, at share 0.2). Three filled 20-row lines: a window holds
    about 400, and 60 own pixels a side in the middle one are not a fifth."""
    big = glyph_masks((40, 200), [(20, 0, 90, 40), (106, 0, 180, 40)], [(90, 0, 98, 40)], [(98, 0, 106, 40)])
    assert glyph_changed(*big, 0.2)
    shape = (80, 200)
    lines = [(20, 8, 180, 28), (20, 29, 95, 49), (105, 29, 180, 49), (95, 29, 105, 33), (95, 45, 105, 49),
             (20, 50, 180, 70)]
    holed = glyph_masks(shape, lines, [(95, 33, 100, 45)], [(100, 33, 105, 45)])
    assert not glyph_changed(*holed, 0.2)


def test_the_mask_hash_tells_masks_apart_and_keeps_one_mask_one_hash():
    a = text_mask(with_text(background(0, "flat"), "HELLO WORLD"), SETTINGS)
    b = text_mask(with_text(background(0, "flat"), "GREAT THING"), SETTINGS)
    assert mask_hash(a) == mask_hash(a.copy()) and mask_hash(a) != mask_hash(b)
    assert len(mask_hash(a).hash.flatten()) == 256


# --------------------------------------------------------------------------------------------
# fading_out
# --------------------------------------------------------------------------------------------

def test_fading_out_keeps_every_line_partly_and_brings_almost_nothing_new():
    core = strokes((60, 400), (100, 5, 300, 25), (100, 35, 300, 55), step=2)  # two lines, 2000 pixels each
    kept = core.copy()
    kept[:, 1::5] = kept[:, 2::5] = kept[:, 3::5] = kept[:, 4::5] = False  # a fifth of each line, all along it: 400 of 2000
    assert fading_out(core, kept, 0.1, 0.2)
    assert not fading_out(core, kept, 0.1, 0.21)
    one_line = kept.copy()
    one_line[30:] = False
    assert not fading_out(core, one_line, 0.1, 0.2)  # a line taken away
    new = kept.copy()
    new[5:25, 350:390:2] = True  # 800 kept + 400 new: a third of the frame's strokes are new
    assert fading_out(core, new, 1 / 3, 0.2) and not fading_out(core, new, 0.33, 0.2)
    assert not fading_out(core, np.zeros_like(core), 0.1, 0.0)
    assert not fading_out(np.zeros_like(core), kept, 1.0, 0.0)  # no line to keep


def test_a_line_keeping_its_strokes_in_one_place_is_not_fading():
    """A fade dims every glyph alike; text gone from beside a still bright thing of the picture
    that touched its line (a sheet on a lawn) keeps that thing's strokes in one third of it."""
    core = strokes((60, 400), (100, 5, 300, 25), step=2)  # thirds: columns 100-166, 167-233, 234-299
    left = core.copy()
    left[:, 167:] = False  # a third of the line's strokes, all in its first third
    assert not fading_out(core, left, 0.1, 0.2)
    two = core.copy()
    two[:, 140:234] = False  # the first third keeps 20 of its 34 stroke columns, the last all
    assert fading_out(core, two, 0.1, 0.2)
    # The line's box runs over columns 88-310 (padded): thirds 88-162, 163-236 and 237-310, of 32,
    # 37 and 31 stroke columns. The first third keeps all; the second must keep half the share
    # (10 %: 3.7 columns) for a fade.
    for kept_columns, fading in ((4, True), (3, False)):
        spread = core.copy()
        spread[:, 163 + 2 * kept_columns:] = False
        assert fading_out(core, spread, 0.1, 0.2) is fading


# --------------------------------------------------------------------------------------------
# Lines: density, minimums, added lines
# --------------------------------------------------------------------------------------------

def test_is_line_like_weighs_the_strokes_by_the_box_of_their_middle_ninety_percent():
    block = strokes((60, 400), (100, 10, 200, 30))  # 2000 pixels; middle box 18.1 x 90.1
    density = 0.9 * 2000 / (18.1 * 90.1)
    assert is_line_like(block, 2000, density - 1e-3) and not is_line_like(block, 2000, density + 1e-3)
    assert not is_line_like(block, 2001, 0.0)
    row = strokes((10, 40), (0, 5, 21, 6))  # 21 strokes in a row: the middle ninety percent span columns 1-19
    assert is_line_like(row, 21, 0.9 * 21 / 19)  # exactly at min_density: line-like


def test_dense_lines_are_the_line_boxes_packed_at_min_density():
    line = strokes((60, 400), (100, 10, 200, 30), step=4)  # 25 of 100 columns: density 0.25
    assert dense_lines(line, 0.25) == ((100, 10, 197, 30),)  # the last stroke column is 196
    assert dense_lines(line, 0.2578) == ()  # 500 strokes in 20 x 97
    assert has_text_line(line, 0.25) and not has_text_line(line, 0.26)
    assert dense_lines_holding(line, 500, 0.25) == [(100, 10, 197, 30)]
    assert dense_lines_holding(line, 501, 0.25) == []
    assert has_dense_line(line, 500, 0.25) and not has_dense_line(line, 501, 0.25)


def test_dense_lines_holding_counts_each_line_on_its_own():
    two = strokes((60, 400), (100, 5, 200, 25), (100, 35, 150, 55), step=2)  # 1000 and 500 pixels
    assert dense_lines_holding(two, 1000, 0.4) == [(100, 5, 199, 25)]
    assert dense_lines_holding(two, 500, 0.4) == [(100, 5, 199, 25), (100, 35, 149, 55)]


def test_line_like_is_either_test():
    block = strokes((60, 400), (100, 10, 200, 30))
    specks = strokes((60, 400), (0, 40, 400, 60), step=8)
    specks[41::4] = specks[42::4] = specks[43::4] = False  # every 4th row: lines too thin to be text
    strewn = block | specks  # they spoil the one box
    assert not is_line_like(strewn, 1000, 0.8) and has_dense_line(strewn, 1000, 0.8)
    assert line_like(strewn, 1000, 0.8) and line_like(block, 1000, 0.8)
    assert not line_like(strewn, 2001, 0.8)


def test_text_lines_pad_the_dense_lines_in_picture_pixels():
    core = strokes((60, 400), (100, 20, 200, 40), step=2)
    core[50:57, ::40] = True  # a sparse line of specks: no text line
    lines = text_lines(core, (120, 800), 0.3)
    # the line's columns 100-198, rows 20-39, padded by 0.6 and 0.35 of its 20-row height, doubled
    assert lines == ((176, 26, 422, 94),)
    assert text_lines(core, (120, 800), 0.02) == ((176, 26, 422, 94), (0, 95, 730, 118))


def test_centred_lines_are_made_symmetric_within_the_tolerance():
    assert centred([(300, 0, 600, 10)], 800, 0.0625) == ((200, 0, 600, 10),)  # off the middle by 50: 0.0625
    assert centred([(300, 0, 600, 10)], 800, 0.062) == ((300, 0, 600, 10),)
    assert centred([(150, 0, 550, 10)], 800, 0.2) == ((150, 0, 650, 10),)


def test_the_text_minimum_follows_the_band_or_the_videos_smallest_line():
    size = 100_000  # band share: 400 pixels
    assert min_text_pixels(size, SETTINGS) == SETTINGS.min_text_share * size
    own = replace(SETTINGS, line_strokes=300)  # half of it: 150
    assert min_text_pixels(size, own) == 150 and lowers_minimum(size, own)
    assert min_text_pixels(size, replace(SETTINGS, line_strokes=60)) == SETTINGS.min_line_strokes  # bounded below
    assert min_text_pixels(size, replace(SETTINGS, line_strokes=400)) == 400 * SETTINGS.min_text_share * size / 400
    assert min_text_pixels(size, replace(SETTINGS, line_strokes=399)) == 199.5
    assert min_text_pixels(size, replace(SETTINGS, line_strokes=900, line_text_share=0.5)) == 400
    assert not lowers_minimum(size, SETTINGS) and not lowers_minimum(size, replace(SETTINGS, line_strokes=900))
    assert below_band_minimum(399, size, own) and not below_band_minimum(400, size, own)
    assert not below_band_minimum(10, size, SETTINGS)


def test_a_text_line_holds_the_lesser_of_the_minimum_and_text_holds_share():
    size = 60 * 400  # band share 96 pixels; text holds half of it: 48
    assert min(min_text_pixels(size, SETTINGS), SETTINGS.text_hold * SETTINGS.min_text_share * size) == 48
    line = strokes((60, 400), (100, 20, 148, 30), step=2)  # 240 pixels
    assert holds_text_line(line, SETTINGS)
    thin = strokes((60, 400), (100, 20, 110, 27), step=2)  # 5 columns x 7 rows = 35
    assert not holds_text_line(thin, SETTINGS)
    thicker = strokes((60, 400), (100, 20, 112, 28), step=2)  # 6 x 8 = 48
    assert holds_text_line(thicker, SETTINGS)


BAND = (80, 640)  # band share: 0.004 * 51200 = 204.8 pixels


def test_a_line_added_is_returned_when_it_holds_a_lines_worth():
    core = strokes(BAND, (100, 10, 500, 30), step=4)  # 100 columns x 20 rows = 2000
    added = strokes(BAND, (200, 50, 300, 70), step=4)  # 25 x 20 = 500
    mask = core | added
    line = adds_line(core, mask, SETTINGS)
    assert line is not None and np.array_equal(line, added)
    assert adds_line(core, core, SETTINGS) is None
    # a quarter of the core is the least a line's worth (here more than the band's share)
    small = strokes(BAND, (200, 50, 280, 70), step=4)  # 20 x 20 = 400 < 500
    assert adds_line(core, core | small, SETTINGS) is None
    just = strokes(BAND, (200, 50, 300, 70), step=4)
    assert adds_line(core, core | just, SETTINGS) is not None


def test_a_line_added_needs_the_bands_share_where_the_core_is_small():
    core = strokes(BAND, (100, 10, 140, 20), step=4)  # 10 x 10 = 100
    added = strokes(BAND, (200, 50, 300, 60), step=5)  # 20 x 10 = 200 < 204.8
    assert adds_line(core, core | added, SETTINGS) is None
    added = strokes(BAND, (200, 50, 305, 60), step=5)  # 21 x 10 = 210
    assert adds_line(core, core | added, SETTINGS) is not None


def test_strokes_strewn_over_the_band_add_no_line_but_a_dense_line_among_them_does():
    core = strokes(BAND, (100, 10, 500, 30), step=4)  # 2000: a line's worth is 500
    strewn = strokes(BAND, (0, 32, 640, 53), step=12)
    strewn[33::2] = False  # 11 sparse rows: 594 strokes, no line packed as text is
    assert adds_line(core, core | strewn, SETTINGS) is None
    line = strokes(BAND, (200, 55, 300, 75), step=4)  # 500
    added = adds_line(core, core | strewn | line, SETTINGS)
    assert added is not None and np.array_equal(added, line)  # the line alone: the specks go the next frame


def test_with_the_videos_lower_minimum_a_line_added_to_a_text_line_holds_as_many_as_the_core():
    """Thin-stroke video (the minimum from its smallest line, 60 pixels): a line added to a core
    with a text line of its own needs as many strokes as the core holds, up to the band's share;
    one added to a few strewn specks needs the video's minimum."""
    own = replace(SETTINGS, line_strokes=120)
    assert min_text_pixels(BAND[0] * BAND[1], own) == 60
    core = strokes(BAND, (100, 10, 180, 20), step=5)  # 16 x 10 = 160, a dense text line
    assert holds_text_line(core, own)
    fewer = strokes(BAND, (200, 50, 275, 60), step=5)  # 15 x 10 = 150 < 160
    assert adds_line(core, core | fewer, own) is None
    as_many = strokes(BAND, (200, 50, 280, 60), step=5)  # 160
    assert adds_line(core, core | as_many, own) is not None
    specks = strokes(BAND, (0, 0, 640, 80), step=64) & (np.arange(80)[:, None] % 16 == 0)  # no text line
    assert np.count_nonzero(specks) == 50 and not holds_text_line(specks, own)
    assert adds_line(specks, specks | fewer, own) is not None
    assert adds_line(specks, specks | strokes(BAND, (200, 50, 230, 60), step=5), own) is not None  # 60
    assert adds_line(specks, specks | strokes(BAND, (200, 50, 225, 60), step=5), own) is None  # 50
    # more specks than the minimum, still no text line: the added line needs the minimum, not as many
    many = strokes(BAND, (0, 0, 640, 80), step=32) & (np.arange(80)[:, None] % 16 == 0)
    assert np.count_nonzero(many) == 100 and not holds_text_line(many, own)
    assert adds_line(many, many | strokes(BAND, (200, 50, 240, 60), step=5), own) is not None  # 80
