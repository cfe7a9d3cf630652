"""Faults of the environment: a full disk behind stdout or the feed, a read-only output folder, a
manifest whose last write was cut. One line on stderr, a non-zero exit, nothing lost, no traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from subextract.batch import Manifest
from test_batch import _privilege_drop, manifest_of, run_batch

SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"
VIDEO = str(SAMPLES / "zh_bottom.mp4")
QUICK = ["--end", "6", "--region", "bottom"]
needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")


def subextract(*args: str, stdout=subprocess.PIPE, prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*(prefix or []), sys.executable, "-m", "subextract", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=300)


def one_error_line(result: subprocess.CompletedProcess, *fragments: str) -> None:
    lines = result.stderr.splitlines()
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr
    assert lines[0].startswith("subextract: error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@needs_dev_full
@pytest.mark.parametrize("fmt", ["srt", "jsonl"])
def test_stdout_on_a_full_disk(fmt):
    with open("/dev/full", "w") as full:
        result = subextract(VIDEO, "-o", "-", "--format", fmt, "-q", *QUICK, stdout=full)
    assert result.returncode == 2
    one_error_line(result, "stdout: cannot write", "No space left on device")


@needs_dev_full
def test_output_file_on_a_full_disk():
    result = subextract(VIDEO, "-o", "/dev/full", "-q", *QUICK)
    assert result.returncode == 2
    one_error_line(result, "/dev/full: cannot write")


@needs_dev_full
def test_batch_feed_on_a_full_disk_stops_cleanly(tmp_path):
    out = tmp_path / "out"
    result = run_batch(VIDEO, "--out", str(out), "--region", "bottom", "--feed", "/dev/full", "-q")
    assert result.returncode == 2
    one_error_line(result, "--feed /dev/full: cannot write")
    assert manifest_of(out)["zh_bottom.mp4"]["status"] == "interrupted"  # redone by the next run


def test_batch_into_a_read_only_folder(tmp_path):
    prefix = _privilege_drop()
    if prefix is None:
        pytest.skip("running as root without setpriv: a read-only folder is writable")
    base = Path(tempfile.mkdtemp(prefix="subextract-ro-"))  # reachable for the unprivileged user
    try:
        os.chmod(base, 0o755)
        out = base / "locked"
        out.mkdir(mode=0o555)
        result = subextract("batch", VIDEO, "--out", str(out), *QUICK, prefix=prefix)
        assert result.returncode == 2
        one_error_line(result, str(out), "not writable")
        assert os.listdir(out) == []
    finally:
        shutil.rmtree(base)


@pytest.mark.parametrize("tail", ['{"video": "b.mp4", "status": "d\u00e9'.encode()[:-1],  # cut inside "é"
                                  b"\x00\x9f\xff\xfe binary \x80\n"],
                         ids=["cut-in-a-multibyte-character", "binary"])
def test_a_damaged_manifest_line_is_skipped(tmp_path, tail):
    path = tmp_path / "manifest.jsonl"
    path.write_bytes('{"video": "a.mp4", "status": "done", "title": "caf\u00e9"}\n'.encode() + tail)
    manifest = Manifest(path)
    assert manifest.load() == [2]
    assert {v: r["status"] for v, r in manifest.records.items()} == {"a.mp4": "done"}


def test_a_batch_resumes_after_a_write_was_cut(tmp_path):
    videos, out = tmp_path / "videos", tmp_path / "out"
    videos.mkdir()
    shutil.copy(VIDEO, videos / "v.mp4")
    assert run_batch(str(videos), "--out", str(out), "--region", "bottom").returncode == 0
    manifest = out / "manifest.jsonl"
    first = manifest.read_bytes()
    manifest.write_bytes(first + '{"video": "x", "title": "\u4e2d'.encode()[:-2])  # killed mid-character
    again = run_batch(str(videos), "--out", str(out), "--region", "bottom")
    assert again.returncode == 0 and "Traceback" not in again.stderr
    assert "line 2 not readable" in again.stderr and "1 skipped" in again.stderr
    assert [json.loads(line)["video"] for line in manifest.read_text(encoding="utf-8").splitlines()] == [
        str(videos / "v.mp4")]
