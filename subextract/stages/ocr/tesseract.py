"""Tesseract 5's LSTM recogniser, in this process through the tesserocr wheel (which bundles
libtesseract), for the scripts PP-OCRv6 cannot read.

Each of the segmenter's line boxes is read on its own (page segmentation "single line": no
layout analysis) from a clean binarised picture of the line: the bright strokes lifted off
their surroundings (a white top-hat), black on white. The grey median with its dark outline
halo reads far worse: Tesseract's own thresholding keeps the halo as a second stroke.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import cv2
import numpy as np
from PIL import Image

from subextract.errors import SubextractError
from subextract.stages.lines import Box
from subextract.stages.ocr import Reading, TextLine
from subextract.stages.ocr.scripts import TesseractLanguage, tessdata_dir

log = logging.getLogger(__name__)

# Tesseract reads best with lines some 40-60 px tall; the (padded) line crop is scaled to this.
_TARGET_LINE_HEIGHT = 80
# The stroke lift is measured against the line's surroundings within this share of its height
# (wider than a stroke, narrower than a glyph's counter plus outline).
_TOPHAT_SHARE = 0.45
_MIN_LIFT = 40  # grey levels; below this a pixel is no stroke whatever Otsu says
# A pixel is ink by how much darker than the text's own brightness it is not (ramping over this
# many levels, from _TEXT_LEVEL_MARGIN below it) ...
_TEXT_LEVEL_MARGIN = 60
_TEXT_LEVEL_RAMP = 40
# ... and by how far it is lifted above its surroundings, ramping up from this share of the
# strokes' Otsu threshold to that threshold.
_LIFT_RAMP_SHARE = 0.6
_BORDER = 12  # white margin around the line: Tesseract clips glyphs touching the picture's edge


def binarised_line(grey: np.ndarray, box: Box) -> np.ndarray:
    """The line at ``box`` of a grey band picture as dark strokes on white, scaled to a height
    Tesseract reads well. Subtitle strokes are bright (the segmenter's stroke mask is a white
    top-hat too) and stand above their surroundings: a pixel is ink as far as it is both nearly
    as bright as the text and lifted like a stroke, so a bright background, an outline or a
    shadow all become white. The edges keep their anti-aliasing (a hard threshold measured
    worse: Arabic dots and thin Cyrillic strokes broke up at subtitle sizes)."""
    x0, y0, x1, y1 = box
    crop = grey[y0:y1, x0:x1]
    if crop.size == 0:
        return np.full((_TARGET_LINE_HEIGHT, _TARGET_LINE_HEIGHT), 255, np.uint8)
    scale = max(1.0, _TARGET_LINE_HEIGHT / crop.shape[0])
    if scale > 1.0:
        crop = cv2.resize(crop, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC)
    size = max(3, int(_TOPHAT_SHARE * crop.shape[0]) | 1)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (size, size))
    lift = cv2.morphologyEx(crop, cv2.MORPH_TOPHAT, kernel).astype(np.float32)
    # Otsu among the lifted pixels only: strokes against the background next to a dark outline
    # (which an outline lifts too, less than the strokes); the unlifted rest would pull it down.
    lifted = lift[lift > _MIN_LIFT].astype(np.uint8)
    if lifted.size == 0:
        return cv2.copyMakeBorder(np.full_like(crop, 255), _BORDER, _BORDER, _BORDER, _BORDER,
                                  cv2.BORDER_CONSTANT, value=255)
    threshold = max(float(cv2.threshold(lifted.reshape(1, -1), 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)[0]),
                    _MIN_LIFT)
    text_level = float(np.percentile(crop[lift > threshold], 90)) if (lift > threshold).any() else 255.0
    bright = np.clip((crop - (text_level - _TEXT_LEVEL_MARGIN)) / _TEXT_LEVEL_RAMP, 0, 1)
    ramp_from = _LIFT_RAMP_SHARE * threshold
    stroke = np.clip((lift - ramp_from) / max(1.0, threshold - ramp_from), 0, 1)
    picture = (255 - 255 * bright * stroke).astype(np.uint8)
    return cv2.copyMakeBorder(picture, _BORDER, _BORDER, _BORDER, _BORDER, cv2.BORDER_CONSTANT, value=255)


class TesseractRecogniser:
    """One Tesseract model (one language or script) reading single lines. Not thread-safe by
    itself: a lock keeps concurrent callers apart."""

    def __init__(self, language: TesseractLanguage) -> None:
        from tesserocr import OEM, PSM, PyTessBaseAPI

        folder = tessdata_dir()
        if folder is None:
            raise SubextractError(f"no Tesseract language data found: apt-get install {language.package}")
        self.language = language
        try:
            self._api = PyTessBaseAPI(path=str(folder), lang=language.model, psm=PSM.SINGLE_LINE,
                                      oem=OEM.LSTM_ONLY)
        except RuntimeError as exc:
            raise SubextractError(f"Tesseract could not load '{language.model}' from {folder}: "
                                  f"apt-get install {language.package}") from exc
        # Word lists bias LSTM output towards dictionary words; subtitles hold names and slang.
        self._api.SetVariable("load_system_dawg", "0")
        self._api.SetVariable("load_freq_dawg", "0")
        self._lock = threading.Lock()

    def read_line(self, grey: np.ndarray, box: Box) -> TextLine:
        picture = binarised_line(grey, box)
        with self._lock:
            self._api.SetImage(Image.fromarray(picture))
            text = self._api.GetUTF8Text()
            confidence = self._api.MeanTextConf()
        # Tesseract gives RTL lines in logical order already (its output is the reading order).
        text = " ".join(text.split())
        return TextLine(text=text, confidence=max(0.0, confidence) / 100.0, box=box)

    def close(self) -> None:
        self._api.End()


class TesseractEngine:
    """An OCR engine of its own (``read_batch``) reading every line box with one model."""

    name = "tesseract"

    def __init__(self, language: TesseractLanguage, min_confidence: float) -> None:
        self.recogniser = TesseractRecogniser(language)
        self.min_confidence = min_confidence

    def read_batch(self, images: Sequence[np.ndarray],
                   line_boxes: Sequence[Sequence[Box]] | None = None) -> list[Reading]:
        boxes = line_boxes or [()] * len(images)
        readings = []
        for image, lines in zip(images, boxes):
            grey = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
            lines = lines or ((0, 0, grey.shape[1], grey.shape[0]),)
            read = [self.recogniser.read_line(grey, box) for box in lines]
            readings.append(Reading(lines=tuple(line for line in read if line.text
                                                and line.confidence >= self.min_confidence)))
        return readings
