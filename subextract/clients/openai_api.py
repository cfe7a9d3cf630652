"""Chat completions against any OpenAI-compatible server (``vllm serve``, SGLang, llama.cpp's
server...) over HTTP.

Up to ``concurrency`` requests are in flight at once (a thread pool over one pooled
``httpx.Client``), so a batching server stays busy. A request that meets a connection error, a
timeout, HTTP 5xx or 429 is retried ``retries`` times with exponential backoff; then the whole
call fails with one line naming the server, handing back the replies already obtained.

The key sent to the server (as a bearer token, never printed) comes from
``SUBEXTRACT_UPSTREAM_KEY``, or from ``SUBEXTRACT_API_KEY`` where that is not set — except in
``subextract serve``, where ``SUBEXTRACT_API_KEY`` may be the service's own key and is never sent
on (``keep_api_key_private``).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import httpx

from subextract.errors import SubextractError

API_KEY_VARIABLE = "SUBEXTRACT_API_KEY"  # the upstream key for the CLI and batch, as before
UPSTREAM_KEY_VARIABLE = "SUBEXTRACT_UPSTREAM_KEY"  # the upstream key for every command
_send_api_key = True


def keep_api_key_private() -> None:
    """From now on in this process ``SUBEXTRACT_API_KEY`` is not sent to OCR or translator
    servers (``subextract serve`` takes it as its own key where SUBEXTRACT_SERVICE_KEY is unset)."""
    global _send_api_key
    _send_api_key = False


def sends_api_key() -> bool:
    return _send_api_key


def upstream_key() -> str | None:
    return os.environ.get(UPSTREAM_KEY_VARIABLE) or (os.environ.get(API_KEY_VARIABLE) if _send_api_key else None)


def upstream_key_variable() -> str:
    return API_KEY_VARIABLE if _send_api_key and not os.environ.get(UPSTREAM_KEY_VARIABLE) else UPSTREAM_KEY_VARIABLE
_BACKOFF_FIRST, _BACKOFF_MAX = 0.5, 8.0  # seconds before the first retry, and the longest wait
_JSON = {"Content-Type": "application/json"}

Body = dict[str, Any] | bytes  # a request's JSON object, or the object already serialised


@dataclass(frozen=True)
class Completion:
    text: str
    confidence: float = 1.0  # mean token probability when the server sent log-probabilities


class CompletionsFailed(SubextractError):
    """A call that failed part-way: ``completions`` holds each request's Completion, or None."""

    def __init__(self, message: str, completions: Sequence[Completion | None]) -> None:
        super().__init__(message)
        self.completions = list(completions)


class _Retryable(Exception):
    """A failure worth another try (connection, timeout, 5xx, 429); ``wait`` overrides the backoff."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


class OpenAiClient:
    """``role`` names the server in messages ("OCR server"); ``model_option`` is the option
    that chooses its model ("--model"), quoted when the model is not served."""

    def __init__(self, server: str, *, role: str, model_option: str, concurrency: int, timeout: float,
                 retries: int) -> None:
        self.server = server.rstrip("/")
        self.role = role
        self.model_option = model_option
        self.timeout = timeout
        self.retries = retries
        key = upstream_key()
        tls = httpx.create_ssl_context()  # one for all the connections: each of its own costs milliseconds
        self._connections = _Connections(concurrency, lambda: httpx.Client(
            base_url=self.server, timeout=timeout, headers={"Authorization": f"Bearer {key}"} if key else {},
            verify=tls, limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)))
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="llm-request")

    @property
    def _name(self) -> str:
        return f"{self.role} {self.server}"

    def served_model(self, wanted: str) -> str:
        """The served model to use: ``wanted``, which must be one the server lists, or the
        server's only model when none was named."""
        try:
            with self._connections.one() as client:
                response = client.get("/models")
        except httpx.TransportError as exc:
            raise SubextractError(f"{self._name} is unreachable ({_reason(exc)})") from None
        if response.status_code in (401, 403):
            raise SubextractError(f"{self._name} refused the API key (HTTP {response.status_code}; "
                                  f"set {upstream_key_variable()})")
        if response.status_code != 200:
            raise SubextractError(f"{self._name}: GET /models answered HTTP {response.status_code} "
                                  "(is this an OpenAI-compatible API? its URL usually ends in /v1)")
        try:
            served = [entry["id"] for entry in response.json()["data"]]
        except (ValueError, KeyError, TypeError):
            raise SubextractError(f"{self._name}: GET /models did not answer with a model list") from None
        if wanted in served:
            return wanted
        if not wanted and len(served) == 1:
            return served[0]
        detail = f"no model {wanted!r}" if wanted else "several models"
        raise SubextractError(f"{self._name} has {detail}; it serves: {', '.join(served) or 'none'} "
                              f"(choose one with {self.model_option})")

    def complete_all(self, bodies: Sequence[Body]) -> list[Completion]:
        """One chat-completion request per body (a JSON object, or one already serialised),
        ``concurrency`` at a time, in order. On the first failure the requests not yet started
        are dropped and CompletionsFailed carries the completions obtained."""
        futures = [self._pool.submit(self._send, body) for body in bodies]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = next((f for f in futures if f in done and f.exception() is not None), None)
        if failed is None:
            return [f.result() for f in futures]
        for future in futures:
            future.cancel()
        wait(futures)  # those already sending finish (or fail) before the error is reported
        raise CompletionsFailed(str(failed.exception()), [_result_or_none(f) for f in futures])

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._connections.close()

    def _send(self, body: Body) -> Completion:
        attempt = 0
        while True:
            try:
                return self._post(body)
            except _Retryable as exc:
                attempt += 1
                if attempt > self.retries:
                    raise SubextractError(f"{exc} (gave up after {attempt} attempts)") from None
                time.sleep(exc.wait if exc.wait is not None else _backoff(attempt - 1))

    def _post(self, body: Body) -> Completion:
        try:
            with self._connections.one() as client:
                if isinstance(body, bytes):
                    response = client.post("/chat/completions", content=body, headers=_JSON)
                else:
                    response = client.post("/chat/completions", json=body)
        except httpx.ConnectError as exc:
            raise _Retryable(f"{self._name} is unreachable ({_reason(exc)})") from None
        except httpx.TimeoutException:
            raise _Retryable(f"{self._name} did not answer within {self.timeout:g} s") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"{self._name} dropped the connection ({_reason(exc)})") from None
        if response.status_code == 429 or response.status_code >= 500:
            raise _Retryable(f"{self._name} answered HTTP {response.status_code}: {_error_message(response)}",
                             wait=_retry_after(response))
        if response.status_code != 200:
            raise SubextractError(f"{self._name} rejected the request: HTTP {response.status_code}: "
                                  f"{_error_message(response)}")
        return _completion(response.json())


class _Connections:
    """Up to ``limit`` keep-alive connections to one server, each an ``httpx.Client`` of one
    connection, lent to one request at a time, the last returned first. Not one shared
    ``httpx.Client`` of ``limit`` connections: httpcore's pool checks every connection against
    every other on each request, which at 256 connections cost the client more CPU than the
    rest of a request (bench/client_ceiling.py, docs/gpu.md)."""

    def __init__(self, limit: int, connect: Callable[[], httpx.Client]) -> None:
        self._limit = limit
        self._connect = connect
        self._idle: list[httpx.Client] = []
        self._all: list[httpx.Client] = []
        self._returned = threading.Condition()

    @contextlib.contextmanager
    def one(self) -> Iterator[httpx.Client]:
        with self._returned:
            while not self._idle and len(self._all) >= self._limit:
                self._returned.wait()
            if self._idle:
                client = self._idle.pop()
            else:
                client = self._connect()
                self._all.append(client)
        try:
            yield client
        finally:
            with self._returned:
                self._idle.append(client)
                self._returned.notify()

    def close(self) -> None:
        with self._returned:
            for client in self._all:
                client.close()


def _completion(data: dict[str, Any]) -> Completion:
    choice = data["choices"][0]
    steps = (choice.get("logprobs") or {}).get("content") or []
    probabilities = [math.exp(step["logprob"]) for step in steps if step.get("logprob") is not None]
    confidence = sum(probabilities) / len(probabilities) if probabilities else 1.0
    return Completion(text=choice["message"].get("content") or "", confidence=confidence)


def _backoff(attempt: int) -> float:
    # Full jitter: concurrent requests failing together don't retry in lockstep.
    return random.uniform(0.5, 1.0) * min(_BACKOFF_MAX, _BACKOFF_FIRST * 2 ** attempt)


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return min(_BACKOFF_MAX * 4, float(response.headers["retry-after"]))
    except (KeyError, ValueError):
        return None


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error", response.json())
        message = error.get("message", "") if isinstance(error, dict) else str(error)
    except ValueError:
        message = response.text
    message = " ".join(str(message).split())
    return (message[:197] + "...") if len(message) > 200 else message or response.reason_phrase


def _reason(exc: httpx.TransportError) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _result_or_none(future: Future) -> Completion | None:
    return future.result() if future.done() and not future.cancelled() and future.exception() is None else None
