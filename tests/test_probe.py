"""probe: reading ``ffmpeg -i`` output, and rejecting inputs that are not videos with one clear line."""

from __future__ import annotations

import pytest

from subextract.errors import SubextractError
from subextract.schema import VideoInfo
from subextract.stages.probe import parse_probe_output, probe

# Real ``ffmpeg -hide_banner -i FILE`` stderr (FFmpeg 5.1 and 7+ wording).
NORMAL = """\
Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'clip.mp4':
  Metadata:
    major_brand     : isom
    minor_version   : 512
    compatible_brands: isomiso2avc1mp41
    encoder         : Lavf59.27.100
  Duration: 00:01:02.50, start: 0.000000, bitrate: 86 kb/s
  Stream #0:0[0x1](und): Video: h264 (High) (avc1 / 0x31637661), yuv420p(tv, bt709, progressive), 1280x720 [SAR 1:1 DAR 16:9], 83 kb/s, 29.97 fps, 29.97 tbr, 30k tbn (default)
    Metadata:
      handler_name    : VideoHandler
      vendor_id       : [0][0][0][0]
      encoder         : Lavc59.37.100 libx264
  Stream #0:1[0x2](und): Audio: aac (LC) (mp4a / 0x6134706D), 48000 Hz, stereo, fltp, 128 kb/s (default)
    Metadata:
      handler_name    : SoundHandler
At least one output file must be specified
"""

ROTATED = """\
Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'phone.mp4':
  Metadata:
    major_brand     : isom
    creation_time   : 2024-05-01T10:00:00.000000Z
  Duration: 01:02:03.04, start: 0.000000, bitrate: 297 kb/s
  Stream #0:0[0x1](und): Video: h264 (High) (avc1 / 0x31637661), yuv420p(progressive), 1920x1080 [SAR 1:1 DAR 16:9], 287 kb/s, 30 fps, 30 tbr, 90k tbn (default)
    Metadata:
      handler_name    : VideoHandler
      vendor_id       : [0][0][0][0]
    Side data:
      displaymatrix: rotation of -90.00 degrees
At least one output file must be specified
"""

ROTATED_FFMPEG7 = ROTATED.replace("displaymatrix: rotation of -90.00", "Display Matrix: rotation of 90.00")

AUDIO_ONLY = """\
Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'a.m4a':
  Metadata:
    major_brand     : M4A
    minor_version   : 512
  Duration: 00:00:01.00, start: 0.000000, bitrate: 10 kb/s
  Stream #0:0[0x1](und): Audio: aac (LC) (mp4a / 0x6134706D), 44100 Hz, stereo, fltp, 2 kb/s (default)
    Metadata:
      handler_name    : SoundHandler
At least one output file must be specified
"""

COVER_ART_ONLY = """\
[mjpeg @ 0x555da2a24d00] EOI missing, emulating
Input #0, mp3, from 'song.mp3':
  Metadata:
    encoder         : Lavf59.27.100
  Duration: 00:03:41.04, start: 0.025056, bitrate: 135 kb/s
  Stream #0:0: Audio: mp3, 44100 Hz, stereo, fltp, 128 kb/s
  Stream #0:1: Video: mjpeg (Baseline), yuvj420p(pc, bt470bg/unknown/unknown), 300x300 [SAR 1:1 DAR 1:1], 90k tbr, 90k tbn (attached pic)
    Metadata:
      comment         : Cover (front)
At least one output file must be specified
"""

NOT_A_VIDEO_FFMPEG5 = """\
[mov,mp4,m4a,3gp,3g2,mj2 @ 0x55ee8b95b880] Format mov,mp4,m4a,3gp,3g2,mj2 detected only with low score of 1, misdetection possible!
[mov,mp4,m4a,3gp,3g2,mj2 @ 0x55ee8b95b880] moov atom not found
notes.mp4: Invalid data found when processing input
"""

NOT_A_VIDEO_FFMPEG7 = """\
[in#0 @ 0x5623300a2040] Format mov,mp4,m4a,3gp,3g2,mj2 detected only with low score of 1, misdetection possible!
[in#0 @ 0x5623300a2040] moov atom not found
[in#0 @ 0x5623300a1cc0] Error opening input: Invalid data found when processing input
Error opening input file notes.mp4.
Error opening input files: Invalid data found when processing input
"""

GARBAGE = "Segmentation fault\n\x00\x01 random bytes 1920x1080 fps\n"


def test_parse_normal_stream():
    info = parse_probe_output("clip.mp4", NORMAL)
    assert info == VideoInfo(path="clip.mp4", duration=62.5, fps=29.97, width=1280, height=720, rotation=0,
                             codec="h264")
    assert info.frame_duration == pytest.approx(1 / 29.97)


@pytest.mark.parametrize("text, rotation", [(ROTATED, 270), (ROTATED_FFMPEG7, 90)])
def test_parse_rotated_stream_swaps_display_size(text, rotation):
    info = parse_probe_output("phone.mp4", text)
    assert (info.width, info.height, info.rotation) == (1080, 1920, rotation)
    assert info.duration == pytest.approx(3723.04)
    assert info.fps == 30.0


@pytest.mark.parametrize("text", [AUDIO_ONLY, COVER_ART_ONLY, GARBAGE])
def test_parse_without_a_video_stream(text):
    with pytest.raises(SubextractError, match=r"^song\.mp3: contains no video stream"):
        parse_probe_output("song.mp3", text)


@pytest.mark.parametrize("text", [NOT_A_VIDEO_FFMPEG5, NOT_A_VIDEO_FFMPEG7])
def test_parse_unreadable_input(text):
    with pytest.raises(SubextractError, match=r"^notes\.mp4: not a video file FFmpeg can read$"):
        parse_probe_output("notes.mp4", text)


def test_parse_duration_not_available():
    info = parse_probe_output("live.ts", NORMAL.replace("Duration: 00:01:02.50", "Duration: N/A"))
    assert info.duration == 0.0


# --------------------------------------------------------------------------------------------
# probe() on real files
# --------------------------------------------------------------------------------------------

def test_probe_real_clip(zh_clip):
    info = probe(str(zh_clip))
    assert (info.width, info.height, info.fps, info.codec, info.rotation) == (640, 360, 25.0, "h264", 0)
    assert info.duration == pytest.approx(6.0, abs=0.05)


def test_probe_rotated_clip(rotated_clip):
    info = probe(str(rotated_clip))
    assert info.rotation in (90, 270)
    assert (info.width, info.height) == (240, 320)


def test_probe_missing_file(tmp_path):
    path = str(tmp_path / "nope.mp4")
    with pytest.raises(SubextractError, match=r": no such file$"):
        probe(path)


def test_probe_directory(tmp_path):
    with pytest.raises(SubextractError, match=r"is a directory, not a video file$"):
        probe(str(tmp_path))


def test_probe_zero_byte(zero_byte):
    with pytest.raises(SubextractError, match=r"file is empty \(0 bytes\)$"):
        probe(str(zero_byte))


def test_probe_text_file(text_as_mp4):
    with pytest.raises(SubextractError, match=r"not a video file FFmpeg can read$"):
        probe(str(text_as_mp4))


def test_probe_audio_only(audio_only):
    with pytest.raises(SubextractError, match=r"contains no video stream"):
        probe(str(audio_only))


def test_probe_cover_art_is_not_a_video(audio_with_cover):
    with pytest.raises(SubextractError, match=r"contains no video stream"):
        probe(str(audio_with_cover))


def test_probe_truncated_without_index(truncated_moov_last):
    with pytest.raises(SubextractError, match=r"not a video file FFmpeg can read$"):
        probe(str(truncated_moov_last))


def test_probe_truncated_with_index_still_reports_full_length(truncated_faststart):
    info = probe(str(truncated_faststart))
    assert info.duration == pytest.approx(6.0, abs=0.05)


def test_error_messages_are_one_line(tmp_path, zero_byte, text_as_mp4, audio_only):
    messages = []
    for path in (str(tmp_path / "nope.mp4"), str(tmp_path), str(zero_byte), str(text_as_mp4), str(audio_only)):
        with pytest.raises(SubextractError) as caught:
            probe(path)
        messages.append(str(caught.value))
    assert all("\n" not in m and m.startswith(path) for m, path in
               zip(messages, [str(tmp_path / "nope.mp4"), str(tmp_path), str(zero_byte), str(text_as_mp4),
                              str(audio_only)]))
