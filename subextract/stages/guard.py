"""The recall guard: the text detector, sparsely, where the segmenter's cheap text test may have
missed a subtitle.

The segmenter's stroke mask is cheap because it models how subtitles are drawn, so a background
or a rendering it has not met (translucent text over a bright sky, plain text among city lights)
can hide a whole cue from it, silently. The text detector does not care how text is drawn. At
most once every ``interval`` seconds, on a frame where some band holds no text the segmenter is
sure of, the guard runs the detector once over all the bands, scaled down so that a subtitle
line is ``line_height`` pixels high (detection costs grow with the pixels: a few tens of
milliseconds a call) and with their local contrast stretched. A line the size of the video's
subtitle lines and centred like them is handed to its band's segmenter (``Segmenter.vouch``),
which opens a segment there unless one already holds it; the segmenter then finds the frames
where the text begins and ends as it does for any segment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from subextract.config import GuardSettings
from subextract.schema import LineBox
from subextract.stages.region import MIN_LINE_GLYPHS

logger = logging.getLogger(__name__)

# A text detector: a grey or BGR picture → line boxes (x0, y0, x1, y1) in its pixels.
TextDetector = Callable[[np.ndarray], list[tuple[int, int, int, int]]]


@dataclass(frozen=True)
class GuardLine:
    """A text line the detector found in a band, in the pixels of the band picture it was given."""

    band: int
    box: LineBox


class RecallGuard:
    """Decides when the detector looks (``due``) and what it found (``check``).

    ``line_height``: the subtitle lines' height in the band pictures' pixels, as the region
    pre-scan saw them (None: unknown, a quarter of the smallest band's height is assumed).
    ``centre_tolerance``: subtitle lines are centred in their band within this share of its width.
    """

    def __init__(self, detector: TextDetector, settings: GuardSettings, line_height: float | None,
                 band_heights: Sequence[int], centre_tolerance: float) -> None:
        self._detector = detector
        self.settings = settings
        self.line_height = line_height if line_height else min(band_heights) / 4
        self.scale = min(1.0, settings.line_height / self.line_height)
        self._centre_tolerance = centre_tolerance
        self._last: float | None = None
        self.calls = 0
        # Local contrast stretched: faint text over a bright picture (translucent white over a sky)
        # reaches the detector's threshold. Measured on a 45 % white line over a bright moving
        # picture, frames detected at 16 px lines: 9 of 42 plain, 24 of 42 stretched (full size
        # unstretched: 26); over the benchmark's footage no line appeared where no text is.
        self._contrast = cv2.createCLAHE(clipLimit=3.0, tileGridSize=(2, 8))

    def due(self, pts: float) -> bool:
        """Whether ``interval`` seconds have passed since the detector last looked."""
        return self._last is None or pts - self._last >= self.settings.interval - 1e-6

    def check(self, pts: float, bands: Sequence[np.ndarray]) -> list[GuardLine]:
        """The subtitle-like text lines in the bands of the frame at ``pts`` (grey, or Y, U, V
        planes as three channels): one detector call for all of them, stacked."""
        self._last = pts
        self.calls += 1
        small = [self._contrast.apply(_scaled(_grey(band), self.scale)) for band in bands]
        width = max(picture.shape[1] for picture in small)
        offsets = np.cumsum([0, *(picture.shape[0] for picture in small)])
        stacked = np.zeros((int(offsets[-1]), width), np.uint8)
        for picture, top in zip(small, offsets):
            stacked[top:top + picture.shape[0], :picture.shape[1]] = picture
        found = []
        for x0, y0, x1, y1 in _rows(self._detector(stacked)):
            centre = (y0 + y1) / 2
            index = int(np.searchsorted(offsets, centre, side="right")) - 1
            if not 0 <= index < len(bands):
                continue
            top, band_width = offsets[index], small[index].shape[1]
            box = (x0, y0 - top, x1, y1 - top)
            if self._subtitle_like(box, band_width):
                found.append(GuardLine(index, tuple(int(round(v / self.scale)) for v in box)))
        if found:
            logger.debug("recall guard at %.2f s: %s", pts, ", ".join(f"band {line.band} {line.box}" for line in found))
        return found

    def _subtitle_like(self, box: tuple[int, int, int, int], band_width: int) -> bool:
        """A line about as high as the subtitles' (within ``line_height_range`` times either
        way), centred in its band, and at least two glyphs wide: the detector also finds scene
        text, and a thing of the picture a glyph wide (a lamp, a knob) that stays at the band's
        middle is read as one letter every time the guard looks (a cue of "มณฑ์" four times). A
        one-glyph cue is left to the mask, which sees those well."""
        x0, y0, x1, y1 = box
        height = y1 - y0
        expected = self.line_height * self.scale
        spread = self.settings.line_height_range
        return expected / spread <= height <= expected * spread and x1 - x0 >= MIN_LINE_GLYPHS * height \
            and abs((x0 + x1) / 2 - band_width / 2) <= self._centre_tolerance * band_width


def _rows(boxes: Sequence[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Boxes on one row (each one's vertical centre inside the other's span) joined into one line:
    the detector cuts a faint line at its word gaps, and a word alone is neither centred nor as
    wide as the line the segmenter must hold (one of three words vouched for split a cue in two)."""
    rows: list[list[int]] = []
    for x0, y0, x1, y1 in sorted(boxes, key=lambda box: box[0]):
        centre = (y0 + y1) / 2
        row = next((row for row in rows if row[1] <= centre <= row[3] and y0 <= (row[1] + row[3]) / 2 <= y1), None)
        if row is None:
            rows.append([x0, y0, x1, y1])
        else:
            row[:] = [min(row[0], x0), min(row[1], y0), max(row[2], x1), max(row[3], y1)]
    return [(x0, y0, x1, y1) for x0, y0, x1, y1 in rows]


def _grey(band: np.ndarray) -> np.ndarray:
    """The band's luma: its grey picture, or the Y plane of a Y, U, V one."""
    return band if band.ndim == 2 else band[..., 0]


def _scaled(picture: np.ndarray, scale: float) -> np.ndarray:
    if scale >= 1.0:
        return picture
    size = (max(8, round(picture.shape[1] * scale)), max(8, round(picture.shape[0] * scale)))
    return cv2.resize(picture, size, interpolation=cv2.INTER_AREA)
