"""OCR engines behind one interface: a batch of band pictures in, one Reading per picture out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from subextract.config import OcrSettings
from subextract.errors import SubextractError
from subextract.stages.lines import Box as LineBox


@dataclass(frozen=True)
class TextLine:
    text: str
    confidence: float
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in the band picture
    language: str = "und"


@dataclass(frozen=True)
class Reading:
    lines: tuple[TextLine, ...]

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    @property
    def confidence(self) -> float:
        """Character-weighted mean of the lines' confidences (0 for an empty reading)."""
        weights = [len(line.text) for line in self.lines]
        if not sum(weights):
            return 0.0
        return sum(w * line.confidence for w, line in zip(weights, self.lines)) / sum(weights)


class OcrFailure(SubextractError):
    """An engine failed part-way through a batch: ``readings`` holds, for each picture, the
    Reading obtained before the failure, or None."""

    def __init__(self, message: str, readings: Sequence[Reading | None]) -> None:
        super().__init__(message)
        self.readings = list(readings)


class OcrEngine(Protocol):
    name: str

    def read_batch(self, images: Sequence[np.ndarray],
                   line_boxes: Sequence[Sequence[LineBox]] | None = None) -> list[Reading]:
        """One Reading per grey band picture, in order. ``line_boxes`` are the text lines the
        segmenter found in each picture; an engine may use them (rapidocr skips its detector) or
        read the whole picture (a vision-language model)."""
        ...


def create_engine(settings: OcrSettings) -> OcrEngine:
    if settings.engine == "rapidocr":
        from subextract.stages.ocr.rapid import RapidOcrEngine
        from subextract.stages.ocr.routed import RoutedEngine, routes_lines
        return RoutedEngine(settings) if routes_lines(settings.lang) else RapidOcrEngine(settings)
    if settings.engine == "vllm":
        from subextract.stages.ocr.vllm_engine import VllmEngine
        return VllmEngine(settings)
    if settings.engine == "openai":
        from subextract.stages.ocr.openai_engine import OpenAiEngine
        return OpenAiEngine(settings)
    if settings.engine == "transformers":
        from subextract.stages.ocr.transformers_engine import TransformersEngine
        return TransformersEngine(settings)
    raise SubextractError(f"unknown OCR engine {settings.engine!r} (available: rapidocr, vllm, openai, transformers)")
