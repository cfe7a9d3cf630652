"""Any OpenAI-compatible server (``vllm serve``, SGLang, llama.cpp's server...) over HTTP.

Each crop (or stack of crops) is one chat-completion request carrying the picture as a base64
PNG data URL (stored, not deflated: ``vlm.to_png``), sent through the shared client
(``subextract.clients.openai_api``: bounded concurrency, retries with backoff, the API key from
``SUBEXTRACT_API_KEY``). A failure keeps the readings already obtained.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pybase64

from subextract.clients.balanced import BalancedClient, server_list
from subextract.clients.openai_api import Completion, CompletionsFailed, OpenAiClient
from subextract.config import OcrSettings
from subextract.errors import SubextractError
from subextract.schema import LineBox, Reading
from subextract.stages.ocr.vlm import Reply, SendFailure, read_pictures, to_png

_PICTURE_SLOT = "\x00picture\x00"  # where the data URL goes in a request's JSON


class OpenAiEngine:
    name = "openai"

    def __init__(self, settings: OcrSettings) -> None:
        if not settings.server:
            raise SubextractError("engine openai needs the server's address: --server http://HOST:PORT/v1")
        self.settings = settings
        servers = server_list(settings.server)
        options = {"role": "OCR server", "model_option": "--model", "concurrency": settings.concurrency,
                   "timeout": settings.timeout, "retries": settings.retries}
        # Several replicas of the model (--server given more than once): one client balancing between them.
        self._client = OpenAiClient(servers[0], **options) if len(servers) == 1 else BalancedClient(servers, **options)
        self.server = self._client.server
        self.model = self._client.served_model(settings.model)

    def read_batch(self, images: Sequence[np.ndarray],
                   line_boxes: Sequence[Sequence[LineBox]] | None = None) -> list[Reading]:
        """The model reads each whole strip; the segmenter's line boxes bound each reply's length."""
        return read_pictures(images, self.settings, self._send_all, line_boxes)

    def _send_all(self, pictures: Sequence[np.ndarray], limits: Sequence[int]) -> list[Reply]:
        try:
            bodies = [self._request_body(p, limit) for p, limit in zip(pictures, limits)]
            return [_reply(c) for c in self._client.complete_all(bodies)]
        except CompletionsFailed as failure:
            raise SendFailure(str(failure), [_reply(c) if c else None for c in failure.completions]) from None

    def _request_body(self, picture: np.ndarray, max_tokens: int) -> bytes:
        """The request's JSON with the picture's base64 spliced in: json.dumps would scan its
        ~250 KB for characters to escape (base64 has none), ~1 ms of the client's GIL a crop."""
        body: dict[str, Any] = {
            # First, so that the first _PICTURE_SLOT in the JSON is this one, whatever the prompt holds.
            "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": _PICTURE_SLOT}},
                                                      {"type": "text", "text": self.settings.prompt}]}],
            "model": self.model,
            "temperature": self.settings.temperature,
            "max_tokens": max_tokens,
            "logprobs": True,
        }
        # vLLM's extensions, sent only when used so that other servers accept the request.
        if self.settings.repetition_penalty != 1.0:
            body["repetition_penalty"] = self.settings.repetition_penalty
        if self.settings.sampling_extra:
            body["vllm_xargs"] = self.settings.sampling_extra
        if not self.settings.skip_special_tokens:
            body["skip_special_tokens"] = False
        head, _, tail = json.dumps(body, ensure_ascii=False).partition(json.dumps(_PICTURE_SLOT))
        return b"".join((head.encode(), b'"data:image/png;base64,', pybase64.b64encode(to_png(picture)), b'"',
                         tail.encode()))


def _reply(completion: Completion) -> Reply:
    return Reply(text=completion.text, confidence=completion.confidence)
