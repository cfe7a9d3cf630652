"""Decoding in colour for a chroma mask plane: the crops come as Y, U, V (one FFmpeg pass), the
mask plane is the chosen chroma plane (inverted for "-u"/"-v"), and the OCR picture converts to
BGR with the colour it had."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from conftest import run_ffmpeg
from subextract.schema import Band
from subextract.stages.sample import DecodeRequest, Look, decode_frames, decode_looks, yuv_to_bgr

ORANGE_BGR = (26, 140, 255)


@pytest.fixture(scope="module")
def orange_clip(tmp_path_factory):
    """Grey picture (no chroma) with an orange bar across its lower half, 1 s at 25 fps."""
    path = tmp_path_factory.mktemp("planes") / "orange.mp4"
    run_ffmpeg("-f", "lavfi", "-i", "color=c=0x808080:s=320x180:r=25:d=1",
               "-vf", "drawbox=x=40:y=100:w=240:h=40:color=0xFF8C1A:t=fill",
               "-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "10", str(path))
    return path


@pytest.mark.parametrize("plane, brighter", [("v", True), ("-v", False), ("u", False), ("-u", True)])
def test_mask_plane_shows_the_colour(orange_clip, plane, brighter):
    band = Band(0, 80, 320, 80)
    frame = next(iter(decode_frames(DecodeRequest(str(orange_clip), [band], end=0.1, mask_plane=plane))))
    (picture,), (mask,) = frame.bands, frame.mask_bands
    assert picture.shape == (80, 320, 3) and mask.shape == (80, 320)
    inside, outside = float(mask[30:50, 80:240].mean()), float(mask[:10].mean())
    assert abs(outside - 128) < 6  # grey has no chroma
    assert (inside > outside + 40) if brighter else (inside < outside - 40)


def test_colour_picture_converts_to_bgr(orange_clip):
    band = Band(0, 80, 320, 80)
    frame = next(iter(decode_frames(DecodeRequest(str(orange_clip), [band], end=0.1, mask_plane="-u"))))
    bgr = yuv_to_bgr(frame.bands[0])
    bar, grey = bgr[30:50, 80:240].reshape(-1, 3).mean(axis=0), bgr[:10].reshape(-1, 3).mean(axis=0)
    assert np.abs(bar - ORANGE_BGR).max() < 40, bar
    assert np.abs(grey - 128).max() < 25, grey


def test_luma_decoding_is_unchanged_without_a_mask_plane(orange_clip):
    frame = next(iter(decode_frames(DecodeRequest(str(orange_clip), [Band(0, 80, 320, 80)], end=0.1))))
    assert frame.bands[0].shape == (80, 320) and frame.mask_bands == ()


def test_several_looks_from_one_decode_are_the_separate_decodes_pixels(zh_clip):
    """The pre-scans' looks (the detector's size, the analysis size grey and in colour) come from
    one decode, pixel for pixel what a decode of each look alone gives: FFmpeg's grey is full
    range, so no look can be derived from another's Y plane."""
    whole = Band(0, 0, 640, 360, "frame")
    request = DecodeRequest(str(zh_clip), [whole], keyframes_only=True)
    looks = [Look(0.375), Look(0.5), Look(0.5, colour=True)]
    together = list(decode_looks(request, looks))
    alone = [list(decode_frames(replace(request, scale=look.scale, mask_plane="u" if look.colour else None)))
             for look in looks]
    assert together and all(len(frames) == len(together) for frames in alone)
    assert [pts for pts, _ in together] == [frame.pts for frame in alone[0]]
    assert [picture.shape for picture in together[0][1]] == [(134, 240), (180, 320), (180, 320, 3)]
    for index, (_, pictures) in enumerate(together):
        for look, picture, frames in zip(looks, pictures, alone):
            assert np.array_equal(picture, frames[index].bands[0]), (index, look)
    grey, colour = together[0][1][1], together[0][1][2]
    assert not np.array_equal(grey, colour[..., 0])  # grey is not the raw Y plane
