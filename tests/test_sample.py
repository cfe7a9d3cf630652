"""decode_frames: real frame times (PTS), band crops, ranges, sampling and keyframes, with real FFmpeg."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import FPS
from subextract.schema import Band
from subextract.stages.sample import DecodeReport, DecodeRequest, decode_frames, scaled_size

BOTTOM = Band(0, 280, 640, 80, "bottom")


def pts_of(request: DecodeRequest, report: DecodeReport | None = None) -> list[float]:
    return [frame.pts for frame in decode_frames(request, report)]


def grid(first: int, last: int) -> list[float]:
    """Frame times of frames first..last (inclusive) at 25 fps."""
    return [n / FPS for n in range(first, last + 1)]


def test_vfr_pts_are_exact(vfr_clip):
    path, times = vfr_clip
    got = pts_of(DecodeRequest(str(path), [Band(0, 200, 320, 40)]))
    assert got == pytest.approx(times, abs=1e-6)


def test_vfr_range_keeps_real_times(vfr_clip):
    path, times = vfr_clip
    got = pts_of(DecodeRequest(str(path), [Band(0, 200, 320, 40)], start=0.5, end=1.5))
    assert got == pytest.approx([t for t in times if 0.5 <= t < 1.5], abs=1e-6)


def test_vfr_sampling_keeps_real_frame_times(vfr_clip):
    path, times = vfr_clip
    got = pts_of(DecodeRequest(str(path), [Band(0, 200, 320, 40)], sample_fps=10))
    expected = [times[0]]
    for t in times[1:]:
        if t - expected[-1] >= 0.1 * 0.95:
            expected.append(t)
    assert got == pytest.approx(expected, abs=1e-6)
    assert len(got) < len(times)


def test_pts_stay_exact_past_twenty_minutes(late_clip):
    path, times = late_clip
    got = pts_of(DecodeRequest(str(path), [Band(0, 200, 320, 40)]))
    assert got == pytest.approx(times, abs=5e-4)


@pytest.mark.parametrize("start", [0.99995, 2.99996])
def test_start_just_before_a_frame(zh_clip, start):
    got = pts_of(DecodeRequest(str(zh_clip), [BOTTOM], start=start, end=start + 0.2))
    assert got == pytest.approx([t for t in grid(0, 150) if start - 1e-4 <= t < start + 0.2], abs=1e-4)


def test_whole_clip_every_frame(zh_clip):
    report = DecodeReport()
    got = pts_of(DecodeRequest(str(zh_clip), [BOTTOM]), report)
    assert got == pytest.approx(grid(0, 149), abs=1e-6)
    assert report.frames == 150
    assert report.last_pts == pytest.approx(5.96)
    assert report.returncode == 0


@pytest.mark.parametrize("start, end, first, last", [
    (1.0, 2.0, 25, 49),  # [start, end): the frame at 2.00 s is not included
    (1.02, 2.02, 26, 50),  # off-grid bounds: first frame at or after start
    (5.5, None, 138, 149),
    (0.0, 0.5, 0, 12),
])
def test_time_ranges(zh_clip, start, end, first, last):
    got = pts_of(DecodeRequest(str(zh_clip), [BOTTOM], start=start, end=end))
    assert got == pytest.approx(grid(first, last), abs=1e-6)


def test_sampling_keeps_real_frame_times(zh_clip):
    got = pts_of(DecodeRequest(str(zh_clip), [BOTTOM], sample_fps=3))
    # every 8th frame (0.32 s >= 0.95 x 1/3 s), never a time that is not a frame's
    assert got == pytest.approx([n / FPS for n in range(0, 150, 8)], abs=1e-6)


def test_sampling_with_range(zh_clip):
    got = pts_of(DecodeRequest(str(zh_clip), [BOTTOM], start=2.0, end=3.0, sample_fps=5))
    assert got == pytest.approx([2.0, 2.2, 2.4, 2.6, 2.8], abs=1e-6)


def test_keyframes_only(zh_clip):
    # the clip is encoded with one keyframe a second and no scene-cut keyframes
    assert pts_of(DecodeRequest(str(zh_clip), [BOTTOM], keyframes_only=True)) == pytest.approx(
        [0, 1, 2, 3, 4, 5], abs=1e-6)
    assert pts_of(DecodeRequest(str(zh_clip), [BOTTOM], keyframes_only=True, start=2.5)) == pytest.approx(
        [3, 4, 5], abs=1e-6)


def test_reference_frames_only(zh_clip):
    """B-frames nothing is predicted from are skipped; what is decoded keeps its real frame time."""
    got = pts_of(DecodeRequest(str(zh_clip), [BOTTOM], reference_frames_only=True))
    every = grid(0, 149)
    assert 6 <= len(got) < len(every)
    assert all(any(abs(t - frame) < 1e-6 for frame in every) for t in got)
    assert {0.0, 1.0, 2.0, 3.0, 4.0, 5.0} <= {round(t, 6) for t in got}  # keyframes are references


def test_one_band_shape_and_pixels(zh_clip):
    whole = next(iter(decode_frames(DecodeRequest(str(zh_clip), [Band(0, 0, 640, 360)])))).bands[0]
    band = Band(100, 250, 300, 60)
    frames = list(decode_frames(DecodeRequest(str(zh_clip), [band], end=0.2)))
    assert len(frames) == 5
    crop = frames[0].bands[0]
    assert crop.shape == (60, 300) and crop.dtype == np.uint8
    # the crop is the band's own pixels of the grey picture
    assert np.abs(crop.astype(int) - whole[250:310, 100:400].astype(int)).mean() < 1.0


def test_two_bands_of_different_sizes(zh_clip):
    top, bottom = Band(0, 0, 640, 40, "top"), Band(120, 290, 400, 70, "bottom")
    frames = list(decode_frames(DecodeRequest(str(zh_clip), [top, bottom], end=0.4)))
    assert len(frames) == 10
    for frame in frames:
        assert [b.shape for b in frame.bands] == [(40, 640), (70, 400)]
    whole = next(iter(decode_frames(DecodeRequest(str(zh_clip), [Band(0, 0, 640, 360)])))).bands[0]
    assert np.abs(frames[0].bands[0].astype(int) - whole[0:40].astype(int)).mean() < 1.0
    assert np.abs(frames[0].bands[1].astype(int) - whole[290:360, 120:520].astype(int)).mean() < 1.0


def test_scaled_bands(zh_clip):
    bands = [Band(0, 280, 640, 80), Band(101, 0, 301, 41)]
    frames = list(decode_frames(DecodeRequest(str(zh_clip), bands, scale=0.5, end=0.12)))
    assert [b.shape for b in frames[0].bands] == [(40, 320), (20, 150)]
    assert scaled_size(bands[1], 0.5) == (150, 20)


def test_band_in_rotated_video_uses_displayed_picture(rotated_clip):
    # the picture is shown 240 wide and 320 high: a band at y=280 only exists after rotation
    frames = list(decode_frames(DecodeRequest(str(rotated_clip), [Band(0, 280, 240, 40)])))
    assert len(frames) == 25
    assert frames[0].bands[0].shape == (40, 240)


def test_consumer_stopping_early_ends_ffmpeg(zh_clip):
    report = DecodeReport()
    frames = decode_frames(DecodeRequest(str(zh_clip), [BOTTOM]), report)
    for i, _ in enumerate(frames):
        if i == 2:
            break
    frames.close()
    assert report.frames == 3
    assert report.returncode is not None


def test_truncated_file_decodes_part_way(truncated_faststart):
    report = DecodeReport()
    got = pts_of(DecodeRequest(str(truncated_faststart), [BOTTOM]), report)
    assert 0.8 < got[-1] < 5.0
    # real frame times, in order (a decoder may skip frames whose data is incomplete)
    assert all(abs(t * FPS - round(t * FPS)) < 1e-4 for t in got)
    assert got == sorted(set(got)) and got[:20] == pytest.approx(grid(0, 19), abs=1e-6)
    assert report.errors, "FFmpeg's complaint about the truncated file should be kept"
