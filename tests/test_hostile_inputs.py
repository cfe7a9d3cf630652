"""The second hostile review's inputs to the command line and the library (issue 24): a regex
that backtracks forever, times that are not times, files that never end, names and text that
would forge lines. Each ends in one line and exit 2, or in a correct result."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from subextract.errors import SubextractError
from subextract.times import MAX_SECONDS, cue_times

REPO = Path(__file__).resolve().parent.parent
EN_SAMPLE = REPO / "sample_videos" / "en_two_line.mp4"


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "subextract", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def one_error_line(run: subprocess.CompletedProcess, *words: str) -> None:
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr[-2000:]
    for word in words:
        assert word in run.stderr, run.stderr


def test_a_catastrophic_watchlist_does_not_hang_the_cli(tmp_path):
    watchlist = tmp_path / "watch.txt"
    watchlist.write_text("re:(.|.|.)*QQQ\n")
    run = cli(EN_SAMPLE, "--end", "4", "--format", "jsonl", "-o", "-", "--watchlist", watchlist, "-q", timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count('"flags": []') == len(run.stdout.splitlines()) > 0


@pytest.mark.parametrize("value", ["1e308:0", "inf", "nan", "1e999", "999999999"])
def test_a_time_that_is_no_time_is_exit_2(value):
    run = cli(EN_SAMPLE, "--start", value, "-o", "-")  # argparse's usage line, then the error
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert "--start" in run.stderr.splitlines()[-1] and "not a time" in run.stderr.splitlines()[-1]


def test_the_shared_cue_time_check():
    assert cue_times(1, 2.5) == (1.0, 2.5)
    for start, end in ((0, math.inf), (math.nan, 1), (1e308, 1e309), (2, 1), (0, MAX_SECONDS + 1), (-1, 1),
                       (True, 2), ("1", 2), (None, 1)):
        with pytest.raises(SubextractError):
            cue_times(start, end)


def test_a_config_with_infinity_is_exit_2(tmp_path):
    config = tmp_path / "odd.yaml"
    config.write_text("align:\n  merge_gap: .inf\n")
    one_error_line(cli(EN_SAMPLE, "--config", config, "-o", "-"), "align.merge_gap", "finite")


@pytest.mark.parametrize("command", [
    ["--watchlist", "/dev/zero"], ["--config", "/dev/zero"],
], ids=["watchlist", "config"])
def test_files_that_never_end_are_refused(command):
    one_error_line(cli(EN_SAMPLE, *command, "-o", "-", timeout=60), "/dev/zero")


def test_score_of_a_file_that_never_ends_is_refused(tmp_path):
    reference = tmp_path / "ref.srt"
    reference.write_text("1\n00:00:01,000 --> 00:00:02,000\nhello\n")
    one_error_line(cli("score", "/dev/zero", reference, timeout=60), "/dev/zero", "larger than")


def test_a_file_of_a_thousand_streams_is_refused_in_bounded_memory(tmp_path):
    """1.2 MB, one tiny H.264 stream copied into 1000 tracks: FFmpeg took 837 MB and 5 s just to
    probe it (each stream gets a decoder); -max_streams stops it at the demuxer."""
    from conftest import run_ffmpeg

    one, bomb = tmp_path / "one.mp4", tmp_path / "streams.mp4"
    run_ffmpeg("-f", "lavfi", "-i", "color=c=gray:size=64x64:rate=5:duration=1", "-c:v", "libx264", "-preset",
               "ultrafast", str(one))
    run_ffmpeg("-i", str(one), *["-map", "0:v"] * 1000, "-c", "copy", str(bomb))
    child = ("import resource, sys\nfrom subextract.errors import SubextractError\n"
             "from subextract.stages.probe import probe\ntry:\n    probe(sys.argv[1])\n"
             "except SubextractError as exc:\n    print(exc)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    run = subprocess.run([sys.executable, "-c", child, str(bomb)], capture_output=True, text=True, timeout=120)
    message, peak_kib = run.stdout.splitlines()
    assert "more than 64 streams" in message, run.stdout + run.stderr
    assert int(peak_kib) < 150 * 1024, peak_kib  # FFmpeg's peak RSS, KiB
    one_error_line(cli(bomb, "-o", "-", timeout=60), "more than 64 streams")


# -- the review's low items --------------------------------------------------------------------

def test_a_cue_that_looks_like_a_timing_line_stays_one_cue_and_controls_are_dropped():
    import html

    import pysrt
    import webvtt

    from subextract.schema import Cue
    from subextract.stages.write import render_ass, render_srt, render_vtt

    cues = [Cue(1.0, 2.0, ("00:00:05,000 --> 00:00:06,000", "", "bell\x07 nul\x00 esc\x1b[31m red"),
                ("en", "en", "en"), 0.9),
            Cue(3.0, 4.0, ("\u202eevil\u202c and \u200fRLM kept",), ("en",), 0.9)]
    srt = render_srt(cues)
    read = pysrt.from_string(srt)
    assert len(read) == 2 and read[0].text == "00:00:05,000 -> 00:00:06,000\nbell nul esc[31m red"
    assert read[1].text == "evil and \u200fRLM kept"
    vtt = render_vtt(cues)
    assert [html.unescape(caption.text) for caption in webvtt.from_string(vtt)] == \
        [read[0].text.replace("->", "-->"), read[1].text]
    for text in (srt, vtt, render_ass(cues)):
        assert not any(char in text for char in "\x00\x07\x1b\u202e\u202c")


def test_the_output_format_follows_the_name_or_a_mismatch_is_refused(tmp_path):
    out = tmp_path / "out.vtt"
    assert cli(EN_SAMPLE, "--end", "4", "-o", out, "-q").returncode == 0
    assert out.read_text(encoding="utf-8").startswith("WEBVTT")
    one_error_line(cli(EN_SAMPLE, "--end", "4", "-o", tmp_path / "x.vtt", "--format", "srt"), "name says vtt")


def test_a_json_that_is_not_ours_is_never_replaced(tmp_path):
    package = tmp_path / "package.json"
    package.write_text('{"name": "my-app", "version": "1.0.0"}\n')
    one_error_line(cli(EN_SAMPLE, "--end", "2", "-o", package, "--force"), "not a subtitle file")
    assert package.read_text() == '{"name": "my-app", "version": "1.0.0"}\n'


def test_save_crops_keeps_a_listing_unless_forced(tmp_path):
    crops = tmp_path / "crops"
    crops.mkdir()
    (crops / "crops.json").write_text('{"crops": [], "proofread": true}\n')
    one_error_line(cli(EN_SAMPLE, "--end", "2", "-o", "-", "--save-crops", crops), "crops.json", "--force")
    assert "proofread" in (crops / "crops.json").read_text()


def test_a_long_name_or_a_protocol_like_name_is_read_like_any_other(tmp_path):
    import shutil

    long_name = tmp_path / ("x" * 243 + ".mp4")  # 247 characters: the temporary file's name passed 255 bytes
    shutil.copy(EN_SAMPLE, long_name)
    run = cli(long_name, "--end", "4", "-q")
    assert run.returncode == 0, run.stderr
    assert long_name.with_suffix(".srt").read_text(encoding="utf-8").count(" --> ") >= 1
    shutil.copy(EN_SAMPLE, tmp_path / "concat:x.mp4")
    named = subprocess.run([sys.executable, "-m", "subextract", "concat:x.mp4", "--end", "4", "-o", "-", "-q"],
                           capture_output=True, text=True, timeout=180, cwd=tmp_path,
                           env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert named.returncode == 0 and " --> " in named.stdout, named.stderr
    one_error_line(cli(EN_SAMPLE, "-o", tmp_path / ("y" * 260 + ".srt")), "longer than 255")
    one_error_line(cli(tmp_path / ("y" * 260 + ".mp4"), "-o", "-"), "File name too long")


def test_the_probe_reads_every_digit_of_a_size_and_refuses_a_giant_picture():
    from subextract.stages.probe import parse_probe_output

    info = parse_probe_output("x.mkv", "  Stream #0:0: Video: h264 (High), yuv420p, 640x100000, 25 fps, 25 tbr\n")
    assert (info.width, info.height) == (640, 100000)
    from conftest import run_ffmpeg  # noqa: E402 - a real 16000x16000 MJPEG still

    still = Path(REPO / "sample_videos").parent / ".pytest-still.mkv"
    try:
        run_ffmpeg("-f", "lavfi", "-i", "color=c=gray:size=16000x16000:duration=0.04:rate=25", "-frames:v", "1",
                   "-c:v", "mjpeg", "-q:v", "31", str(still))
        one_error_line(cli(still, "-o", "-"), "16000x16000", "larger than")
    finally:
        still.unlink(missing_ok=True)


def test_a_very_low_frame_rate_is_not_called_truncated(tmp_path):
    """Three frames at 0.001 fps: the last starts at 2000 s and shows until the end at 3000 s."""
    from conftest import run_ffmpeg

    slow = tmp_path / "slow.mp4"
    run_ffmpeg("-f", "lavfi", "-i", "color=c=gray:size=320x240:rate=0.001:duration=3000", "-c:v", "libx264",
               "-preset", "ultrafast", str(slow))
    run = cli(slow, "-o", "-", "--format", "json", "-q")
    assert run.returncode == 0 and json.loads(run.stdout)["complete"] is True, run.stderr
