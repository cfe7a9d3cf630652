"""The LLMs a translator can talk to, behind one call: prompts in, reply texts out, in order.

``openai``: any OpenAI-compatible server (``vllm serve tencent/Hunyuan-MT-7B``...) through the
client the OCR engine uses too (bounded concurrency, retries with backoff, API key from
``SUBEXTRACT_API_KEY``). ``vllm``: a model run in this process, all prompts of a call handed to
one ``LLM.chat`` so continuous batching keeps the device busy.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

from subextract.clients.openai_api import OpenAiClient
from subextract.clients.vllm_runtime import one_line, start_llm
from subextract.config import TranslateSettings
from subextract.errors import SubextractError
from subextract.translate.protocol import Prompt

HOW_TO_CONFIGURE = ("{needed_by} needs a translator: --translator-server http://HOST:PORT/v1 for an "
                    "OpenAI-compatible server (e.g. `vllm serve tencent/Hunyuan-MT-7B`), --translator-model "
                    "PATH_OR_ID to run one in this process with vLLM, or a preset: --config hunyuan-mt "
                    "(README, \"Translation\")")


class ChatModel(Protocol):
    name: str

    def complete(self, prompts: Sequence[Prompt], temperatures: Sequence[float]) -> list[str]:
        """One reply per prompt, each sampled at its temperature; raises SubextractError."""
        ...

    def close(self) -> None: ...


def create_chat_model(settings: TranslateSettings, needed_by: str = "--translate") -> ChatModel:
    """``needed_by``: the option or command that asked for a translation (named when none is configured).
    A model named without an engine runs in this process."""
    engine = settings.engine or ("vllm" if settings.model else "")
    if engine == "openai":
        return OpenAiChatModel(settings)
    if engine == "vllm":
        return VllmChatModel(settings)
    if not engine:
        raise SubextractError(HOW_TO_CONFIGURE.format(needed_by=needed_by))
    raise SubextractError(f"translate.engine {settings.engine!r}: choose vllm or openai")


def _messages(prompt: Prompt) -> list[dict[str, str]]:
    system = [{"role": "system", "content": prompt.system}] if prompt.system else []
    return [*system, {"role": "user", "content": prompt.user}]


class OpenAiChatModel:
    name = "openai"

    def __init__(self, settings: TranslateSettings) -> None:
        if not settings.server:
            raise SubextractError("translator openai needs the server's address: --translator-server "
                                  "http://HOST:PORT/v1")
        self.settings = settings
        self._client = OpenAiClient(settings.server, role="translation server", model_option="--translator-model",
                                    concurrency=settings.concurrency, timeout=settings.timeout,
                                    retries=settings.request_retries)
        self.model = self._client.served_model(settings.model)

    def complete(self, prompts: Sequence[Prompt], temperatures: Sequence[float]) -> list[str]:
        bodies = [self._body(prompt, temperature) for prompt, temperature in zip(prompts, temperatures)]
        return [completion.text for completion in self._client.complete_all(bodies)]

    def _body(self, prompt: Prompt, temperature: float) -> dict[str, Any]:
        s = self.settings
        body: dict[str, Any] = {"model": self.model, "messages": _messages(prompt), "temperature": temperature,
                                "top_p": s.top_p, "max_tokens": s.max_tokens}
        # vLLM's extensions, sent only when used so that other servers accept the request.
        if s.top_k != -1:
            body["top_k"] = s.top_k
        if s.repetition_penalty != 1.0:
            body["repetition_penalty"] = s.repetition_penalty
        return body

    def close(self) -> None:
        self._client.close()


class VllmChatModel:
    name = "vllm"

    def __init__(self, settings: TranslateSettings) -> None:
        if not settings.model:
            raise SubextractError("translator vllm needs a model: --translator-model PATH_OR_HUB_ID")
        self.settings = settings
        self._llm = start_llm(settings.model, settings.engine_options, "translator vllm")
        self._lock = threading.Lock()  # vLLM's LLM is not thread-safe; batch jobs share one model

    def complete(self, prompts: Sequence[Prompt], temperatures: Sequence[float]) -> list[str]:
        from vllm import SamplingParams

        s = self.settings
        params = [SamplingParams(temperature=t, top_p=s.top_p, top_k=s.top_k, max_tokens=s.max_tokens,
                                 repetition_penalty=s.repetition_penalty) for t in temperatures]
        try:
            with self._lock:
                outputs = self._llm.chat([_messages(p) for p in prompts], params, use_tqdm=False)
        except Exception as exc:  # noqa: BLE001 - an engine failure ends the translation with one line
            raise SubextractError(f"vLLM failed: {one_line(exc)}") from None
        return [output.outputs[0].text for output in outputs]

    def close(self) -> None:
        del self._llm
