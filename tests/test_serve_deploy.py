"""The service as integrators deploy it: its two secrets, retention, idempotent submission,
replicas that own their jobs, the webhook on a job's end, and the image's entry command."""

from __future__ import annotations

import json
import threading
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
                        env=env).start()
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
