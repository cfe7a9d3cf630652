"""The second hostile review of ``subextract batch`` (issue 24): side names that were another
video's output, one bad name or manifest field that stopped every video, a linked folder skipped,
a closed stderr, a video named like the manifest, manifest paths outside DIR, a FIFO."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from test_batch import SAMPLES, batch_command, manifest_of, run_batch

CLIP = SAMPLES / "zh_bottom.mp4"


def _records(out: Path) -> dict[str, dict]:
    return {r["video"]: r for r in map(json.loads, (out / "manifest.jsonl").read_text().splitlines())}


def test_a_side_name_is_never_another_videos_output(tmp_path):
    """a.mp4 and a.new.mp4, both outputs proofread, re-run with other settings: a.mp4's new
    result went into a.new.srt, the other video's proofread file."""
    videos, out = tmp_path / "videos", tmp_path / "out"
    videos.mkdir()
    shutil.copy(CLIP, videos / "a.mp4")
    shutil.copy(CLIP, videos / "a.new.mp4")
    assert run_batch(str(videos), "--out", str(out), "--region", "bottom").returncode == 0
    for name in ("a.srt", "a.new.srt"):
        with open(out / name, "a", encoding="utf-8") as handle:
            handle.write(f"PROOFREAD {name}\n")
    proofread = {name: (out / name).read_text(encoding="utf-8") for name in ("a.srt", "a.new.srt")}
    (out / "a.new-2.srt").write_text("someone's notes\n")  # an existing file is never a side name either
    again = run_batch(str(videos), "--out", str(out), "--region", "bottom", "--config", "fast")
    assert again.returncode == 0, again.stderr
    assert {name: (out / name).read_text(encoding="utf-8") for name in proofread} == proofread
    assert (out / "a.new-2.srt").read_text() == "someone's notes\n"
    records = manifest_of(out)
    assert records["a.mp4"]["beside"] == {"a.srt": "a.new-3.srt"}
    assert records["a.new.mp4"]["beside"] == {"a.new.srt": "a.new.new.srt"}
    assert (out / "a.new-3.srt").read_text(encoding="utf-8").count(" --> ") > 0
    assert "a.srt (new result: a.new-3.srt)" in again.stderr


def test_one_bad_name_or_manifest_record_fails_alone(tmp_path):
    videos, out = tmp_path / "videos", tmp_path / "out"
    videos.mkdir()
    for name in ("one.mp4", "two.mp4", "three.mp4"):
        shutil.copy(CLIP, videos / name)
    bad = os.path.join(os.fsencode(videos), b"bad\xff\xfe.mp4")
    shutil.copy(CLIP, bad)
    out.mkdir()
    # A record of the wrong shape (digests a list) for one.mp4, left by a hand edit or a damaged disk.
    (out / "manifest.jsonl").write_text(json.dumps({"video": str(videos / "one.mp4"), "status": "done",
                                                    "digests": ["x"]}) + "\n")
    run = subprocess.run(batch_command(str(videos), "--out", str(out), "--region", "bottom", "--end", "2"),
                         capture_output=True, timeout=600)
    stderr = run.stderr.decode("utf-8", "replace")
    assert run.returncode == 1, stderr
    assert "Traceback" not in stderr and "line 1 not readable" in stderr
    records = _records(out)
    statuses = {Path(video).name: record["status"] for video, record in records.items()}
    assert statuses == {"one.mp4": "done", "two.mp4": "done", "three.mp4": "done",
                        "bad\udcff\udcfe.mp4": "failed"}, statuses
    failed = next(record for record in records.values() if record["status"] == "failed")
    assert "not UTF-8" in failed["error"]
    assert sum("failed" in line and "not UTF-8" in line for line in stderr.splitlines()) == 1


def test_linked_folders_are_followed_once_and_a_closed_stderr_stops_nothing(tmp_path):
    videos, out, elsewhere = tmp_path / "videos", tmp_path / "out", tmp_path / "elsewhere"
    (elsewhere / "deeper").mkdir(parents=True)
    videos.mkdir()
    shutil.copy(CLIP, videos / "one.mp4")
    shutil.copy(CLIP, elsewhere / "two.mp4")
    (videos / "linked").symlink_to(elsewhere)
    (elsewhere / "deeper" / "loop").symlink_to(videos)  # a link back up the tree ends, not loops
    command = " ".join(map(repr, batch_command(str(videos), "--out", str(out), "--region", "bottom", "--end", "2")))
    run = subprocess.run(f"{command} 2>&1 | head -1", shell=True, capture_output=True, text=True, timeout=600)
    assert len(run.stdout.splitlines()) == 1
    assert {Path(video).name: record["status"] for video, record in _records(out).items()} == \
        {"one.mp4": "done", "two.mp4": "done"}
    assert (out / "linked" / "two.srt").is_file()


def test_a_video_named_like_the_manifest_keeps_its_extension(tmp_path):
    videos, out = tmp_path / "videos", tmp_path / "out"
    videos.mkdir()
    shutil.copy(CLIP, videos / "manifest.mp4")
    run = run_batch(str(videos), "--out", str(out), "--format", "jsonl", "--region", "bottom")
    assert run.returncode == 0, run.stderr
    assert (out / "manifest.mp4.jsonl").read_text().count('"start"') > 0
    assert _records(out)[str(videos / "manifest.mp4")]["status"] == "done"


def test_manifest_paths_outside_the_output_folder_are_not_read(tmp_path):
    videos, out = tmp_path / "videos", tmp_path / "out"
    videos.mkdir()
    shutil.copy(CLIP, videos / "v.mp4")
    assert run_batch(str(videos), "--out", str(out), "--region", "bottom").returncode == 0
    secret = tmp_path / "secret.txt"
    secret.write_text("private")
    record = manifest_of(out)["v.mp4"]
    record["digests"] = {**record["digests"], "../secret.txt": "0" * 64}
    (out / "manifest.jsonl").write_text(json.dumps(record) + "\n")
    os.chmod(secret, 0)  # were it read (as root: through a child without the override), the run would fail
    run = run_batch(str(videos), "--out", str(out), "--region", "bottom")
    assert run.returncode == 0 and "line 1 not readable" in run.stderr, run.stderr
    assert "../secret.txt" not in json.dumps(manifest_of(out)["v.mp4"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX named pipes")
def test_a_fifo_fails_alone_with_hash(tmp_path):
    videos, out = tmp_path / "videos", tmp_path / "out"
    videos.mkdir()
    shutil.copy(CLIP, videos / "v.mp4")
    os.mkfifo(videos / "pipe.mp4")  # --hash read it forever
    run = run_batch(str(videos), "--out", str(out), "--region", "bottom", "--hash")
    assert run.returncode == 1, run.stderr
    records = manifest_of(out)
    assert records["v.mp4"]["status"] == "done"
    assert records["pipe.mp4"]["status"] == "failed" and "not a regular file" in records["pipe.mp4"]["error"]
