"""Every boundary decision of the segmenter, pinned to the frame, on synthetic 25 fps bands.

Each test drives ``Segmenter.push`` with pictures drawn here (no FFmpeg, no OCR) in which one
decision alone settles a boundary: the trim of a just-settled start, the look back over frames
that still show the text, its bound at the previous segment's end, the fade frames before a start
and after an end, the hold over a bright picture, a line added, a text replaced in place, a faint
start absorbed. A boundary is read as frame numbers — (start, end, the frame before the start,
the last frame shown, settled) — so a decision that moves by one frame fails its test."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import logging

import cv2
import numpy as np
import pytest

from test_segment import SETTINGS, H, W, _fill, _outline, background, faded, with_text
from test_segment_styles import PLAIN, plain_text
from test_thin_strokes import PLAIN as THIN_PLAIN
from test_thin_strokes import STREWN, measured, picture as dim_picture, specks, thin_line

from subextract.config import SegmentSettings
from subextract.stages.mask import still_shown, stroke_lift, text_mask
from subextract.stages.segment import Segmenter, _FrameKeeper, fade_frames, stroke_contrast

FPS = 25
# The same test with the hold on the strokes' lift out of reach: the fade frames alone move a boundary.
FADE_ONLY = replace(SETTINGS, hold_contrast=255)
FADING = "FADING IN AND OUT"


def frame_numbers(pts: float | None) -> int | None:
    return None if pts is None else round(pts * FPS)


def boundaries(pictures, settings: SegmentSettings = SETTINGS) -> list[tuple]:
    """(start, end, frame before the start, last frame shown, settled) of each segment, in frames;
    the video ends after its last picture."""
    segmenter = Segmenter(0, settings)
    segments = []
    for n, picture in enumerate(pictures):
        segments.extend(segmenter.push(n / FPS, picture))
    segments.extend(segmenter.finish(len(pictures) / FPS))
    return [(frame_numbers(s.start), frame_numbers(s.end), frame_numbers(s.before_start),
             frame_numbers(s.last_shown), s.settled) for s in segments]


def yielded_at(pictures, settings: SegmentSettings = SETTINGS) -> list[int | None]:
    """The frame whose push yielded each segment (None: the finish)."""
    segmenter = Segmenter(0, settings)
    frames = [n for n, picture in enumerate(pictures) for _ in segmenter.push(n / FPS, picture)]
    return frames + [None for _ in segmenter.finish(len(pictures) / FPS)]


def frame_counts(pictures, settings: SegmentSettings = SETTINGS) -> list[int]:
    """How many frames each segment was made of (the frames its OCR picture was chosen from)."""
    segmenter = Segmenter(0, settings)
    segments = [s for n, picture in enumerate(pictures) for s in segmenter.push(n / FPS, picture)]
    return [s.frame_count for s in [*segments, *segmenter.finish(len(pictures) / FPS)]]


def fence(picture: np.ndarray, spacing: int = 7) -> np.ndarray:
    """Rows of thin bright outlined bars across the band (a railing after a cut): stroke pixels
    enough to open a segment, none of them text."""
    picture = picture.copy()
    for x in range(10, W - 10, spacing):
        for y0 in (3, 28, 53):
            cv2.line(picture, (x, y0), (x, y0 + 20), 0, 5)
            cv2.line(picture, (x, y0), (x, y0 + 20), 250, 1)
    return picture


def flat(level: int, n: int = 0) -> np.ndarray:
    return np.clip(background(n, "flat").astype(np.int16) - 90 + level, 0, 255).astype(np.uint8)


# --------------------------------------------------------------------------------------------
# Opening and ending on the mask
# --------------------------------------------------------------------------------------------

def test_text_runs_from_its_first_frame_to_the_first_frame_without_it():
    pictures = [with_text(background(n, "gradient"), "HELLO WORLD") if 10 <= n < 30 else background(n, "gradient")
                for n in range(40)]
    assert boundaries(pictures) == [(10, 30, 9, 29, True)]


def test_text_cut_to_other_text_ends_at_once():
    """A cut from two lines to another line: the first text is out with the cut's frame (text
    follows: no fade-out to wait for); a cut to text as dense in place is known three frames on."""
    pictures = [with_text(background(n, "gradient"), *(("HELLO WORLD", "GREAT THING") if n < 30 else ("QUIET NIGHT",)))
                for n in range(50)]
    assert boundaries(pictures) == [(0, 30, None, 29, True), (30, 50, 29, 49, True)]
    assert yielded_at(pictures) == [30, None]
    pictures = [with_text(background(n, "gradient"), "HELLO WORLD" if n < 30 else "GREAT THING") for n in range(50)]
    assert boundaries(pictures) == [(0, 30, None, 29, True), (30, 50, 29, 49, True)]
    assert yielded_at(pictures) == [32, None]


def test_text_from_the_first_frame_has_no_frame_before_it():
    pictures = [with_text(background(n, "gradient"), "HELLO WORLD") if n < 20 else background(n, "gradient")
                for n in range(30)]
    assert boundaries(pictures) == [(0, 20, None, 19, True)]


# --------------------------------------------------------------------------------------------
# Trim: a just-settled segment starts at its first frame showing its core
# --------------------------------------------------------------------------------------------

def test_background_strokes_before_the_text_are_trimmed_off_its_start():
    """Frame 10 shows a railing (many strokes, gone the next frame), frames 11-29 the text: the
    segment opened on the railing and, once settled, starts where its stable strokes first show."""
    railing = fence(background(10, "flat"))
    assert np.count_nonzero(text_mask(railing, SETTINGS)) > 2 * np.count_nonzero(
        text_mask(with_text(background(0, "flat"), "HELLO WORLD"), SETTINGS))
    pictures = [railing if n == 10 else with_text(background(n, "flat"), "HELLO WORLD") if 11 <= n < 30
                else background(n, "flat") for n in range(40)]
    assert boundaries(pictures) == [(11, 30, 10, 29, True)]


# --------------------------------------------------------------------------------------------
# Look back: frames that showed the text though the mask did not (plain text over a bright sky)
# --------------------------------------------------------------------------------------------

def sky_then_dark(n: int, first: int, dark: int, last: int, text: str = "HELLO WORLD") -> np.ndarray:
    """Plain text shown on frames [first, last) over a sky that is bright until ``dark``."""
    sky = np.full((H, W), 215 if n < dark else 60, np.uint8)
    return plain_text(sky, text) if first <= n < last else sky


def test_the_start_moves_back_over_the_frames_that_still_showed_the_text():
    bright = plain_text(np.full((H, W), 215, np.uint8), "HELLO WORLD")
    assert np.count_nonzero(text_mask(bright, PLAIN)) == 0
    pictures = [sky_then_dark(n, first=10, dark=20, last=50) for n in range(60)]
    assert boundaries(pictures, PLAIN) == [(10, 50, 9, 49, True)]


def test_the_look_back_reaches_as_far_as_the_kept_views():
    """Text over the sky from frame 0, seen by the mask from frame 50: the start moves back over
    every earlier frame the segmenter still keeps a view of. That is the bound today, 34 frames
    with the default settings: more than ``look_back_frames`` (25), which sizes the views kept
    but does not stop the look back itself."""
    kept = 2 * PLAIN.confirm_frames + PLAIN.fade_frames + PLAIN.look_back_frames + 2
    pictures = [sky_then_dark(n, first=0, dark=50, last=70) for n in range(80)]
    # When the segment settles (third frame), its first two frames are among the views kept.
    first = 50 - (kept - (PLAIN.confirm_frames - 1))
    assert [b[:2] for b in boundaries(pictures, PLAIN)] == [(first, 70)]


def test_the_look_back_stops_at_the_previous_segments_end():
    """The top line ends at frame 20; the bottom line stands over a bright patch from frame 12
    and is seen by the mask from frame 25: it starts where the top line ended, not earlier."""
    def picture(n: int) -> np.ndarray:
        img = np.full((H, W), 60, np.uint8)
        if n < 25:
            img[H // 2:] = 215
        if n < 20:
            img[_fill("HELLO WORLD", 32)] = 250
        if 12 <= n < 50:
            img[_fill("GREAT THING", 68)] = 250
        return img

    assert [b[:2] + b[3:] for b in boundaries([picture(n) for n in range(60)], PLAIN)] == \
        [(0, 20, 19, True), (20, 50, 49, True)]


# --------------------------------------------------------------------------------------------
# Hold: the mask loses the text, its strokes still stand out
# --------------------------------------------------------------------------------------------

def test_text_held_over_a_bright_picture_ends_where_it_goes():
    """The sky turns bright at frame 20 (the mask loses the text: it is held on its strokes' lift)
    and the text goes at frame 30 while the sky is still bright."""
    def picture(n: int) -> np.ndarray:
        sky = np.full((H, W), 215 if 20 <= n < 40 else 60, np.uint8)
        return plain_text(sky, "HELLO WORLD") if 10 <= n < 30 else sky

    assert boundaries([picture(n) for n in range(50)], PLAIN) == [(10, 30, 9, 29, True)]


def test_frames_held_on_the_strokes_lift_do_not_shape_the_text():
    """The bottom line over a bright picture in frames 10-19: the mask loses it, the text is held
    (its strokes still stand out), and those frames neither vote for the core nor go into the
    OCR picture: 30 frames make the segment's picture, not 40."""
    def picture(n: int) -> np.ndarray:
        sky = np.full((H, W), 60, np.uint8)
        if 10 <= n < 20:
            sky[H // 2:] = 215
        return plain_text(sky, "HELLO WORLD", "GREAT THING")

    pictures = [picture(n) for n in range(40)]
    assert boundaries(pictures, PLAIN) == [(0, 40, None, 39, True)]
    assert frame_counts(pictures, PLAIN) == [30]


def test_a_short_line_hovering_at_the_minimum_keeps_every_frame():
    """Its clipped frames hold text (above text_hold of the minimum) without making it: they go
    on with the open text, so all 50 frames are the segment's."""
    whole = with_text(background(0, "flat"), "IT")
    columns = np.nonzero(text_mask(whole, SETTINGS).any(axis=0))[0]
    clipped = whole.copy()
    clipped[:, columns.max() - (columns.max() - columns.min()) // 5:] = 90
    pictures = [clipped if n >= 8 and n % 4 == 0 else whole for n in range(50)]
    assert boundaries(pictures) == [(0, 50, None, 49, True)] and frame_counts(pictures) == [50]


TALL = 2 * H  # a band twice the usual height: its minimum is twice a short line's strokes


def speckled(n: int, count: int, text: str | None = None) -> np.ndarray:
    """Frame ``n`` of a tall band over a speckled texture (``count`` outlined bright specks, in other
    places each frame), with ``text``, a short line in a thin face, near its bottom."""
    img = np.vstack([background(n, "flat"), background(n + 1, "flat")])
    rng = np.random.default_rng(n)
    for _ in range(count):
        x, y = int(rng.integers(4, W - 4)), int(rng.integers(2, TALL - 2))
        img[y - 2:y + 3, x - 2:x + 3] = 0
        img[y, x - 1:x + 2] = 250
    if text:
        fill = np.zeros(img.shape, np.uint8)
        (width, _), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, 0.6, 1)
        cv2.putText(fill, text, ((W - width) // 2, 120), cv2.FONT_HERSHEY_SIMPLEX, 0.6, 255, 1, cv2.LINE_AA)
        glyphs = fill > 100
        img[cv2.dilate(fill, np.ones((5, 5), np.uint8)).view(bool) & ~glyphs] = 0
        img[glyphs] = 250
    return img


@pytest.mark.parametrize("count", [20, 24])
def test_a_short_line_among_a_textures_specks_opens_a_segment(count):
    """A six-letter line in a thin face fills fewer strokes than a tall band's minimum, and the
    specks strewn over the band (a speckled texture panning behind it) spoil the one box of its
    strokes: it is text by the one dense line it makes. The specks alone open nothing."""
    shown = [speckled(n, count, "SIGNED" if 10 <= n < 40 else None) for n in range(50)]
    strokes = np.count_nonzero(text_mask(shown[20], SETTINGS))
    assert SETTINGS.text_hold * SETTINGS.min_text_share * shown[20].size < strokes < \
        SETTINGS.min_text_share * shown[20].size
    assert boundaries(shown) == [(10, 40, 9, 39, True)]
    assert boundaries([speckled(n, 2 * count) for n in range(50)]) == []


@pytest.mark.parametrize("specks", [False, True])
def test_text_replaced_in_place_as_the_picture_turns_bright_is_not_held(specks):
    """DDD... becomes NNN... at frame 12 as the right half of the picture turns bright: the mask
    loses the right half, and the new strokes stand where the old ones stood (their lift would hold
    the old text), but the left half shows strokes of the new text's own, in one line (or, among
    bright specks of the picture, in one dense line): the old text ends there."""
    def picture(n: int) -> np.ndarray:
        sky = np.full((H, W), 60, np.uint8)
        if n >= 12:
            sky[:, W // 2:] = 215
        shown = plain_text(sky, "D" * 20 if n < 12 else "N" * 20)
        if specks and n >= 12:
            shown[np.random.default_rng(n).random((H, W)) < 0.01] = 250
        return shown

    assert boundaries([picture(n) for n in range(22)], PLAIN) == [(0, 12, None, 11, True), (12, 22, 11, 21, True)]


@pytest.mark.parametrize("new_text", [True, False])
def test_text_replaced_in_place_among_a_busy_pictures_strokes_brings_its_own(new_text):
    """A forest's strokes in every row of the band join the rows into one "line" too sparse
    for text: a new line at the old one's place, its strokes off the old ones' pixels, is looked for
    in the old text's rows, and brings text of its own (a top line's replacement was found 1.6 s
    late). The forest's strokes alone, the old text gone at its pixels, bring none."""
    shape = (97, 640)
    core = np.zeros(shape, bool)
    core[26:39, 200:440:4] = True
    mask = np.random.default_rng(1).random(shape) < 0.03
    mask &= ~core
    if new_text:
        mask[26:39, 202:442:4] = True
    segment = SimpleNamespace(core=core)
    assert Segmenter(0, replace(SETTINGS, line_strokes=0))._brings_own_text(segment, mask) is new_text


def test_a_hold_needs_the_strokes_to_stand_out():
    """The same text over the sky at contrasts either side of hold_contrast: held, or ended."""
    core = text_mask(plain_text(np.full((H, W), 60, np.uint8), "HELLO WORLD"), PLAIN)
    for lift, held in ((PLAIN.hold_contrast + 6, True), (PLAIN.hold_contrast - 6, False)):
        sky = np.full((H, W), 250 - lift, np.uint8)
        assert still_shown(core, stroke_lift(plain_text(sky, "HELLO WORLD"), PLAIN), PLAIN) is held


# --------------------------------------------------------------------------------------------
# Fades: frames too faint for the mask, on the ramp of a fade, join the segment
# --------------------------------------------------------------------------------------------

def fade_pictures(ramp: list[float], picture=lambda n: flat(200, n)) -> list[np.ndarray]:
    """Outlined text fading in over ``ramp`` (opacities), shown 30 frames, fading out over it
    reversed, 10 empty frames on each side."""
    opacity = [0.0] * 10 + ramp + [1.0] * 30 + ramp[::-1] + [0.0] * 10
    return [faded(picture(n), a, FADING) for n, a in enumerate(opacity)]


def test_fade_pictures_are_too_faint_for_the_mask_below_six_tenths():
    for a in (0.12, 0.24, 0.36, 0.48):
        assert np.count_nonzero(text_mask(faded(flat(200), a, FADING), SETTINGS)) == 0
    assert np.count_nonzero(text_mask(faded(flat(200), 0.6, FADING), SETTINGS)) > SETTINGS.min_text_share * H * W


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_a_fade_adds_at_most_fade_frames_before_the_start_and_after_the_end(limit):
    """Four faint frames with a ramp of 0.12 each way: ``fade_frames`` of them join the text at
    each end (the mask sees it on frames 14-43)."""
    pictures = fade_pictures([0.12, 0.24, 0.36, 0.48])
    settings = replace(FADE_ONLY, fade_frames=limit)
    assert boundaries(pictures, settings) == [(14 - limit, 44 + limit, 13 - limit, 43 + limit, True)]
    # held no longer than its fade is unknown: out with the frame that ends it (cues stream out)
    assert yielded_at(pictures, settings) == [44 + limit]


def test_a_fade_frame_needs_a_tenth_of_the_contrast():
    """Opacity 0.05 is below fade_min_ratio: the fade stops at the frame after it."""
    assert boundaries(fade_pictures([0.05, 0.2, 0.4]), FADE_ONLY) == [(11, 45, 10, 44, True)]


def test_a_fade_frame_needs_a_step_over_the_frame_beyond():
    """Opacities 0.2, 0.25, 0.4 before the text: the 0.4 frame steps 0.15 over the one beyond it
    and joins; the 0.25 frame steps only 0.05 over 0.2, no ramp: the fade stops there."""
    assert boundaries(fade_pictures([0.2, 0.25, 0.4]), FADE_ONLY) == [(12, 44, 11, 43, True)]


def test_without_fade_frames_the_mask_alone_decides():
    assert boundaries(fade_pictures([0.12, 0.24, 0.36, 0.48]), replace(FADE_ONLY, fade_frames=0)) == \
        [(14, 44, 13, 43, True)]


def plain_fade(n: int, opacity: float) -> np.ndarray:
    grey = flat(150, n)
    return np.round(grey * (1 - opacity) + plain_text(grey, FADING) * opacity).astype(np.uint8)


@pytest.mark.parametrize("ramp, start", [([0.15, 0.3, 0.45, 0.6], 10), ([0.08, 0.15, 0.3, 0.45, 0.6], 12)])
def test_a_plain_fade_in_is_held_then_faded_back_to_its_first_frame(ramp, start):
    """Plain text fading in over a grey picture: the frames whose strokes lift above hold_contrast
    are looked back over, then the faint frame before them joins as a fade frame when it steps up
    from the frame beyond (0.15 over nothing) and not when it does not (0.15 over 0.08)."""
    opacity = [0.0] * 10 + ramp + [1.0] * 30 + [0.0] * 10
    (segment,) = boundaries([plain_fade(n, a) for n, a in enumerate(opacity)], PLAIN)
    assert segment[0] == start and segment[2] == start - 1


def test_fade_frames_counts_the_ramp():
    # nearest first: ratios of the frames beside the segment over its own contrast
    assert fade_frames([0.5, 0.3, 0.1, 0.0], 3, 0.1, 0.1) == 3
    assert fade_frames([0.5, 0.3, 0.1, 0.0], 2, 0.1, 0.1) == 2
    assert fade_frames([0.5, 0.3, 0.1, 0.0], 0, 0.1, 0.1) == 0
    assert fade_frames([0.5, 0.3, 0.1], 3, 0.1, 0.1) == 2  # the last frame has no frame beyond it to step over
    assert fade_frames([0.5], 3, 0.1, 0.1) == 0
    assert fade_frames([], 3, 0.1, 0.1) == 0


def test_fade_frames_stops_below_the_ratio_or_the_step():
    assert fade_frames([0.6, 0.35, 0.09, 0.0], 3, 0.1, 0.1) == 2  # 0.09 < 0.1
    assert fade_frames([0.6, 0.35, 0.1, 0.0], 3, 0.1, 0.1) == 3  # at the ratio: counted
    assert fade_frames([0.6, 0.55, 0.3, 0.0], 3, 0.1, 0.1) == 0  # a step of 0.05 first
    assert fade_frames([0.6, 0.5, 0.25, 0.0], 3, 0.125, 0.125) == 0  # a step below 0.125
    assert fade_frames([0.75, 0.5, 0.25, 0.0], 3, 0.125, 0.25) == 3  # steps of exactly 0.25
    assert fade_frames([0.3, 0.0, 0.3, 0.0], 3, 0.1, 0.1) == 1  # the ramp ends at the first frame not on it


def test_a_single_faint_frame_before_new_text_is_nobodys():
    """Text A fades for one frame and text B follows at once: the faint frame has no frame beyond
    it to show a ramp, so A ends at it and B starts after it."""
    def picture(n: int) -> np.ndarray:
        if n < 30:
            return with_text(flat(200, n), "HELLO WORLD")
        if n == 30:
            return faded(flat(200, n), 0.4, "HELLO WORLD")
        return with_text(flat(200, n), "GREAT THING")

    assert boundaries([picture(n) for n in range(50)], FADE_ONLY) == [(0, 30, None, 29, True),
                                                                    (31, 50, 30, 49, True)]


# --------------------------------------------------------------------------------------------
# A line added; a text replaced in place; a faint start absorbed
# --------------------------------------------------------------------------------------------

def two_lines(n: int, second: bool, kind: str = "panning") -> np.ndarray:
    """HELLO WORLD on the top line, GREAT THING below it when ``second``."""
    return with_text(background(n, kind), "HELLO WORLD", "GREAT THING" if second else "")


@pytest.mark.parametrize("shown", [2, 3])
def test_a_line_added_is_a_new_text_once_it_lasts_confirm_frames(shown):
    """A second line shown for ``shown`` frames, then gone: three frames are a text of their own
    from the line's first frame; two are strokes that came and went."""
    expected = [(0, 20, None, 19, True), (20, 23, 19, 22, True), (23, 40, 22, 39, True)] if shown == 3 \
        else [(0, 40, None, 39, True)]
    pictures = [two_lines(n, 20 <= n < 20 + shown) for n in range(40)]
    assert boundaries(pictures) == expected
    # each frame goes to the segment it belongs to, none to two
    assert frame_counts(pictures) == [end - start for start, end, *_ in expected]


@pytest.mark.parametrize("shown", [2, 3])
def test_a_line_added_in_the_last_frames_splits_only_once_confirmed(shown):
    expected = [(0, 37, None, 36, True), (37, 40, 36, 39, True)] if shown == 3 else [(0, 40, None, 39, True)]
    assert boundaries([two_lines(n, n >= 40 - shown) for n in range(40)]) == expected


@pytest.mark.parametrize("shown", [2, 3])
def test_a_line_added_then_all_text_gone_is_a_text_of_its_own(shown):
    """The added line's frames were the new text's first frames, confirmed or not: the text
    that went on before them ends where the line came."""
    pictures = [two_lines(n, n >= 20) if n < 20 + shown else background(n, "panning") for n in range(40)]
    assert boundaries(pictures) == [(0, 20, None, 19, True), (20, 20 + shown, 19, 19 + shown, shown == 3)]


DENSE_OLD, DENSE_NEW = ["HHHHHHHHHHHHHHHHHHHHHH"] * 2, ["NNNNNNNNNNNNNNNNNNNNNN"] * 2


@pytest.mark.parametrize("shown", [2, 3])
def test_text_replaced_in_place_splits_only_after_confirm_frames(shown):
    """Dense text replaced in place for ``shown`` frames, then back: three frames are a text of
    their own, starting on its first frame; two frames are not."""
    pictures = [with_text(background(n, "flat"), *(DENSE_NEW if 20 <= n < 20 + shown else DENSE_OLD))
                for n in range(40)]
    expected = [(0, 20, None, 19, True), (20, 23, 19, 22, True), (23, 40, 22, 39, True)] if shown == 3 \
        else [(0, 40, None, 39, True)]
    assert boundaries(pictures) == expected
    assert frame_counts(pictures) == [end - start for start, end, *_ in expected]


@pytest.mark.parametrize("shown", [2, 3])
def test_text_replaced_in_place_in_the_last_frames_splits_only_once_confirmed(shown):
    pictures = [with_text(background(n, "flat"), *(DENSE_NEW if n >= 40 - shown else DENSE_OLD)) for n in range(40)]
    expected = [(0, 37, None, 36, True), (37, 40, 36, 39, True)] if shown == 3 else [(0, 40, None, 39, True)]
    assert boundaries(pictures) == expected


def test_text_replaced_in_place_then_gone_ends_where_the_replacement_began():
    pictures = [with_text(background(n, "flat"), *(DENSE_NEW if n >= 20 else DENSE_OLD)) if n < 22
                else background(n, "flat") for n in range(30)]
    assert boundaries(pictures) == [(0, 20, None, 19, True), (20, 22, 19, 21, False)]
    assert frame_counts(pictures) == [20, 2]


@pytest.mark.parametrize("late, expected", [
    (1, [(10, 40, 9, 39, True)]),
    (2, [(10, 40, 9, 39, True)]),
    (3, [(10, 13, 9, 12, True), (13, 40, 12, 39, True)]),
])
def test_a_second_line_arriving_before_the_first_settles_is_the_same_text(late, expected):
    """A two-line cue whose second line comes ``late`` frames after the first: before the first
    settles (confirm_frames) it was the cue's faint start and is absorbed; after, it is a new text."""
    pictures = [two_lines(n, n >= 10 + late, "gradient") if n >= 10 else background(n, "gradient") for n in range(40)]
    assert boundaries(pictures) == expected


def test_strokes_flickering_from_place_to_place_add_no_line():
    """A word-like object under the text that shows at the left and the right by turns: its
    strokes never persist at one place, so no line was added."""
    def picture(n: int) -> np.ndarray:
        shown = two_lines(n, False, "gradient")
        if n >= 10:
            canvas = np.zeros((H, W), np.uint8)
            cv2.putText(canvas, "SPARK", (40 if n % 2 else 420, 72), cv2.FONT_HERSHEY_SIMPLEX, 0.8, 255, 2, cv2.LINE_AA)
            spark = canvas > 100
            shown[_outline(spark)] = 0
            shown[spark] = 250
        return shown

    assert boundaries([picture(n) for n in range(20)]) == [(0, 20, None, 19, True)]


def test_a_line_the_mask_lost_for_a_while_coming_back_is_no_new_text():
    """A short second line missing from frames 3-9 (a fifth of the strokes: the text goes on
    without it, and it drops out of the core) comes back at frame 10: it was in the segment's
    first three frames (confirm_frames), so it is the same text, not a line added."""
    def picture(n: int) -> np.ndarray:
        shown = np.full((H, W), 60, np.uint8)
        shown[_fill("HELLO WORLD AND MORE", 32)] = 250
        if n < 3 or n >= 10:
            shown[_fill("OK SIR", 68)] = 250
        return shown

    assert boundaries([picture(n) for n in range(20)], PLAIN) == [(0, 20, None, 19, True)]


def test_stroke_contrast_is_the_cores_mean_over_its_rings():
    view = np.full((4, 4), 50, np.uint8)
    view[1, 1], view[1, 2] = 250, 200
    core = np.zeros((4, 4), bool)
    core[1, 1:3] = True
    ring = np.zeros((4, 4), bool)
    ring[0, :] = True
    view[0, 0] = 90
    assert stroke_contrast(view, core, ring) == 225 - 60
    assert stroke_contrast(view, np.zeros_like(core), ring) == 0.0
    assert stroke_contrast(view, core, np.zeros_like(ring)) == 0.0


# --------------------------------------------------------------------------------------------
# Strokes that are no text: refused, and said why (-v)
# --------------------------------------------------------------------------------------------

def refusals(pictures, settings: SegmentSettings, caplog) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="subextract.stages.segment"):
        assert boundaries(pictures, settings) == []
    return [record.getMessage() for record in caplog.records]


def test_strokes_that_do_not_stay_are_refused_and_said_so(caplog):
    """Three frames of moving bright lines, then the video ends: too few of their strokes stayed."""
    assert refusals([background(n, "lines") for n in range(3)], SETTINGS, caplog) == [
        "band 0, 0.00-0.12 s: strokes seen, too few stable ones for text (raise or lower segment.min_text_share)"]


def test_stable_strokes_strewn_thinly_are_refused_and_said_so(caplog):
    """A railing (bars 40 pixels apart) for 10 frames: stable, but no line of it packed like text."""
    assert refusals([fence(background(n, "flat"), spacing=40) for n in range(10)], SETTINGS, caplog) == [
        "band 0, 0.00-0.40 s: strokes seen, none packed like a text line (segment.min_line_density)"]


def test_a_few_stable_specks_over_several_rows_are_refused_and_said_so(caplog):
    settings = measured(THIN_PLAIN, thin_line(dim_picture(40)))
    rows, columns = STREWN
    assert refusals([specks(dim_picture(n), rows, columns) for n in range(10)], settings, caplog) == [
        "band 0, 0.00-0.40 s: few stable strokes, strewn: no line holds as many as the subtitles' "
        "(segment.line_text_share)"]


def test_a_segment_kept_is_said_with_its_frames(caplog):
    pictures = [with_text(background(n, "gradient"), "HELLO WORLD") if n >= 2 else background(n, "gradient")
                for n in range(6)]
    with caplog.at_level(logging.DEBUG, logger="subextract.stages.segment"):
        assert boundaries(pictures) == [(2, 6, 1, 5, True)]
    assert [record.getMessage() for record in caplog.records] == ["band 0, 0.08-0.24 s: segment of 4 frames"]


# --------------------------------------------------------------------------------------------
# The frames kept for a segment's OCR picture
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("limit, kept", [(0, [0]), (1, [0]), (2, [0, 8]), (4, [0, 4, 8]), (8, [0, 2, 4, 6, 8]),
                                         (10, list(range(10)))])
def test_the_frames_kept_are_spread_evenly_over_the_segment(limit, kept):
    """At most ``limit`` frames: each time one more would be kept, every second one goes and the
    stride doubles."""
    keeper = _FrameKeeper(limit)
    for n in range(10):
        keeper.offer(np.full((2, 2), n, np.uint8))
    assert [int(frame[0, 0]) for frame in keeper.frames] == kept and keeper.seen == 10
    assert keeper.median().dtype == np.uint8


def test_a_long_run_keeps_frames_evenly_spread_as_the_stride_keeps_doubling():
    keeper = _FrameKeeper(4)
    for n in range(25):
        keeper.offer(np.full((2, 2), n, np.uint8))
    assert [int(frame[0, 0]) for frame in keeper.frames] == [0, 8, 16, 24] and keeper.stride == 8


@pytest.mark.parametrize("kept, spread", [(1, []), (2, []), (3, [1, 2]), (4, [1, 2]), (5, [1, 3]), (6, [2, 4])])
def test_the_second_look_frames_are_spread_inside_the_run(kept, spread):
    """Two frames for the OCR engine's second look, a third and two thirds into the kept ones
    (never the first, which may hold a fade or the text before); none from fewer than three."""
    keeper = _FrameKeeper(8)
    for n in range(kept):
        keeper.offer(np.full((2, 2), n, np.uint8))
    assert [int(frame[0, 0]) for frame in keeper.spread(2)] == spread


# --------------------------------------------------------------------------------------------
# Another text right after the last (text_changed: its reading is not merged with the last's)
# --------------------------------------------------------------------------------------------

def text_changes(pictures) -> list[bool]:
    segmenter = Segmenter(0, SETTINGS)
    segments = [s for n, picture in enumerate(pictures) for s in segmenter.push(n / FPS, picture)]
    return [s.text_changed for s in [*segments, *segmenter.finish(len(pictures) / FPS)]]


def test_text_cut_to_other_text_is_a_changed_text_but_not_after_a_gap_or_the_same_text_again():
    """Two lines cut to one on other rows: each keeps few of the other's strokes at their very
    pixels, so the second is another text (not OCR jitter of the first, whatever its reading).
    After a frame without text, or with the same text again, it is not said to have changed."""
    def shown(n: int, second: tuple[str, ...], gap: bool = False) -> np.ndarray:
        if gap and n == 30:
            return background(n, "gradient")
        return with_text(background(n, "gradient"), *(("HELLO WORLD", "GREAT THING") if n < 30 else second))

    assert text_changes([shown(n, ("QUIET NIGHT",)) for n in range(50)]) == [False, True]
    assert text_changes([shown(n, ("QUIET NIGHT",), gap=True) for n in range(50)]) == [False, False]
    assert text_changes([shown(n, ("HELLO WORLD", "GREAT THING"), gap=True) for n in range(50)]) == [False, False]


def test_with_one_confirm_frame_a_changed_glyph_splits_on_its_own_frame():
    """confirm_frames 1: the frame whose glyph changed is the new text's first, the one before it
    the last of the old text."""
    pictures = [with_text(background(n, "flat"), "SCENE 12" if n >= 30 else "SCENE 11") for n in range(50)]
    settings = replace(SETTINGS, confirm_frames=1)
    assert [segment[:3] for segment in boundaries(pictures, settings)] == [(0, 30, None), (30, 50, 29)]
