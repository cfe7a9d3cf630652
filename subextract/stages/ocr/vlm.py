"""What the vision-language engines share: picture preparation, stacking, reply parsing.

An engine (in-process vLLM, or an OpenAI-compatible server) only has to turn pictures into
replies (``Send``); ``read_pictures`` does the rest. Each band crop is scaled down to the smallest
size the model reads reliably (``max_side``/``max_pixels``: fewer visual tokens, more crops a
second). With ``stack`` > 1, several crops are stacked into one picture and the reply is expected
to hold one line per strip; a reply with any other number of lines is read again one strip per
request, so stacking never costs accuracy, only time when it does not fit.

Each request's reply is bounded by what its text lines can hold (``line_tokens`` per unit of a
line's width over its height, from the segmenter's line boxes), never more than ``max_tokens``:
a subtitle line never needs 128 tokens, and a model caught in a repetition loop stops early.

Confidence: the mean probability of the reply's tokens when the engine reports log-probabilities,
otherwise 1.0. A stacked reply's confidence is shared by all its strips. VLMs give no geometry,
so each line of a reading gets an equal horizontal slice of the crop as its box.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

from subextract.config import OcrSettings
from subextract.errors import SubextractError
from subextract.schema import LineBox, Reading, TextLine
from subextract.stages.ocr import OcrFailure


@dataclass(frozen=True)
class Reply:
    text: str
    confidence: float = 1.0


class SendFailure(SubextractError):
    """A ``Send`` that failed part-way: ``replies`` holds the Reply (or None) of each picture."""

    def __init__(self, message: str, replies: Sequence[Reply | None]) -> None:
        super().__init__(message)
        self.replies = list(replies)


# Pictures and each one's reply bound in tokens in, one Reply per picture out, in order; raises
# SendFailure (or another SubextractError) on failure.
Send = Callable[[Sequence[np.ndarray], Sequence[int]], list[Reply]]

# Room beyond the lines' own bound: a language tag, the separators, a reply's last token.
_TOKEN_SLACK = 8

_LANGUAGE_TAG = re.compile(r"^\[([a-z]{2,3}(?:-[A-Za-z0-9]{2,8})?)\]\s*(.*)$")


def prepare(image: np.ndarray, max_side: int, max_pixels: int) -> np.ndarray:
    """The grey crop scaled down (never up) to fit ``max_side`` and ``max_pixels`` (0: no limit)."""
    height, width = image.shape[:2]
    scale = 1.0
    if max_side:
        scale = min(scale, max_side / max(height, width))
    if max_pixels:
        scale = min(scale, math.sqrt(max_pixels / (height * width)))
    if scale >= 1.0:
        return image
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def stack_strips(strips: Sequence[np.ndarray]) -> np.ndarray:
    """Strips one above the other, left-aligned on black, a quarter strip height apart."""
    width = max(s.shape[1] for s in strips)
    gap = max(4, max(s.shape[0] for s in strips) // 4)
    rows: list[np.ndarray] = []
    for i, strip in enumerate(strips):
        if i:
            rows.append(np.zeros((gap, width), np.uint8))
        rows.append(np.pad(strip, ((0, 0), (0, width - strip.shape[1]))))
    return np.vstack(rows)


def _pil(image: np.ndarray) -> Image.Image:
    """A grey picture, or a colour one in OpenCV's BGR order (the pictures every engine gets)."""
    return Image.fromarray(image[..., ::-1].copy() if image.ndim == 3 else image)


def to_pil(image: np.ndarray) -> Image.Image:
    # RGB: some processors skip their own grey-to-RGB conversion and expect three channels.
    return _pil(image).convert("RGB")


# Stored, unfiltered PNG: lossless like any PNG, and every server reads it, but a crop costs
# ~0.3 ms to write and ~0.6 ms to read instead of 15-50 ms and 2-6 ms at zlib's default level,
# for at most twice the bytes (bench/client_ceiling.py --formats; docs/gpu.md).
_PNG_STORED = [cv2.IMWRITE_PNG_COMPRESSION, 0, cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_NONE]


def to_png(image: np.ndarray) -> bytes:
    """A grey picture as a grey PNG (a third of the bytes of RGB), a BGR one as RGB."""
    written, png = cv2.imencode(".png", image, _PNG_STORED)
    if not written:
        raise SubextractError(f"could not write a {image.shape} picture as PNG")
    return png.tobytes()


def clean_repeated_tail(text: str, min_repeats: int) -> str:
    """Cut a tail repeated at least ``min_repeats`` times back to one copy: the degenerate loop a
    greedy VLM falls into. HunyuanOCR's authors clean replies this way (tails of 2+ characters,
    10+ repeats); they apply it to replies over 8,000 characters only, but a subtitle reply is
    bounded by ``max_tokens`` long before that, so here it applies to every reply."""
    if min_repeats < 2:
        return text
    n = len(text)
    for length in range(2, n // min_repeats + 1):
        tail = text[-length:]
        count, start = 1, n - 2 * length
        while start >= 0 and text[start:start + length] == tail:
            count += 1
            start -= length
        if count >= min_repeats:
            return text[:n - length * (count - 1)]
    return text


def reply_lines(text: str, min_repeats: int) -> list[str]:
    """The reply's non-empty lines, stripped, after the repeated-tail cleanup."""
    lines = (line.strip() for line in clean_repeated_tail(text, min_repeats).splitlines())
    return [line for line in lines if line]


def split_language_tag(line: str) -> tuple[str | None, str]:
    """``[en] Hello`` → (``en``, ``Hello``); a line without a leading tag → (None, line)."""
    match = _LANGUAGE_TAG.match(line)
    return (match.group(1).lower(), match.group(2)) if match else (None, line)


def make_reading(lines: Sequence[str], confidence: float, shape: tuple[int, ...], tagged: bool) -> Reading:
    """A Reading of ``lines`` for a crop of ``shape``. A line carries the model's own language
    tag where the prompt asked for one (``tagged``); otherwise it stays ``und`` and the pipeline
    tags it from its text (stages/language.py), as it does rapidocr's lines."""
    height, width = shape[:2]
    text_lines = []
    for i, line in enumerate(lines):
        tag, text = split_language_tag(line) if tagged else (None, line)
        if not text:
            continue
        box = (0, i * height // len(lines), width, (i + 1) * height // len(lines))
        text_lines.append(TextLine(text=text, confidence=confidence, box=box,
                                   language=tag or "und"))
    return Reading(lines=tuple(text_lines))


def token_bound(boxes: Sequence[LineBox] | None, settings: OcrSettings) -> int:
    """The most tokens a reply to one strip may need: ``line_tokens`` per unit of each line's
    width over its height (a glyph is about as wide as the line is high, a Latin letter half that,
    and a token holds at least one glyph), plus some slack; ``max_tokens`` when the strip's lines
    are not known or the bound is off."""
    if not settings.line_tokens or not boxes:
        return settings.max_tokens
    need = sum(math.ceil(settings.line_tokens * (x1 - x0) / max(1, y1 - y0)) for x0, y0, x1, y1 in boxes)
    return min(settings.max_tokens, need + _TOKEN_SLACK)


def chunks(count: int, size: int) -> list[list[int]]:
    """Indices 0..count-1 in consecutive groups of at most ``size``."""
    size = max(1, size)
    return [list(range(start, min(start + size, count))) for start in range(0, count, size)]


def grouped_pictures(strips: Sequence[np.ndarray], groups: list[list[int]]) -> list[np.ndarray]:
    """One picture per group of strip indices: the strip alone, or the group's strips stacked."""
    return [strips[g[0]] if len(g) == 1 else stack_strips([strips[i] for i in g]) for g in groups]


def read_pictures(images: Sequence[np.ndarray], settings: OcrSettings, send: Send,
                  line_boxes: Sequence[Sequence[LineBox]] | None = None) -> list[Reading]:
    """One Reading per crop: stacked requests first (``settings.stack``), then one request per
    strip for every stack whose reply does not have one line per strip. ``line_boxes``, the
    segmenter's text lines of each crop, bound each reply's length (``token_bound``)."""
    strips = [prepare(image, settings.max_side, settings.max_pixels) for image in images]
    bounds = [token_bound(line_boxes[i] if line_boxes is not None else None, settings) for i in range(len(images))]
    readings: list[Reading | None] = [None] * len(images)

    def assign(groups: list[list[int]], replies: Sequence[Reply | None]) -> list[int]:
        """Fill ``readings`` from the replies; return the indices of stacks to read again."""
        again: list[int] = []
        for group, reply in zip(groups, replies):
            if reply is None:
                continue
            lines = reply_lines(reply.text, settings.tail_repeats)
            if len(group) == 1:
                readings[group[0]] = make_reading(lines, reply.confidence, images[group[0]].shape,
                                                  settings.tagged_lines)
            elif len(lines) == len(group):
                for index, line in zip(group, lines):
                    readings[index] = make_reading([line], reply.confidence, images[index].shape,
                                                   settings.tagged_lines)
            else:
                again.extend(group)
        return again

    def limits(groups: list[list[int]]) -> list[int]:
        """A stack's bound: its strips' together, one line each; never above ``max_tokens``."""
        return [bounds[g[0]] if len(g) == 1 else min(settings.max_tokens, sum(bounds[i] for i in g)) for g in groups]

    pending = chunks(len(images), settings.stack)
    try:
        pending = [[i] for i in assign(pending, send(grouped_pictures(strips, pending), limits(pending)))]
        if pending:
            assign(pending, send(grouped_pictures(strips, pending), limits(pending)))
    except SendFailure as failure:
        assign(pending, failure.replies)  # what the failing call did read is kept
        raise OcrFailure(str(failure), readings) from None
    return [reading if reading is not None else Reading(lines=()) for reading in readings]
