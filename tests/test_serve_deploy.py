"""The service as integrators deploy it: its two secrets, retention, idempotent submission,
replicas that own their jobs, the webhook on a job's end, and the image's entry command."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from serve_fixtures import ZH_SAMPLE, Server, upload, wait_for


class _Recorder(ThreadingHTTPServer):
    """A listener on 127.0.0.1 that notes every request (path, headers, body): an OpenAI-style
    model list for GET, and ``status`` for POST."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _RecordingHandler)
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.status = 200

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _RecordingHandler(BaseHTTPRequestHandler):
    server: _Recorder

    def _note(self, body: bytes = b"") -> None:
        self.server.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._note()
        body = json.dumps({"object": "list", "data": [{"id": "ocr-model", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        self._note(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.send_response(self.server.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def recorder() -> Iterator[_Recorder]:
    listener = _Recorder()
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        listener.shutdown()
        listener.server_close()


@pytest.mark.parametrize("env, sent", [({"SUBEXTRACT_API_KEY": "service-secret"}, None),
                                       ({"SUBEXTRACT_API_KEY": "service-secret", "SUBEXTRACT_UPSTREAM_KEY": "up"}, "up"),
                                       ({"SUBEXTRACT_SERVICE_KEY": "service-secret", "SUBEXTRACT_UPSTREAM_KEY": "up"},
                                        "up")])
def test_the_services_key_is_never_sent_upstream(tmp_path, env, sent):
    """SUBEXTRACT_API_KEY alone (as before) still guards the service, and no longer goes to the OCR
    server; the upstream key is SUBEXTRACT_UPSTREAM_KEY's."""
    with recorder() as upstream:
        server = Server(tmp_path / "data", "--engine", "openai", "--server", f"{upstream.url}/v1", api_key=None,
                        env=env).start(timeout=240)
        try:
            assert httpx.get(f"{server.url}/v1/jobs").status_code == 401
            assert httpx.get(f"{server.url}/v1/jobs",
                             headers={"Authorization": "Bearer service-secret"}).status_code == 200
            assert upstream.requests, "the OCR engine asked the server for its models at start"
            keys = {headers.get("authorization") for _, _, headers, _ in upstream.requests}
            assert keys == {f"Bearer {sent}" if sent else None}
            assert server.logged("SUBEXTRACT_API_KEY is taken as the service's key") == ("SUBEXTRACT_SERVICE_KEY" not in env)
        finally:
            server.stop()


def test_idempotent_submission_replica_ids_and_retention(tmp_path):
    """One replica ("r1", its job ids say so) keeping jobs 4 seconds: a retried upload with its
    Idempotency-Key gets the first job, the key with another request is refused, and a finished
    job's files and cues go while its record stays and says so."""
    server = Server(tmp_path / "data", "--replica", "r1", "--keep-days", str(4 / 86400)).start(timeout=240)
    try:
        with server.client() as client:
            key = {"Idempotency-Key": "upload-7f3a-0001"}
            with open(ZH_SAMPLE, "rb") as video:
                first = client.post("/v1/jobs", files={"file": (ZH_SAMPLE.name, video)}, headers=key)
            assert first.status_code == 202 and first.json()["id"].startswith("r1-")
            with open(ZH_SAMPLE, "rb") as video:
                again = client.post("/v1/jobs", files={"file": (ZH_SAMPLE.name, video)}, headers=key)
            assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
            assert again.json()["id"] == first.json()["id"]
            with open(ZH_SAMPLE, "rb") as video:
                other = client.post("/v1/jobs", files={"file": (ZH_SAMPLE.name, video)}, data={"lang": "en"},
                                    headers=key)
            assert other.status_code == 422 and "Idempotency-Key" in other.json()["error"]
            assert client.post("/v1/jobs", json={"url": "x"}, headers={"Idempotency-Key": "bad key"}).status_code == 400
            jobs = client.get("/v1/jobs").json()["jobs"]
            assert [job["id"] for job in jobs] == [first.json()["id"]]
            assert sorted(p.name for p in (server.data / "jobs").iterdir()) == [first.json()["id"]]

            job_id = first.json()["id"]
            assert wait_for(client, job_id)["status"] == "done"
            assert client.get(f"/v1/jobs/{job_id}/subtitles.srt").status_code == 200
            for _ in range(100):
                job = client.get(f"/v1/jobs/{job_id}").json()
                if job["expired"]:
                    break
                time.sleep(0.2)
            assert job["expired"] and job["status"] == "done"
            gone = client.get(f"/v1/jobs/{job_id}/subtitles.srt")
            assert gone.status_code == 410 and "retention" in gone.json()["error"]
            assert client.patch(f"/v1/jobs/{job_id}/cues/0", json={"text": "x"}).status_code == 410
            assert not (server.data / "jobs" / job_id).exists()
    finally:
        server.stop()


def test_a_jobs_webhook_is_signed_retried_and_refused_on_private_addresses(tmp_path):
    from subextract.serve.webhooks import signature

    secret = "hook-secret-42"
    with recorder() as receiver:
        receiver.status = 503  # the first call fails: the service tries again
        guarded = Server(tmp_path / "guarded", env={"SUBEXTRACT_WEBHOOK_SECRET": secret}).start(timeout=240)
        try:
            with guarded.client() as client:
                refused = upload(client, ZH_SAMPLE, webhook=f"{receiver.url}/hook")
            assert refused.status_code == 400 and "loopback address" in refused.json()["error"]
        finally:
            guarded.stop()
        server = Server(tmp_path / "data", "--allow-private-network", "127.0.0.1",
                        env={"SUBEXTRACT_WEBHOOK_SECRET": secret}).start(timeout=240)
        try:
            with server.client() as client:
                job_id = upload(client, ZH_SAMPLE, webhook=f"{receiver.url}/hook?job=1").json()["id"]
                wait_for(client, job_id)
                deadline = time.monotonic() + 60
                while len(receiver.requests) < 2 and time.monotonic() < deadline:
                    if len(receiver.requests) == 1:
                        receiver.status = 200
                    time.sleep(0.1)
                for _ in range(50):
                    job = client.get(f"/v1/jobs/{job_id}").json()
                    if job["webhook_state"]:
                        break
                    time.sleep(0.2)
        finally:
            server.stop()
    assert len(receiver.requests) == 2 and job["webhook_state"].startswith("delivered (HTTP 200, attempt 2)")
    for method, path, headers, body in receiver.requests:
        assert (method, path) == ("POST", "/hook?job=1")
        stamp, signed = (part.split("=", 1)[1] for part in headers["subextract-signature"].split(","))
        assert signed == signature(secret, int(stamp), body) and abs(time.time() - int(stamp)) < 120
        payload = json.loads(body)
        assert payload["event"] == "job.ended" and payload["job"]["id"] == job_id
        assert payload["job"]["status"] == "done"
