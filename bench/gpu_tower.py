#!/usr/bin/env python3
"""HunyuanOCR's vision tower alone on the GPU, as the in-process vLLM engine runs it
(``subextract/stages/ocr/vision_tower.py``: a batch of crops of one size per pass), against its
arithmetic: crops/s, ms a crop, the achieved TFLOP/s and their share of the GPU's measured bf16
matrix rate (MFU), per variant, the variants alternating inside each round.

Variants:
  shipped          the module as it is
  bounds-on-gpu    the crops' sequence bounds (cu_seqlens) on the GPU, as before 2026-12-04: the
                   attention's .tolist() of them waits for the GPU in each of the 27 layers
  compiled         the shipped pass with each tower layer through torch.compile (default mode)

Needs torch and transformers only (the lent GPU machine has both, no vLLM): the module is loaded
from its file, since the package's __init__ pulls the pipeline's dependencies.

    python bench/gpu.py MODEL_DIR --make-model hunyuanocr        # on the CPU, then carried
    python bench/gpu_tower.py MODEL_DIR --out DIR [--n 512] [--rounds 3] [--size 1280x144]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from gpu import worker_peak  # noqa: E402  (the GPU's bf16 matrix rate, measured as bench/gpu.py does)

VARIANTS = ("shipped", "bounds-on-gpu", "compiled")


def _tower_module() -> Any:
    spec = importlib.util.spec_from_file_location("vision_tower", REPO / "subextract/stages/ocr/vision_tower.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pil_processor_without_torchvision() -> None:
    """transformers declares HunYuanVL's PIL image processor as needing torchvision; where that is
    missing (a CPU check here), map the config to the PIL class, which works without it."""
    import importlib.util as util

    if util.find_spec("torchvision") is not None:
        return
    from transformers import AutoImageProcessor, HunYuanVLConfig
    from transformers.models.hunyuan_vl.image_processing_pil_hunyuan_vl import HunYuanVLImageProcessorPil

    AutoImageProcessor.register(HunYuanVLConfig, image_processor_classes={
        "pil": HunYuanVLImageProcessorPil, "torchvision": HunYuanVLImageProcessorPil}, exist_ok=True)


def crops(count: int, width: int, height: int) -> list[np.ndarray]:
    """Subtitle-band-like BGR crops: a textured picture with a bright line of blocks, each its own."""
    rng = np.random.default_rng(0)
    out = []
    for _ in range(count):
        crop = rng.integers(0, 120, (height, width, 3), dtype=np.uint8)
        row = slice(height // 3, 2 * height // 3)
        for x in range(width // 8, 7 * width // 8, height // 3):
            crop[row, x:x + height // 4] = 235
        out.append(crop)
    return out


def tower_tflop(tower: Any, patches: int, merge: int) -> float:
    """One crop's arithmetic in the tower (a multiply-add is two): every linear layer and
    convolution over the rows it sees (the patches; the merger's over the merged patches) and
    attention's two products over the crop's patches."""
    import torch

    total = 0.0
    for name, module in tower.named_modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)):
            rows = patches // merge ** 2 if "merger" in name else patches
            total += 2 * module.weight.numel() * rows
    config = tower.config
    total += 4 * patches ** 2 * config.hidden_size * config.num_hidden_layers
    return total / 1e12


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a HunyuanOCR-shaped model directory (random weights are made from its config)")
    parser.add_argument("--out", required=True, help="the results folder")
    parser.add_argument("--n", type=int, default=512, help="crops a round (default 512)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", default="1280x144", help="the crops' size, WxH (default 1280x144)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    args = parser.parse_args()
    import torch

    _pil_processor_without_torchvision()
    module = _tower_module()
    tower = module.HunYuanVisionTower(args.model, random_weights=True)
    width, height = (int(v) for v in args.size.split("x"))
    pictures = crops(args.n, width, height)
    _, grid = tower.patches(pictures[:1])
    patches = grid[1] * grid[2]
    arithmetic = tower_tflop(tower.tower, patches, tower.merge_size)
    peak = worker_peak(args)["bf16_tflops"]
    shipped_bounds = module._bounds_on_gpu
    layers = list(tower.tower.layers)
    compiled = [torch.compile(layer) for layer in layers] if "compiled" in args.variants else None

    def run(variant: str) -> float:
        module._bounds_on_gpu = (lambda _tower: True) if variant == "bounds-on-gpu" else shipped_bounds
        tower.tower.layers = torch.nn.ModuleList(compiled if variant == "compiled" else layers)
        torch.cuda.synchronize()
        began = time.perf_counter()
        tower.embed(pictures)
        torch.cuda.synchronize()
        return time.perf_counter() - began

    started = time.perf_counter()
    reference = [e for e, _ in tower.embed(pictures[:8])]
    checks = {}
    for variant in args.variants:  # warm-up (and the compile) outside the rounds
        run(variant)
        embeddings = [e for e, _ in tower.embed(pictures[:8])]
        checks[variant] = max(float((a.float() - b.float()).abs().max() / b.float().abs().max())
                              for a, b in zip(embeddings, reference))
    warm_s = time.perf_counter() - started
    seconds: dict[str, list[float]] = {v: [] for v in args.variants}
    for _ in range(args.rounds):
        for variant in args.variants:
            seconds[variant].append(run(variant))
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "crops": args.n,
               "size": args.size, "grid": list(grid), "patches": patches, "dtype": str(tower.dtype),
               "attention": str(tower.tower.config._attn_implementation), "tflop_per_crop": arithmetic,
               "bf16_tflops": peak, "ceiling_crops_per_s": peak / arithmetic, "warm_up_s": warm_s, "variants": {}}
    lines = [f"{results['device']}, torch {results['torch']}, {args.n} crops of {args.size} ({patches} patches, "
             f"{results['dtype']}, attention {results['attention']}); {arithmetic:.3f} TFLOP a crop; bf16 matrix "
             f"rate {peak:.0f} TFLOP/s: tower ceiling {peak / arithmetic:.0f} crops/s", "",
             "| variant | crops/s median (range) | ms a crop | TFLOP/s | MFU | max relative difference to shipped |",
             "|---|---|---|---|---|---|"]
    for variant, times in seconds.items():
        rates = [args.n / s for s in times]
        rate = statistics.median(rates)
        results["variants"][variant] = {"seconds": times, "crops_per_s": rate, "mfu": rate * arithmetic / peak,
                                        "max_relative_difference": checks[variant]}
        lines.append(f"| {variant} | {rate:.1f} ({min(rates):.1f}-{max(rates):.1f}) | {1000 / rate:.2f} | "
                     f"{rate * arithmetic:.0f} | {100 * rate * arithmetic / peak:.1f} % | {checks[variant]:.2e} |")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tower.json").write_text(json.dumps(results, indent=1))
    (out / "tower.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
