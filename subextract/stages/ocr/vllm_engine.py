"""In-process vLLM (``vllm.LLM``): every crop (or stack of crops) is its own request, all of a
batch handed to one ``LLM.generate`` call so continuous batching keeps the device full.

The prompt is rendered once, at start, from the model's chat template (or the preset's
``prompt_template``), tokenised once, and every request carries its token ids: no per-request chat
rendering or tokenising. ``engine_options`` are passed to ``vllm.LLM`` as they are (dtype, max_model_len,
gpu_memory_utilization, max_num_seqs, enforce_eager, ...).

With ``ocr.vision_tower: subextract`` (the ``hunyuanocr`` preset), HunyuanOCR's vision tower runs
here, a batch of crops at a time on the GPU (``stages/ocr/vision_tower.py``), and each request
carries the crop's embeddings instead of its picture: vLLM's per-request loop then holds no image
work at all. It needs a vLLM whose HunYuanVL takes embeddings (subextract's vLLM plugin provides
one for vLLM's native module, 0.26-0.28); on others the engine hands vLLM the pictures.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from subextract.clients.vllm_plugin import ARCHITECTURE as HUNYUAN_VL
from subextract.clients.vllm_plugin import native_hunyuan_vl
from subextract.clients.vllm_runtime import cheap_logprobs, mean_token_probability, one_line, start_llm
from subextract.config import OcrSettings
from subextract.errors import SubextractError
from subextract.schema import LineBox, Reading
from subextract.stages.ocr.vlm import Reply, read_pictures, to_pil

log = logging.getLogger(__name__)

# vLLM's own default share of the device's memory for one engine.
_VLLM_MEMORY_SHARE = 0.9


class VllmEngine:
    name = "vllm"

    def __init__(self, settings: OcrSettings) -> None:
        if not settings.model:
            raise SubextractError("engine vllm needs a model: --model PATH_OR_HUB_ID (or a preset such as "
                                  "--config paddleocr-vl)")
        self.settings = settings
        options = dict(settings.engine_options)
        if settings.replicas > 1:  # one of several engines on the device (stages/ocr/replicas.py)
            options["gpu_memory_utilization"] = replica_memory_share(
                options.get("gpu_memory_utilization", _VLLM_MEMORY_SHARE), settings.replicas)
        self._tower = vision_tower(settings, options)
        if self._tower is not None:
            # Embeddings only: vLLM leaves its own tower out (no image limit) and takes image_embeds.
            options.update(enable_mm_embeds=True, limit_mm_per_prompt={"image": 0})
        self._llm = start_llm(settings.model, options, "engine vllm")
        from vllm import SamplingParams

        self._prompt = render_prompt(self._llm, settings)
        # vLLM would tokenise the same string again for every request (512 a batch on the H200).
        self._prompt_ids: list[int] | None = prompt_token_ids(self._llm, self._prompt)
        # The replies' text decoded here, all of a batch at once, where vLLM would detokenise every
        # reply token (and every log-probability's token, which the product never reads) one by one.
        # Not with special tokens kept in the text (deepseek-ocr): vLLM spaces those its own way.
        self._decode_here = settings.skip_special_tokens
        self._params = SamplingParams(temperature=settings.temperature, max_tokens=settings.max_tokens,
                                      repetition_penalty=settings.repetition_penalty, logprobs=0,
                                      skip_special_tokens=settings.skip_special_tokens,
                                      detokenize=not self._decode_here,
                                      extra_args=settings.sampling_extra or None, **cheap_logprobs(SamplingParams))

    def read_batch(self, images: Sequence[np.ndarray],
                   line_boxes: Sequence[Sequence[LineBox]] | None = None) -> list[Reading]:
        """The model reads each whole strip; the segmenter's line boxes bound each reply's length."""
        return read_pictures(images, self.settings, self._generate, line_boxes)

    def requests(self, pictures: Sequence[np.ndarray]) -> list[dict[str, Any]]:
        """One vLLM request per picture: the prompt's token ids (its text where there are none) and
        the picture, or the picture's embeddings from the vision tower here (each under an id of its
        own: vLLM then neither hashes the tensor nor mistakes one crop's embeddings for another's)."""
        if self._tower is None:
            return [{**self._prompt_input(), "multi_modal_data": {"image": to_pil(p)}} for p in pictures]
        return [{**self._prompt_input(),
                 "multi_modal_data": {"image": {"image_embeds": embeds, "image_grid_thw": grid}},
                 "multi_modal_uuids": {"image": [uuid.uuid4().hex]}}
                for embeds, grid in self._tower.embed(pictures)]

    def _prompt_input(self) -> dict[str, Any]:
        # A list of its own per request: vLLM's input processing must never see another request's list.
        return {"prompt": self._prompt} if self._prompt_ids is None else {"prompt_token_ids": list(self._prompt_ids)}

    def _generate(self, pictures: Sequence[np.ndarray], limits: Sequence[int]) -> list[Reply]:
        try:
            outputs = self._llm.generate(self.requests(pictures), [self._bounded(limit) for limit in limits],
                                         use_tqdm=False)
        except Exception as exc:  # noqa: BLE001 - an engine failure ends the run with one line
            raise SubextractError(f"vLLM failed: {one_line(exc)}") from None
        completions = [o.outputs[0] for o in outputs]
        texts = ([c.text for c in completions] if self._params.detokenize
                 else decode_replies(self._llm.get_tokenizer(), outputs))
        return [Reply(text=text, confidence=mean_token_probability(c)) for text, c in zip(texts, completions)]

    def _bounded(self, max_tokens: int) -> Any:
        """The sampling parameters with a reply of at most ``max_tokens`` (the shared ones when they allow no more)."""
        if max_tokens >= self._params.max_tokens:
            return self._params
        bounded = self._params.clone()
        bounded.max_tokens = max_tokens
        bounded.min_tokens = min(bounded.min_tokens, max_tokens)
        return bounded


# Prompt tokens before each reply that its decoding starts from: what vLLM's own detokenizer
# primes its decode stream with (the whole prompt), cut to the end of the prompt that every
# request shares; a reply's first word keeps the space a SentencePiece tokenizer gives it.
_DECODE_CONTEXT = 8


def decode_replies(tokenizer: Any, outputs: Sequence[Any]) -> list[str]:
    """Each reply's text as vLLM's incremental detokenizer makes it (special tokens skipped), from
    one batched decode: the text of the prompt's last tokens and the reply, less the text of the
    prompt's last tokens. Where the text ends in an unfinished character (the replacement
    character), vLLM holds back the tokens since it last emitted text and never emits them; so
    does this, dropping tokens from the end until the text ends in a whole character."""
    heads = [list(o.prompt_token_ids[-_DECODE_CONTEXT:]) for o in outputs]
    whole = [head + list(o.outputs[0].token_ids) for head, o in zip(heads, outputs)]
    texts = tokenizer.batch_decode(heads + whole, skip_special_tokens=True, clean_up_tokenization_spaces=False)
    replies = []
    for head, ids, prefix, text in zip(heads, whole, texts[:len(heads)], texts[len(heads):]):
        end = len(ids)
        while text.endswith("\ufffd") and end > len(head):
            end -= 1
            text = tokenizer.decode(ids[:end], skip_special_tokens=True, clean_up_tokenization_spaces=False)
        replies.append(text[len(prefix):] if text.startswith(prefix) else text)
    return replies


def replica_memory_share(share: float, replicas: int) -> float:
    """vLLM's share of the device for each of ``replicas`` engines, where one engine alone would
    take ``share``. vLLM counts only its own weights, activations and cache in its share; one
    engine alone leaves the rest (1 - share) for what it does not count: the CUDA context and
    HunyuanOCR's vision tower run here (a 128-crop batch's activations: ~5 GiB on the H200). Each
    replica keeps that room: with 0.9 and four replicas each takes 0.15 (0.225 each ran out of
    memory in the tower on the H200; 0.15 each ran)."""
    each = (share - (1 - share) * (replicas - 1)) / replicas
    if each < 0.02:
        raise SubextractError(f"{replicas} OCR replicas do not fit on one device with gpu_memory_utilization "
                              f"{share:g}: ask for fewer (--ocr-replicas) or a larger share")
    return each


def model_architectures(model: str, trust_remote_code: bool) -> list[str]:
    from transformers import AutoConfig

    try:
        return list(AutoConfig.from_pretrained(model, trust_remote_code=trust_remote_code).architectures or [])
    except Exception as exc:  # noqa: BLE001 - transformers raises anything from OSError to ValueError here
        raise SubextractError(f"vLLM could not start model {model}: {one_line(exc)}") from None


def vision_tower(settings: OcrSettings, options: dict[str, Any]) -> Any:
    """HunyuanOCR's vision tower run here (``ocr.vision_tower: subextract``), or None: vLLM is
    handed pictures (the setting's other value, another model, or a vLLM whose HunYuanVL takes
    no embeddings)."""
    if settings.vision_tower != "subextract":
        return None
    trust = bool(options.get("trust_remote_code", False))
    if HUNYUAN_VL not in model_architectures(settings.model, trust):
        log.info("ocr.vision_tower subextract: only HunyuanOCR's tower runs here; vLLM reads %s's pictures",
                 settings.model)
        return None
    if not native_hunyuan_vl():
        log.info("ocr.vision_tower subextract: this vLLM's HunYuanVL takes no image embeddings; it reads pictures")
        return None
    from subextract.stages.ocr.vision_tower import HunYuanVisionTower

    try:
        return HunYuanVisionTower(settings.model, dtype=str(options.get("dtype", "auto")),
                                  random_weights=options.get("load_format") == "dummy", trust_remote_code=trust)
    except Exception as exc:  # noqa: BLE001 - transformers raises anything from OSError to ValueError here
        raise SubextractError(f"could not load {settings.model}'s vision tower: {one_line(exc)}") from None


def render_prompt(llm: Any, settings: OcrSettings) -> str:
    """The prompt text of every request: the preset's template, or the model's chat template
    applied once to a user turn of one image and the instruction (what ``vllm serve`` renders
    for the same chat request, so both engines send the model the same prompt)."""
    if settings.prompt_template:
        return settings.prompt_template.replace("{prompt}", settings.prompt)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": settings.prompt}]}]
    tokenizer = llm.get_tokenizer()
    if getattr(tokenizer, "chat_template", None):
        return bare_image_placeholder(llm, tokenizer.apply_chat_template(messages, tokenize=False,
                                                                           add_generation_prompt=True))
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(settings.model,
                                              trust_remote_code=settings.engine_options.get("trust_remote_code", False))
    if not getattr(processor, "chat_template", None):
        raise SubextractError(f"model {settings.model} has no chat template: set ocr.prompt_template in the config")
    return bare_image_placeholder(llm, processor.apply_chat_template(messages, tokenize=False,
                                                                     add_generation_prompt=True))


def prompt_token_ids(llm: Any, prompt: str) -> list[int]:
    """The ids vLLM itself makes of the prompt string: its tokenizer with special tokens added, as
    ``LLM.generate`` tokenises a text prompt (tests/test_vllm_prompts.py holds both to the model's
    processor). Images are expanded by vLLM afterwards, from the ids, in either case."""
    return list(llm.get_tokenizer().encode(prompt, add_special_tokens=True))


def bare_image_placeholder(llm: Any, prompt: str) -> str:
    """HunyuanOCR's chat template wraps its image token in image-start and image-end tokens, as
    its processor requires. vLLM's native HunYuanVL (0.26-0.28) adds both around the image token
    itself: handed the wrapped placeholder, it sent the model 315 tokens where the processor makes
    313 (start and end twice) and the first read failed. There the prompt holds the image token
    alone, and the model gets exactly the processor's tokens (313 = 313, the same ids, on the H200:
    bench/gpu.py). On vLLM's Transformers backend the processor itself needs the wrapped form."""
    if not native_hunyuan_vl() or HUNYUAN_VL not in (llm.llm_engine.model_config.architectures or []):
        return prompt
    tokenizer = llm.get_tokenizer()
    wrapped = tokenizer.image_start_token + tokenizer.image_token + tokenizer.image_end_token
    return prompt.replace(wrapped, tokenizer.image_token)
