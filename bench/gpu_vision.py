"""A benchmark lever, not product code: vLLM 0.26's PaddleOCR-VL with its vision tower run once per
engine step over all the step's images, instead of once per image.

vLLM's ``PaddleOCRVLForConditionalGeneration._process_image_input`` loops over the images of a
step and calls the 27-layer vision tower for each one alone (``encode_image``), though the tower
itself takes many images at once (its attention is variable-length over ``cu_seqlens``, its
position embedding is per image grid). Run batched, a step of k new crops costs one tower pass
instead of k: the measure of how much of the per-crop cost is that loop. vLLM's PaddleOCR-VL
accepts no ``image_embeds`` (only ``pixel_values``), so embeddings computed outside cannot be handed
over; this changes the loop inside instead.

``apply()`` patches the class in this process. As a vLLM general plugin (an entry point in the
``vllm.general_plugins`` group, which the GPU benchmark's device script registers) it runs in
every vLLM process, API servers and engine cores included, and patches only when
``SUBEXTRACT_BENCH_BATCH_VISION=1``.
"""

from __future__ import annotations

import itertools
import os
from typing import Any


def apply(force: bool = False) -> bool:
    """Patch vLLM's PaddleOCR-VL (once); whether it is patched now."""
    if not force and os.environ.get("SUBEXTRACT_BENCH_BATCH_VISION") != "1":
        return False
    import torch
    from vllm.model_executor.models import paddleocr_vl

    model_class = paddleocr_vl.PaddleOCRVLForConditionalGeneration
    if getattr(model_class, "_vision_batched", False):
        return True

    def process_image_input(self: Any, image_input: Any) -> Any:
        grids = image_input.image_grid_thw
        pixels = torch.cat(list(image_input.pixel_values), dim=0).type(self.visual.dtype)
        thw = [tuple(int(x) for x in grid.tolist()) for grid in grids]
        sizes = [t * h * w for t, h, w in thw]
        position_ids = torch.cat([torch.arange(n) % (h * w) for n, (_, h, w) in zip(sizes, thw)]).to(pixels.device)
        cu_seqlens = torch.tensor([0, *itertools.accumulate(sizes)], dtype=torch.int32, device=pixels.device)
        features = self.visual(pixel_values=pixels, image_grid_thw=thw, position_ids=position_ids,
                               interpolate_pos_encoding=True, cu_seqlens=cu_seqlens)
        return self.mlp_AR(features.squeeze(0).split(sizes), grids)

    model_class._process_image_input_per_image = model_class._process_image_input
    model_class._process_image_input = process_image_input
    model_class._vision_batched = True
    return True


def revert() -> None:
    from vllm.model_executor.models import paddleocr_vl

    model_class = paddleocr_vl.PaddleOCRVLForConditionalGeneration
    if getattr(model_class, "_vision_batched", False):
        model_class._process_image_input = model_class._process_image_input_per_image
        model_class._vision_batched = False


def same_embeddings(llm: Any, model_dir: str, pictures: list[Any]) -> float:
    """The largest relative difference, per picture, between the per-image and the batched tower's
    embeddings of ``pictures`` (PIL images) in the running in-process engine (``LLM.apply_model``):
    the check that batching computes the same function (bf16 rounding: ~1e-2 at most)."""
    import torch
    from transformers import AutoImageProcessor

    batch = AutoImageProcessor.from_pretrained(model_dir).preprocess(images=pictures, return_tensors="pt")
    sizes = batch["image_grid_thw"].prod(-1).tolist()

    def compare(model: Any) -> float:
        device = next(model.parameters()).device
        image_input = type("ImageInput", (), {})()
        image_input.pixel_values = [p.to(device) for p in batch["pixel_values"].split(sizes)]
        image_input.image_grid_thw = batch["image_grid_thw"].to(device)
        with torch.inference_mode():
            batched = type(model)._process_image_input(model, image_input)
            alone = type(model)._process_image_input_per_image(model, image_input)
        return max(float((b.float() - a.float()).norm() / a.float().norm()) for b, a in zip(batched, alone))

    return max(llm.apply_model(compare))
