"""Region pre-scan statistics and line boxes from stroke masks, on synthetic pictures."""

from __future__ import annotations

import cv2
import numpy as np

from subextract.config import load_settings
from subextract.stages.lines import line_boxes
from subextract.stages.region import TextBox, split_static

SETTINGS = load_settings().region
FONT = cv2.FONT_HERSHEY_SIMPLEX
WORDS = ["HELLO WORLD", "GREAT THING", "QUIET NIGHT", "BRAVE SOULS", "MIGHTY OAKS", "SILVER MOON"]


def _frame(index: int) -> tuple[np.ndarray, list[TextBox]]:
    rng = np.random.default_rng(index)
    frame = cv2.GaussianBlur(rng.integers(0, 255, (360, 640)).astype(np.uint8), (0, 0), 8)
    cv2.putText(frame, "TV9", (560, 330), FONT, 0.9, 255, 2)  # a logo: same glyphs every frame
    cv2.putText(frame, WORDS[index], (220, 330), FONT, 0.9, 255, 2)  # subtitles: same size, other words
    logo = TextBox(index, 556, 306, 616, 336)
    subtitle = TextBox(index, 216, 306, 420, 336)
    return frame, [logo, subtitle]


def test_static_logo_is_told_from_subtitles_of_the_same_size_at_the_same_place():
    frames, boxes = zip(*(_frame(i) for i in range(len(WORDS))))
    static, moving = split_static([b for pair in boxes for b in pair], list(frames), 1.0, SETTINGS)
    assert {b.x0 for b in static} == {556} and len(static) == len(WORDS)
    assert {b.x0 for b in moving} == {216} and len(moving) == len(WORDS)


def _mask_with_lines(*rows: tuple[int, int, int, int]) -> np.ndarray:
    mask = np.zeros((90, 640), bool)
    for y0, y1, x0, x1 in rows:
        mask[y0:y1, x0:x1:3] = True  # glyph-like vertical strokes
    return mask


def test_one_line_box_is_scaled_to_the_band_and_padded():
    boxes = line_boxes(_mask_with_lines((40, 60, 200, 440)), (180, 1280))
    assert len(boxes) == 1
    x0, y0, x1, y1 = boxes[0]
    assert x0 < 400 and x1 > 878 and y0 < 80 and y1 > 120
    assert 0 <= x0 and 0 <= y0 and x1 <= 1280 and y1 <= 180


def test_two_lines_set_close_together_are_split():
    mask = _mask_with_lines((20, 40, 150, 490), (42, 62, 200, 440))
    mask[40:42] = False
    mask[40, 300:310] = True  # a descender in the gap
    assert len(line_boxes(mask, (90, 640))) == 2


def test_distant_specks_do_not_stretch_a_line():
    mask = _mask_with_lines((40, 60, 250, 390))
    mask[50, 630] = True
    (x0, _, x1, _), = line_boxes(mask, (90, 640))
    assert x1 < 450


def test_no_strokes_no_lines():
    assert line_boxes(np.zeros((90, 640), bool), (90, 640)) == ()
