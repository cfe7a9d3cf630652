"""batch --shard I/N: the shards of a batch cover every video exactly once, keep each video in
its shard as the library grows, run side by side into one output folder (a manifest and a lock
each) and write what one unsharded batch writes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from subextract.batch import Job, Shard

SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"
END = "4"
TREE = {"zh_bottom.mp4": "zh_bottom", "course/en_two_line.mp4": "en_two_line",
        "course/bilingual_top.mp4": "bilingual_top", "zh_plain.mp4": "zh_plain"}


def jobs(count: int) -> list[Job]:
    return [Job(f"library/course-{i // 10}/lesson {i:03d}.mp4", Path(f"out/{i}.srt")) for i in range(count)]


@pytest.mark.parametrize("count", [1, 2, 3, 7, 16])
def test_shards_cover_every_video_exactly_once(count):
    every = jobs(200)
    shards = [Shard(index, count).select(every) for index in range(count)]
    chosen = [job for shard in shards for job in shard]
    assert sorted(job.video for job in chosen) == sorted(job.video for job in every)
    assert len(chosen) == len(set(job.video for job in chosen))
    assert all(shard == [job for job in every if job in shard] for shard in shards)  # order kept
    if count > 1:  # not all in one: a digest spreads 200 names over the shards
        assert max(len(shard) for shard in shards) < 200 * 2 / count


def test_a_growing_library_keeps_every_video_in_its_shard():
    before = {job.video: index for index in range(4) for job in Shard(index, 4).select(jobs(100))}
    after = {job.video: index for index in range(4) for job in Shard(index, 4).select(jobs(130))}
    assert all(after[video] == index for video, index in before.items())


@pytest.mark.parametrize("text", ["2/2", "-1/3", "1", "a/b", "0/0", "1/2/3"])
def test_a_shard_outside_its_count_is_refused(text):
    with pytest.raises(ValueError):
        Shard.parse(text)
    result = subprocess.run([sys.executable, "-m", "subextract", "batch", "x.mp4", "--out", "o", "--shard", text],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "--shard" in result.stderr and "Traceback" not in result.stderr


def batch(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.Popen([sys.executable, "-m", "subextract", "batch", *args, "--end", END, "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_shards_side_by_side_write_what_one_batch_writes(tmp_path):
    tree = tmp_path / "videos"
    for name, sample in TREE.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLES / f"{sample}.mp4", tree / name)
    whole, sharded = tmp_path / "whole", tmp_path / "sharded"
    runs = [batch(str(tree), "--out", str(whole))]
    # Both shards at once, into one folder: each has its own lock and manifest.
    runs += [batch(str(tree), "--out", str(sharded), "--shard", f"{index}/2") for index in range(2)]
    for run in runs:
        _, stderr = run.communicate(timeout=600)
        assert run.returncode == 0, stderr
    written = {path.relative_to(whole).as_posix(): path.read_bytes() for path in whole.rglob("*.srt")}
    assert len(written) == len(TREE)
    assert {path.relative_to(sharded).as_posix(): path.read_bytes() for path in sharded.rglob("*.srt")} == written
    assert not (sharded / "manifest.jsonl").exists()
    manifests = [[json.loads(line)["video"] for line in (sharded / f"manifest.shard-{i}-of-2.jsonl").read_text()
                  .splitlines()] for i in range(2)]
    assert sorted(manifests[0] + manifests[1]) == sorted(str(tree / name) for name in TREE)
    assert all(Shard(i, 2).takes(video) for i, videos in enumerate(manifests) for video in videos)
    # A shard run again skips what it did: its manifest, not the other's, says so.
    recorded = (sharded / "manifest.shard-1-of-2.jsonl").read_text()
    again = batch(str(tree), "--out", str(sharded), "--shard", "1/2")
    again.communicate(timeout=600)
    assert again.returncode == 0
    assert (sharded / "manifest.shard-1-of-2.jsonl").read_text() == recorded
