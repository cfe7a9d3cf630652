"""Service jobs beyond uploads: a URL job through the network policy's opt-in, and the per-job timeout."""

from __future__ import annotations

import functools
import http.server
import threading

import pytest

from serve_fixtures import SAMPLES, ZH_SAMPLE, Server, upload, wait_for, zh_cli_srt  # noqa: F401


@pytest.fixture()
def video_host():
    """The samples over HTTP on 127.0.0.1 (a loopback address: refused unless the server opts in)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(SAMPLES))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_url_job_runs_where_the_server_allows_the_address(tmp_path, video_host, zh_cli_srt):
    server = Server(tmp_path / "data", "--allow-private-network", "127.0.0.1").start()
    try:
        with server.client() as client:
            response = client.post("/v1/jobs", json={"url": f"{video_host}/zh_bottom.mp4", "watchlist": "雄"})
            assert response.status_code == 202, response.text
            job = wait_for(client, response.json()["id"])
            assert job["status"] == "done" and job["source"] == "url", job
            assert client.get(f"/v1/jobs/{job['id']}/subtitles.srt").text == zh_cli_srt
            # A URL job keeps no copy of the stream, so it has no pictures to proofread against.
            assert client.get(f"/v1/jobs/{job['id']}/cues/0/crop.png").status_code == 404
            # The opt-in names one address: another private one is still refused.
            refused = client.post("/v1/jobs", json={"url": "http://10.0.0.1/video.mp4"})
            assert refused.status_code == 400 and "private" in refused.json()["error"]
    finally:
        server.stop()


def test_a_job_past_its_timeout_fails_and_the_next_one_runs(tmp_path):
    server = Server(tmp_path / "data", "--job-timeout", "0.3").start()
    try:
        with server.client() as client:
            slow = upload(client, ZH_SAMPLE).json()["id"]
            job = wait_for(client, slow)
            assert job["status"] == "failed" and job["error"] == "timed out after 0.3 s", job
            assert client.get(f"/v1/jobs/{slow}/subtitles.srt").status_code == 409
            assert client.get("/ready").json()["running"] == 0
    finally:
        server.stop()
