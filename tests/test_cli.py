"""The command line, end to end: real FFmpeg, real RapidOCR, real files.

A user's mistake gets exit code 2 and exactly one ``subextract: error:`` line; a video that breaks
part-way keeps the cues found before the damage, warns, and exits 3.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pysrt
import pytest

from conftest import EN_CUES, FRAME, ZH_CUES
from subextract.cli import main

REPO = Path(__file__).resolve().parents[1]
FAST = ["--region", "bottom", "-q"]  # skip the region pre-scan where the test is about something else


def run_cli(*argv: str) -> tuple[int, str, str]:
    """main() in this process, as the console script calls it: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse: --help, usage errors
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def cue_tuples(srt_text: str) -> list[tuple[float, float, str]]:
    return [(i.start.ordinal / 1000, i.end.ordinal / 1000, i.text) for i in pysrt.from_string(srt_text)]


def assert_cues(found, expected, tolerance: float = FRAME + 1e-3) -> None:
    assert [c[2] for c in found] == [c[2] for c in expected]
    for (start, end, _), (want_start, want_end, _) in zip(found, expected):
        assert abs(start - want_start) <= tolerance, (start, want_start)
        assert abs(end - want_end) <= tolerance, (end, want_end)


def assert_one_error_line(code: int, out: str, err: str, *fragments: str) -> None:
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("subextract: error: ")
    for fragment in fragments:
        assert fragment in lines[0]


# --------------------------------------------------------------------------------------------
# End to end (default settings: automatic region, every frame)
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def zh_run(zh_clip, tmp_path_factory):
    out = tmp_path_factory.mktemp("zh_run") / "zh.srt"
    code, stdout, stderr = run_cli(zh_clip, "-o", out)
    return code, stdout, stderr, out


def test_end_to_end_chinese(zh_run):
    code, stdout, stderr, out = zh_run
    assert code == 0, stderr
    assert stdout == ""
    assert_cues(cue_tuples(out.read_text(encoding="utf-8")), ZH_CUES)


def test_end_to_end_summary_line(zh_run):
    _, _, stderr, out = zh_run
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"subextract: 2 cues → {out} | ")
    assert "Traceback" not in stderr


def test_end_to_end_english(en_clip, tmp_path):
    out = tmp_path / "en.srt"
    code, _, stderr = run_cli(en_clip, "-o", out, *FAST)
    assert code == 0, stderr
    assert stderr == ""
    assert_cues(cue_tuples(out.read_text(encoding="utf-8")), EN_CUES)


def test_auto_region_on_busy_background(zh_mandelbrot_clip, tmp_path):
    """The pre-scan detector boxes the fractal as huge 'text'; that must neither become the band nor be
    blacked out as a logo over the subtitles (it did: 0 cues, exit 0)."""
    out = tmp_path / "m.srt"
    code, _, stderr = run_cli(zh_mandelbrot_clip, "-o", out, "-q")
    assert code == 0, stderr
    assert_cues(cue_tuples(out.read_text(encoding="utf-8")), ZH_CUES)


def test_lang_filter_keeps_english_lines(en_clip):
    code, stdout, stderr = run_cli(en_clip, "-o", "-", "--lang", "en", "--end", "2", *FAST)
    assert code == 0, stderr
    assert_cues(cue_tuples(stdout), EN_CUES[:1])


def test_stdout_output(zh_clip):
    code, stdout, stderr = run_cli(zh_clip, "-o", "-", "--end", "2", *FAST)
    assert code == 0, stderr
    assert stderr == ""
    assert_cues(cue_tuples(stdout), ZH_CUES[:1])
    assert stdout.startswith("1\n00:00:00,400 --> 00:00:01,200\n")


def test_existing_output_needs_force(zh_clip, tmp_path):
    video = tmp_path / "clip.mp4"
    shutil.copy(zh_clip, video)
    existing = tmp_path / "clip.zh.srt"  # the default name for --lang zh
    existing.write_text("old\n")
    code, out, err = run_cli(video, "--lang", "zh", "--end", "2", *FAST)
    assert_one_error_line(code, out, err, "clip.zh.srt", "already exists", "--force")
    assert existing.read_text() == "old\n"

    code, out, err = run_cli(video, "--lang", "zh", "--end", "2", "--force", *FAST)
    assert code == 0, err
    assert_cues(cue_tuples(existing.read_text(encoding="utf-8")), ZH_CUES[:1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4", "clip.zh.srt"]


def test_truncated_video_keeps_cues_before_the_damage(truncated_faststart, tmp_path):
    out = tmp_path / "t.srt"
    code, stdout, stderr = run_cli(truncated_faststart, "-o", out, *FAST)
    assert code == 3
    assert stdout == ""
    warnings = [line for line in stderr.splitlines() if line.startswith("subextract: warning: ")]
    assert len(warnings) == 1 and "truncated or corrupt" in warnings[0]
    assert "Traceback" not in stderr
    assert not any(line.startswith("subextract: error:") for line in stderr.splitlines())
    assert_cues(cue_tuples(out.read_text(encoding="utf-8")), ZH_CUES[:1])


# --------------------------------------------------------------------------------------------
# Inputs a user gets wrong: one line, exit code 2, nothing written
# --------------------------------------------------------------------------------------------

@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("make, fragment", [
    (lambda d, f: d / "missing.mp4", "no such file"),
    (lambda d, f: d, "is a directory"),
    (lambda d, f: f["zero"], "file is empty"),
    (lambda d, f: f["text"], "not a video file"),
    (lambda d, f: f["audio"], "no video stream"),
    (lambda d, f: f["cover"], "no video stream"),
    (lambda d, f: f["truncated"], "not a video file"),
], ids=["missing", "directory", "zero-byte", "text-file", "audio-only", "cover-art-only", "truncated-no-index"])
def test_bad_input(make, fragment, workdir, zero_byte, text_as_mp4, audio_only, audio_with_cover,
                   truncated_moov_last):
    files = {"zero": zero_byte, "text": text_as_mp4, "audio": audio_only, "cover": audio_with_cover,
             "truncated": truncated_moov_last}
    source = make(workdir, files)
    before = set(os.listdir(source.parent))
    code, out, err = run_cli(source, "-o", workdir / "out.srt")
    assert_one_error_line(code, out, err, str(source), fragment)
    assert not (workdir / "out.srt").exists()
    assert set(os.listdir(source.parent)) == before


def test_bad_input_default_output_name_is_not_created(audio_only, tmp_path):
    source = tmp_path / "song.m4a"
    shutil.copy(audio_only, source)
    code, out, err = run_cli(source)
    assert_one_error_line(code, out, err, "no video stream")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["song.m4a"]


@pytest.mark.parametrize("args, fragments", [
    (["--start", "7"], ["--start 7 s is past the end of the video", "6.00 s"]),
    (["--start", "3", "--end", "2"], ["invalid time range"]),
    (["--region", "0,300,700,60"], ["--region 0,300,700,60", "inside the 640x360 picture"]),
    (["--region", "middle"], ["expected auto, bottom, top or X,Y,W,H"]),
    (["--config", "turbo"], ["config turbo: not found"]),
])
def test_bad_options(zh_clip, tmp_path, args, fragments):
    code, out, err = run_cli(zh_clip, "-o", tmp_path / "x.srt", *args)
    assert_one_error_line(code, out, err, *fragments)
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_path(zh_clip):
    code, out, err = run_cli(zh_clip, "-o", "/nonexistent/dir/x.srt")
    assert_one_error_line(code, out, err, "/nonexistent/dir/x.srt", "does not exist")


def test_output_is_a_directory(zh_clip, tmp_path):
    code, out, err = run_cli(zh_clip, "-o", tmp_path)
    assert_one_error_line(code, out, err, "is a directory")


def test_help():
    code, out, err = run_cli("--help")
    assert code == 0 and err == ""
    for option in ("--lang", "--output", "--format", "--start", "--end", "--region", "--fps", "--config",
                   "--force", "--quiet", "subextract score"):
        assert option in out


def test_console_entry_point_in_a_real_process(tmp_path):
    """The real interpreter: exit status 2, one line, no traceback."""
    missing = tmp_path / "missing.mp4"
    result = subprocess.run([sys.executable, "-m", "subextract", str(missing)], capture_output=True,
                            text=True, cwd=REPO, check=False, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"subextract: error: {missing}: no such file\n"
