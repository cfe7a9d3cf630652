"""boundary: sampled segments snapped to the exact frame, on synthetic 25 fps bands (no FFmpeg).

A stand-in for FFmpeg's range decode yields the frames of a made-up video whose subtitle times
are known to the frame; the refinement must land on exactly those frames."""

from __future__ import annotations

import numpy as np
import pytest

from test_segment import SETTINGS, background, with_text

from subextract.schema import Segment
from subextract.stages.boundary import refine_boundaries
from subextract.stages.sample import Frame
from subextract.stages.mask import analysis_view, mask_hash, text_mask

FPS = 25
FRAME = 1 / FPS
STEP = 5  # a sampled pass at 5 fps sees every 5th frame


def pts(n: int) -> float:
    return n / FPS


class Video:
    """Frames 0..frames-1; ``shows(n)`` gives the subtitle lines drawn on frame n (one band each)."""

    def __init__(self, frames: int, shows, bands: int = 1) -> None:
        self.frames, self.shows, self.bands = frames, shows, bands
        self.calls: list[tuple[float, float]] = []

    def band(self, n: int) -> np.ndarray:
        lines = self.shows(n)
        img = background(n, "gradient")
        return with_text(img, *lines) if lines else img

    def frame(self, n: int) -> Frame:
        band = self.band(n)
        blank = background(n, "gradient")
        return Frame(pts(n), tuple(band if i == self.bands - 1 else blank for i in range(self.bands)))

    def decode_range(self, start: float, end: float):
        """FFmpeg's contract: every frame with start <= pts < end, in order."""
        self.calls.append((start, end))
        return [self.frame(n) for n in range(self.frames) if start - 1e-9 <= pts(n) < end - 1e-9]


def mask_of(lines: tuple[str, ...], n: int = 0) -> np.ndarray:
    return text_mask(analysis_view(with_text(background(n, "gradient"), *lines), SETTINGS.analysis_width), SETTINGS)


def sampled_segment(first: int, after_last: int, lines: tuple[str, ...], band: int = 0,
                    range_start: int = 0) -> Segment:
    """What the sampled pass knows of text shown on frames [first, after_last)."""
    samples = range(range_start, 10_000, STEP)
    shown = [n for n in samples if first <= n < after_last]
    before = [n for n in samples if n < first]
    mask = mask_of(lines)
    return Segment(band=band, start=pts(shown[0]), end=pts(shown[-1] + STEP), frame_count=len(shown),
                   settled=True, before_start=pts(before[-1]) if before else None, last_shown=pts(shown[-1]),
                   image=np.zeros((1, 1), np.uint8), mask_hash=mask_hash(mask), mask=mask)


HELLO = ("Hello there",)


def test_start_and_end_snap_to_the_exact_frames():
    video = Video(60, lambda n: HELLO if 12 <= n < 32 else ())
    segment = sampled_segment(12, 32, HELLO)
    assert (segment.start, segment.end) == (pts(15), pts(35))
    (refined,) = refine_boundaries([segment], video.decode_range, FRAME, SETTINGS)
    assert (refined.start, refined.end) == (pts(12), pts(32))
    assert refined.mask is segment.mask and refined.frame_count == segment.frame_count


@pytest.mark.parametrize("first", [11, 13, 14, 15])
def test_every_position_between_two_samples_is_found(first):
    video = Video(60, lambda n: HELLO if first <= n < first + 20 else ())
    (refined,) = refine_boundaries([sampled_segment(first, first + 20, HELLO)], video.decode_range, FRAME, SETTINGS)
    assert (refined.start, refined.end) == (pts(first), pts(first + 20))


def test_text_replaced_in_place_ends_where_the_new_text_begins():
    video = Video(60, lambda n: HELLO if 12 <= n < 32 else ("Someone else",) if n < 50 else ())
    (refined,) = refine_boundaries([sampled_segment(12, 32, HELLO)], video.decode_range, FRAME, SETTINGS)
    assert refined.end == pts(32)


def test_a_line_added_below_ends_the_one_line_cue():
    two = ("Hello there", "and a second line")
    video = Video(60, lambda n: (("Hello there",) if 12 <= n < 32 else two if n < 50 else ()))
    first = sampled_segment(12, 32, ("Hello there",))
    # The single line is drawn where a one-line cue sits; the two-line cue moves it up, which
    # also counts as losing it. Both ways, frame 32 no longer shows the one-line cue.
    (refined,) = refine_boundaries([first], video.decode_range, FRAME, SETTINGS)
    assert refined.end == pts(32)


def test_samples_one_frame_apart_are_already_exact_and_decode_nothing():
    video = Video(60, lambda n: HELLO if 12 <= n < 32 else ())
    segment = Segment(band=0, start=pts(12), end=pts(32), frame_count=20, settled=True, before_start=pts(11),
                      last_shown=pts(31), image=np.zeros((1, 1), np.uint8), mask_hash=mask_hash(mask_of(HELLO)),
                      mask=mask_of(HELLO))
    assert refine_boundaries([segment], video.decode_range, FRAME, SETTINGS) == [segment]
    assert video.calls == []


def test_a_gap_of_two_frames_is_refined():
    video = Video(60, lambda n: HELLO if 11 <= n < 31 else ())
    segment = Segment(band=0, start=pts(12), end=pts(32), frame_count=10, settled=True, before_start=pts(10),
                      last_shown=pts(30), image=np.zeros((1, 1), np.uint8), mask_hash=mask_hash(mask_of(HELLO)),
                      mask=mask_of(HELLO))
    (refined,) = refine_boundaries([segment], video.decode_range, FRAME, SETTINGS)
    assert (refined.start, refined.end) == (pts(11), pts(31))


def test_a_segment_at_the_start_of_the_range_keeps_its_start():
    video = Video(60, lambda n: HELLO if n < 32 else ())
    segment = sampled_segment(0, 32, HELLO)
    assert segment.before_start is None
    (refined,) = refine_boundaries([segment], video.decode_range, FRAME, SETTINGS)
    assert (refined.start, refined.end) == (0.0, pts(32))
    assert all(start >= segment.last_shown for start, _ in video.calls)


def test_text_still_showing_at_the_end_of_the_stream_ends_after_the_last_frame():
    video = Video(34, lambda n: HELLO if n >= 12 else ())
    segment = sampled_segment(12, 34, HELLO)  # the pass closed it at its range end, a sample past the last frame
    assert (segment.last_shown, segment.end) == (pts(30), pts(35))
    (refined,) = refine_boundaries([segment], video.decode_range, FRAME, SETTINGS)
    assert (refined.start, refined.end) == (pts(12), pts(34))


def test_a_gap_the_decoder_returns_nothing_for_keeps_the_sampled_boundary():
    """A file that breaks after the last sample: the re-decode yields no frame for the end gap."""
    whole = Video(60, lambda n: HELLO if 12 <= n < 32 else ())

    def broken_after_frame_30(start, end):
        return [frame for frame in whole.decode_range(start, end) if frame.pts <= pts(30)]

    (refined,) = refine_boundaries([sampled_segment(12, 32, HELLO)], broken_after_frame_30, FRAME, SETTINGS)
    assert (refined.start, refined.end) == (pts(12), pts(35))


def test_a_faint_frame_does_not_count_as_showing_the_text():
    # frame 12 has only a sliver of the strokes (fewer than min_text_share): the text starts at 13
    def shows(n):
        return ("H",) if n == 12 else HELLO if 13 <= n < 32 else ()
    video = Video(60, shows)
    (refined,) = refine_boundaries([sampled_segment(13, 32, HELLO)], video.decode_range, FRAME, SETTINGS)
    assert refined.start == pts(13)


def test_neighbouring_gaps_are_decoded_in_one_run_and_distant_ones_apart():
    second = ("Second one",)
    video = Video(400, lambda n: HELLO if 12 <= n < 32 else second if 337 <= n < 357 else ())
    segments = [sampled_segment(12, 32, HELLO), sampled_segment(337, 357, second)]
    refined = refine_boundaries(segments, video.decode_range, FRAME, SETTINGS, join_gap=1.0)
    assert [(s.start, s.end) for s in refined] == [(pts(12), pts(32)), (pts(337), pts(357))]
    # 10..15 and 30..35 are 0.6 s apart: one run; 335..340 and 355..360 likewise; 13 s between the two
    assert video.calls == [(pts(10), pts(35) + FRAME / 2), (pts(335), pts(360) + FRAME / 2)]
    video.calls.clear()
    refine_boundaries(segments, video.decode_range, FRAME, SETTINGS, join_gap=0.5)
    assert len(video.calls) == 4
    video.calls.clear()
    refine_boundaries(segments, video.decode_range, FRAME, SETTINGS, join_gap=pts(30) - pts(15))
    assert len(video.calls) == 2  # gaps exactly join_gap apart are one run


def test_gaps_more_than_a_second_apart_are_decoded_apart_by_default():
    second = ("Second one",)
    video = Video(120, lambda n: HELLO if 12 <= n < 32 else second if 77 <= n < 97 else ())
    segments = [sampled_segment(12, 32, HELLO), sampled_segment(77, 97, second)]
    refine_boundaries(segments, video.decode_range, FRAME, SETTINGS)
    # 30..35 and 75..80 are 1.6 s apart: two runs (and 10..15 joins 30..35, 95..100 joins 75..80)
    assert video.calls == [(pts(10), pts(35) + FRAME / 2), (pts(75), pts(100) + FRAME / 2)]


def test_each_segment_is_compared_in_its_own_band():
    video = Video(60, lambda n: HELLO if 12 <= n < 32 else (), bands=2)
    (refined,) = refine_boundaries([sampled_segment(12, 32, HELLO, band=1)], video.decode_range, FRAME, SETTINGS)
    assert (refined.start, refined.end) == (pts(12), pts(32))
    blank_band = Video(60, lambda n: HELLO if 12 <= n < 32 else (), bands=2)
    (unseen,) = refine_boundaries([sampled_segment(12, 32, HELLO, band=0)], blank_band.decode_range, FRAME, SETTINGS)
    assert (unseen.start, unseen.end) == (pts(15), pts(31))  # band 0 never shows it: nothing moves the start
