"""HunyuanOCR's vision tower run by subextract itself, a batch of crops at a time on the GPU, for
the in-process vLLM engine to hand vLLM the embeddings (``image_embeds``) instead of pictures.

Handed pictures, vLLM prepares each one on its own, on the host, in its per-request loop (the
model's Hugging Face image processor: resize, normalise, cut into patches; ~5 ms a 1536x192 crop)
and then runs the tower over each crop on its own. Here every step is a batch operation on the
GPU: one upload of all crops of one size, one resize, one normalisation, and each of the tower's
layers once for all of them. What each crop gets is the model's own computation:

- preparation as the model's image processor does it (``smart_resize`` to a multiple of 32 pixels
  with at least ``min_pixels``; bicubic as PIL resamples, rounded to 8 bits as PIL's RGB picture
  is; rescaled and normalised with the processor's mean and standard deviation; 16-pixel patches
  in raster order). Written out here because the processor's own batched, tensor-based version
  needs torchvision, which the CPU build of vLLM cannot sit beside; a test holds it to the
  processor's output.
- the tower itself is transformers' ``HunYuanVLVisionTransformer``: its modules and weights, its
  layers called with a batch of crops of one size instead of one crop (its attention is
  per-crop either way); a test holds the batched embeddings to its own per-crop ones.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

# Patches per pass through the tower: bounds the activations (64 crops of 1536x192: ~74k patches,
# ~1.3 GB of bf16 MLP activations). Counted in patches, not pictures: 64 pictures of eight
# stacked strips (7,040 patches each) ran the H200 out of memory.
MAX_PATCHES_PER_PASS = 64 * 1152


def visual_tokens(grid_h: int, grid_w: int, merge_size: int) -> int:
    """The embeddings a crop of (grid_h x grid_w) patches becomes: a row of merged patches plus
    a newline per merged row, then the begin and end embeddings."""
    return (grid_h // merge_size) * (grid_w // merge_size + 1) + 2


class HunYuanVisionTower:
    """``embed(pictures)``: each picture's embeddings (tokens x text hidden size, on the CPU)
    and its patch grid (t, h, w), as vLLM takes them for ``image_embeds``."""

    def __init__(self, model: str, *, device: str | None = None, dtype: str = "auto", random_weights: bool = False,
                 trust_remote_code: bool = False) -> None:
        import torch
        import transformers

        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        config = transformers.AutoConfig.from_pretrained(model, trust_remote_code=trust_remote_code)
        self.dtype = _dtype(torch, dtype, config, self.device)
        processor = transformers.AutoImageProcessor.from_pretrained(model, trust_remote_code=trust_remote_code)
        self.patch_size = int(processor.patch_size)
        self.merge_size = int(processor.merge_size)
        self.min_pixels = int(processor.size["shortest_edge"])
        self.max_pixels = int(processor.size["longest_edge"])
        self.mean = torch.tensor(processor.image_mean, device=self.device).view(1, 3, 1, 1)
        self.std = torch.tensor(processor.image_std, device=self.device).view(1, 3, 1, 1)
        self.tower = _load_tower(transformers, torch, model, config, self.device, self.dtype, random_weights,
                                 trust_remote_code)

    def embed(self, pictures: Sequence[np.ndarray]) -> list[tuple[Any, Any]]:
        """(embeddings, grid) per picture: grey, or BGR as OpenCV gives it, uint8."""
        import torch

        by_size: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for index, picture in enumerate(pictures):
            by_size[picture.shape].append(index)
        out: list[tuple[Any, Any] | None] = [None] * len(pictures)
        with torch.inference_mode():
            for shape, members in by_size.items():
                resized = self.resized(shape)
                per_pass = self.pictures_per_pass(resized)
                for start in range(0, len(members), per_pass):
                    chunk = members[start:start + per_pass]
                    patches, grid = self.patches([pictures[i] for i in chunk], resized)
                    embeddings = self.tower_batch(patches, grid).to("cpu")
                    grid_row = torch.tensor([grid], dtype=torch.long)
                    for position, index in enumerate(chunk):
                        out[index] = (embeddings[position], grid_row)
        return out  # type: ignore[return-value]

    def resized(self, shape: tuple[int, ...]) -> tuple[int, int]:
        """The (height, width) the model's processor resizes a picture of ``shape`` to."""
        from transformers.models.hunyuan_vl.image_processing_pil_hunyuan_vl import smart_resize

        return smart_resize(shape[0], shape[1], factor=self.patch_size * self.merge_size,
                            min_pixels=self.min_pixels, max_pixels=self.max_pixels)

    def pictures_per_pass(self, resized: tuple[int, int]) -> int:
        """Pictures resized to ``resized`` that one pass holds within ``MAX_PATCHES_PER_PASS`` (at least one)."""
        height, width = resized
        return max(1, MAX_PATCHES_PER_PASS // (height * width // self.patch_size ** 2))

    def patches(self, pictures: Sequence[np.ndarray],
                resized: tuple[int, int] | None = None) -> tuple[Any, tuple[int, int, int]]:
        """Pictures of one size as the processor prepares them (resized to ``resized``, by default
        ``self.resized`` of their shape): (crops, patches, 3 * 16 * 16) float32, and their patch grid."""
        import torch

        batch = torch.from_numpy(np.stack(pictures)).to(self.device)
        batch = batch.unsqueeze(1).expand(-1, 3, -1, -1) if batch.ndim == 3 else batch.flip(-1).permute(0, 3, 1, 2)
        height, width = batch.shape[-2:]
        new_height, new_width = resized or self.resized((height, width))
        pixels = batch.float()
        # PIL's bicubic resampling (antialias=True: its filter, a = -0.5, widened when shrinking), as PIL
        # runs it on an 8-bit picture: the width first, rounded to 8 bits, then the height, rounded.
        for size in ((height, new_width), (new_height, new_width)):
            if tuple(pixels.shape[-2:]) != size:
                pixels = torch.nn.functional.interpolate(pixels, size=size, mode="bicubic", antialias=True,
                                                         align_corners=False).round_().clamp_(0, 255)
        pixels = (pixels / 255 - self.mean) / self.std
        size = self.patch_size
        grid_h, grid_w = new_height // size, new_width // size
        patches = (pixels.view(len(pictures), 3, grid_h, size, grid_w, size).permute(0, 2, 4, 1, 3, 5)
                   .reshape(len(pictures), grid_h * grid_w, 3 * size * size))
        return patches, (1, grid_h, grid_w)

    def tower_batch(self, patches: Any, grid: tuple[int, int, int]) -> Any:
        """The tower over crops of one grid: (crops, patches, 768) in, (crops, tokens, hidden) out."""
        import torch

        tower = self.tower
        crops, length, _ = patches.shape
        _, grid_h, grid_w = grid
        embed = tower.embeddings
        pixels = patches.reshape(crops * length, 3, self.patch_size, self.patch_size).to(self.dtype)
        hidden = embed.patch_embedding(pixels).flatten(1).view(crops, length, -1)
        hidden = hidden + embed.interpolate_pos_encoding(hidden, grid_h, grid_w)
        # One sequence per crop: the layers' attention splits a batch at cu_seqlens (here: none
        # inside a crop, every row of the batch is a crop of its own).
        cu_seqlens = torch.tensor([0, length], dtype=torch.int32,
                                  device=hidden.device if _bounds_on_gpu(tower) else "cpu")
        for layer in tower.layers:
            hidden = layer(hidden, cu_seqlens=cu_seqlens, max_seqlen=length, attention_mask=None)
        return tower.patch_merger(hidden, size=(grid_h, grid_w))


def _bounds_on_gpu(tower: Any) -> bool:
    """Where the crops' sequence bounds go: flash attention reads them on the GPU; every other
    implementation calls .tolist() on them in each layer, which on a GPU tensor waits for all the
    work queued so far (27 waits a pass, the host unable to queue the next layer ahead)."""
    return "flash" in str(getattr(tower.config, "_attn_implementation", ""))


def _dtype(torch: Any, name: str, config: Any, device: Any) -> Any:
    if name != "auto":
        return getattr(torch, name)
    if device.type != "cuda":
        return torch.float32
    configured = getattr(config, "dtype", None) or getattr(config.text_config, "dtype", None)
    return configured if isinstance(configured, torch.dtype) else torch.bfloat16


def _load_tower(transformers: Any, torch: Any, model: str, config: Any, device: Any, dtype: Any,
                random_weights: bool, trust_remote_code: bool) -> Any:
    """transformers' vision tower of ``model``: its checkpoint's weights, or random ones from
    the config alone (``load_format: dummy``, for benchmarks of a model shape)."""
    from transformers.models.hunyuan_vl.modeling_hunyuan_vl import HunYuanVLVisionTransformer

    if random_weights:
        with device:
            tower = HunYuanVLVisionTransformer._from_config(config.vision_config, dtype=dtype)
    else:
        full = transformers.AutoModelForImageTextToText.from_pretrained(model, dtype=dtype,
                                                                        trust_remote_code=trust_remote_code)
        tower = full.model.vision_tower.to(device)
        del full
    log.info("vision tower of %s on %s (%s)", model, device, dtype)
    return tower.eval()
