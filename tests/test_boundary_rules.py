"""The boundary refinement's pure decisions, without FFmpeg (as SubtitleEdit tests its timing
refiner): which sampled gaps are re-decoded, and which of them share one decode."""

from __future__ import annotations

import imagehash
import numpy as np

from subextract.schema import Segment
from subextract.stages.boundary import _Interval, _intervals, _merged_ranges

FRAME = 0.04


def segment(before_start, start, last_shown, end) -> Segment:
    mask = np.zeros((8, 8), bool)
    return Segment(band=0, start=start, end=end, frame_count=3, settled=True, before_start=before_start,
                   last_shown=last_shown, image=np.zeros((8, 8), np.uint8),
                   mask_hash=imagehash.ImageHash(np.zeros((16, 16), bool)), mask=mask)


def test_only_gaps_wider_than_a_frame_and_a_half_are_redecoded():
    sampled = segment(before_start=1.0, start=1.5, last_shown=3.0, end=3.5)
    assert _intervals(sampled, FRAME) == [_Interval(1.0, 1.5), _Interval(3.0, 3.5)]
    every_frame = segment(before_start=1.46, start=1.5, last_shown=3.46, end=3.5)
    assert _intervals(every_frame, FRAME) == []
    at_range_start = segment(before_start=None, start=0.0, last_shown=3.46, end=3.5)
    assert _intervals(at_range_start, FRAME) == []


def test_near_gaps_share_one_decode_far_ones_do_not():
    gaps = [_Interval(5.0, 5.5), _Interval(1.0, 1.5), _Interval(2.0, 2.5), _Interval(2.4, 3.0)]
    assert _merged_ranges(gaps, join_gap=0.6) == [(1.0, 3.0), (5.0, 5.5)]
    assert _merged_ranges(gaps, join_gap=0.0) == [(1.0, 1.5), (2.0, 3.0), (5.0, 5.5)]
    assert _merged_ranges([], join_gap=1.0) == []
