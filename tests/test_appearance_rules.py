"""How a video's subtitles are drawn, decided at each rule's threshold on strips drawn pixel by pixel.

A strip is a pre-scan line's rows: thin vertical strokes every 12 columns inside the line's
columns, and thin strokes of the picture beside it, at grey levels chosen so that each rule of
``stages/appearance.py`` (which plane, outlined or not, how bright, coloured or not, the smallest
line, how densely the lines fill their boxes) is met exactly or missed by one step."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from subextract.config import load_settings
from subextract.stages.appearance import (Appearance, learn_appearance, line_density, settings_for,
                                          smallest_line_strokes)

SETTINGS = load_settings().segment
X0, X1 = 20, 260  # the line's columns in a 300-column strip
STEP = 12  # columns between strokes: the picture between them is wider than the stroke kernel


def strip(level: int, around: int = 150, beside: int = 0, outlined: int = 0, strokes: int = 20,
          rows: tuple[int, int] = (4, 20), short: int = 0, outline: int = 0) -> np.ndarray:
    """Strokes of ``level`` over ``around``; the first ``outlined`` with a column of ``outline``
    (black) beside them, the first ``short`` one row shorter; strokes of the picture ``beside``
    above it."""
    grey = np.full((24, 300), around, np.uint8)
    for i in range(strokes):
        column = X0 + STEP * i
        grey[rows[0]:rows[1] - (1 if i < short else 0), column] = level
        if i < outlined:
            grey[rows[0]:rows[1], column + 1] = outline
    for column in [*range(2, X0 - 4, 6), *range(X1 + 4, 300, 6)]:
        grey[rows[0]:rows[1], column] = around + beside
    return grey


def lines(*strips: np.ndarray) -> list[tuple[np.ndarray, int, int]]:
    return [(s, X0, X1) for s in strips]


# --------------------------------------------------------------------------------------------
# The plane
# --------------------------------------------------------------------------------------------

def test_a_chroma_plane_wins_only_by_more_than_chroma_advantage():
    """In luma the strokes lift 90 over a picture lifting 30 (3x); in V they lift 45 or 46 over
    10 (4.5x, 4.6x): a chroma plane must stand out chroma_advantage (1.5) times more than luma."""
    luma = lines(strip(240, beside=30))
    tie = learn_appearance({"y": luma, "v": lines(strip(128 + 45, around=128, beside=10))}, SETTINGS)
    assert tie.plane == "y" and tie.lift == 90
    ahead = learn_appearance({"y": luma, "v": lines(strip(128 + 46, around=128, beside=10))}, SETTINGS)
    assert ahead.plane == "v" and ahead.lift == 46 and ahead.level == 174
    assert not ahead.outlined and ahead.decoded_in_colour


def test_a_flat_plane_beside_the_line_counts_as_the_noise_floor():
    """Beside the line V lifts 5, under plane_noise_floor (10): the ratio is 46 / 10, not 46 / 5."""
    luma = lines(strip(240, beside=30))
    floor = learn_appearance({"y": luma, "v": lines(strip(128 + 45, around=128, beside=5))}, SETTINGS)
    assert floor.plane == "y"
    chosen = learn_appearance({"y": luma, "v": lines(strip(128 + 46, around=128, beside=5))}, SETTINGS)
    assert chosen.plane == "v"


def test_dark_strokes_in_a_chroma_plane_are_no_candidate():
    """Strokes darker than the picture in V (a blue tint) lift only through the gaps between them:
    V is no candidate, whatever its lift."""
    dark = lines(strip(128 - 60, around=128, beside=1))
    assert learn_appearance({"y": lines(strip(240, beside=30)), "v": dark}, SETTINGS).plane == "y"


def test_the_plane_is_decided_by_the_median_over_lines():
    luma = lines(strip(240, beside=30), strip(240, beside=30), strip(240, beside=30))
    chroma = lines(strip(128 + 60, around=128, beside=10), strip(128 + 60, around=128, beside=10),
                   strip(128 + 20, around=128, beside=10))  # 6x, 6x, 2x: the median 6x beats 3x * 1.5
    assert learn_appearance({"y": luma, "v": chroma}, SETTINGS).plane == "v"
    chroma[1] = chroma[2]  # 6x, 2x, 2x
    assert learn_appearance({"y": luma, "v": chroma}, SETTINGS).plane == "y"


def test_lines_without_columns_or_without_picture_beside_are_skipped():
    luma = lines(strip(240, beside=30))
    assert learn_appearance({"y": luma + [(strip(240), 100, 100)]}, SETTINGS).lines == 1
    assert learn_appearance({"y": [(strip(240), 100, 100)] + luma}, SETTINGS).lift == 90  # the lines after it count
    whole = [(strip(240), 0, 300)]  # nothing beside it to compare with: no lift measured
    assert learn_appearance({"y": whole}, SETTINGS).lift == 0
    assert learn_appearance({"y": luma, "v": [(strip(128 + 90, around=128), 0, 300)]}, SETTINGS).plane == "y"
    assert learn_appearance({"v": lines(strip(200, around=128))}, SETTINGS) is None  # luma is always needed


def dense(level: int, around: int, beside: int = 0) -> np.ndarray:
    """Strokes of ``level`` 2 columns wide every 4 columns over ``around``: the picture between
    them is narrower than the stroke kernel (dark text lifts through its gaps); strokes of the
    picture ``beside`` the line as in ``strip``."""
    grey = strip(around, around=around, beside=beside)
    for column in range(X0, X1 - 1, 4):
        grey[4:20, column:column + 2] = level
    return grey


def test_dark_text_in_luma_is_read_by_the_gaps_between_its_strokes():
    """Dark text on a light box (strokes 60 below it in luma): the box between the strokes lifts
    60, and that is the lines' lift; in luma a line is never asked to be brighter than its picture."""
    appearance = learn_appearance({"y": lines(dense(150 - 60, around=150, beside=30))}, SETTINGS)
    assert appearance.plane == "y" and appearance.lift == 60 and appearance.level == 150


def test_densely_packed_dark_strokes_in_a_chroma_plane_are_no_candidate():
    """The gaps between strokes darker than the picture in V lift 60 over a picture lifting 10
    (6x, ahead of luma's 3x by more than chroma_advantage): V is still no candidate, its line is
    darker than the picture, not brighter."""
    dark = lines(dense(128 - 60, around=128, beside=10))
    appearance = learn_appearance({"y": lines(strip(240, beside=30)), "v": dark}, SETTINGS)
    assert appearance.plane == "y" and appearance.lift == 90
    # text with its picture's luma, darker than it in V: no plane shows it, nothing is learned
    assert learn_appearance({"y": lines(strip(150, beside=30)), "v": dark}, SETTINGS) is None


def tinted(dark: int) -> np.ndarray:
    """Strokes 60 above a flat V plane at 128 (the picture beside them lifting 5), 100 pixels of
    the line ``dark`` below it (a little over 1 % of the line's 5760) and 30 specks 100 above it
    (half a percent)."""
    v = strip(128 + 60, around=128, beside=5)
    v[1, X0 + 2:X0 + 102] = 128 - dark
    v[22, X0 + 2:X1 - 4:8] = 128 + 100
    return v


@pytest.mark.parametrize("dark, plane", [(60, "v"), (61, "y")])
def test_a_chroma_line_stands_out_when_its_brightest_percent_rises_as_far_as_its_darkest_falls(dark, plane):
    """In a chroma plane a line is bright when its 99th percentile stands at least as far above the
    picture beside it (its median) as its 1st percentile falls below: 60 above and 60 below is
    bright (V wins, 6x against luma's 3x); 61 below is not. Specks brighter still over under 1 % of
    the line, or dark pixels over under 2 %, do not tip it."""
    appearance = learn_appearance({"y": lines(strip(240, beside=30)), "v": lines(tinted(dark))}, SETTINGS)
    assert appearance.plane == plane


def test_the_lines_lift_is_the_97th_percentile_of_the_lines_columns():
    """8 strokes of 20 lift 90 (128 pixels, 2.2 % of the line's 5760), the other 12 lift 60: the
    97th percentile (the top 173 pixels) is 60."""
    mixed = strip(150 + 60, around=150, beside=30)
    for i in range(8):
        mixed[4:20, X0 + STEP * i] = 150 + 90
    assert learn_appearance({"y": lines(mixed)}, SETTINGS).lift == 60


def test_the_picture_beside_the_line_lifts_by_its_97th_percentile():
    """Beside the line (1440 pixels) 7 thin things lift 30 and 2 lift 60 (32 pixels, 2.2 %): the
    picture lifts 30, the strokes' 90 is 3x that; V's 4x is not chroma_advantage ahead. Counted by
    the 2 brighter things luma would stand out 1.5x only, and V would win."""
    luma = strip(240, beside=30)
    luma[4:20, [2, 8]] = 150 + 60
    appearance = learn_appearance({"y": lines(luma), "v": lines(strip(128 + 40, around=128, beside=10))}, SETTINGS)
    assert appearance.plane == "y" and appearance.lift == 90


def test_a_chroma_plane_with_no_line_to_compare_is_no_candidate():
    """Luma's strokes lift 60 over a picture lifting 100 (0.6x); V's line fills its whole strip,
    nothing beside it to compare with: V stands out by nothing, not by a default ratio."""
    luma = lines(strip(150 + 60, around=150, beside=100))
    appearance = learn_appearance({"y": luma, "v": [(strip(128 + 90, around=128), 0, 300)]}, SETTINGS)
    assert appearance.plane == "y" and appearance.lift == 60


# --------------------------------------------------------------------------------------------
# The outline, the level
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("outlined, expected", [(17, True), (16, False)])
def test_the_outline_test_needs_outline_share_of_the_strokes(outlined, expected):
    """17 of 20 strokes with a black pixel beside them is exactly outline_share (0.85)."""
    appearance = learn_appearance({"y": lines(strip(240, outlined=outlined))}, SETTINGS)
    assert appearance.outlined is expected and appearance.level == 240


def test_every_line_must_show_the_outline():
    both = lines(strip(240, outlined=20), strip(240, outlined=16))
    assert not learn_appearance({"y": both}, SETTINGS).outlined
    assert learn_appearance({"y": lines(strip(240, outlined=20), strip(240, outlined=17))}, SETTINGS).outlined


@pytest.mark.parametrize("fading, outlined", [(204, True), (205, False)])
def test_a_line_far_dimmer_than_the_others_says_nothing_of_the_outline(fading, outlined):
    """A line plain_bright_margin (35) or more below the lines' median level (240) was caught
    mid-fade: its missing outline refutes nothing; one a level brighter does."""
    found = lines(strip(240, around=130, outlined=20), strip(240, around=130, outlined=20),
                  strip(fading, around=130, outlined=0))
    appearance = learn_appearance({"y": found}, SETTINGS)
    assert appearance.outlined is outlined and appearance.level == 240


@pytest.mark.parametrize("outlined, shown", [(17, True), (16, False)])
def test_a_line_over_a_mid_grey_picture_shows_an_outline_at_outline_share(outlined, shown):
    """Over a lawn at 96, 17 of 20 strokes with a dark pixel beside them is outline_share (0.85):
    the line shows the outline; 16 of 20 says nothing (no other line: no outline test)."""
    appearance = learn_appearance({"y": lines(strip(255, around=96, outlined=outlined))}, SETTINGS)
    assert appearance.outlined is shown and appearance.lines == 1


def test_a_glyph_sized_line_says_nothing_of_the_outline_where_another_line_does():
    """A white sheet on a lawn the detector boxed as a glyph (no outline) does not refute the
    outline the subtitle lines show; alone, or beside lines that say nothing, it does."""
    lines_seen = lines(strip(240, outlined=20), strip(240, outlined=20), strip(240, outlined=0))
    assert learn_appearance({"y": lines_seen}, SETTINGS, [False, False, True]).outlined
    assert not learn_appearance({"y": lines_seen}, SETTINGS, [False, True, False]).outlined
    assert not learn_appearance({"y": lines_seen}, SETTINGS).outlined
    assert learn_appearance({"y": lines_seen[::-1]}, SETTINGS, [True]).outlined  # the lines not named are not
    dark = lines(strip(240, around=60, outlined=0), strip(240, outlined=0))
    assert not learn_appearance({"y": dark}, SETTINGS, [False, True]).outlined  # the only line with a say


@pytest.mark.parametrize("around, evidence", [(119, False), (120, True)])
def test_a_line_over_a_dark_picture_is_no_evidence_against_an_outline(around, evidence):
    """A picture darker than dark_max + outline_evidence (120) around the line puts pixels as
    dark beside plain strokes as a thin outline blurred at the analysis size leaves: such a line
    does not refute an outline (it may show one: the next test)."""
    outlined = strip(240, around=160, outlined=20)
    plain_on_dark = strip(240, around=around, outlined=0)
    appearance = learn_appearance({"y": lines(outlined, plain_on_dark)}, SETTINGS)
    assert appearance.outlined is not evidence and appearance.lines == 2
    alone = learn_appearance({"y": lines(plain_on_dark)}, SETTINGS)
    assert alone.outlined is False  # no line showed one


@pytest.mark.parametrize("around, outline, outlined", [(96, 56, True), (96, 57, False), (180, 80, True),
                                                      (180, 81, False), (80, 0, True), (79, 0, False)])
def test_an_outline_is_outline_evidence_darker_than_the_picture_around_and_at_most_dark_max(
        around, outline, outlined):
    """Over a mid-grey lawn (96) an outline is dark at 56 (outline_evidence, 40, below it); over a
    bright picture at dark_max (80); a picture below outline_floor + outline_evidence (80) shows
    no outline at all."""
    appearance = learn_appearance({"y": lines(strip(255, around=around, outlined=20, outline=outline))}, SETTINGS)
    assert appearance.outlined is outlined


def test_a_line_whose_strokes_leave_no_picture_beyond_an_outline_says_nothing_of_it():
    """Strokes every 8 columns leave no pixel of the line's columns 5 px or more from a stroke
    (beyond the 9x9 square): nothing tells the picture from an outline or a shadow, and this plain
    line does not refute the outline the other line shows."""
    packed = strip(240, strokes=0)
    packed[4:20, X0:X0 + 8 * 30:8] = 240
    found = [(strip(240, outlined=20), X0, X1), (packed, X0, X0 + 8 * 29 + 5)]
    appearance = learn_appearance({"y": found}, SETTINGS)
    assert appearance.outlined and appearance.lines == 2
    assert not learn_appearance({"y": found[1:]}, SETTINGS).outlined


@pytest.mark.parametrize("rows, short, counted", [((4, 12), 0, True), ((4, 12), 1, False)])
def test_a_line_needs_forty_stroke_pixels_to_say_anything(rows, short, counted):
    """5 strokes of 8 rows are 40 pixels; one row less is 39, and the line says nothing."""
    few = strip(240, strokes=5, rows=rows, short=short)
    if counted:
        assert learn_appearance({"y": lines(few)}, SETTINGS).lines == 1
    else:
        assert learn_appearance({"y": lines(few)}, SETTINGS) is None


def test_the_level_is_the_median_over_lines_of_each_lines_bright_strokes():
    found = lines(strip(200, around=100), strip(230, around=100), strip(250, around=100))
    appearance = learn_appearance({"y": found}, SETTINGS)
    assert appearance.level == 230 and appearance.lines == 3
    mixed = strip(250)
    mixed[4:20, X0 + STEP * 19] = 200  # one stroke of 20 dimmer: the 95th percentile stays 250
    assert learn_appearance({"y": lines(mixed)}, SETTINGS).level == 250
    glint = strip(240)
    glint[4:20, X0] = 250  # one stroke of 20 brighter (5 %): the 95th percentile is still the others'
    assert learn_appearance({"y": lines(glint)}, SETTINGS).level == 240


def test_a_chroma_plane_asks_strokes_for_half_their_lift():
    """In a chroma plane, strokes count for the style where they lift half the lines' lift (here
    60 of 120), or hold_contrast if that is more."""
    chroma = strip(128 + 120, around=128, beside=10)
    half = chroma.copy()
    for i in range(20):
        half[4:20, X0 + STEP * i] = 128 + 60 if i % 2 else 128 + 120
    appearance = learn_appearance({"y": lines(strip(240, beside=30)), "v": lines(chroma, chroma, half)}, SETTINGS)
    assert appearance.plane == "v" and appearance.level == 248
    below = half.copy()
    for i in range(1, 20, 2):
        below[4:20, X0 + STEP * i] = 128 + 59
    level = learn_appearance({"y": lines(strip(240, beside=30)), "v": lines(chroma, below, below)}, SETTINGS).level
    assert level == 248  # the 59-lift strokes are not counted: the 95th percentile of the rest


@pytest.mark.parametrize("lift, third, counted", [(121, 60, True), (120, 59, False)])
def test_a_chroma_plane_asks_strokes_for_half_their_lift_rounded_down(lift, third, counted):
    """Two lines lift 121 (half of it is 60) or 120 (60): a third line whose strokes all lift 60
    counts, one whose strokes lift 59 has none (not a third of the lift, not 60.5)."""
    chroma = strip(128 + lift, around=128, beside=10)
    found = lines(chroma, chroma, strip(128 + third, around=128, beside=10))
    appearance = learn_appearance({"y": lines(strip(240, beside=30)), "v": found}, SETTINGS)
    assert appearance.plane == "v" and appearance.lift == lift and appearance.lines == (3 if counted else 2)


# --------------------------------------------------------------------------------------------
# Colour
# --------------------------------------------------------------------------------------------

def coloured(distance_u: int, distance_v: int = 0, luma: np.ndarray | None = None) -> dict[str, list]:
    """White-ish strokes in luma (at 240; ``luma`` drawn so, default ``strip(240)``) whose U and V
    sit ``distance_u``/``distance_v`` from grey."""
    luma = strip(240) if luma is None else luma
    u = np.full(luma.shape, 128, np.uint8)
    v = u.copy()
    strokes_at = luma == 240
    u[strokes_at] = 128 + distance_u
    v[strokes_at] = 128 + distance_v
    return {"y": lines(luma), "u": lines(u), "v": lines(v)}


def test_strokes_colour_distance_colour_chroma_from_grey_are_read_in_colour():
    assert SETTINGS.colour_chroma == 16
    assert learn_appearance(coloured(16), SETTINGS).coloured
    assert not learn_appearance(coloured(15), SETTINGS).coloured
    assert not learn_appearance(coloured(12, 10), SETTINGS).coloured  # 15.6 from grey
    assert learn_appearance(coloured(13, 10), SETTINGS).coloured  # 16.4
    assert learn_appearance(coloured(0, -16), SETTINGS).coloured


def test_colour_needs_both_chroma_planes_for_every_line():
    planes = coloured(40)
    assert not learn_appearance({"y": planes["y"], "u": planes["u"]}, SETTINGS).coloured
    planes["v"] = planes["v"] * 2
    assert not learn_appearance(planes, SETTINGS).coloured


def test_colour_is_measured_on_the_strokes_from_contrast_min_above_their_picture():
    """Strokes lifting exactly contrast_min (60) in luma, or 40 stroke pixels in all, are measured."""
    faint = strip(240, around=180)
    assert learn_appearance(coloured(16, luma=faint), SETTINGS).coloured
    assert learn_appearance(coloured(16, luma=strip(240, strokes=5, rows=(4, 12))), SETTINGS).coloured


def test_colour_is_the_median_over_the_lines_that_show_strokes():
    """A first line of 39 stroke pixels says nothing: the grey one after it and the two coloured
    ones decide (the median over three lines measured, 16)."""
    few = coloured(40, luma=strip(240, strokes=5, rows=(4, 12), short=1))
    grey, tinted_ = coloured(0), coloured(16)
    planes = {plane: few[plane] + grey[plane] + tinted_[plane] * 2 for plane in ("y", "u", "v")}
    assert learn_appearance(planes, SETTINGS).coloured
    planes = {plane: few[plane] + grey[plane] * 2 + tinted_[plane] for plane in ("y", "u", "v")}
    assert not learn_appearance(planes, SETTINGS).coloured


def test_colour_needs_the_u_plane_for_every_line_too():
    planes = coloured(40)
    planes = {plane: found * 2 for plane, found in planes.items()}
    planes["u"] = planes["u"][:1]
    assert not learn_appearance(planes, SETTINGS).coloured


@pytest.mark.parametrize("colour_chroma, read_in_colour", [(0, True), (1, False)])
def test_strokes_whose_chroma_is_not_measured_count_as_grey(colour_chroma, read_in_colour):
    """No chroma plane, or chroma strips of another size than luma's (subsampled, not scaled up):
    the strokes count as 0 from grey, coloured only where colour_chroma is 0."""
    settings = replace(SETTINGS, colour_chroma=colour_chroma)
    planes = coloured(40)
    assert learn_appearance({"y": planes["y"]}, settings).coloured is read_in_colour
    halved = {"y": planes["y"], **{plane: [(s[::2, ::2], X0 // 2, X1 // 2) for s, *_ in planes[plane]]
                                    for plane in ("u", "v")}}
    assert learn_appearance(halved, settings).coloured is read_in_colour


def test_appearance_in_words():
    plain = Appearance(plane="y", outlined=False, level=230, lift=90, lines=1)
    assert plain.describe() == ("strokes without an outline, told apart by brightness (level 230, 90 above their "
                                "surroundings), learned from 1 line")
    pink = Appearance(plane="-v", outlined=True, level=200, lift=40, lines=3, coloured=True)
    assert pink.describe() == ("coloured strokes with a dark outline, told apart by their green tint (level 200, "
                               "40 above their surroundings), learned from 3 lines")
    assert Appearance(plane="q", outlined=False, level=1, lift=1, lines=2).describe().count(" q ") == 1
    assert not plain.decoded_in_colour and pink.decoded_in_colour
    assert replace(plain, coloured=True).decoded_in_colour


# --------------------------------------------------------------------------------------------
# The text test a video gets
# --------------------------------------------------------------------------------------------

def test_outlined_subtitles_keep_the_outline_test_and_nothing_seen_drops_it():
    outlined = Appearance(plane="y", outlined=True, level=240, lift=90, lines=3)
    assert settings_for(outlined, SETTINGS) == SETTINGS
    assert settings_for(None, SETTINGS) == replace(SETTINGS, dark_max=255)


@pytest.mark.parametrize("level, bright_min", [(250, 200), (235, 200), (234, 199), (180, 145), (146, 111),
                                               (145, 110), (100, 110)])
def test_plain_subtitles_ask_for_strokes_nearly_as_bright_as_theirs(level, bright_min):
    plain = Appearance(plane="y", outlined=False, level=level, lift=90, lines=3)
    assert settings_for(plain, SETTINGS) == replace(SETTINGS, dark_max=255, bright_min=bright_min)


@pytest.mark.parametrize("lift, contrast_min, hold_contrast", [
    (200, 60, 20), (121, 60, 20), (80, 40, 20), (60, 30, 15), (30, 15, 7), (19, 10, 5), (2, 10, 5)])
def test_chroma_subtitles_ask_for_half_their_lift(lift, contrast_min, hold_contrast):
    chroma = Appearance(plane="-u", outlined=False, level=200, lift=lift, lines=3)
    assert settings_for(chroma, SETTINGS) == replace(
        SETTINGS, dark_max=255, bright_min=165, contrast_min=contrast_min, hold_contrast=hold_contrast,
        min_text_share=SETTINGS.min_text_share * SETTINGS.chroma_text_share)


@pytest.mark.parametrize("noise_floor, contrast_min, expected", [(11, 60, (11, 5)), (10, 8, (8, 5))])
def test_text_held_in_a_chroma_plane_asks_for_at_least_half_the_noise_floor_rounded_down(
        noise_floor, contrast_min, expected):
    """A noise floor of 11 asks faint lines for 11 and text held for 5 (not 5.5); with contrast_min
    set below the floor (8, which then caps the lines' contrast), text held still asks for 5."""
    settings = replace(SETTINGS, plane_noise_floor=noise_floor, contrast_min=contrast_min)
    chroma = Appearance(plane="v", outlined=False, level=200, lift=2, lines=3)
    found = settings_for(chroma, settings)
    assert (found.contrast_min, found.hold_contrast) == expected
    assert type(found.hold_contrast) is int


# --------------------------------------------------------------------------------------------
# The smallest line
# --------------------------------------------------------------------------------------------

def test_the_smallest_line_is_the_least_one_the_mask_kept_enough_of():
    """Lines of 320, 240, 160 and 32 stroke pixels: the median is 200, half of it 100; the 32-pixel
    line (the mask lost it) is not counted: the smallest is 160."""
    plain = replace(SETTINGS, dark_max=255)
    found = lines(strip(240), strip(240, strokes=15), strip(240, strokes=10), strip(240, strokes=2))
    assert smallest_line_strokes(found, plain) == 160
    # 320, 200 and 100 (median 200): exactly half the median is kept; 99 is not
    tall = (0, 20)
    assert smallest_line_strokes(lines(strip(240), strip(240, strokes=10, rows=tall), strip(240, strokes=5, rows=tall)),
                                 plain) == 100
    assert smallest_line_strokes(lines(strip(240), strip(240, strokes=10, rows=tall),
                                       strip(240, strokes=5, rows=tall, short=1)), plain) == 200


def test_a_line_needs_min_line_strokes_to_be_the_smallest():
    plain = replace(SETTINGS, dark_max=255)
    assert smallest_line_strokes(lines(strip(240, strokes=5, rows=(0, 8))), plain) == 40
    assert smallest_line_strokes(lines(strip(240, strokes=5, rows=(0, 8), short=1)), plain) == 0
    assert smallest_line_strokes([], plain) == 0
    assert smallest_line_strokes([(strip(240), 50, 50)], plain) == 0
    one = replace(plain, min_line_strokes=0)
    assert smallest_line_strokes(lines(strip(240, strokes=1, rows=(0, 1))), one) == 1
    # lines the mask kept nothing of are never the smallest, whatever the median
    assert smallest_line_strokes(lines(strip(150), strip(150), strip(240, strokes=1, rows=(0, 1))), one) == 1


def test_lines_without_columns_are_not_counted_in_the_median():
    """Lines of 320 and 100 stroke pixels (median 210, half of it 105) and two without columns:
    the 100-pixel line is not counted; with the empty ones in the median (50) it would be."""
    plain = replace(SETTINGS, dark_max=255)
    found = lines(strip(240), strip(240, strokes=5, rows=(0, 20))) + [(strip(240), 50, 50)] * 2
    assert smallest_line_strokes(found, plain) == 320


# --------------------------------------------------------------------------------------------
# How densely the lines fill their boxes
# --------------------------------------------------------------------------------------------

def test_a_lines_density_is_its_strokes_over_its_unpadded_box():
    """20 strokes of 16 rows every 12 columns: 320 pixels in a box of 16 rows by 229 columns
    (first stroke to last, no margin for the recogniser)."""
    plain = replace(SETTINGS, dark_max=255)
    assert line_density(lines(strip(240)), plain) == pytest.approx(320 / (16 * 229))
    assert line_density(lines(strip(240, strokes=10, rows=(4, 12))), plain) == pytest.approx(80 / (8 * 109))
    wide = [(strip(240), X0 - 6, X1)]  # the detector's box 6 columns wider: the strokes' box is the same
    assert line_density(wide, plain) == pytest.approx(320 / (16 * 229))


def test_a_lines_density_is_that_of_its_fullest_box():
    """A line below 2 strokes of the picture (14 pixels in 7 rows by 13 columns, far denser): the
    line's box, with the most strokes, gives the density."""
    plain = replace(SETTINGS, dark_max=255)
    line = np.full((48, 300), 150, np.uint8)
    line[24:40] = strip(240)[4:20]
    line[4:11, [X0, X0 + 12]] = 240
    assert line_density(lines(line), plain) == pytest.approx(320 / (16 * 229))


def test_the_density_is_the_median_over_the_lines_that_show_strokes():
    plain = replace(SETTINGS, dark_max=255)
    found = lines(strip(240), strip(240, strokes=10, rows=(4, 12)), strip(240, strokes=2), strip(150))
    assert line_density(found, plain) == pytest.approx(80 / (8 * 109))  # of 0.087, 0.092 and 0.154
    assert line_density(lines(strip(150)) + [(strip(240), 50, 50)], plain) is None  # no strokes; no columns
    assert line_density([], plain) is None


@pytest.mark.parametrize("level, seen", [(210, True), (209, False)])
def test_a_stroke_counts_for_the_style_from_contrast_min_above_its_picture(level, seen):
    """Strokes lifted exactly contrast_min (60) above a picture at 150 are strokes; a level less,
    and the line has none: no style is learned from it."""
    appearance = learn_appearance({"y": lines(strip(level, around=150))}, SETTINGS)
    assert (appearance is not None and appearance.lines == 1) is seen
