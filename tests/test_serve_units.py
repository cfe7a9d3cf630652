"""The service without a server: the job store (queue order, restarts, cancellation races) and
what a job's options may change."""

from __future__ import annotations

from pathlib import Path

import pytest

from subextract.serve.cue_edits import CueEdit
from subextract.serve.store import ORIGINAL, Store, StoredCue
from subextract.schema import Cue


def _store(tmp_path) -> Store:
    return Store(tmp_path / "jobs.sqlite3")


def test_queue_is_first_in_first_out(tmp_path):
    store = _store(tmp_path)
    for name in ("a", "b", "c"):
        store.add(name, "upload", f"/x/{name}", name, {})
    assert [store.claim().id for _ in range(3)] == ["a", "b", "c"]
    assert store.claim() is None
    assert store.counts()["running"] == 3


def test_a_job_that_keeps_stopping_the_server_is_given_up_after_max_attempts(tmp_path):
    store = _store(tmp_path)
    store.add("crash", "upload", "/x/crash", "crash.mp4", {})
    for attempt in (1, 2):
        assert store.claim().attempts == attempt
        assert store.requeue_interrupted(max_attempts=3) == (1, 0)  # the process died under it
    assert store.claim().attempts == 3
    assert store.requeue_interrupted(max_attempts=3) == (0, 1)
    job = store.get("crash")
    assert job.status == "failed" and job.error == "interrupted 3 times (the server stopped while it ran)"


def test_an_interrupted_runs_cues_are_dropped_when_it_runs_again(tmp_path):
    store = _store(tmp_path)
    store.add("j", "upload", "/x/j", "j.mp4", {})
    store.claim()
    assert store.add_cue("j", StoredCue(0, Cue(1.0, 2.0, ("hello",), ("en",), 0.9)))
    store.requeue_interrupted(max_attempts=3)
    store.claim()
    assert store.cues("j") == []


def test_cancel_wins_over_a_finishing_worker(tmp_path):
    store = _store(tmp_path)
    store.add("j", "upload", "/x/j", "j.mp4", {})
    store.claim()
    assert store.cancel("j") == "running"
    cue = StoredCue(0, Cue(1.0, 2.0, ("late",), ("en",), 0.9))
    assert not store.add_cue("j", cue)  # a cue streamed after the cancel is not kept
    assert not store.set_progress("j", 0.5, "reading")  # the worker learns it was cancelled
    assert not store.finish("j", "done", metadata={}, tracks={ORIGINAL: [cue]})
    assert store.get("j").status == "cancelled" and store.cues("j") == []
    assert store.cancel("nope") is None


def test_edits_keep_times_exact(tmp_path):
    store = _store(tmp_path)
    store.add("j", "upload", "/x/j", "j.mp4", {})
    store.claim()
    original = Cue(1.0 / 3, 2.04, ("a", "b"), ("en", "en"), 0.75, band=1)
    store.finish("j", "done", metadata={}, tracks={ORIGINAL: [StoredCue(0, original, ["a"])]})
    (stored,) = store.cues("j")
    assert stored.cue == original and stored.flags == ["a"] and not stored.edited
    store.edit_cues("j", ORIGINAL, [CueEdit(0, start=0.5, end=2.0, text="c")])
    (edited,) = store.cues("j")
    assert edited.edited and edited.cue.lines == ("c",) and edited.cue.start == 0.5


def test_a_jobs_presets_cannot_change_the_servers_engines(tmp_path):
    from subextract.serve.service import ServiceConfig

    config = ServiceConfig(data=tmp_path, configs=("fast",))
    settings = config.job_settings(("paddleocr-vl", "hunyuan-mt"), "bottom")
    assert settings.ocr == config.base_settings().ocr  # no vLLM OCR model loaded for a client
    assert settings.translate.engine == "" and not config.can_translate()  # nor a translator
    assert settings.region.mode == "bottom" and settings.sample.reference_frames_only  # the rest is the job's


def test_a_taken_port_is_one_line_and_exit_2(tmp_path):
    import socket
    import subprocess
    import sys

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        run = subprocess.run([sys.executable, "-m", "subextract", "serve", "--port", str(port), "--data",
                              str(tmp_path / "data")], capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 2
    assert run.stderr == f"subextract: error: cannot listen on 127.0.0.1:{port} (Address already in use)\n"


def test_a_failure_told_to_the_client_names_no_path_of_the_server(tmp_path):
    """A failed picture write named the job's crops folder under --data in full."""
    from subextract.serve.service import ServiceConfig
    from subextract.serve.worker import _private

    config = ServiceConfig(data=tmp_path / "data")
    store = _store(tmp_path)
    job = store.add("j1", "upload", str(config.job_folder("j1") / "input"), "clip.mp4", {})
    message = _private(f"--save-crops {config.job_folder('j1') / 'crops'}: cannot write 00-01_band0.png; "
                       f"{job.input}: truncated", job, config)
    assert str(tmp_path) not in message and "clip.mp4: truncated" in message


@pytest.mark.parametrize("overrides, in_children", [({}, True), ({"engine": "openai", "server": "http://127.0.0.1:9/v1"}, True),
                                                     ({"engine": "vllm", "model": "/models/x"}, False),
                                                     ({"engine": "vllm", "model": "/models/x", "replicas": 2}, False)])
def test_jobs_run_in_child_processes_unless_a_model_is_loaded_in_the_service(tmp_path, overrides, in_children):
    from subextract.serve.service import ServiceConfig
    from subextract.serve.worker import jobs_in_children

    assert jobs_in_children(ServiceConfig(data=tmp_path, ocr_overrides=overrides)) is in_children


def test_jobs_run_in_child_processes_that_end_with_the_service(tmp_path):
    """The job's work (and its FFmpeg) is a child process's; the service leaves none behind."""
    import multiprocessing
    import time

    from starlette.testclient import TestClient

    from subextract.serve.app import create_app
    from subextract.serve.service import ServiceConfig

    video = Path(__file__).resolve().parent.parent / "sample_videos" / "zh_bottom.mp4"
    with TestClient(create_app(ServiceConfig(data=tmp_path / "data", workers=2, configs=("fast",))),
                    base_url="http://127.0.0.1") as client:
        assert client.app.state.service.pool.in_children
        deadline = time.monotonic() + 120
        while client.get("/ready").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        children = {child.pid for child in multiprocessing.active_children()}
        assert len(children) == 2  # one per worker, its engine loaded before /ready
        with video.open("rb") as handle:
            job_id = client.post("/v1/jobs", files={"file": ("zh.mp4", handle, "video/mp4")}).json()["id"]
        deadline = time.monotonic() + 120
        while (job := client.get(f"/v1/jobs/{job_id}").json())["status"] in ("queued", "running") \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert job["status"] == "done", job
        assert len(client.get(f"/v1/jobs/{job_id}/cues").text.splitlines()) == 5  # JSON lines, one a cue
        assert {child.pid for child in multiprocessing.active_children()} == children  # the same two, reused
    assert not children & {child.pid for child in multiprocessing.active_children()}
