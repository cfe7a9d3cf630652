"""Where the subtitle band is: each rule of ``stages/region.py`` at its threshold.

The statistics over the pre-scan's line boxes (which lines are centred, which recur at one height,
how far the band reaches), the user's ``--region`` box, the filter on the detector's boxes and the
split of logos from subtitles are decided here on boxes and pictures given exactly; the pre-scan's
decode and the whole search run once on a short video made with FFmpeg, with the real detector."""

from __future__ import annotations

import logging
from dataclasses import replace

import cv2
import numpy as np
import pytest

from conftest import EN_CUES, run_ffmpeg
from subextract.config import load_settings
from subextract.errors import SubextractError
from subextract.schema import Band, VideoInfo
from subextract.stages.region import (TextBox, UserBox, band_and_line_rows, bands_from_rows, detect_boxes,
                                      find_bands, fixed_bands, line_strips, prescan_frames, split_static,
                                      subtitle_lines, subtitle_rows, user_box)

SETTINGS = load_settings().region
FONT = cv2.FONT_HERSHEY_SIMPLEX
INFO = VideoInfo(path="video.mp4", duration=60.0, fps=25.0, width=1280, height=720, rotation=0, codec="h264")


# --------------------------------------------------------------------------------------------
# Boxes
# --------------------------------------------------------------------------------------------

def test_a_text_box_measures_itself():
    box = TextBox(3, 10, 20, 50, 30)
    assert (box.height, box.centre_x, box.centre_y) == (10, 30, 25)
    assert box.iou(TextBox(0, 30, 20, 70, 30)) == pytest.approx(200 / 600)
    assert box.iou(TextBox(0, 10, 25, 50, 35)) == pytest.approx(200 / 600)
    assert box.iou(box) == 1.0
    assert box.iou(TextBox(0, 60, 20, 90, 30)) == 0.0 and box.iou(TextBox(0, 10, 40, 50, 60)) == 0.0
    flat = TextBox(0, 10, 20, 50, 20)
    assert flat.iou(flat) == 0.0  # no area: no overlap to speak of


def test_a_user_box_in_shares_is_rounded_to_pixels_of_each_video():
    box = UserBox(0.1, 0.8, 0.8, 0.2, relative=True)
    assert box.in_pixels(1280, 720) == (128, 576, 1024, 144)
    # 0.3 * 333 = 99.9: rounded, not cut; the width is the rounded right edge less the rounded left edge
    assert UserBox(0.3, 0.3, 0.3, 0.3, relative=True).in_pixels(333, 333) == (100, 100, 100, 100)
    assert UserBox(10.0, 20.0, 300.0, 40.0, relative=False).in_pixels(1280, 720) == (10, 20, 300, 40)


@pytest.mark.parametrize("mode", ["auto", "bottom", "top"])
def test_the_named_regions_are_no_box(mode):
    assert user_box(mode) is None


@pytest.mark.parametrize("mode, box", [
    ("0,300,640,60", UserBox(0, 300, 640, 60, relative=False)),
    (" 0 , 300 , 640 , 60 ", UserBox(0, 300, 640, 60, relative=False)),
    ("0,0.8,1,0.2", UserBox(0, 0.8, 1, 0.2, relative=True)),
    ("0,.8,1,.2", UserBox(0, 0.8, 1, 0.2, relative=True)),
    ("0%,80%,100%,20%", UserBox(0, 0.8, 1, 0.2, relative=True)),
    ("50%,0%,50%,100%", UserBox(0.5, 0, 0.5, 1, relative=True)),
    ("0.5,0,0.5,1", UserBox(0.5, 0, 0.5, 1, relative=True)),
])
def test_a_region_box_is_read_in_pixels_shares_or_percentages(mode, box):
    assert user_box(mode) == box


@pytest.mark.parametrize("mode, words", [
    ("middle", "expected auto, bottom, top or X,Y,W,H"),
    ("0,300,640", "expected auto, bottom, top or X,Y,W,H"),
    ("0,-3,640,60", "expected auto, bottom, top or X,Y,W,H"),
    ("0%,80,100%,20%", "all four values as percentages or none"),
    ("0,0.8,1,0.3", "must lie inside it"),
    ("0.6,0,0.5,1", "must lie inside it"),
    ("0%,0%,101%,10%", "must lie inside it"),
    ("1.5,0,0,0", "must lie inside it"),
])
def test_a_bad_region_is_refused_with_its_reason(mode, words):
    with pytest.raises(SubextractError, match=f"--zone {mode!r}: .*{words}"):
        user_box(mode, "--zone")


def test_a_bad_region_s_message_names_the_option_and_what_is_accepted():
    with pytest.raises(SubextractError) as shape:
        user_box("middle")
    assert str(shape.value) == ("--region 'middle': expected auto, bottom, top or X,Y,W,H (pixels, fractions such "
                                "as 0,0.8,1,0.2, or percentages such as 0%,80%,100%,20%)")
    with pytest.raises(SubextractError) as outside:
        user_box("0,0.8,1,0.3")
    assert str(outside.value) == ("--region '0,0.8,1,0.3': a box in shares of the picture must lie inside it (each "
                                  "value 0-1 or 0%-100%, X+W and Y+H at most 1)")


def test_a_fraction_in_any_value_makes_the_box_shares():
    assert user_box("0,0.5,1,0") == UserBox(0, 0.5, 1, 0, relative=True)
    assert user_box("0,0,0.5,1") == UserBox(0, 0, 0.5, 1, relative=True)
    assert user_box("0,0,1,1") == UserBox(0, 0, 1, 1, relative=False)  # pixels


def test_the_user_s_bands_lie_inside_the_picture():
    assert fixed_bands("auto", INFO, SETTINGS) is None
    assert fixed_bands("bottom", INFO, SETTINGS) == [Band(0, 540, 1280, 180, "bottom")]
    assert fixed_bands("top", INFO, SETTINGS) == [Band(0, 0, 1280, 180, "top")]
    assert fixed_bands("11,601,1269,119", INFO, SETTINGS) == [Band(11, 601, 1268, 118, "user")]
    assert fixed_bands("0,0.75,1,0.25", INFO, SETTINGS) == [Band(0, 540, 1280, 180, "user")]
    assert fixed_bands("0,0,8,8", INFO, SETTINGS) == [Band(0, 0, 8, 8, "user")]
    for outside in ("0,0,7,8", "0,0,8,7", "1,0,1280,100", "0,621,1280,100"):
        with pytest.raises(SubextractError, match=f"--region {outside}: box must lie inside the 1280x720 picture"):
            fixed_bands(outside, INFO, SETTINGS)


def test_an_edge_band_is_a_share_of_the_height_at_least_16_rows_even_sized():
    odd = replace(INFO, width=641, height=366)  # a quarter: 91.5 rows, made even
    assert fixed_bands("bottom", odd, SETTINGS) == [Band(0, 276, 640, 90, "bottom")]
    tiny = replace(INFO, width=64, height=40)
    assert fixed_bands("bottom", tiny, SETTINGS) == [Band(0, 24, 64, 16, "bottom")]


# --------------------------------------------------------------------------------------------
# The detector's boxes
# --------------------------------------------------------------------------------------------

def test_detected_boxes_are_scaled_back_and_shapes_no_line_has_are_dropped():
    """Frames at half size (scale 0.5) of a 720-row picture: a box taller than max_line_height of
    it (108 rows, 54 at the detector's size) or narrower than 0.8 of its height is no text line."""
    frames = [np.full((360, 640), index, np.uint8) for index in range(2)]
    found = {0: [(100, 300, 300, 340), (100, 100, 154, 154), (100, 100, 154, 155)],
             1: [(10, 10, 42, 50), (10, 10, 41, 50)]}

    def boxes_in(frame: np.ndarray):  # the boxes a detector reported for each frame
        return found[int(frame[0, 0])]

    boxes = detect_boxes(frames, boxes_in, 0.5, SETTINGS.max_line_height)
    assert boxes == [TextBox(0, 200, 600, 600, 680), TextBox(0, 200, 200, 308, 308), TextBox(1, 20, 20, 84, 100)]


def test_a_box_is_cut_from_the_frame_at_its_scale_and_at_least_2_pixels_each_way():
    from subextract.stages.region import _crop

    frame = np.arange(360 * 640, dtype=np.uint32).reshape(360, 640)
    assert np.array_equal(_crop(frame, TextBox(0, 100, 50, 300, 90), 0.5), frame[25:45, 50:150])
    assert np.array_equal(_crop(frame, TextBox(0, 100, 50, 100.5, 50), 0.5), frame[25:27, 50:52])  # a sliver


def test_a_box_s_edges_are_the_gradient_magnitude_across_and_along():
    """A line of 100 one pixel wide: Sobel's first derivative (x4) on both sides of it, 0 on it,
    whether the line runs down or across the box."""
    from subextract.stages.region import _edges

    frame = np.zeros((20, 20), np.uint8)
    frame[:, 10] = 100
    profile = np.zeros(20, np.float32)
    profile[[9, 11]] = 400
    box = TextBox(0, 0, 0, 20, 20)
    assert np.array_equal(_edges(frame, box, 1.0)[5], profile)
    assert np.array_equal(_edges(frame.T.copy(), box, 1.0)[:, 5], profile)


# --------------------------------------------------------------------------------------------
# Where subtitles recur
# --------------------------------------------------------------------------------------------

def line_at(frame: int, y0: float, height: float = 40, x0: float = 440, x1: float = 840) -> TextBox:
    return TextBox(frame, x0, y0, x1, y0 + height)


def test_centred_lines_recurring_at_one_height_make_a_zone():
    boxes = [line_at(0, 600), line_at(1, 604), line_at(2, 598, height=44)]
    assert subtitle_rows(boxes, INFO, SETTINGS) == [(598, 644, 40)]


def test_a_line_off_the_centre_is_no_subtitle():
    tolerance = SETTINGS.centre_tolerance * INFO.width  # 256 pixels
    centred = [line_at(0, 600, x0=440 + tolerance, x1=840 + tolerance), line_at(1, 600, x0=440 - tolerance,
                                                                                  x1=840 - tolerance)]
    assert subtitle_rows(centred, INFO, SETTINGS) == [(600, 640, 40)]
    off = [line_at(0, 600, x0=441 + tolerance, x1=841 + tolerance), line_at(1, 600, x0=441 + tolerance,
                                                                             x1=841 + tolerance)]
    assert subtitle_rows(off, INFO, SETTINGS) == []
    mid_height = [line_at(frame, 300, x0=440 + tolerance, x1=840 + tolerance) for frame in (0, 1)]
    assert subtitle_rows(mid_height, INFO, SETTINGS) == [(300, 340, 40)]  # far from an edge, seen twice


def test_stacked_lines_join_while_the_gap_is_under_a_line_height():
    joined = [line_at(0, 560), line_at(0, 639), line_at(1, 560), line_at(1, 639)]  # a gap of 39 rows
    assert subtitle_rows(joined, INFO, SETTINGS) == [(560, 679, 40)]
    apart = [line_at(0, 560), line_at(0, 640), line_at(1, 560), line_at(1, 640)]  # a gap of 40
    assert subtitle_rows(apart, INFO, SETTINGS) == [(560, 600, 40), (640, 680, 40)]


def test_a_line_seen_once_makes_a_zone_only_near_the_top_or_bottom():
    settings = replace(SETTINGS, edge_zone=0.25)  # 180 rows from either edge
    assert subtitle_rows([line_at(0, 160)], INFO, settings) == [(160, 200, 40)]  # its centre at 180
    assert subtitle_rows([line_at(0, 161)], INFO, settings) == []
    assert subtitle_rows([line_at(0, 520)], INFO, settings) == [(520, 560, 40)]  # 540
    assert subtitle_rows([line_at(0, 519)], INFO, settings) == []
    assert subtitle_rows([line_at(0, 300), line_at(1, 300)], INFO, settings) == [(300, 340, 40)]  # twice: anywhere


def test_a_glyph_sized_box_seen_once_makes_no_zone_even_near_the_edge():
    """A box narrower than two line heights, in one keyframe, is most often a piece of the picture
    (a crack in sunlit rock made a top band, read 50 times for nothing); seen in two, or beside a
    line's box, it counts."""
    glyph = line_at(0, 40, x0=620, x1=699)  # 79 px: just under two heights of 40
    assert subtitle_rows([glyph], INFO, SETTINGS) == []
    assert subtitle_rows([line_at(0, 40, x0=620, x1=700)], INFO, SETTINGS) == [(40, 80, 40)]
    assert subtitle_rows([glyph, line_at(1, 40, x0=620, x1=699)], INFO, SETTINGS) == [(40, 80, 40)]
    assert subtitle_rows([glyph, line_at(0, 60)], INFO, SETTINGS) == [(40, 100, 40)]


def test_the_two_best_supported_zones_are_kept_down_to_three_tenths_of_the_best():
    bottom = [line_at(frame, 640) for frame in range(10)]
    top = [line_at(frame, 40) for frame in range(3)]
    middle = [line_at(frame, 340) for frame in range(2)]
    assert subtitle_rows(bottom + top + middle, INFO, SETTINGS) == [(640, 680, 40), (40, 80, 40)]
    assert subtitle_rows(bottom + top[:2], INFO, SETTINGS) == [(640, 680, 40)]
    assert subtitle_rows(middle + bottom[:6], INFO, SETTINGS) == [(640, 680, 40), (340, 380, 40)]
    assert subtitle_rows(bottom + bottom[:4], INFO, SETTINGS) == [(640, 680, 40)]  # frames, not boxes, count
    middle = [line_at(frame, 340) for frame in range(3)]  # three zones: the third best is left out
    assert subtitle_rows(bottom + top + middle, INFO, SETTINGS) == [(640, 680, 40), (40, 80, 40)]


def test_a_band_reaches_the_edge_its_lines_sit_near_and_grows_towards_the_centre():
    """A bottom zone 600-650 with 50-row lines: 30 rows of padding (0.6) and 65 of growth (1.3)
    above it, down to the picture's edge below; a top zone the mirror of it."""
    assert bands_from_rows([(600, 650, 50)], INFO, SETTINGS) == [Band(0, 504, 1280, 216, "bottom")]
    assert bands_from_rows([(50, 100, 50)], INFO, SETTINGS) == [Band(0, 0, 1280, 196, "top")]
    assert bands_from_rows([(600, 650, 50), (50, 100, 50)], INFO, SETTINGS) == \
        [Band(0, 0, 1280, 196, "top"), Band(0, 504, 1280, 216, "bottom")]
    odd = replace(INFO, width=1279)
    assert bands_from_rows([(602.5, 650, 50)], odd, SETTINGS) == [Band(0, 506, 1278, 214, "bottom")]  # 507.5
    assert bands_from_rows([(335, 360, 10)], INFO, SETTINGS) == [Band(0, 0, 1280, 380, "top")]  # middle 347.5
    assert bands_from_rows([(350, 371, 10)], INFO, SETTINGS) == [Band(0, 330, 1280, 390, "bottom")]  # 360.5
    assert bands_from_rows([(2, 6, 2)], INFO, SETTINGS) == [Band(0, 0, 1280, 16, "top")]  # at least 16 rows
    # a zone centred on the middle row (360) is a top one; its band ends at row 339 + 6 + 13 + 1 = 401, made even
    assert bands_from_rows([(339, 381, 10)], INFO, SETTINGS) == [Band(0, 0, 1280, 400, "top")]


def test_subtitle_lines_are_the_centred_lines_inside_a_zone():
    rows = [(600, 680, 40)]
    tolerance = SETTINGS.centre_tolerance * INFO.width  # 256 pixels
    inside = [line_at(0, 580), line_at(1, 660),  # centres 600 and 680: on the zone's edges
              line_at(5, 620, x0=440 + tolerance, x1=840 + tolerance), line_at(6, 620, x0=440 - tolerance,
                                                                                x1=840 - tolerance)]
    outside = [line_at(2, 579), line_at(3, 661), line_at(4, 620, x0=441 + tolerance, x1=841 + tolerance)]
    assert subtitle_lines(inside + outside, rows, INFO, SETTINGS) == inside


def test_a_line_strip_is_the_line_and_half_its_height_around_it_at_the_frames_scale():
    frame = np.arange(360 * 640, dtype=np.uint32).reshape(360, 640)
    (strip, x0, x1), = line_strips([TextBox(0, 441, 601, 839, 641)], [frame], 0.5)
    assert (x0, x1) == (220, 420)
    assert np.array_equal(strip, frame[290:331])  # rows (601 - 20) / 2 = 290.5 to (641 + 20) / 2 + 1
    (strip, _, _), = line_strips([TextBox(0, 441, 0, 839, 40)], [frame], 0.5)
    assert strip.shape[0] == 31  # from the top row: nothing above it
    portrait = np.arange(640 * 360, dtype=np.uint32).reshape(640, 360)  # taller than wide
    (strip, _, _), = line_strips([TextBox(0, 100, 1000, 600, 1040)], [portrait], 0.5)
    assert np.array_equal(strip, portrait[490:531])


# --------------------------------------------------------------------------------------------
# Logos: the same glyphs at one place in most frames
# --------------------------------------------------------------------------------------------

def glyph_frames(logo_frames: int, count: int = 5) -> tuple[list[np.ndarray], list[TextBox]]:
    """``count`` frames of a textured picture; a logo drawn in the first ``logo_frames`` of them,
    and a subtitle of other words in each."""
    words = ["HELLO WORLD", "GREAT THING", "QUIET NIGHT", "BRAVE SOULS", "MIGHTY OAKS"]
    frames, boxes = [], []
    for index in range(count):
        rng = np.random.default_rng(index)
        frame = cv2.GaussianBlur(rng.integers(0, 255, (360, 640)).astype(np.uint8), (0, 0), 8)
        cv2.putText(frame, words[index], (220, 330), cv2.FONT_HERSHEY_SIMPLEX, 0.9, 255, 2)
        boxes.append(TextBox(index, 216, 306, 420, 336))
        if index < logo_frames:
            cv2.putText(frame, "TV9", (560, 330), cv2.FONT_HERSHEY_SIMPLEX, 0.9, 255, 2)
            boxes.append(TextBox(index, 556, 306, 616, 336))
        frames.append(frame)
    return frames, boxes


def test_text_in_static_share_of_the_frames_is_a_logo():
    """In 3 of 5 frames (0.6, static_share) the logo is static; in 2 it is text seen twice, which
    counts once (its first showing)."""
    frames, boxes = glyph_frames(logo_frames=3)
    static, moving = split_static(boxes, frames, 1.0, SETTINGS)
    assert [(b.frame, b.x0) for b in static] == [(0, 556), (1, 556), (2, 556)]
    assert [b.x0 for b in moving] == [216] * 5
    frames, boxes = glyph_frames(logo_frames=2)
    static, moving = split_static(boxes, frames, 1.0, SETTINGS)
    assert static == []
    assert [(b.frame, b.x0) for b in moving] == [(0, 216), (0, 556), (1, 216), (2, 216), (3, 216), (4, 216)]


def test_two_frames_are_too_few_to_tell_a_logo():
    frames, boxes = glyph_frames(logo_frames=2, count=2)
    static, moving = split_static(boxes, frames, 1.0, SETTINGS)
    assert static == [] and [(b.frame, b.x0) for b in moving] == [(0, 216), (0, 556), (1, 216)]


def test_a_logo_is_compared_where_it_overlaps_a_box_of_the_other_frame():
    """The logo's box in a later frame must overlap it by more than 0.6 (IoU) to be the same place."""
    frames, boxes = glyph_frames(logo_frames=3)
    shifted = [replace(b, x0=b.x0 + 16, x1=b.x1 + 16) if b.x0 == 556 and b.frame == 2 else b for b in boxes]
    static, _ = split_static(shifted, frames, 1.0, SETTINGS)  # IoU 44/76: not the same place
    assert static == []


def test_a_logo_box_at_the_detector_scale_is_cut_from_the_frame_at_that_scale():
    frames, boxes = glyph_frames(logo_frames=3)
    small = [cv2.resize(f, (320, 180), interpolation=cv2.INTER_AREA) for f in frames]
    static, _ = split_static(boxes, small, 0.5, SETTINGS)
    assert [(b.frame, b.x0) for b in static] == [(0, 556), (1, 556), (2, 556)]


def test_blank_crops_do_not_match():
    """A box over a flat picture has no edges to correlate: never the same glyphs."""
    frames = [np.full((100, 200), 80, np.uint8) for _ in range(3)]
    boxes = [TextBox(i, 10, 10, 90, 40) for i in range(3)]
    static, moving = split_static(boxes, frames, 1.0, SETTINGS)
    assert static == [] and len(moving) == 3


def test_a_box_over_a_flat_picture_seen_once_is_no_logo():
    """Seen in one frame of three, the detector saw nothing at its place in the others: with no
    strokes in the box, none can still stand out there."""
    frames = [np.full((100, 200), 80, np.uint8) for _ in range(3)]
    box = TextBox(0, 10, 10, 90, 40)
    assert split_static([box], frames, 1.0, SETTINGS) == ([], [box])


def _translucent_logo_frame(index: int) -> tuple[np.ndarray, list[TextBox]]:
    """Footage that changes every keyframe (fine texture), a 40 % white logo over it and an opaque
    counter line: every window of the logo takes the footage's edges in (0.7-0.9 between two
    frames), the counter's changed digit far more."""
    rng = np.random.default_rng(100 + index)
    frame = cv2.GaussianBlur(rng.integers(0, 255, (360, 640)).astype(np.uint8), (0, 0), 2)
    logo = np.zeros_like(frame)
    cv2.putText(logo, "TV9", (560, 40), FONT, 0.9, 255, 2)
    frame = np.where(logo > 0, (0.4 * 255 + 0.6 * frame).astype(np.uint8), frame)
    cv2.putText(frame, f"Subtitle number {index + 1}1", (190, 330), FONT, 0.9, 255, 2)
    return frame, [TextBox(index, 556, 16, 616, 46), TextBox(index, 186, 306, 466, 338)]


def test_a_translucent_logo_over_changing_footage_is_a_logo_and_the_changing_line_is_not():
    frames, boxes = zip(*(_translucent_logo_frame(i) for i in range(6)))
    static, moving = split_static([b for pair in boxes for b in pair], list(frames), 1.0, SETTINGS)
    assert {b.x0 for b in static} == {556} and len(static) == 6
    assert {b.x0 for b in moving} == {186}
    # Every window held to same_glyphs alone (no drop allowed below the pair's typical window): no logo.
    strict = replace(SETTINGS, glyph_drop=0.0)
    static, _ = split_static([b for pair in boxes for b in pair], list(frames), 1.0, strict)
    assert static == []


def _logo_over(level: int, index: int, logo: bool = True) -> np.ndarray:
    """A picture of one brightness with a little texture, a 55 % white logo with a faint dark rim."""
    rng = np.random.default_rng(200 + index)
    frame = np.clip(level + rng.normal(0, 6, (360, 640)), 0, 255).astype(np.uint8)
    if logo:
        glyphs = np.zeros_like(frame)
        cv2.putText(glyphs, "TV9", (560, 40), FONT, 0.9, 255, 2)
        rim = cv2.dilate(glyphs, np.ones((3, 3), np.uint8)) & ~glyphs
        frame = np.where(rim > 0, 0.65 * frame, frame)
        frame = np.where(glyphs > 0, 0.55 * 255 + 0.45 * frame, frame).astype(np.uint8)
    return frame


@pytest.mark.parametrize("drawn", [True, False])
def test_a_logo_the_detector_misses_over_bright_pictures_is_a_logo_where_its_strokes_stay(drawn):
    """Detected over the two dark pictures only; over the four bright ones the detector saw
    nothing there. Where the logo is still drawn, its strokes stand out there: 6 of 6 frames, a
    logo. Where it is not (text shown twice, then gone), 2 of 6: no logo."""
    frames = [_logo_over(40, i) for i in range(2)] + [_logo_over(200, i, drawn) for i in range(2, 6)]
    boxes = [TextBox(i, 556, 16, 616, 46) for i in range(2)]
    static, moving = split_static(boxes, frames, 1.0, SETTINGS)
    assert (len(static), len(moving)) == ((2, 0) if drawn else (0, 1))
    # The same frames, the strokes held to their whole margin over the dark picture (0.76 of it here): none.
    static, _ = split_static(boxes, frames, 1.0, replace(SETTINGS, static_strokes=1.0))
    assert static == []


# --------------------------------------------------------------------------------------------
# The pre-scan on a real video
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def keyframed(tmp_path_factory):
    """4 s of 320x240 at 25 fps with a keyframe every 5 frames (20 keyframes)."""
    path = tmp_path_factory.mktemp("region") / "keyframed.mp4"
    run_ffmpeg("-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=4", "-c:v", "libx264", "-g", "5",
               "-keyint_min", "5", "-sc_threshold", "0", "-pix_fmt", "yuv420p", str(path))
    return VideoInfo(path=str(path), duration=4.0, fps=25.0, width=320, height=240, rotation=0, codec="h264")


def test_the_prescan_takes_one_keyframe_per_bucket_of_the_range(keyframed):
    """8 buckets at least (4 s of video at one look per 4 s would be one): the first keyframe of
    each half second; the detector's look at prescan_det_side, the analysis looks at its scale."""
    settings = replace(SETTINGS, prescan_det_side=160)
    looks = prescan_frames(keyframed, settings, 0.0, None, analysis_scale=0.25)
    assert len(looks.detector) == 8 and looks.detector[0].shape == (120, 160)
    assert [g.shape for g in looks.grey] == [(60, 80)] * 8 and looks.colour[0].shape == (60, 80, 3)
    assert looks.analysis_scale == 0.25
    plain = prescan_frames(keyframed, replace(settings, prescan_interval=0.25), 1.0, 3.0)
    assert len(plain.detector) == 8 and plain.grey == [] and plain.analysis_scale is None
    more = prescan_frames(keyframed, replace(settings, prescan_interval=0.2), 0.0, None)
    assert len(more.detector) == 16  # 20 buckets asked, prescan_frames (16) allowed
    whole = prescan_frames(keyframed, replace(settings, prescan_det_side=640), 0.0, None)
    assert whole.detector[0].shape == (240, 320)  # never scaled up


def test_keyframes_where_the_detector_found_no_text_are_looked_at_again_at_prescan_retry_side(keyframed):
    """The one decode also keeps each keyframe at prescan_retry_side; where the first look found
    text in at most prescan_retry_share (a quarter) of the keyframes, the others go to the detector
    again, and what it finds there is in picture pixels, of that keyframe. Where it found text in
    more, or the retry side is no larger, there is no second look."""
    from subextract.stages.region import _second_look

    settings = replace(SETTINGS, prescan_det_side=160, prescan_retry_side=240, prescan_retry_share=0.25)
    looks = prescan_frames(keyframed, settings, 0.0, None, analysis_scale=0.25)
    assert looks.retry_scale == 0.75 and [r.shape for r in looks.retry] == [(180, 240)] * 8
    seen_shapes = []

    def detector(picture):
        seen_shapes.append(picture.shape)
        return [(30, 150, 210, 165)]  # 180x15 at the retry size

    boxes = _second_look(looks, {0, 5}, detector, settings)
    assert seen_shapes == [(180, 240)] * 6
    assert boxes == [TextBox(frame, 40, 200, 280, 220, second_look=True) for frame in (1, 2, 3, 4, 6, 7)]
    assert _second_look(looks, {0, 5, 6}, detector, settings) == []  # 3 of 8 keyframes showed text
    no_larger = prescan_frames(keyframed, replace(settings, prescan_retry_side=160), 0.0, None)
    assert no_larger.retry_scale is None and _second_look(no_larger, set(), detector, settings) == []


def test_the_second_look_says_what_it_found(caplog):
    from subextract.stages.region import PrescanFrames, _second_look

    settings = replace(SETTINGS, prescan_det_side=160, prescan_retry_side=240, prescan_retry_share=0.25)
    looks = PrescanFrames([np.zeros((120, 160), np.uint8)] * 8, retry=[np.zeros((180, 240), np.uint8)] * 8,
                          retry_scale=0.75)
    with caplog.at_level(logging.DEBUG, logger="subextract.stages.region"):
        boxes = _second_look(looks, {0, 5}, lambda picture: [(30, 150, 210, 165)], settings)
    assert len(boxes) == 6
    assert [record.getMessage() for record in caplog.records] == [
        "pre-scan: 6 of 8 keyframes showed no text at 160 px; 6 lines found at 240 px"]


def test_the_prescan_detector_takes_the_larger_of_its_two_looks():
    from subextract.stages.region import prescan_detector_side

    assert prescan_detector_side(replace(SETTINGS, prescan_det_side=480, prescan_retry_side=640)) == 640
    assert prescan_detector_side(replace(SETTINGS, prescan_det_side=800, prescan_retry_side=640)) == 800


@pytest.fixture(scope="module")
def detector():
    from subextract.stages.ocr.rapid import RapidTextDetector

    return RapidTextDetector.standalone(SETTINGS.prescan_det_side, 1)


def test_the_band_is_found_where_the_subtitles_are(en_clip, detector):
    from subextract.stages.probe import probe

    info = probe(str(en_clip))
    region = find_bands(info, SETTINGS, lambda: detector)
    (band,) = region.bands
    assert band.label == "bottom" and band.y + band.height == info.height and band.width == info.width
    assert region.lines and all(band.y <= line.centre_y <= band.y + band.height for line in region.lines)
    assert len(region.strips) == len(region.lines) and region.static == []
    assert region.frames is not None and region.frames.grey == []
    assert {round(line.frame) for line in region.lines} <= set(range(len(region.frames.detector)))
    assert EN_CUES  # the clip's cues are at the bottom, centred


def test_a_chosen_band_keeps_the_lines_inside_it(en_clip, detector):
    from subextract.stages.probe import probe

    info = probe(str(en_clip))
    inside = find_bands(info, replace(SETTINGS, mode="0,0.5,1,0.5"), lambda: detector)
    assert inside.bands == [Band(0, 180, 640, 180, "user")] and inside.lines
    above = find_bands(info, replace(SETTINGS, mode="0,0,1,0.5"), lambda: detector)
    assert above.bands == [Band(0, 0, 640, 180, "user")] and above.lines == [] and above.strips == []


# --------------------------------------------------------------------------------------------
# The warning when the only centred text in the bands was taken for a logo
# --------------------------------------------------------------------------------------------

BOTTOM = [Band(0, 540, 1280, 180, "bottom")]
LOGO_LINE = [TextBox(0, 500, 600, 780, 640), TextBox(2, 502, 601, 781, 642)]  # one line, static in 2 frames


def test_the_only_centred_text_blacked_out_in_a_band_is_reported_with_its_box_and_frames():
    from subextract.stages.region import _lone_static_text

    assert _lone_static_text([], LOGO_LINE, BOTTOM, INFO, SETTINGS, 6) == [
        "the only text line the pre-scan found (281x42 at 500,600) showed the same glyphs in 2 of its 6 frames: it "
        "was taken for a logo or watermark and blacked out, and no subtitle was found; if it is a subtitle, it may "
        "be missed"]
    assert _lone_static_text(LOGO_LINE[:1], LOGO_LINE, BOTTOM, INFO, SETTINGS, 6) == []  # a subtitle line was found


@pytest.mark.parametrize("box, reported", [
    (TextBox(0, 800, 600, 992, 640), True),  # its middle 256 px (centre_tolerance 0.2 of 1280) off the picture's
    (TextBox(0, 802, 600, 994, 640), False),  # a pixel further: a logo at the side, nothing to say
    (TextBox(0, 500, 500, 780, 540), False),  # ends where the band starts
    (TextBox(0, 500, 501, 780, 541), True),  # reaches a row into it
    (TextBox(0, 500, 720, 780, 760), False),  # starts where the band ends
    (TextBox(0, 500, 719, 780, 759), True),
])
def test_only_centred_static_text_inside_a_band_is_reported(box, reported):
    from subextract.stages.region import _lone_static_text

    assert SETTINGS.centre_tolerance == 0.2
    assert bool(_lone_static_text([], [box], BOTTOM, INFO, SETTINGS, 6)) is reported


def test_a_flat_crop_correlates_with_nothing_whichever_side_it_is():
    """Edges against a flat crop (a logo's place gone blank, text over a flat picture): no glyphs
    to be the same, a correlation of 0 and no division by its zero energy."""
    from subextract.stages.region import _correlation

    edges = np.zeros((20, 40), np.float32)
    edges[5:15, 10:12] = edges[5:15, 25:27] = 200.0
    flat = np.full((20, 40), 3.0, np.float32)
    assert _correlation(edges, flat) == 0.0 and _correlation(flat, edges) == 0.0 and _correlation(flat, flat) == 0.0
    assert _correlation(edges, edges) == pytest.approx(1.0)


# --------------------------------------------------------------------------------------------
# The second look's lines: subtitle lines, but no band edges and no lower bar of their own
# --------------------------------------------------------------------------------------------

def test_the_second_looks_lines_are_subtitles_where_all_rows_say_so_but_place_no_band():
    """The first look saw one line of small text at 640-660; the second look saw the others, up to
    18 rows higher or lower: the band stays the first look's, the lines are all five."""
    first = [line_at(0, 640, height=20)]
    second = [replace(line_at(frame, y, height=20), second_look=True) for frame, y in
              ((1, 622), (2, 626), (3, 654), (4, 658))]
    band_rows, rows = band_and_line_rows(first + second, INFO, SETTINGS)
    assert band_rows == [(640, 660, 20)] and rows == [(622, 678, 20)]
    assert len(subtitle_lines(first + second, rows, INFO, SETTINGS)) == 5
    assert len(subtitle_lines(first + second, band_rows, INFO, SETTINGS)) == 1  # centred inside 640-660: the first look's alone
    assert band_and_line_rows(second, INFO, SETTINGS) == (rows := subtitle_rows(second, INFO, SETTINGS), rows)
    assert band_and_line_rows(first, INFO, SETTINGS) == ([(640, 660, 20)], [(640, 660, 20)])


def test_the_second_looks_lines_set_the_lower_bar_only_where_the_first_looks_set_none():
    from subextract.pipeline.run import _bar_setting_strips
    from test_appearance_rules import SETTINGS as SEGMENT, lines, strip
    plain = replace(SEGMENT, dark_max=255)
    strips = lines(strip(240), strip(240, strokes=10))  # 320 and 160 stroke pixels
    firsts = [line_at(0, 640), replace(line_at(1, 640), second_look=True)]
    assert _bar_setting_strips(strips, firsts, plain) == strips[:1]  # the faint second-look line sets no bar
    cut = lines(strip(240, strokes=2), strip(240, strokes=10))  # the first look's line: 32 pixels, under 40
    assert _bar_setting_strips(cut, firsts, plain) == cut
    assert _bar_setting_strips(strips, [line_at(0, 640), line_at(1, 640)], plain) == strips
    assert _bar_setting_strips(strips, firsts[:1], plain) == strips  # strips and lines that do not pair
