"""subextract batch --ray on a local Ray cluster (2 CPUs, a small object store, started once for
the module): both levels write the plain batch's outputs byte for byte and resume as it does; a
worker that dies has its video run again without losing or duplicating anything; a run
interrupted part-way (SIGINT to a driver joined to the cluster) is finished by the next one."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from subextract.cli import main  # noqa: E402
from subextract.cli.batch import build_parser, _ray_arguments  # noqa: E402
from subextract.scale import ray_runner as runner_module  # noqa: E402

SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"
END = "8"  # seconds of each video: two or three cues each, short enough for the test budget
TREE = {"zh_bottom.mp4": "zh_bottom", "course/en_two_line.mp4": "en_two_line",
        "course/bilingual_top.mp4": "bilingual_top"}
ORIGINAL_FACTORY = runner_module.ray_runner
OUTPUTS = ["zh_bottom.srt", "course/en_two_line.srt", "course/bilingual_top.srt"]


@pytest.fixture(scope="module", autouse=True)
def cluster():
    ray.init(num_cpus=2, object_store_memory=256 * 1024 * 1024, include_dashboard=False,
             logging_level="WARNING")
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("videos")
    for name, sample in TREE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLES / f"{sample}.mp4", root / name)
    return root


def batch(tree: Path, out: Path, *options: str) -> int:
    return main(["batch", str(tree), "--out", str(out), "--end", END, "-q", *options])


@pytest.fixture(scope="module")
def plain(tree, tmp_path_factory) -> dict[str, bytes]:
    """The plain batch's outputs, the reference every Ray run must match byte for byte."""
    out = tmp_path_factory.mktemp("plain")
    assert batch(tree, out, "--jobs", "2") == 0
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def outputs(out: Path) -> dict[str, bytes]:
    written = {path.relative_to(out).as_posix(): path.read_bytes() for path in out.rglob("*.srt")}
    return written


def manifest(out: Path) -> dict[str, dict]:
    records = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    return {record["video"]: record for record in records}


@pytest.mark.parametrize("level", [[], ["--ray-split"]], ids=["per-video", "split"])
def test_both_levels_write_what_plain_batch_writes_and_resume(tree, tmp_path, plain, level):
    out = tmp_path / "out"
    assert batch(tree, out, "--ray", *level) == 0
    assert outputs(out) == plain
    records = manifest(out)
    assert sorted(records) == sorted(str(tree / name) for name in TREE)
    assert {record["status"] for record in records.values()} == {"done"}
    assert all(record["cues"] >= 2 for record in records.values())
    # A re-run finds everything done: nothing runs, nothing is rewritten.
    before = {path: path.stat().st_mtime_ns for path in out.rglob("*.srt")}
    assert batch(tree, out, "--ray", *level) == 0
    assert manifest(out) == records
    assert {path: path.stat().st_mtime_ns for path in out.rglob("*.srt")} == before


class DyingOnce(runner_module.VideoWorker):
    """Each video's first run ends in the death of its worker process, after its outputs are
    written: the retry must take them for its own (no NAME.new.srt) and record the video once."""

    markers = ""

    def run(self, task):
        record = super().run(task)
        marker = Path(self.markers) / Path(task.job.video).name
        if not marker.exists():
            marker.touch()
            os._exit(1)
        return record


def test_a_worker_that_dies_has_its_video_run_again(tree, tmp_path, plain, monkeypatch):
    markers = tmp_path / "markers"
    markers.mkdir()
    DyingOnce.markers = str(markers)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests/
    monkeypatch.setattr(runner_module, "ray_runner", lambda options: ORIGINAL_FACTORY(options, DyingOnce))
    out = tmp_path / "out"
    assert batch(tree, out, "--ray") == 0
    assert sorted(path.name for path in markers.iterdir()) == sorted(Path(name).name for name in TREE)  # each died
    assert outputs(out) == plain  # nothing lost, nothing written beside as if edited
    records = manifest(out)
    assert {record["status"] for record in records.values()} == {"done"} and len(records) == len(TREE)
    assert not any(record.get("edited") for record in records.values())


def test_an_interrupted_run_is_finished_by_the_next(tree, tmp_path, plain, cluster):
    out = tmp_path / "out"
    # A driver of its own joined to the module's cluster, stopped with SIGINT once a video is done.
    command = [sys.executable, "-m", "subextract", "batch", str(tree), "--out", str(out), "--end", END, "-q",
               "--ray", cluster, "--ray-workers", "1"]
    # SIGINT as a terminal gives it: a shell without job control starts background commands (a CI
    # script's `&`) with SIGINT ignored, and a Python started so ignores it too (it ran to the end).
    driver = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    log = out / "manifest.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and driver.poll() is None:
        if log.exists() and '"status": "done"' in log.read_text():
            break
        time.sleep(0.1)
    at_interruption = log.read_text() if log.exists() else ""
    driver.send_signal(signal.SIGINT)
    _, stderr = driver.communicate(timeout=120)
    assert driver.returncode == 130, f"{stderr}\nmanifest when interrupted:\n{at_interruption}"
    first = {video: record for video, record in manifest(out).items() if record["status"] == "done"}
    assert 1 <= len(first) < len(TREE), "the run was stopped part-way"
    assert batch(tree, out, "--ray") == 0
    assert outputs(out) == plain
    records = manifest(out)
    assert {record["status"] for record in records.values()} == {"done"}
    assert all(records[video] == record for video, record in first.items())  # done before: not redone


@pytest.mark.parametrize("argv, inputs, address", [
    (["--ray", "videos/", "--out", "o"], ["videos/"], "local"),
    (["videos/", "--ray", "--out", "o"], ["videos/"], "local"),
    (["videos/", "--ray", "ray://head:10001", "--out", "o"], ["videos/"], "ray://head:10001"),
    (["--ray", "10.0.0.5:6379", "videos/", "--out", "o"], ["videos/"], "10.0.0.5:6379"),
])
def test_ray_takes_an_address_only_when_it_is_one(argv, inputs, address):
    args = build_parser().parse_args(argv)
    _ray_arguments(build_parser(), args)
    assert (args.inputs, args.ray) == (inputs, address)


@pytest.mark.parametrize("argv, refusal", [
    (["v.mp4", "--out", "o", "--ray-split"], "--ray-split needs --ray"),
    (["v.mp4", "--out", "o", "--ray", "--jobs", "2"], "--jobs is not available with --ray"),
    (["v.mp4", "--out", "o", "--ray", "--feed", "-"], "--feed is not available with --ray"),
])
def test_options_ray_cannot_honour_are_refused(argv, refusal, capsys):
    with pytest.raises(SystemExit) as exit_status:
        main(["batch", *argv])
    assert exit_status.value.code == 2
    assert refusal in capsys.readouterr().err
