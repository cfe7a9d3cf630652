"""Line boxes from stroke masks (stages/lines.py): a line's ascenders or descenders cut off by a
sparse row are no line of their own; two lines set close, and a short line, stay two."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from subextract.config import load_settings
from subextract.stages.lines import line_boxes
from subextract.stages.mask import text_mask

SEGMENT = load_settings().segment
NOTO_SERIF_ITALIC = Path("/usr/share/fonts/truetype/noto/NotoSerif-Italic.ttf")  # fonts-noto-core


def _strokes(mask: np.ndarray, y0: int, y1: int, x0: int, x1: int, step: int = 3) -> None:
    mask[y0:y1, x0:x1:step] = True  # glyph-like vertical strokes


def _rows(boxes) -> list[tuple[int, int]]:
    return [(y0, y1) for _, y0, _, y1 in boxes]


@pytest.mark.parametrize("where", ["above", "below"])
def test_a_sliver_of_ascenders_or_descenders_belongs_to_its_line(where):
    """A few tall strokes (capitals, ascenders; or descenders) beyond a blank row: part of the line."""
    mask = np.zeros((90, 640), bool)
    _strokes(mask, 40, 52, 200, 440)  # the x-height: dense
    if where == "above":
        _strokes(mask, 34, 39, 200, 440, step=20)
    else:
        _strokes(mask, 53, 58, 200, 440, step=20)
    assert _rows(line_boxes(mask, mask.shape, pad=False)) == [(34, 52) if where == "above" else (40, 58)]


def test_two_lines_of_one_size_and_a_short_line_stay_lines():
    mask = np.zeros((90, 640), bool)
    _strokes(mask, 14, 30, 150, 490)
    _strokes(mask, 32, 48, 200, 440)  # set close under it
    _strokes(mask, 56, 67, 300, 340)  # "hmm.": short, lowercase, its own line
    assert _rows(line_boxes(mask, mask.shape, pad=False)) == [(14, 30), (32, 48), (56, 67)]


def _italic_mask(lines: tuple[str, ...], size: int) -> np.ndarray:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(str(NOTO_SERIF_ITALIC), size)
    picture = Image.new("L", (640, 40 + int(1.3 * size) * len(lines)), 90)
    draw = ImageDraw.Draw(picture)
    for index, text in enumerate(lines):
        x, y = (640 - draw.textlength(text, font=font)) / 2, 20 + int(1.3 * size) * index
        draw.text((x, y), text, font=font, fill=250, stroke_width=2, stroke_fill=10)  # the outline
        draw.text((x, y), text, font=font, fill=250)
    return text_mask(np.asarray(picture), SEGMENT)


@pytest.mark.skipif(not NOTO_SERIF_ITALIC.exists(), reason="needs fonts-noto-core (scripts/setup.sh --test installs it)")
@pytest.mark.parametrize("size", [18, 22, 24, 26, 30])
@pytest.mark.parametrize("lines", [("Nobody expected the yellow jeep,",),
                                   ("Why are you telling me this, Judge?", "I'd rather keep my pledge quietly.")])
def test_an_italic_serif_line_is_one_box(lines, size):
    """Noto Serif Italic leaves a blank row above its descenders at these sizes: split off, they
    made a third box (5 rows, read as a garbled line)."""
    boxes = line_boxes(_italic_mask(lines, size), (40 + int(1.3 * size) * len(lines), 640), pad=False)
    assert len(boxes) == len(lines)
    assert all(y1 - y0 >= 0.6 * size for _, y0, _, y1 in boxes)
