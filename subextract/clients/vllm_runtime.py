"""Starting an in-process vLLM engine (``vllm.LLM``) with errors a user can act on."""

from __future__ import annotations

import math
import os
from typing import Any

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
    try:
        return LLM(model=model, **options)
    except Exception as exc:  # noqa: BLE001 - vLLM raises anything from OSError to ValueError here
        raise SubextractError(f"vLLM could not start model {model}: {one_line(exc)}") from None


def mean_token_probability(completion: Any) -> float:
    """The mean probability of a vLLM completion's tokens (1.0 when it reported none)."""
    steps = zip(completion.token_ids, completion.logprobs or [])
    probabilities = [math.exp(step[token].logprob) for token, step in steps if token in step]
    return sum(probabilities) / len(probabilities) if probabilities else 1.0


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
