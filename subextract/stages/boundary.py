"""Snap segment boundaries to the exact frame when frames were sampled (``--fps``).

A sampled pass only knows that a subtitle appeared somewhere between two samples. Re-decoding
just those intervals at the native frame rate and comparing each frame's text mask with the
segment's own mask finds the first frame showing (or no longer showing) it, without any OCR.
Neighbouring intervals are decoded in one FFmpeg run to pay for each seek once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from subextract.config import SegmentSettings
from subextract.schema import Segment
from subextract.stages.sample import Frame
from subextract.stages.mask import (adds_line, analysis_view, exact_lost_share, lost_share, min_text_pixels, still_shown,
                                    stroke_lift, text_mask)

DecodeRange = Callable[[float, float], Iterable[Frame]]  # (start, end) → frames in [start, end)


@dataclass(frozen=True)
class _Interval:
    start: float  # last sample on the old side
    end: float  # first sample on the new side


def _intervals(segment: Segment, frame_duration: float) -> list[_Interval]:
    """Sampled gaps wider than one frame around the segment's start and end."""
    gaps = []
    if segment.before_start is not None and segment.start - segment.before_start > 1.5 * frame_duration:
        gaps.append(_Interval(segment.before_start, segment.start))
    if segment.end - segment.last_shown > 1.5 * frame_duration:
        gaps.append(_Interval(segment.last_shown, segment.end))
    return gaps


def _merged_ranges(intervals: Sequence[_Interval], join_gap: float) -> list[tuple[float, float]]:
    ranges: list[tuple[float, float]] = []
    for interval in sorted(intervals, key=lambda i: i.start):
        if ranges and interval.start - ranges[-1][1] <= join_gap:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], interval.end))
        else:
            ranges.append((interval.start, interval.end))
    return ranges


def _shows(mask: np.ndarray, lift: np.ndarray, segment: Segment, settings: SegmentSettings) -> bool:
    """The frame holds the segment's strokes and no line more (a new subtitle drawn over the old
    one's place can cover its strokes, so losing none of them is not enough) nor text of its own
    at the old one's place (dense text replaced in place keeps most strokes within one pixel, few
    at their very pixels); or, where its mask lost them over a bright picture, the strokes still
    stand above their surroundings (as the segmenter holds such text)."""
    min_pixels = min_text_pixels(mask.size, settings)
    replaced = np.count_nonzero(mask) >= settings.text_hold * min_pixels \
        and exact_lost_share(segment.mask, mask) > settings.exact_change_threshold \
        and exact_lost_share(mask, segment.mask) >= settings.replacement_new_share
    if replaced or adds_line(segment.mask, mask, settings) is not None:
        return False
    if np.count_nonzero(mask) >= min_pixels and lost_share(segment.mask, mask) <= settings.change_threshold:
        return True
    return still_shown(segment.mask, lift, settings)


def refine_boundaries(segments: Sequence[Segment], decode_range: DecodeRange, frame_duration: float,
                      settings: SegmentSettings, join_gap: float | None = None) -> list[Segment]:
    """``join_gap``: re-decodes closer than this are one range (default: the settings' refine_join_gap)."""
    join_gap = settings.refine_join_gap if join_gap is None else join_gap
    wanted = [gap for segment in segments for gap in _intervals(segment, frame_duration)]
    if not wanted:
        return list(segments)
    frames: list[tuple[float, list[np.ndarray]]] = []
    for start, end in _merged_ranges(wanted, join_gap):
        for frame in decode_range(start, end + frame_duration / 2):
            views = [analysis_view(band, settings.analysis_width) for band in frame.mask_bands or frame.bands]
            frames.append((frame.pts, [(text_mask(view, settings, lift), lift)
                                       for view in views for lift in [stroke_lift(view, settings)]]))
    refined = []
    for segment in segments:
        start, end = segment.start, segment.end
        for gap in _intervals(segment, frame_duration):
            inside = [(pts, masks[segment.band]) for pts, masks in frames if gap.start < pts <= gap.end]
            if gap.end == segment.start:
                start = next((pts for pts, (mask, lift) in inside if _shows(mask, lift, segment, settings)), start)
            else:
                # At the end of the stream every frame may show it: it ends after the last one.
                stream_end = inside[-1][0] + frame_duration if inside else end
                end = next((pts for pts, (mask, lift) in inside if not _shows(mask, lift, segment, settings)),
                           stream_end)
        refined.append(replace(segment, start=start, end=end))
    return refined
