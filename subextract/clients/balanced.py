"""Several replicas of one OpenAI-compatible server (``vllm serve`` on each GPU) behind one
client: each request goes, when it starts, to the replica with the fewest requests in flight.

Least-in-flight rather than round-robin because OCR requests differ in cost (a two-line crop
decodes more tokens than a one-word one) and replicas differ in speed (a replica still loading,
one on a busier node): a slow replica keeps its requests and gets no more until it answers.
Each replica keeps the single client's retries and backoff; a request it still fails goes to
another replica (a replica lost costs time, not readings). The ``concurrency`` bound applies per
replica, so N replicas carry N times the requests at once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from subextract.clients.openai_api import Body, Completion, OpenAiClient
from subextract.errors import SubextractError


def server_list(server: str) -> list[str]:
    """``--server`` given several times (or ``ocr.server`` in a config): URLs separated by blanks."""
    return server.split()


class BalancedClient(OpenAiClient):
    def __init__(self, servers: Sequence[str], *, role: str, model_option: str, concurrency: int, timeout: float,
                 retries: int) -> None:
        self.replicas = [OpenAiClient(server, role=role, model_option=model_option, concurrency=concurrency,
                                      timeout=timeout, retries=retries) for server in servers]
        self.server = " ".join(replica.server for replica in self.replicas)
        self.role = role
        self.model_option = model_option
        self.timeout = timeout
        self.retries = retries
        self.in_flight = [0] * len(self.replicas)
        self.sent = [0] * len(self.replicas)  # requests each replica got (the balance, for the logs and tests)
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=concurrency * len(self.replicas), thread_name_prefix="llm-request")

    def served_model(self, wanted: str) -> str:
        """The model every replica serves (``wanted``, or the only one each serves)."""
        models = {replica.server: replica.served_model(wanted) for replica in self.replicas}
        if len(set(models.values())) > 1:
            raise SubextractError(f"the {self.role}s serve different models: "
                                  + ", ".join(f"{server}: {model}" for server, model in models.items())
                                  + f" (choose one with {self.model_option})")
        return next(iter(models.values()))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        for replica in self.replicas:
            replica.close()

    def _send(self, body: Body) -> Completion:
        """To the least busy replica; one that fails it (after its own retries) hands it to the next."""
        failed: set[int] = set()
        while True:
            with self._lock:
                index = min((i for i in range(len(self.replicas)) if i not in failed),
                            key=lambda i: (self.in_flight[i], self.sent[i]))
                self.in_flight[index] += 1
                self.sent[index] += 1
            try:
                return self.replicas[index]._send(body)
            except SubextractError:
                failed.add(index)
                if len(failed) == len(self.replicas):
                    raise
            finally:
                with self._lock:
                    self.in_flight[index] -= 1
