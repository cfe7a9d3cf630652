"""subextract's vLLM plugin: HunyuanOCR (``HunYuanVLForConditionalGeneration``) on the vLLM
versions that carry its native module (``vllm.model_executor.models.hunyuan_vision``: 0.26 on
the lent H200; from 0.29 on vLLM runs the model through its Transformers backend instead).

The package declares ``register`` as a ``vllm.general_plugins`` entry point, so vLLM runs it in
every process it starts wherever subextract is installed: the in-process engine, and a
``vllm serve`` in the same environment. ``start_llm`` also calls it, for a source checkout whose
entry points are not installed. On a vLLM without the native module it does nothing.

What the registered model (``subextract.clients.vllm_hunyuan_vl``) changes is listed there: the
model callable the way vLLM's V2 model runner calls it, the vision tower run once per engine step
over all the step's crops of one size, and ``image_embeds`` computed outside vLLM accepted.
"""

from __future__ import annotations

import importlib.util

ARCHITECTURE = "HunYuanVLForConditionalGeneration"
BATCHED_MODEL = "subextract.clients.vllm_hunyuan_vl:BatchedHunYuanVLForConditionalGeneration"
_NATIVE_MODULE = "vllm.model_executor.models.hunyuan_vision"


def native_hunyuan_vl() -> bool:
    """Whether this vLLM has its native HunYuanVL module (found without importing it: plugins
    run early in every vLLM process, before CUDA may be touched)."""
    try:
        return importlib.util.find_spec(_NATIVE_MODULE) is not None
    except ModuleNotFoundError:
        return False


def register() -> bool:
    """Register the batched HunYuanVL in vLLM's model registry; whether it is registered."""
    if not native_hunyuan_vl():
        return False
    from vllm import ModelRegistry

    ModelRegistry.register_model(ARCHITECTURE, BATCHED_MODEL)
    return True
