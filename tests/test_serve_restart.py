"""No accepted job is lost when the service stops: ``kill -9`` mid-job, and SIGTERM."""

from __future__ import annotations

import sqlite3
import time

from serve_fixtures import ZH_SAMPLE, Server, upload, wait_for, zh_cli_srt  # noqa: F401


def _wait_running(client, job_id: str, timeout: float = 60) -> dict:
    """The job once it is decoding frames (past probing and the band search)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] == "running" and job["stage"] == "reading":
            return job
        assert job["status"] in ("queued", "running"), job
        time.sleep(0.02)
    raise AssertionError(f"job {job_id} never started reading")


def test_kill_9_mid_job_then_restart_finishes_every_accepted_job(tmp_path, zh_cli_srt):
    data = tmp_path / "data"
    first = Server(data, "--workers", "1").start()
    try:
        with first.client() as client:
            running = upload(client, ZH_SAMPLE).json()["id"]
            queued = upload(client, ZH_SAMPLE).json()["id"]
            _wait_running(client, running)
            assert client.get(f"/v1/jobs/{queued}").json()["status"] == "queued"
    finally:
        first.kill()
    with sqlite3.connect(data / "jobs.sqlite3") as db:
        states = dict(db.execute("SELECT id, status FROM jobs").fetchall())
    assert states == {running: "running", queued: "queued"}  # what the killed process left

    second = Server(data, "--workers", "1").start()
    try:
        with second.client() as client:
            for job_id in (running, queued):
                job = wait_for(client, job_id)
                assert job["status"] == "done", (job, second.log_text())
                assert client.get(f"/v1/jobs/{job_id}/subtitles.srt").text == zh_cli_srt
            assert client.get(f"/v1/jobs/{running}").json()["attempts"] == 2
            assert client.get(f"/v1/jobs/{queued}").json()["attempts"] == 1
        assert second.logged("1 interrupted jobs queued again")
    finally:
        second.stop()


def test_sigterm_requeues_a_running_job_and_the_next_start_runs_it(tmp_path, zh_cli_srt):
    data = tmp_path / "data"
    first = Server(data, "--workers", "1", "--shutdown-grace", "0").start()
    with first.client() as client:
        job_id = upload(client, ZH_SAMPLE).json()["id"]
        _wait_running(client, job_id)
    began = time.monotonic()
    # uvicorn shuts down cleanly, then re-raises the signal so the parent sees SIGTERM (-15).
    assert first.stop() in (0, -15), first.log_text()
    assert first.logged("Application shutdown complete")
    assert time.monotonic() - began < 20
    assert first.logged(f"job {job_id} re-queued at shutdown")
    second = Server(data, "--workers", "1").start()
    try:
        with second.client() as client:
            assert wait_for(client, job_id)["status"] == "done"
            assert client.get(f"/v1/jobs/{job_id}/subtitles.srt").text == zh_cli_srt
    finally:
        second.stop()


def test_sigterm_lets_a_running_job_finish_within_the_grace(tmp_path, zh_cli_srt):
    data = tmp_path / "data"
    server = Server(data, "--workers", "1", "--shutdown-grace", "120").start()
    with server.client() as client:
        job_id = upload(client, ZH_SAMPLE).json()["id"]
        _wait_running(client, job_id)
    assert server.stop() in (0, -15), server.log_text()
    with sqlite3.connect(data / "jobs.sqlite3") as db:
        assert db.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone() == ("done",)
    restarted = Server(data).start()
    try:
        with restarted.client() as client:
            assert client.get(f"/v1/jobs/{job_id}/subtitles.srt").text == zh_cli_srt  # results stay downloadable
    finally:
        restarted.stop()
