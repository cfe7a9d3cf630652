"""PyTorch inference through Hugging Face transformers (``model.generate``, batched): the
development and debugging path, and the baseline the vLLM engines are measured against
(docs/gpu.md).

Pictures are read ``batch_size`` at a time: one processor call pads the prompts on the left (a
decoder-only model continues every row from its last token) and one ``generate`` call decodes
the batch together. There is no continuous batching: a batch lasts as long as its longest reply,
which is why vLLM is faster on the same model.

``engine_options`` keys read here: ``batch_size`` (16), ``device`` (cuda when there is one, else
cpu), ``dtype`` (``auto``: the checkpoint's; or ``bfloat16``, ``float32``...),
``attn_implementation``, ``trust_remote_code``, and ``load_format: dummy`` (random weights
built from the model's config, as vLLM's option of that name: for benchmarks of a model shape).
The other keys of the shared ``ocr.engine_options`` are vLLM's and do not apply.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from subextract.clients.vllm_runtime import one_line
from subextract.config import OcrSettings
from subextract.errors import SubextractError
from subextract.schema import LineBox, Reading
from subextract.stages.ocr.vlm import Reply, read_pictures, to_pil

log = logging.getLogger(__name__)


class TransformersEngine:
    name = "transformers"

    def __init__(self, settings: OcrSettings) -> None:
        if not settings.model:
            raise SubextractError("engine transformers needs a model: --model PATH_OR_HUB_ID (or a preset such "
                                  "as --config paddleocr-vl)")
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise SubextractError(f"engine transformers needs torch and transformers ({exc}): "
                                  "pip install torch transformers") from None
        self.settings = settings
        options = settings.engine_options
        self.batch_size = max(1, int(options.get("batch_size", 16)))
        self.device = torch.device(options.get("device") or ("cuda" if torch.cuda.is_available() else "cpu"))
        trust = bool(options.get("trust_remote_code", False))
        try:
            self._processor = transformers.AutoProcessor.from_pretrained(settings.model, trust_remote_code=trust)
            self._model = _load_model(transformers, torch, settings.model, options, self.device, trust)
        except Exception as exc:  # noqa: BLE001 - transformers raises anything from OSError to ValueError here
            raise SubextractError(f"transformers could not load model {settings.model}: {one_line(exc)}") from None
        self._tokenizer = self._processor.tokenizer
        self._tokenizer.padding_side = "left"
        self._prompt = render_prompt(self._processor, settings)
        generation = self._model.generation_config
        eos = generation.eos_token_id if generation.eos_token_id is not None else self._tokenizer.eos_token_id
        self._stop_ids = sorted({eos} if isinstance(eos, int) else set(eos or ()))
        # What every generate call gets (a benchmark may add min_new_tokens to force a reply length).
        self.generation_kwargs: dict[str, Any] = {
            "max_new_tokens": settings.max_tokens, "repetition_penalty": settings.repetition_penalty,
            "do_sample": settings.temperature > 0, "pad_token_id": self._tokenizer.pad_token_id,
        }
        if settings.temperature > 0:
            self.generation_kwargs["temperature"] = settings.temperature
        log.info("transformers engine: %s on %s (%s), batch %d", settings.model, self.device, self._model.dtype,
                 self.batch_size)

    def read_batch(self, images: Sequence[np.ndarray],
                   line_boxes: Sequence[Sequence[LineBox]] | None = None) -> list[Reading]:
        """The model reads each whole strip; the segmenter's line boxes bound each reply's length."""
        return read_pictures(images, self.settings, self._generate, line_boxes)

    def _generate(self, pictures: Sequence[np.ndarray], limits: Sequence[int]) -> list[Reply]:
        replies: list[Reply] = []
        for start in range(0, len(pictures), self.batch_size):
            try:
                replies.extend(self._generate_batch(pictures[start:start + self.batch_size],
                                                    limits[start:start + self.batch_size]))
            except Exception as exc:  # noqa: BLE001 - an engine failure ends the run with one line
                raise SubextractError(f"transformers failed: {one_line(exc)}") from None
        return replies

    def _generate_batch(self, pictures: Sequence[np.ndarray], limits: Sequence[int]) -> list[Reply]:
        import torch

        inputs = self._processor(text=[self._prompt] * len(pictures), images=[to_pil(p) for p in pictures],
                                 padding=True, return_tensors="pt").to(self.device, dtype=self._model.dtype)
        # One generate call runs to its longest row's bound; each row is then cut to its own.
        kwargs = dict(self.generation_kwargs)
        kwargs["max_new_tokens"] = min(kwargs["max_new_tokens"], max(limits))
        if "min_new_tokens" in kwargs:
            kwargs["min_new_tokens"] = min(kwargs["min_new_tokens"], kwargs["max_new_tokens"])
        with torch.inference_mode():
            output = self._model.generate(**inputs, **kwargs, return_dict_in_generate=True, output_scores=True)
            new_tokens = output.sequences[:, inputs["input_ids"].shape[1]:]
            log_probs = self._model.compute_transition_scores(output.sequences, output.scores, normalize_logits=True)
        # A row's reply ends at its first stop token; generate pads the rows that finished early.
        stopped = torch.isin(new_tokens, torch.tensor(self._stop_ids, device=new_tokens.device))
        in_reply = (stopped.int().cumsum(dim=1) == 0).cpu()
        in_reply &= torch.arange(in_reply.shape[1]) < torch.tensor(list(limits)).unsqueeze(1)
        new_tokens, log_probs = new_tokens.cpu(), log_probs.float().cpu()
        replies = []
        for tokens, scores, keep in zip(new_tokens, log_probs, in_reply):
            text = self._tokenizer.decode(tokens[keep], skip_special_tokens=self.settings.skip_special_tokens)
            kept = scores[keep]
            confidence = float(torch.exp(kept).mean()) if kept.numel() else 1.0
            replies.append(Reply(text=text, confidence=confidence if math.isfinite(confidence) else 0.0))
        return replies


def _load_model(transformers: Any, torch: Any, model: str, options: dict[str, Any], device: Any, trust: bool) -> Any:
    dtype_name = str(options.get("dtype", "auto"))
    dtype = dtype_name if dtype_name == "auto" else getattr(torch, dtype_name)
    extra = {"attn_implementation": options["attn_implementation"]} if options.get("attn_implementation") else {}
    auto = transformers.AutoModelForImageTextToText
    if options.get("load_format") == "dummy":
        config = transformers.AutoConfig.from_pretrained(model, trust_remote_code=trust)
        if dtype == "auto":
            dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
        with device:  # initialised on the device itself: random weights need no host copy
            loaded = auto.from_config(config, dtype=dtype, trust_remote_code=trust, **extra)
    else:
        loaded = auto.from_pretrained(model, dtype=dtype, trust_remote_code=trust, **extra).to(device)
    return loaded.eval()


def render_prompt(processor: Any, settings: OcrSettings) -> str:
    """The prompt of every request: the preset's template, or the model's chat template applied
    once to a user turn of one image and the instruction (what the vLLM engines send)."""
    if settings.prompt_template:
        return settings.prompt_template.replace("{prompt}", settings.prompt)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": settings.prompt}]}]
    for owner in (processor, getattr(processor, "tokenizer", None)):
        if getattr(owner, "chat_template", None):
            return owner.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    raise SubextractError(f"model {settings.model} has no chat template: set ocr.prompt_template in the config")
