"""text_mask, mask_difference and Segmenter on synthetic bands: outlined text over still and moving pictures."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from subextract.config import load_settings
from subextract.stages.mask import exact_lost_share, lost_share, mask_difference, text_mask
from subextract.stages.segment import Segmenter, _FrameKeeper

SETTINGS = load_settings().segment
H, W = 80, 640
FONT = cv2.FONT_HERSHEY_SIMPLEX
_RNG = np.random.default_rng(1234)
# A blurred-noise texture three bands wide: sliding a window over it is a panning camera.
_TEXTURE = cv2.GaussianBlur(_RNG.integers(0, 256, (H, W * 3)).astype(np.float32), (0, 0), 6)
_TEXTURE = ((_TEXTURE - _TEXTURE.min()) / np.ptp(_TEXTURE) * 235 + 10).astype(np.uint8)
_GRAIN = [np.clip(_RNG.normal(0, 6, (H, W)), -20, 20).astype(np.int16) for _ in range(4)]


def background(i: int, kind: str) -> np.ndarray:
    """Frame ``i`` of a background: flat, a moving gradient, a panning texture, or bright moving lines."""
    if kind == "flat":
        img = np.full((H, W), 90, np.uint8)
    elif kind == "gradient":
        x = np.linspace(0, 255, W)[None, :]
        img = np.repeat(((x + 9 * i) % 256).astype(np.uint8), H, 0)
    elif kind == "panning":
        img = _TEXTURE[:, 7 * i: 7 * i + W].copy()
    elif kind == "lines":  # three thin bright lines with dark edges sweeping across: stroke-like but moving
        img = np.full((H, W), 100, np.uint8)
        for x0 in range(-H, W, 200):
            x = x0 + 5 * i
            cv2.line(img, (x, 0), (x + H, H), 20, 6)
            cv2.line(img, (x, 0), (x + H, H), 235, 2)
    else:
        raise ValueError(kind)
    # mild sensor/compression grain, as in decoded video
    return np.clip(img.astype(np.int16) + _GRAIN[i % len(_GRAIN)], 0, 255).astype(np.uint8)


def _fill(text: str, y: int) -> np.ndarray:
    """Glyph pixels of ``text`` centred on baseline ``y`` (strokes ~2-3 px wide)."""
    canvas = np.zeros((H, W), np.uint8)
    (tw, _), _ = cv2.getTextSize(text, FONT, 1.0, 2)
    cv2.putText(canvas, text, ((W - tw) // 2, y), FONT, 1.0, 255, 2, cv2.LINE_AA)
    return canvas > 100


def _outline(fill: np.ndarray) -> np.ndarray:
    """A 2-pixel border around the glyphs (cv2.putText's thickness is not reliable across versions)."""
    return cv2.dilate(fill.view(np.uint8), np.ones((5, 5), np.uint8)).view(bool) & ~fill


def _ys(count: int) -> list[int]:
    return [55] if count == 1 else [32, 68]


def with_text(img: np.ndarray, *lines: str, outline: bool = True) -> np.ndarray:
    """White subtitle text (centred, one line per argument) with a black outline, like libass draws it."""
    img = img.copy()
    for text, y in zip(lines, _ys(len(lines))):
        fill = _fill(text, y)
        if outline:
            img[_outline(fill)] = 0
        img[fill] = 250
    return img


def segments_of(frames: list[tuple[float, np.ndarray]], end: float) -> list:
    segmenter = Segmenter(0, SETTINGS)
    out = []
    for pts, band in frames:
        out.extend(segmenter.push(pts, band))
    out.extend(segmenter.finish(end))
    return out


def times(n: int, fps: float = 25.0) -> list[float]:
    return [i / fps for i in range(n)]


# --------------------------------------------------------------------------------------------
# text_mask / mask_difference
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["flat", "gradient", "panning"])
def test_background_alone_has_no_text(kind):
    for i in range(3):
        assert np.count_nonzero(text_mask(background(i, kind), SETTINGS)) == 0


@pytest.mark.parametrize("kind", ["flat", "gradient", "panning"])
def test_outlined_text_is_found_where_it_is(kind):
    band = with_text(background(0, kind), "HELLO WORLD")
    mask = text_mask(band, SETTINGS)
    assert np.count_nonzero(mask) >= SETTINGS.min_text_share * mask.size
    ys, xs = np.nonzero(mask)
    fill = _fill("HELLO WORLD", 55)
    fys, fxs = np.nonzero(fill)
    # mask pixels lie on the text, and cover most of its fill
    assert ys.min() >= fys.min() - 2 and ys.max() <= fys.max() + 2
    assert xs.min() >= fxs.min() - 2 and xs.max() <= fxs.max() + 2
    assert np.count_nonzero(mask & fill) > 0.5 * np.count_nonzero(fill)


def test_large_bright_area_is_not_text():
    band = background(0, "flat")
    band[10:70, 100:300] = 250  # sky, a lamp: bright but not a thin stroke
    band[10:70, 300:310] = 0
    assert np.count_nonzero(text_mask(band, SETTINGS)) == 0


def test_bright_strokes_without_a_dark_edge_are_not_text():
    band = with_text(np.full((H, W), 170, np.uint8), "HELLO WORLD", outline=False)
    assert np.count_nonzero(text_mask(band, SETTINGS)) < SETTINGS.min_text_share * band.size


def test_mask_difference():
    a = text_mask(with_text(background(0, "flat"), "HELLO WORLD"), SETTINGS)
    shifted = np.roll(a, 1, axis=1)
    other = text_mask(with_text(background(0, "flat"), "GREAT THING"), SETTINGS)
    empty = np.zeros_like(a)
    assert mask_difference(a, a) == 0.0
    assert mask_difference(a, shifted) == 0.0  # one pixel of tolerance
    assert mask_difference(empty, empty) == 0.0
    assert mask_difference(a, empty) == 1.0 and mask_difference(empty, a) == 1.0
    assert mask_difference(a, other) > SETTINGS.change_threshold
    # one-sided: a line added below a kept line is a change although every old stroke is still there
    both = text_mask(with_text(background(0, "flat"), "HELLO WORLD", "GREAT THING"), SETTINGS)
    top_only = both.copy()
    top_only[45:] = False
    assert mask_difference(top_only, both) > SETTINGS.change_threshold


# --------------------------------------------------------------------------------------------
# Segmenter
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["flat", "gradient", "panning", "lines"])
def test_same_text_over_moving_background_is_one_segment(kind):
    t = times(60)
    frames = [(pts, with_text(background(i, kind), "HELLO WORLD") if 10 <= i < 50 else background(i, kind))
              for i, pts in enumerate(t)]
    # A glimpse of the moving lines alone may form an unsettled segment; the pipeline never OCRs those.
    segments = [s for s in segments_of(frames, end=60 / 25) if s.settled]
    assert [(s.start, s.end) for s in segments] == [(t[10], t[50])]
    assert segments[0].frame_count == 40
    assert segments[0].image.shape == (H, W)


def test_different_text_of_same_length_splits_exactly():
    assert len("HELLO WORLD") == len("GREAT THING")
    t = times(60)
    frames = []
    for i, pts in enumerate(t):
        bg = background(i, "panning")
        frames.append((pts, with_text(bg, "HELLO WORLD") if i < 30 else with_text(bg, "GREAT THING")))
    segments = segments_of(frames, end=2.4)
    assert [(s.start, s.end) for s in segments] == [(t[0], t[30]), (t[30], 2.4)]


@pytest.mark.parametrize("kind", ["flat", "gradient"])
def test_dense_text_replaced_in_place_splits_exactly(kind):
    """Two lines of dense text replaced by two others: most old strokes still have a new stroke
    within one pixel, so only the loss at the exact pixels tells the change."""
    old, new = ["HHHHHHHHHHHHHHHHHHHHHH"] * 2, ["NNNNNNNNNNNNNNNNNNNNNN"] * 2
    old_mask, new_mask = (text_mask(with_text(background(0, kind), *lines), SETTINGS) for lines in (old, new))
    assert lost_share(old_mask, new_mask) <= SETTINGS.change_threshold
    assert exact_lost_share(old_mask, new_mask) > SETTINGS.exact_change_threshold
    t = times(60)
    frames = [(pts, with_text(background(i, kind), *(old if i < 30 else new))) for i, pts in enumerate(t)]
    segments = segments_of(frames, end=2.4)
    assert [(s.start, s.end) for s in segments] == [(t[0], t[30]), (t[30], 2.4)]
    assert segments[0].last_shown == t[29]


def test_short_line_at_the_threshold_is_one_segment():
    """A short line whose mask hovers around min_text_share (a few strokes lost now and then)
    stays one segment: text already showing only ends below text_hold of the minimum."""
    whole = with_text(background(0, "flat"), "IT")
    columns = np.nonzero(text_mask(whole, SETTINGS).any(axis=0))[0]
    clipped = whole.copy()
    clipped[:, columns.max() - (columns.max() - columns.min()) // 5:] = 90
    minimum = SETTINGS.min_text_share * H * W
    whole_mask, clipped_mask = text_mask(whole, SETTINGS), text_mask(clipped, SETTINGS)
    assert np.count_nonzero(clipped_mask) < minimum <= np.count_nonzero(whole_mask)
    assert lost_share(whole_mask, clipped_mask) < SETTINGS.change_threshold
    t = times(50)
    frames = [(pts, clipped if i >= 8 and i % 4 == 0 else whole) for i, pts in enumerate(t)]
    assert [(s.start, s.end) for s in segments_of(frames, end=2.0)] == [(t[0], 2.0)]


def test_a_few_dense_strokes_below_the_minimum_are_text_but_sparse_ones_are_not():
    word = with_text(background(0, "flat"), "IT")
    columns = np.nonzero(text_mask(word, SETTINGS).any(axis=0))[0]
    word[:, columns.max() - (columns.max() - columns.min()) // 5:] = 90
    minimum = SETTINGS.min_text_share * H * W
    assert SETTINGS.text_hold * minimum <= np.count_nonzero(text_mask(word, SETTINGS)) < minimum
    t = times(30)
    assert [(s.start, s.end) for s in segments_of([(pts, word) for pts in t], end=1.2)] == [(t[0], 1.2)]
    # The same number of stroke pixels scattered over the band is not a text line.
    scattered = background(0, "flat")
    for i, x in enumerate(range(20, W - 20, 64)):
        y = 5 + 11 * (i % 5)
        cv2.line(scattered, (x, y), (x, y + 15), 0, 5)
        cv2.line(scattered, (x, y), (x, y + 15), 250, 1)
    assert SETTINGS.text_hold * minimum <= np.count_nonzero(text_mask(scattered, SETTINGS)) < minimum
    assert segments_of([(pts, scattered) for pts in t], end=1.2) == []


def faded(bg: np.ndarray, opacity: float, *lines: str) -> np.ndarray:
    """Text drawn at ``opacity`` (0-1) over the background, as libass renders a \\fad ramp."""
    return np.round(bg * (1 - opacity) + with_text(bg, *lines) * opacity).astype(np.uint8)


@pytest.mark.parametrize("kind", ["flat", "gradient"])
def test_fade_in_and_out_frames_belong_to_the_segment(kind):
    """A 4-frame fade in and out (opacity steps of a quarter): the faint frames the mask cannot
    see are on the ramp, so the cue starts at the first frame showing any text and ends after
    the last one."""
    opacity = [0.0] * 10 + [0.25, 0.5, 0.75] + [1.0] * 30 + [0.75, 0.5, 0.25] + [0.0] * 10
    t = times(len(opacity))
    frames = [(pts, faded(background(i, kind), a, "FADING IN AND OUT")) for i, (pts, a) in enumerate(zip(t, opacity))]
    segments = segments_of(frames, end=len(t) / 25)
    assert [(s.start, s.end) for s in segments] == [(t[10], t[46])]


def test_text_cut_in_over_a_brightening_background_is_not_a_fade():
    """Background that brightens steadily before a hard cut-in has no stroke ramp: the start stays."""
    t = times(40)
    frames = [(pts, with_text(background(i, "flat") + 4 * i, "HARD CUT") if i >= 20 else background(i, "flat") + 4 * i)
              for i, pts in enumerate(t)]
    assert [(s.start, s.end) for s in segments_of(frames, end=1.6)] == [(t[20], 1.6)]


@pytest.mark.parametrize("kind", ["flat", "gradient", "panning"])
def test_empty_band_yields_nothing(kind):
    frames = [(pts, background(i, kind)) for i, pts in enumerate(times(20))]
    assert segments_of(frames, end=0.8) == []


def test_boundaries_are_real_frame_times():
    # variable frame rate: the segment runs from the first frame showing the text to the first without it
    t = [(40 * n + 3 * n * n) / 1000 for n in range(30)]
    frames = [(pts, with_text(background(i, "gradient"), "HELLO WORLD") if 7 <= i < 19
               else background(i, "gradient")) for i, pts in enumerate(t)]
    (segment,) = segments_of(frames, end=9.9)
    assert (segment.start, segment.end) == (t[7], t[19])


def test_text_until_the_last_frame_ends_at_the_given_end():
    t = times(20)
    frames = [(pts, with_text(background(i, "panning"), "HELLO WORLD") if i >= 5 else background(i, "panning"))
              for i, pts in enumerate(t)]
    (segment,) = segments_of(frames, end=0.8)
    assert (segment.start, segment.end) == (t[5], 0.8)


def test_gap_between_two_identical_lines_gives_two_segments():
    t = times(40)
    frames = [(pts, with_text(background(i, "gradient"), "HELLO WORLD") if i < 15 or i >= 22
               else background(i, "gradient")) for i, pts in enumerate(t)]
    segments = segments_of(frames, end=1.6)
    assert [(s.start, s.end) for s in segments] == [(t[0], t[15]), (t[22], 1.6)]


def test_second_line_added_starts_a_new_segment_where_it_appears():
    t = times(40)
    frames = [(pts, with_text(background(i, "panning"), "HELLO WORLD", *(["GREAT THING"] if i >= 20 else [])))
              for i, pts in enumerate(t)]
    segments = segments_of(frames, end=1.6)
    assert [(s.start, s.end) for s in segments] == [(t[0], t[20]), (t[20], 1.6)]


def test_line_removed_starts_a_new_segment():
    t = times(40)
    frames = [(pts, with_text(background(i, "gradient"), "HELLO WORLD", *(["GREAT THING"] if i < 20 else [])))
              for i, pts in enumerate(t)]
    segments = segments_of(frames, end=1.6)
    assert [(s.start, s.end) for s in segments] == [(t[0], t[20]), (t[20], 1.6)]


def test_ocr_image_shows_the_text_not_the_moving_background():
    t = times(30)
    frames = [(pts, with_text(background(i, "panning"), "HELLO WORLD")) for i, pts in enumerate(t)]
    (segment,) = segments_of(frames, end=1.2)
    fill = _fill("HELLO WORLD", 55)
    outline = _outline(fill)
    assert segment.image[fill].mean() > 200
    assert segment.image[outline].mean() < 60


def test_segments_of_separate_bands_are_labelled():
    segmenter = Segmenter(3, SETTINGS)
    out = []
    for i, pts in enumerate(times(10)):
        out.extend(segmenter.push(pts, with_text(background(i, "flat"), "HELLO WORLD")))
    out.extend(segmenter.finish(0.4))
    assert [s.band for s in out] == [3]


@pytest.mark.parametrize("count", range(1, 9))
def test_ocr_picture_is_the_per_pixel_median_of_the_kept_frames(count):
    keeper = _FrameKeeper(8)
    rng = np.random.default_rng(count)
    frames = [rng.integers(0, 256, (H, W)).astype(np.uint8) for _ in range(count)]
    for frame in frames:
        keeper.offer(frame)
    assert np.array_equal(keeper.median(), np.median(np.stack(frames), axis=0).astype(np.uint8))
    assert all(np.array_equal(kept, frame) for kept, frame in zip(keeper.frames, frames))  # left as they were


def test_a_segment_carries_single_frames_from_inside_it_for_a_second_look():
    t = times(30)
    frames = [(pts, with_text(background(i, "panning"), "HELLO WORLD")) for i, pts in enumerate(t)]
    (segment,) = segments_of(frames, end=1.2)
    shown = [band for _, band in frames]
    assert len(segment.frames) == SETTINGS.second_look_frames == 4
    indices = [next(i for i, band in enumerate(shown) if np.array_equal(band, frame)) for frame in segment.frames]
    assert 0 < indices[0] and indices == sorted(set(indices)) and indices[-1] < len(shown) - 1
