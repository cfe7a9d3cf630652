"""The conventions users expect of a Python tool: ``python -m``, ``--version``, sub-commands in
``--help``, logging under ``-v``, a small Python API, ``--save-crops``, and nothing POSIX-only on
the import path of extract and batch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cv2
import pysrt

import subextract

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_videos" / "zh_bottom.mp4"


def cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "subextract", *args], capture_output=True, text=True, timeout=300,
                          cwd=kwargs.pop("cwd", REPO), **kwargs)


def test_version_and_help_list_the_sub_commands():
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"subextract {subextract.__version__}"
    helped = cli("--help")
    assert helped.returncode == 0
    for command in ("score", "batch", "translate"):
        assert f"subextract {command}" in helped.stdout
    assert "--save-crops" in helped.stdout and "--verbose" in helped.stdout and "ass" in helped.stdout


def test_the_library_prints_nothing_and_verbose_explains_the_run(tmp_path):
    quiet = cli(str(SAMPLE), "--end", "3", "-o", str(tmp_path / "a.srt"), "-q")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == ""
    verbose = cli(str(SAMPLE), "--end", "12", "-o", str(tmp_path / "b.srt"), "-q", "-v")
    assert verbose.returncode == 0
    assert "subtitle bands: bottom" in verbose.stderr and "subtitle appearance" in verbose.stderr
    assert "Traceback" not in verbose.stderr


def test_save_crops_writes_one_png_per_segment_listed_with_its_reading(tmp_path):
    crops = tmp_path / "crops"
    run = cli(str(SAMPLE), "--end", "12", "-o", str(tmp_path / "c.srt"), "-q", "--save-crops", str(crops))
    assert run.returncode == 0, run.stderr
    listing = json.loads((crops / "crops.json").read_text(encoding="utf-8"))["crops"]
    assert [entry["text"] for entry in listing][:2] == ["知其雄，守其雌，为天下溪", "残灯孤枕梦，轻浪五更风"]
    first = listing[0]
    assert first["file"] == "00-00-01.880_00-00-05.720_band0.png" and first["start"] == 1.88
    picture = cv2.imread(str(crops / first["file"]))
    assert picture is not None and picture.shape[1] == 1280
    assert sorted(p.name for p in crops.glob("*.png")) == sorted({entry["file"] for entry in listing})


def test_python_api_with_a_preset_name_and_save(tmp_path):
    result = subextract.extract(str(SAMPLE), "fast", lang="zh", end=6)
    assert result.cues and result.cues[0].text == "知其雄，守其雌，为天下溪"
    result.save(str(tmp_path / "api.srt"))
    result.save(str(tmp_path / "api.txt"), format="vtt")
    assert pysrt.open(str(tmp_path / "api.srt"))[0].text == result.cues[0].text
    assert (tmp_path / "api.txt").read_text(encoding="utf-8").startswith("WEBVTT")


def test_extract_and_batch_run_without_fcntl(tmp_path):
    """Windows has no fcntl: blocked here, the batch runner must still import, lock and run."""
    code = ("import sys; sys.modules['fcntl'] = None\n"
            "from subextract.cli import main\n"
            f"sys.exit(main(['batch', {str(SAMPLE)!r}, '--out', {str(tmp_path / 'out')!r}, '--end', '3', '-q']))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out" / "zh_bottom.srt").exists()
    assert json.loads((tmp_path / "out" / "manifest.jsonl").read_text().splitlines()[0])["status"] == "done"
