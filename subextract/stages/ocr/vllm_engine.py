"""In-process vLLM (``vllm.LLM``): every crop (or stack of crops) is its own request, all of a
batch handed to one ``LLM.generate`` call so continuous batching keeps the device full.

The prompt is rendered once, at start, from the model's chat template (or the preset's
``prompt_template``) and reused as a plain string for every request: no per-request chat
rendering. ``engine_options`` are passed to ``vllm.LLM`` as they are (dtype, max_model_len,
gpu_memory_utilization, max_num_seqs, enforce_eager, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from subextract.clients.vllm_runtime import mean_token_probability, one_line, start_llm
from subextract.config import OcrSettings
from subextract.errors import SubextractError
from subextract.schema import LineBox, Reading
from subextract.stages.ocr.vlm import Reply, read_pictures, to_pil


class VllmEngine:
    name = "vllm"

    def __init__(self, settings: OcrSettings) -> None:
        if not settings.model:
            raise SubextractError("engine vllm needs a model: --model PATH_OR_HUB_ID (or a preset such as "
                                  "--config paddleocr-vl)")
        self.settings = settings
        self._llm = start_llm(settings.model, settings.engine_options, "engine vllm")
        from vllm import SamplingParams

        self._prompt = render_prompt(self._llm, settings)
        self._params = SamplingParams(temperature=settings.temperature, max_tokens=settings.max_tokens,
                                      repetition_penalty=settings.repetition_penalty, logprobs=0,
                                      skip_special_tokens=settings.skip_special_tokens,
                                      extra_args=settings.sampling_extra or None)

    def read_batch(self, images: Sequence[np.ndarray],
                   line_boxes: Sequence[Sequence[LineBox]] | None = None) -> list[Reading]:
        """The model reads each whole strip; the segmenter's line boxes bound each reply's length."""
        return read_pictures(images, self.settings, self._generate, line_boxes)

    def _generate(self, pictures: Sequence[np.ndarray], limits: Sequence[int]) -> list[Reply]:
        requests = [{"prompt": self._prompt, "multi_modal_data": {"image": to_pil(p)}} for p in pictures]
        try:
            outputs = self._llm.generate(requests, [self._bounded(limit) for limit in limits], use_tqdm=False)
        except Exception as exc:  # noqa: BLE001 - an engine failure ends the run with one line
            raise SubextractError(f"vLLM failed: {one_line(exc)}") from None
        return [Reply(text=o.outputs[0].text, confidence=mean_token_probability(o.outputs[0])) for o in outputs]

    def _bounded(self, max_tokens: int) -> Any:
        """The sampling parameters with a reply of at most ``max_tokens`` (the shared ones when they allow no more)."""
        if max_tokens >= self._params.max_tokens:
            return self._params
        bounded = self._params.clone()
        bounded.max_tokens = max_tokens
        bounded.min_tokens = min(bounded.min_tokens, max_tokens)
        return bounded


def render_prompt(llm: Any, settings: OcrSettings) -> str:
    """The prompt text of every request: the preset's template, or the model's chat template
    applied once to a user turn of one image and the instruction (what ``vllm serve`` renders
    for the same chat request, so both engines send the model the same prompt)."""
    if settings.prompt_template:
        return settings.prompt_template.replace("{prompt}", settings.prompt)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": settings.prompt}]}]
    tokenizer = llm.get_tokenizer()
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(settings.model,
                                              trust_remote_code=settings.engine_options.get("trust_remote_code", False))
    if not getattr(processor, "chat_template", None):
        raise SubextractError(f"model {settings.model} has no chat template: set ocr.prompt_template in the config")
    return processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

