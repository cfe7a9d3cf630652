"""Any OpenAI-compatible server (``vllm serve``, SGLang, llama.cpp's server...) over HTTP.

Each crop (or stack of crops) is one chat-completion request carrying the picture as a base64
PNG data URL; up to ``concurrency`` requests are in flight at once (a thread pool over one
pooled ``httpx.Client``), so a batching server stays busy. A request that meets a connection
error, a timeout, HTTP 5xx or 429 is retried ``retries`` times with exponential backoff; then
the batch fails with one line naming the server, keeping the readings already obtained.

The API key comes from ``SUBEXTRACT_API_KEY`` (sent as a bearer token, never printed).
"""

from __future__ import annotations

import base64
import math
import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any

import httpx
import numpy as np

from subextract.config import OcrSettings
from subextract.errors import SubextractError
from subextract.stages.lines import Box as LineBox
from subextract.stages.ocr import Reading
from subextract.stages.ocr.vlm import Reply, SendFailure, read_pictures, to_png

API_KEY_VARIABLE = "SUBEXTRACT_API_KEY"
_BACKOFF_FIRST, _BACKOFF_MAX = 0.5, 8.0  # seconds before the first retry, and the longest wait


class _Retryable(Exception):
    """A failure worth another try (connection, timeout, 5xx, 429); ``wait`` overrides the backoff."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


class OpenAiEngine:
    name = "openai"

    def __init__(self, settings: OcrSettings) -> None:
        if not settings.server:
            raise SubextractError("engine openai needs the server's address: --server http://HOST:PORT/v1")
        self.settings = settings
        self.server = settings.server.rstrip("/")
        key = os.environ.get(API_KEY_VARIABLE)
        self._client = httpx.Client(
            base_url=self.server, timeout=settings.timeout,
            headers={"Authorization": f"Bearer {key}"} if key else {},
            limits=httpx.Limits(max_connections=settings.concurrency, max_keepalive_connections=settings.concurrency))
        self._pool = ThreadPoolExecutor(max_workers=settings.concurrency, thread_name_prefix="ocr-request")
        self.model = self._checked_model(settings.model)

    def read_batch(self, images: Sequence[np.ndarray],
                   line_boxes: Sequence[Sequence[LineBox]] | None = None) -> list[Reading]:
        """The model reads each whole strip: the segmenter's line boxes are not needed."""
        return read_pictures(images, self.settings, self._send_all)

    # -- the model --------------------------------------------------------------------------

    def _checked_model(self, wanted: str) -> str:
        """The served model to use: ``wanted``, which must be one the server lists, or the
        server's only model when none was named."""
        try:
            response = self._client.get("/models")
        except httpx.TransportError as exc:
            raise SubextractError(f"OCR server {self.server} is unreachable ({_reason(exc)})") from None
        if response.status_code in (401, 403):
            raise SubextractError(f"OCR server {self.server} refused the API key (HTTP {response.status_code}; "
                                  f"set {API_KEY_VARIABLE})")
        if response.status_code != 200:
            raise SubextractError(f"OCR server {self.server}: GET /models answered HTTP {response.status_code} "
                                  "(is this an OpenAI-compatible API? its URL usually ends in /v1)")
        try:
            served = [entry["id"] for entry in response.json()["data"]]
        except (ValueError, KeyError, TypeError):
            raise SubextractError(f"OCR server {self.server}: GET /models did not answer with a model list") from None
        if wanted in served:
            return wanted
        if not wanted and len(served) == 1:
            return served[0]
        detail = f"no model {wanted!r}" if wanted else "several models"
        raise SubextractError(f"OCR server {self.server} has {detail}; it serves: {', '.join(served) or 'none'} "
                              "(choose one with --model)")

    # -- requests ---------------------------------------------------------------------------

    def _send_all(self, pictures: Sequence[np.ndarray]) -> list[Reply]:
        """One request per picture, ``concurrency`` at a time; on the first failure the requests
        not yet started are dropped and the replies obtained are handed back with the error."""
        futures = [self._pool.submit(self._send, picture) for picture in pictures]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = next((f for f in futures if f in done and f.exception() is not None), None)
        if failed is None:
            return [f.result() for f in futures]
        for future in futures:
            future.cancel()
        wait(futures)  # those already sending finish (or fail) before the error is reported
        raise SendFailure(str(failed.exception()), [_result_or_none(f) for f in futures])

    def _send(self, picture: np.ndarray) -> Reply:
        body = self._request_body(picture)
        attempt = 0
        while True:
            try:
                return self._post(body)
            except _Retryable as exc:
                attempt += 1
                if attempt > self.settings.retries:
                    raise SubextractError(f"{exc} (gave up after {attempt} attempts)") from None
                time.sleep(exc.wait if exc.wait is not None else _backoff(attempt - 1))

    def _request_body(self, picture: np.ndarray) -> dict[str, Any]:
        url = "data:image/png;base64," + base64.b64encode(to_png(picture)).decode("ascii")
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                      {"type": "text", "text": self.settings.prompt}]}],
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
            "logprobs": True,
        }
        # vLLM's extensions, sent only when used so that other servers accept the request.
        if self.settings.repetition_penalty != 1.0:
            body["repetition_penalty"] = self.settings.repetition_penalty
        if self.settings.sampling_extra:
            body["vllm_xargs"] = self.settings.sampling_extra
        return body

    def _post(self, body: dict[str, Any]) -> Reply:
        try:
            response = self._client.post("/chat/completions", json=body)
        except httpx.ConnectError as exc:
            raise _Retryable(f"OCR server {self.server} is unreachable ({_reason(exc)})") from None
        except httpx.TimeoutException:
            raise _Retryable(f"OCR server {self.server} did not answer within {self.settings.timeout:g} s") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"OCR server {self.server} dropped the connection ({_reason(exc)})") from None
        if response.status_code == 429 or response.status_code >= 500:
            raise _Retryable(f"OCR server {self.server} answered HTTP {response.status_code}: "
                             f"{_error_message(response)}", wait=_retry_after(response))
        if response.status_code != 200:
            raise SubextractError(f"OCR server {self.server} rejected the request: HTTP {response.status_code}: "
                                  f"{_error_message(response)}")
        return _reply(response.json())


def _reply(data: dict[str, Any]) -> Reply:
    """The reply's text, and the mean probability of its tokens when the server sent logprobs."""
    choice = data["choices"][0]
    steps = (choice.get("logprobs") or {}).get("content") or []
    probabilities = [math.exp(step["logprob"]) for step in steps if step.get("logprob") is not None]
    confidence = sum(probabilities) / len(probabilities) if probabilities else 1.0
    return Reply(text=choice["message"].get("content") or "", confidence=confidence)


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


def _result_or_none(future: Future) -> Reply | None:
    return future.result() if future.done() and not future.cancelled() and future.exception() is None else None
