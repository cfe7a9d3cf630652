"""The OpenAI client's connections to one server (real sockets, HTTP/1.1 keep-alive on
127.0.0.1): no more requests in flight than ``concurrency``, each connection reused from one
request to the next instead of one opened per request, and a body the engine serialised itself
sent as JSON, as it is."""

from __future__ import annotations

import json
import threading
import time
from http.server import ThreadingHTTPServer

from json_endpoint import JsonHandler

from subextract.clients.openai_api import OpenAiClient


class KeepAliveEndpoint:
    def __init__(self, delay: float) -> None:
        self.connections: set[int] = set()  # the client ports requests came from
        self.content_types: set[str] = set()
        self.in_flight = self.most_in_flight = 0
        self._lock = threading.Lock()
        endpoint = self

        class Handler(JsonHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: one connection may carry many requests

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self.send_json({"data": [{"id": "ocr"}]})

            def do_POST(self) -> None:  # noqa: N802
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with endpoint._lock:
                    endpoint.connections.add(self.client_address[1])
                    endpoint.content_types.add(self.headers["Content-Type"])
                    endpoint.in_flight += 1
                    endpoint.most_in_flight = max(endpoint.most_in_flight, endpoint.in_flight)
                time.sleep(delay)
                with endpoint._lock:
                    endpoint.in_flight -= 1
                self.send_json({"choices": [{"message": {"content": request["messages"][0]["content"]}}]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_connections_are_bounded_reused_and_carry_serialised_bodies():
    endpoint = KeepAliveEndpoint(delay=0.02)
    client = OpenAiClient(endpoint.url, role="OCR server", model_option="--model", concurrency=4, timeout=10,
                          retries=0)
    try:
        assert client.served_model("") == "ocr"
        first = client.complete_all([{"messages": [{"content": f"a{i}"}]} for i in range(40)])
        opened = set(endpoint.connections)
        second = client.complete_all([json.dumps({"messages": [{"content": f"b{i}"}]}).encode() for i in range(40)])
    finally:
        client.close()
        endpoint.close()
    assert [c.text for c in first + second] == [f"a{i}" for i in range(40)] + [f"b{i}" for i in range(40)]
    assert 2 <= endpoint.most_in_flight <= 4
    assert len(opened) <= 4 and endpoint.connections == opened  # the second call opened no connection
    assert endpoint.content_types == {"application/json"}
