"""Group consecutive frames whose subtitle band shows the same text into segments.

OCR runs once per segment, so this stage decides the OCR cost. Comparing raw band pixels (or a
perceptual hash of them) mistakes a moving background for a new subtitle, so frames are compared
through a *text mask*: bright strokes with a dark outline, shadow or box right next to them,
which is how burned-in subtitles are drawn to stay legible. The mask of a subtitle stays put
while the picture behind it moves. Masks are compared with a small dilation tolerance (a
hand-written comparison: a perceptual hash of a wide strip squeezes each glyph into a fraction of
a cell and cannot tell two subtitles of equal length apart). The imagehash of the mask still
serves as the segment's identity, so a repeated line can reuse an earlier reading.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import cv2
import imagehash
import numpy as np
from PIL import Image

from subextract.config import SegmentSettings

_TOLERANCE = cv2.getStructuringElement(cv2.MORPH_RECT, (3, 3))


@dataclass
class Segment:
    band: int
    start: float  # PTS of the first frame showing this content
    end: float  # PTS of the first frame no longer showing it
    frame_count: int
    image: np.ndarray  # the OCR picture: per-pixel median of frames kept across the segment
    mask_hash: imagehash.ImageHash
    mask: np.ndarray = field(repr=False)


def analysis_view(band: np.ndarray, width: int) -> np.ndarray:
    if band.shape[1] <= width:
        return band
    height = max(8, round(band.shape[0] * width / band.shape[1]))
    return cv2.resize(band, (width, height), interpolation=cv2.INTER_AREA)


def text_mask(grey: np.ndarray, settings: SegmentSettings) -> np.ndarray:
    """Pixels that look like subtitle strokes: bright lines thinner than the stroke kernel that
    stand well above their surroundings (a white top-hat ignores large bright areas such as sky)."""
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (settings.stroke_kernel, settings.stroke_kernel))
    above_surroundings = cv2.morphologyEx(grey, cv2.MORPH_TOPHAT, kernel)
    return (grey >= settings.bright_min) & (above_surroundings >= settings.contrast_min)


def mask_difference(a: np.ndarray, b: np.ndarray) -> float:
    """The larger share, over the two masks, of stroke pixels with no stroke of the other mask
    within one pixel. One-sided shares keep a new subtitle from hiding behind shared background."""
    a_count, b_count = int(np.count_nonzero(a)), int(np.count_nonzero(b))
    if a_count == 0 or b_count == 0:
        return 0.0 if a_count == b_count else 1.0
    a_u8, b_u8 = a.view(np.uint8), b.view(np.uint8)
    a_only = np.count_nonzero(a_u8 & ~cv2.dilate(b_u8, _TOLERANCE).view(bool))
    b_only = np.count_nonzero(b_u8 & ~cv2.dilate(a_u8, _TOLERANCE).view(bool))
    return max(a_only / a_count, b_only / b_count)


def mask_hash(mask: np.ndarray) -> imagehash.ImageHash:
    return imagehash.dhash(Image.fromarray(mask.view(np.uint8) * 255), hash_size=16)


class _FrameKeeper:
    """Keeps at most ``limit`` frames spread evenly over a run of unknown length (stride doubles)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.stride = 1
        self.seen = 0
        self.frames: list[np.ndarray] = []

    def offer(self, frame: np.ndarray) -> None:
        if self.seen % self.stride == 0:
            self.frames.append(frame)
            if len(self.frames) > self.limit:
                self.frames = self.frames[::2]
                self.stride *= 2
        self.seen += 1

    def median(self) -> np.ndarray:
        if len(self.frames) == 1:
            return self.frames[0]
        return np.median(np.stack(self.frames), axis=0).astype(np.uint8)


class Segmenter:
    """Consumes one band's frames in order; yields a Segment each time displayed text ends."""

    def __init__(self, band_index: int, settings: SegmentSettings) -> None:
        self.band_index = band_index
        self.settings = settings
        self._start: float | None = None
        self._last_mask: np.ndarray | None = None
        self._best_mask: np.ndarray | None = None
        self._keeper: _FrameKeeper | None = None

    def push(self, pts: float, band: np.ndarray) -> Iterator[Segment]:
        mask = text_mask(analysis_view(band, self.settings.analysis_width), self.settings)
        has_text = np.count_nonzero(mask) >= self.settings.min_text_share * mask.size
        if self._last_mask is not None and (
                not has_text or mask_difference(self._last_mask, mask) > self.settings.change_threshold):
            yield from self.finish(pts)
        if has_text:
            if self._keeper is None:
                self._start, self._keeper, self._best_mask = pts, _FrameKeeper(self.settings.keep_frames), mask
            self._keeper.offer(band)
            if np.count_nonzero(mask) > np.count_nonzero(self._best_mask):
                self._best_mask = mask
            self._last_mask = mask

    def finish(self, end_pts: float) -> Iterator[Segment]:
        """Close the open segment (if any) at ``end_pts``, the first frame without its text."""
        if self._keeper is not None and self._start is not None:
            yield Segment(band=self.band_index, start=self._start, end=end_pts,
                          frame_count=self._keeper.seen, image=self._keeper.median(),
                          mask_hash=mask_hash(self._best_mask), mask=self._best_mask)
        self._start, self._last_mask, self._best_mask, self._keeper = None, None, None, None
