"""The segmenter on text with no outline: the test a plain-text video gets (settings_for), text
the mask loses over a bright picture, background that is no text, and reading reuse across a
split."""

from __future__ import annotations

from dataclasses import replace

import imagehash
import numpy as np
import pytest

from subextract.pipeline.run import _ReadingCache
from subextract.stages.appearance import Appearance, settings_for
from subextract.stages.mask import centred, has_text_line, still_shown, stroke_lift, text_mask
from subextract.stages.segment import Segmenter
from subextract.stages.lines import line_boxes
from test_segment import H, SETTINGS, W, _fill, _ys, background, times

PLAIN = settings_for(Appearance(plane="y", outlined=False, level=250, lift=90, lines=3), SETTINGS)
FRAME = 0.04


def plain_text(img: np.ndarray, *lines: str, level: int = 250) -> np.ndarray:
    """White text with no outline and no shadow."""
    img = img.copy()
    for text, y in zip(lines, _ys(len(lines))):
        img[_fill(text, y)] = level
    return img


def run(frames, settings=PLAIN, end: float | None = None):
    segmenter = Segmenter(0, settings)
    out = []
    for pts, band in frames:
        out.extend(segmenter.push(pts, band))
    out.extend(segmenter.finish(end if end is not None else frames[-1][0] + FRAME))
    return out


def test_plain_text_needs_no_outline():
    band = plain_text(np.clip(background(0, "flat").astype(int) + 60, 0, 255).astype(np.uint8), "HELLO WORLD")
    assert np.count_nonzero(text_mask(band, SETTINGS)) == 0  # the outline test sees nothing
    assert np.count_nonzero(text_mask(band, PLAIN)) >= PLAIN.min_text_share * band.size


def dimmed(i: int, kind: str) -> np.ndarray:
    """A moving background that stays below the text's brightness (white on white is unreadable)."""
    return (background(i, kind) * 0.7).astype(np.uint8)


@pytest.mark.parametrize("kind", ["gradient", "panning"])
def test_plain_text_over_moving_picture_is_one_exact_segment(kind: str):
    ts = times(60)
    frames = [(t, plain_text(dimmed(i, kind), "HELLO WORLD") if 15 <= i < 45 else dimmed(i, kind))
              for i, t in enumerate(ts)]
    segments = run(frames)
    assert len(segments) == 1
    assert segments[0].start == ts[15] and segments[0].end == ts[45]


def test_text_over_a_picture_turning_bright_is_held():
    """Over a bright sky the text stands only a little above its surroundings: too little for the
    mask, enough for still_shown. The subtitle must not end and restart there."""
    ts = times(60)

    def frame(i: int) -> np.ndarray:
        sky = np.full((H, W), 215 if 20 <= i < 32 else 60, np.uint8)
        return plain_text(sky, "HELLO WORLD") if 10 <= i < 50 else sky

    bright = plain_text(np.full((H, W), 215, np.uint8), "HELLO WORLD")
    assert np.count_nonzero(text_mask(bright, PLAIN)) < PLAIN.text_hold * PLAIN.min_text_share * bright.size
    segments = run([(t, frame(i)) for i, t in enumerate(ts)])
    assert [(s.start, s.end) for s in segments] == [(ts[10], ts[50])]


def test_still_shown_needs_every_line():
    both = plain_text(background(0, "flat"), "HELLO WORLD", "GREAT THING")
    core = text_mask(both, PLAIN)
    assert still_shown(core, stroke_lift(both, PLAIN), PLAIN)
    top_only = plain_text(background(0, "flat"), "HELLO WORLD", "")
    top_only[_fill("HELLO WORLD", _ys(2)[0])] = 250
    assert not still_shown(core, stroke_lift(top_only, PLAIN), PLAIN)
    gone = background(1, "flat")
    assert not still_shown(core, stroke_lift(gone, PLAIN), PLAIN)


def test_background_strokes_are_no_text_line():
    rng = np.random.default_rng(3)
    scattered = rng.random((H, W)) < 0.01
    assert not has_text_line(scattered, SETTINGS.min_line_density)
    line = text_mask(plain_text(background(0, "flat"), "HELLO WORLD"), PLAIN)
    assert has_text_line(line, SETTINGS.min_line_density)


def test_text_arriving_over_static_background_starts_on_its_frame():
    """Static stroke-like background (highlights on water) is no segment of its own that a
    subtitle could join late: the subtitle starts on its own first frame."""
    rng = np.random.default_rng(5)
    sparkle = np.full((H, W), 70, np.uint8)
    sparkle[rng.random((H, W)) < 0.006] = 245
    ts = times(50)
    frames = [(t, plain_text(sparkle, "HELLO WORLD") if i >= 20 else sparkle) for i, t in enumerate(ts)]
    texts = [s for s in run(frames) if s.lines]
    assert texts and texts[0].start == ts[20]


def _segment(band: np.ndarray, start: float, end: float):
    return next(iter(run([(start + k * FRAME, band) for k in range(round((end - start) / FRAME))], end=end)))


def test_a_split_keeping_the_same_strokes_reuses_the_reading():
    cache = _ReadingCache(SETTINGS)
    first = _segment(plain_text(background(0, "flat"), "HELLO WORLD"), 0.0, 1.0)
    cache.remember(first, 0)
    cache.follow(first, 0)
    same = replace(first, start=1.0, end=2.0)
    same.mask_hash = imagehash.hex_to_hash("0" * 64)  # another hash: only adjacency can reuse it
    assert cache.lookup(same) == 0
    other = _segment(plain_text(background(0, "flat"), "GREAT THING"), 1.0, 2.0)
    assert cache.lookup(other) is None
    later = replace(same, start=1.5)  # not adjacent: a gap lies between them
    assert cache.lookup(later) is None


def test_line_boxes_without_padding_fit_the_strokes():
    mask = text_mask(plain_text(background(0, "flat"), "HELLO WORLD"), PLAIN)
    (x0, y0, x1, y1), = line_boxes(mask, mask.shape, pad=False)
    ys, xs = np.nonzero(mask)
    assert abs(x0 - xs.min()) <= 1 and abs(x1 - xs.max() - 1) <= 1
    assert abs(y0 - ys.min()) <= 2 and abs(y1 - ys.max() - 1) <= 2
    assert np.count_nonzero(mask[y0:y1, x0:x1]) >= 0.95 * np.count_nonzero(mask)


def test_text_half_hidden_by_a_bright_picture_is_no_replacement():
    """The right half of the line over a white wall for a second: the mask keeps only core pixels
    of the left half, which is the same text, not a new one."""
    ts = times(70)

    def frame(i: int) -> np.ndarray:
        picture = np.full((H, W), 60, np.uint8)
        if 20 <= i < 45:
            picture[:, W // 2:] = 250
        return plain_text(picture, "HELLO WORLD") if 5 <= i < 65 else picture

    segments = run([(t, frame(i)) for i, t in enumerate(ts)])
    assert [(s.start, s.end) for s in segments] == [(ts[5], ts[65])]


def test_centred_line_boxes_are_made_symmetric():
    """The mask saw only the right end of a centred line: the crop is widened to the mirror of it
    about the band's middle; a line far off the middle (a sign) keeps its own box."""
    assert centred([(340, 10, 600, 40)], 800, 0.2) == ((200, 10, 600, 40),)
    assert centred([(600, 10, 780, 40)], 800, 0.2) == ((600, 10, 780, 40),)
