"""Service jobs beyond uploads: a URL job through the network policy's opt-in, and the per-job timeout."""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading

import pysrt

import pytest

from json_endpoint import JsonHandler
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


class _NumberingTranslator(JsonHandler):
    """An OpenAI-compatible endpoint that answers a batch prompt's numbered lines, in English,
    with what their number is (the service's wiring is under test, not a model)."""

    def do_GET(self) -> None:
        self.send_json({"object": "list", "data": [{"id": "numbering", "object": "model"}]})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        prompt = request["messages"][-1]["content"]
        numbers = re.findall(r"^(\d+): ", prompt.rsplit("\n\n", 1)[-1], re.MULTILINE)
        reply = "\n".join(f"{n}: Subtitle line number {n} in English" for n in numbers) or "Subtitle line in English"
        message = {"role": "assistant", "content": reply}
        self.send_json({"id": "x", "object": "chat.completion", "model": "numbering",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": message}]})


@pytest.fixture()
def translator_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NumberingTranslator)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_translate_option_adds_a_track_with_the_same_cues(tmp_path, translator_url, zh_cli_srt):
    server = Server(tmp_path / "data", "--translator-server", translator_url).start()
    try:
        with server.client() as client:
            job_id = upload(client, ZH_SAMPLE, translate="en").json()["id"]
            job = wait_for(client, job_id)
            assert job["status"] == "done" and job["tracks"] == ["", "en"], job
            assert client.get(f"/v1/jobs/{job_id}/subtitles.srt").text == zh_cli_srt
            translated = client.get(f"/v1/jobs/{job_id}/subtitles.srt", params={"track": "en"})
            assert 'filename="zh_bottom.en.srt"' in translated.headers["content-disposition"]
            original, english = pysrt.from_string(zh_cli_srt), pysrt.from_string(translated.text)
            assert [(c.start, c.end) for c in english] == [(c.start, c.end) for c in original]
            assert all(cue.text.startswith("Subtitle line number") for cue in english)
            assert client.get(f"/v1/jobs/{job_id}/subtitles.srt", params={"track": "fr"}).status_code == 404
    finally:
        server.stop()


def test_url_job_runs_where_the_server_allows_the_address(tmp_path, video_host, zh_cli_srt):
    server = Server(tmp_path / "data", "--allow-private-network", "127.0.0.1").start()
    try:
        with server.client() as client:
            response = client.post("/v1/jobs", json={"url": f"{video_host}/zh_bottom.mp4", "watchlist": "雄"})
            assert response.status_code == 202, response.text
            job = wait_for(client, response.json()["id"])
            assert job["status"] == "done" and job["source"] == "url", job
            assert client.get(f"/v1/jobs/{job['id']}/subtitles.srt").text == zh_cli_srt
            # The OCR pictures are kept as the stream is read: a URL job can be proofread too.
            assert client.get(f"/v1/jobs/{job['id']}/cues/0/crop.png").content.startswith(b"\x89PNG")
            # The opt-in names one address: another private one is still refused.
            refused = client.post("/v1/jobs", json={"url": "http://10.0.0.1/video.mp4"})
            assert refused.status_code == 400 and "private" in refused.json()["error"]
    finally:
        server.stop()


def test_a_job_past_its_timeout_fails_and_json_logs_carry_the_request(tmp_path):
    server = Server(tmp_path / "data", "--job-timeout", "0.3", "--log-format", "json").start()
    try:
        with server.client() as client:
            slow = upload(client, ZH_SAMPLE).json()["id"]
            job = wait_for(client, slow)
            assert job["status"] == "failed" and job["error"] == "timed out after 0.3 s", job
            assert client.get(f"/v1/jobs/{slow}/subtitles.srt", headers={"X-Request-Id": "json-1"}).status_code == 409
            assert client.get("/ready").json()["running"] == 0
    finally:
        server.stop()
    records = [json.loads(line) for line in server.log_text(1_000_000).splitlines() if line.startswith("{")]
    request = next(r for r in records if r.get("id") == "json-1")
    assert request["status"] == 409 and request["method"] == "GET" and request["client"].startswith("127.0.0.1:")
    assert request["path"] == f"/v1/jobs/{slow}/subtitles.srt" and request["duration_ms"] >= 0
    assert any(r["message"] == f"job {slow} failed: timed out after 0.3 s" for r in records)
