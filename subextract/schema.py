"""The data every stage hands to the next: one place for the contracts, so stages do not import
each other for their types (whisperX's ``schema.py`` is the model).

Video → ``VideoInfo`` (probe) → ``Band`` (region) → frames → ``Segment`` (segmenter: one
distinct subtitle, its times, mask and OCR picture) → ``Reading`` of ``TextLine`` (OCR) →
``Cue`` (alignment) → subtitle files. ``DamagedSpan`` marks where the decoder met errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import imagehash
import numpy as np

LineBox = tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive) in the band picture


@dataclass(frozen=True)
class VideoInfo:
    path: str
    duration: float  # seconds; 0.0 when the container does not say
    fps: float  # nominal frame rate of the video stream
    width: int  # display width, after rotation
    height: int  # display height, after rotation
    rotation: int  # degrees the player rotates the coded picture
    codec: str

    @property
    def frame_duration(self) -> float:
        return 1.0 / self.fps if self.fps > 0 else 0.04


@dataclass(frozen=True)
class Band:
    """A rectangle of the displayed picture where subtitles live (pixels)."""

    x: int
    y: int
    width: int
    height: int
    label: str = "band"


@dataclass
class Segment:
    band: int
    start: float  # PTS of the first frame showing this content
    end: float  # PTS of the first frame no longer showing it
    frame_count: int
    settled: bool  # seen for at least confirm_frames frames: its strokes are text, not passing background
    before_start: float | None  # PTS of the last analysed frame before ``start`` (None at the range start)
    last_shown: float  # PTS of the last analysed frame showing it
    image: np.ndarray  # the OCR picture: per-pixel median of frames kept across the segment
    mask_hash: imagehash.ImageHash
    mask: np.ndarray = field(repr=False)
    lines: tuple[LineBox, ...] = ()  # text lines found in the mask, in ``image`` pixels
    # It began as the segment before it ended, showing another text: a glyph of that one's replaced in
    # place, or few of its strokes kept at their pixels. Its reading is that text, however alike (a
    # counter, a name before each line), not OCR jitter of the one before.
    text_changed: bool = False
    # A few single frames of the segment (as ``image``), for a second look at lines the median
    # picture reads without confidence; dropped once read.
    frames: tuple[np.ndarray, ...] = field(default=(), repr=False)


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


@dataclass(frozen=True)
class Cue:
    start: float
    end: float
    lines: tuple[str, ...]
    languages: tuple[str, ...]
    confidence: float
    band: int = 0

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass(frozen=True)
class DamagedSpan:
    start: float  # the last frame decoded before the first error (or the range's start)
    end: float  # the first keyframe decoded after the last error (or the end of what was decoded)
    errors: int  # FFmpeg error lines in the span
    missing_frames: int  # frames the frame rate promises in the span but the decoder never delivered
    first_error: str = ""  # FFmpeg's first complaint in the span, in its words

    def overlaps(self, start: float, end: float) -> bool:
        return start < self.end and end > self.start

    def describe(self) -> str:
        missing = f", {self.missing_frames} frames missing" if self.missing_frames else ""
        errors = f"{self.errors} decode error{'' if self.errors == 1 else 's'}"
        return f"{self.start:.2f}–{self.end:.2f} s ({errors}{missing})"
