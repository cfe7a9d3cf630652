"""--server given once per replica (the OCR fleet Ray's workers share): each request goes to the
replica with the fewest requests in flight. Two small OpenAI-compatible HTTP endpoints on
127.0.0.1 stand in for two `vllm serve` replicas, one slow and one fast; what is tested is the
client's traffic (real sockets, real HTTP), not what a model reads: the vLLM suite covers that."""

from __future__ import annotations

import json
import threading
import time
from http.server import ThreadingHTTPServer

import pytest
from json_endpoint import JsonHandler

from subextract.clients.balanced import BalancedClient
from subextract.errors import SubextractError


class Replica:
    def __init__(self, model: str, delay: float) -> None:
        self.model, self.delay = model, delay
        self.in_flight = self.most_in_flight = self.answered = 0
        self._lock = threading.Lock()
        replica = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                self.send_json({"data": [{"id": replica.model}]})

            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with replica._lock:
                    replica.in_flight += 1
                    replica.most_in_flight = max(replica.most_in_flight, replica.in_flight)
                time.sleep(replica.delay)
                with replica._lock:
                    replica.in_flight -= 1
                    replica.answered += 1
                self.send_json({"choices": [{"message": {"content": request["messages"][0]["content"]}}]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def replicas():
    started = [Replica("ocr", 0.5), Replica("ocr", 0.0)]
    yield started
    for replica in started:
        replica.close()


def client(urls, concurrency=2) -> BalancedClient:
    return BalancedClient(urls, role="OCR server", model_option="--model", concurrency=concurrency, timeout=10,
                          retries=0)


def test_requests_go_to_the_replica_with_fewest_in_flight(replicas):
    slow, fast = replicas
    balanced = client([slow.url, fast.url])
    try:
        assert balanced.served_model("") == "ocr"
        bodies = [{"messages": [{"content": f"crop {i}"}]} for i in range(40)]
        completions = balanced.complete_all(bodies)
    finally:
        balanced.close()
    assert [c.text for c in completions] == [f"crop {i}" for i in range(40)]  # every answer, in order
    assert slow.answered + fast.answered == 40
    assert slow.answered >= 2 and fast.answered > 2 * slow.answered  # the fast one is kept busy, the slow not starved
    assert max(slow.most_in_flight, fast.most_in_flight) <= 2  # each replica's concurrency bound holds
    assert slow.most_in_flight >= 1 and fast.most_in_flight >= 1


def test_replicas_serving_different_models_are_refused(replicas):
    other = Replica("another-model", 0.0)
    try:
        balanced = client([replicas[1].url, other.url])
        with pytest.raises(SubextractError, match="serve different models"):
            balanced.served_model("")
        balanced.close()
    finally:
        other.close()


def test_a_lost_replica_hands_its_requests_to_the_others(replicas):
    slow, fast = replicas
    slow.close()  # gone: connections refused
    balanced = client([slow.url, fast.url])
    try:
        completions = balanced.complete_all([{"messages": [{"content": f"c{i}"}]} for i in range(10)])
    finally:
        balanced.close()
    assert [c.text for c in completions] == [f"c{i}" for i in range(10)] and fast.answered == 10
