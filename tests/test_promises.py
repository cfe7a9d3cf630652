"""End to end, every README promise that had no test: the Python API, the accurate preset,
``--region top`` and a pixel box, logo blackout inside the band, ``HH:MM:SS`` times, layered
``--config`` files, the JSON ``bands``, cue times on variable-frame-rate video, ``subextract score``
through the main command, and the bundled FFmpeg when the system has none.

All of it runs the real pipeline (FFmpeg, the embedded OCR engine) on the samples or on clips
burned here with libass, and compares with times known to the frame."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EN_CUES, FPS, GRADIENT, WIDTH, _ass_time, _filter_path, _font_dir, run_ffmpeg, write_ass
from test_e2e_samples import FRAME, SAMPLES, run_cli
from test_exact_timing import EXACT_MS, boundary_errors

from subextract.scoring import TimedText, load_cues, normalize_text, score

ZH = SAMPLES / "zh_bottom.mp4"
BILINGUAL_TOP = SAMPLES / "bilingual_top.mp4"
MIDDLE = "0,300,1280,150"  # a box of zh_bottom with no text in it


def reference(video: Path, start: float = 0.0, end: float = float("inf")) -> list[TimedText]:
    """The ground truth of ``video`` between ``start`` and ``end``: a cue the range cuts ends (starts) there."""
    return [TimedText(max(c.start, start), min(c.end, end), c.text) for c in load_cues(video.with_suffix(".srt"))
            if c.end > start and c.start < end]


def assert_exact(expected: list[TimedText], got: list[TimedText]) -> None:
    """The same cues, texts equal after normalisation, every boundary on its frame."""
    errors = boundary_errors(expected, got)
    assert all(abs(s) <= EXACT_MS and abs(e) <= EXACT_MS for _, s, e in errors), errors
    assert [normalize_text(c.text) for c in got] == [normalize_text(c.text) for c in expected]


def json_run(tmp_path: Path, video: Path, *args: str) -> dict:
    out = tmp_path / "out.json"
    result = run_cli(str(video), *args, "--format", "json", "-o", str(out), "--force", "--quiet")
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def timed(document: dict) -> list[TimedText]:
    return [TimedText(c["start"], c["end"], c["text"]) for c in document["cues"]]


# --------------------------------------------------------------------------------------------
# Python API
# --------------------------------------------------------------------------------------------

def test_python_api_extract(tmp_path, monkeypatch):
    from subextract import ExtractionResult, extract

    monkeypatch.chdir(tmp_path)
    result = extract(str(ZH), lang="zh", end=12)
    assert isinstance(result, ExtractionResult) and result.complete and result.error is None
    assert_exact(reference(ZH, end=12), [TimedText(c.start, c.end, c.text) for c in result.cues])
    assert all(0 < cue.confidence <= 1 and cue.languages == ("zh",) for cue in result.cues)
    assert result.stats.ocr_calls == len(result.cues) and result.bands[0].label == "bottom"
    assert list(tmp_path.iterdir()) == []  # the API writes nothing


# --------------------------------------------------------------------------------------------
# Presets, regions, times, configs
# --------------------------------------------------------------------------------------------

def test_accurate_preset_is_exact_too(tmp_path):
    document = json_run(tmp_path, ZH, "--config", "accurate", "--end", "12")
    assert_exact(reference(ZH, end=12), timed(document))


def test_region_top_reads_top_subtitles_and_bottom_finds_none(tmp_path):
    top = json_run(tmp_path, BILINGUAL_TOP, "--region", "top", "--end", "12")
    assert [b["label"] for b in top["bands"]] == ["top"] and top["bands"][0]["y"] == 0
    assert score(reference(BILINGUAL_TOP, end=12), timed(top), frame_duration=FRAME).e2e_f1 == 1.0
    assert_exact(reference(BILINGUAL_TOP, end=12), timed(top))
    bottom = json_run(tmp_path, BILINGUAL_TOP, "--region", "bottom", "--end", "12")
    assert bottom["bands"][0]["label"] == "bottom" and bottom["cues"] == []


def test_region_box_in_pixels(tmp_path):
    inside = json_run(tmp_path, ZH, "--region", "0,520,1280,200", "--end", "12")
    assert [(b["x"], b["y"], b["width"], b["height"]) for b in inside["bands"]] == [(0, 520, 1280, 200)]
    assert_exact(reference(ZH, end=12), timed(inside))
    # the middle of the picture: no subtitle (nor zh_bottom's channel logo, top left) is there
    outside = json_run(tmp_path, ZH, "--region", MIDDLE, "--end", "12")
    assert outside["bands"][0]["y"] == 300 and outside["cues"] == []


def test_hh_mm_ss_times(tmp_path):
    document = json_run(tmp_path, ZH, "--start", "00:00:06", "--end", "0:12.0")
    assert_exact(reference(ZH, start=6, end=12), timed(document))
    assert len(document["cues"]) == 2


def test_config_files_layer_and_the_later_one_wins(tmp_path):
    bottom_long = tmp_path / "bottom_long.yaml"
    bottom_long.write_text("region:\n  mode: bottom\nalign:\n  min_duration: 2.0\n", encoding="utf-8")
    middle = tmp_path / "middle.yaml"
    middle.write_text(f"region:\n  mode: '{MIDDLE}'\n", encoding="utf-8")
    read_middle = json_run(tmp_path, ZH, "--config", str(bottom_long), "--config", str(middle), "--end", "12")
    assert read_middle["bands"][0]["y"] == 300 and read_middle["cues"] == []
    read_bottom = json_run(tmp_path, ZH, "--config", str(middle), "--config", str(bottom_long), "--end", "12")
    kept = [c for c in reference(ZH, end=12) if c.end - c.start >= 2.0]
    assert len(kept) < len(reference(ZH, end=12))  # min_duration 2 s really drops a cue here
    assert_exact(kept, timed(read_bottom))


def test_a_preset_and_a_file_layer(tmp_path):
    longer = tmp_path / "longer.yaml"
    longer.write_text("align:\n  min_duration: 2.0\n", encoding="utf-8")
    document = json_run(tmp_path, ZH, "--config", "fast", "--config", str(longer), "--end", "12")
    assert [c.text for c in timed(document)] == [c.text for c in reference(ZH, end=12) if c.end - c.start >= 2.0]


# --------------------------------------------------------------------------------------------
# Logo inside the band; variable frame rate
# --------------------------------------------------------------------------------------------

LOGO = "TV5 NEWS"


@pytest.fixture(scope="module")
def logo_clip(tmp_path_factory, latin_font) -> Path:
    """EN_CUES centred at the bottom, and a channel logo at the bottom right for the whole clip."""
    folder = tmp_path_factory.mktemp("logo")
    ass = write_ass(folder / "logo.ass", [*EN_CUES, (0.0, 6.0, rf"{{\an3\pos({WIDTH - 12},{348})}}{LOGO}")],
                    latin_font.family, size=28)
    out = folder / "logo.mp4"
    run_ffmpeg("-f", "lavfi", "-i", f"{GRADIENT}:size={WIDTH}x360:rate={FPS}", "-t", "6",
               "-vf", f"ass=filename={_filter_path(ass)}:fontsdir={_filter_path(_font_dir(tmp_path_factory, latin_font))}",
               "-c:v", "libx264", "-preset", "veryfast", "-crf", "28", "-g", str(FPS), "-pix_fmt", "yuv420p", str(out))
    return out


def test_a_logo_inside_the_band_is_blacked_out(tmp_path, logo_clip):
    document = json_run(tmp_path, logo_clip)
    band = document["bands"][0]
    assert band["label"] == "bottom" and band["y"] + band["height"] >= 340  # the logo's rows are in the band
    expected = [TimedText(s, e, t) for s, e, t in EN_CUES]
    assert_exact(expected, timed(document))
    assert not any("tv" in normalize_text(c["text"]) or "news" in normalize_text(c["text"]) for c in document["cues"])


def _vfr_pts_ms(n: int) -> int:
    """25 fps for two seconds, then 10 fps: frame n's time in ms."""
    return 40 * n if n < 50 else 2000 + 100 * (n - 50)


# Cues by CFR frame index [first, after_last): libass sees the 25 fps times, the file the VFR ones.
VFR_FRAMES = [(10, 30, "Hello from the test"), (40, 70, "Across the rate change"), (90, 130, "Ten frames a second")]


@pytest.fixture(scope="module")
def vfr_subtitled_clip(tmp_path_factory, latin_font) -> Path:
    folder = tmp_path_factory.mktemp("vfr_subs")
    ass = write_ass(folder / "vfr.ass", [(a / FPS, b / FPS, t) for a, b, t in VFR_FRAMES], latin_font.family, size=28)
    out = folder / "vfr.mkv"
    fonts = _font_dir(tmp_path_factory, latin_font)
    run_ffmpeg("-f", "lavfi", "-i", f"{GRADIENT}:size={WIDTH}x360:rate={FPS}",
               "-vf", f"trim=end_frame=150,ass=filename={_filter_path(ass)}:fontsdir={_filter_path(fonts)},"
                      r"settb=1/1000,setpts=if(lt(N\,50)\,N*40\,2000+(N-50)*100)",
               "-fps_mode", "vfr", "-enc_time_base:v", "1:1000",
               "-c:v", "libx264", "-preset", "veryfast", "-crf", "28", "-g", str(FPS), "-pix_fmt", "yuv420p", str(out))
    return out


def test_ass_times_are_on_frames():
    assert _ass_time(VFR_FRAMES[0][0] / FPS) == "0:00:00.40"


def test_vfr_cue_times_are_the_frames_own_times(tmp_path, vfr_subtitled_clip):
    document = json_run(tmp_path, vfr_subtitled_clip)
    expected = [TimedText(_vfr_pts_ms(a) / 1000, _vfr_pts_ms(b) / 1000, t) for a, b, t in VFR_FRAMES]
    # index/fps would put the last cue at 3.6-5.2 s; its frames are shown at 6.0-10.0 s
    assert expected[2].start == 6.0 and expected[2].end == 10.0
    assert_exact(expected, timed(document))


# --------------------------------------------------------------------------------------------
# subextract score; the bundled FFmpeg
# --------------------------------------------------------------------------------------------

def test_score_through_the_main_command(tmp_path):
    srt = ZH.with_suffix(".srt")
    result = run_cli("score", str(srt), str(srt), "--json", "--fps", "25")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["e2e_f1"] == 1.0 and data["within_one_frame_share"] == 1.0 and data["ref_cues"] == 5
    human = run_cli("score", str(srt), str(srt))
    assert human.returncode == 0 and human.stdout.startswith("cues     ref 5  hyp 5  matched 5")
    missing = run_cli("score", str(srt), str(tmp_path / "none.srt"))
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [f"subextract score: error: {tmp_path / 'none.srt'}: No such file or directory"]


def test_bundled_ffmpeg_when_the_system_has_none(tmp_path):
    """No ``ffmpeg`` on PATH and no SUBEXTRACT_FFMPEG: the imageio-ffmpeg binary runs the whole job."""
    import imageio_ffmpeg

    bare = tmp_path / "bin"
    bare.mkdir()
    env = {"PATH": str(bare), "SUBEXTRACT_FFMPEG": ""}
    assert shutil.which("ffmpeg", path=str(bare)) is None
    chosen = subprocess.run([sys.executable, "-c", "from subextract.stages.probe import ffmpeg_exe; print(ffmpeg_exe())"],
                            capture_output=True, text=True, env={**os.environ, **env}, check=True).stdout.strip()
    assert chosen == imageio_ffmpeg.get_ffmpeg_exe()
    out = tmp_path / "fallback.srt"
    result = run_cli(str(ZH), "-o", str(out), "--quiet", "--end", "12", env=env)
    assert result.returncode == 0, result.stderr
    assert_exact(reference(ZH, end=12), load_cues(out))
