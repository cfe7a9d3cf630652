"""End to end: the real CLI on every bundled sample, scored against its ground truth."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pysrt
import pytest

from subextract.scoring import TimedText, load_cues, score
from subextract.stages.language import detect_language
from subextract.stages.probe import ffmpeg_exe

SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"
VIDEOS = sorted(p for p in SAMPLES.glob("*.mp4") if p.with_suffix(".srt").exists())
FRAME = 0.04  # the samples are 25 fps


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "subextract", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=600)


@pytest.fixture(scope="module")
def outputs(sample_runs) -> dict[str, Path]:
    """Each sample extracted once (default preset, every line kept), shared by the checks below."""
    return {stem: run.srt for stem, run in sample_runs.items()}


def test_there_are_samples():
    assert {v.stem for v in VIDEOS} >= {"zh_bottom", "en_two_line", "bilingual_top"}


@pytest.mark.parametrize("video", VIDEOS, ids=lambda p: p.stem)
def test_sample_scores(video: Path, outputs):
    """The issue's floor was CER 0.05, F1 0.9, 80 ms; the samples now hold the benchmark targets."""
    result = score(load_cues(video.with_suffix(".srt")), load_cues(outputs[video.stem]), frame_duration=FRAME)
    assert result.cer <= 0.01, result
    assert result.e2e_f1 >= 0.97 and result.exact_share >= 0.9, result
    assert result.start_error_ms_median <= 40 and result.end_error_ms_median <= 40, result
    assert result.start_error_ms_p90 <= 80 and result.end_error_ms_p90 <= 80, result


@pytest.mark.parametrize("video", VIDEOS, ids=lambda p: p.stem)
def test_about_one_ocr_call_per_cue(video: Path, sample_runs):
    summary = sample_runs[video.stem].stderr.strip().splitlines()[-1]  # "N cues → … | M OCR calls (…), …"
    calls = int(re.search(r"\| (\d+) OCR calls", summary).group(1))
    reference_cues = len(load_cues(video.with_suffix(".srt")))
    assert calls <= 1.3 * reference_cues, summary  # the benchmark target


@pytest.mark.parametrize("video", VIDEOS, ids=lambda p: p.stem)
def test_output_reads_back(video: Path, outputs):
    path = outputs[video.stem]
    items = pysrt.open(str(path), error_handling=pysrt.ERROR_RAISE)
    assert len(items) > 0
    assert all(item.end > item.start for item in items)
    assert all(a.start <= b.start for a, b in zip(items, items[1:]))
    converted = subprocess.run([ffmpeg_exe(), "-v", "error", "-i", str(path), "-f", "srt", "-"],
                               capture_output=True, text=True, check=False)
    assert converted.returncode == 0 and not converted.stderr, converted.stderr
    assert converted.stdout.count("-->") == len(items)


def _lines_in(cues: list[TimedText], language: str) -> list[TimedText]:
    kept = []
    for cue in cues:
        lines = [line for line in cue.text.split("\n") if detect_language(line) == language]
        if lines:
            kept.append(TimedText(cue.start, cue.end, "\n".join(lines)))
    return kept


@pytest.mark.parametrize("language", ["zh", "en"])
def test_lang_keeps_one_language_of_bilingual_subtitles(tmp_path, language):
    video = SAMPLES / "bilingual_top.mp4"
    result = run_cli(str(video), "--lang", language, "-o", str(tmp_path / "out.srt"), "--quiet")
    assert result.returncode == 0, result.stderr
    hypothesis = load_cues(tmp_path / "out.srt")
    reference = _lines_in(load_cues(video.with_suffix(".srt")), language)
    assert all(detect_language(line) == language for cue in hypothesis for line in cue.text.split("\n"))
    assert score(reference, hypothesis).cer <= 0.05


def test_default_output_name_and_json(tmp_path):
    video = tmp_path / "clip.mp4"
    video.symlink_to(SAMPLES / "zh_bottom.mp4")
    result = run_cli(str(video), "--lang", "zh", "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "clip.zh.json").read_text())
    assert document["cues"] and all(0 < cue["confidence"] <= 1 for cue in document["cues"])
    assert all(cue["languages"] == ["zh"] for cue in document["cues"])
    summary = result.stderr.strip().splitlines()[-1]
    assert "cues" in summary and "OCR calls" in summary and "real time" in summary


def test_sampled_mode_keeps_exact_boundaries(tmp_path):
    video = SAMPLES / "en_two_line.mp4"
    out = tmp_path / "sampled.srt"
    result = run_cli(str(video), "--fps", "5", "-o", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    result = score(load_cues(video.with_suffix(".srt")), load_cues(out), frame_duration=FRAME)
    assert result.e2e_f1 >= 0.9
    assert result.within_one_frame_share >= 0.9, result
