"""The project's GPU benchmark: subextract's VLM engines on one GPU, per engine and setting.

For each setting it reports crops/s (all crops handed over at once), first-token and
full-response latency p50/p95 at each load level, the load at which the full-response latency
doubles against one request alone, GPU memory and start-up time. Every setting runs in a child
process of its own, so start-up and memory are its own and one that fails or hangs costs only its
slot (``--timeout``).

The crops are synthetic 1280x144 subtitle bands (noisy grey, one white outlined text line), the
size the presets scale a band to. The model is a directory with a config, tokenizer and processor;
``load_format: dummy`` gives it random weights, and random weights never emit an end of sequence:
every reply is forced to ``--tokens`` tokens (min = max, end of sequence ignored), a realistic
subtitle line (24 tokens by default), and the table states it.

Engines and settings (``--sets``, comma-separated):
  peak               the GPU's bf16 matrix rate (an 8192^3 product): with the crop's arithmetic from the
                     model's config it gives the ceiling in crops/s and each setting's MFU (ceiling.md)
  vllm-shipped       the in-process engine with the preset as shipped (its options and ``vision_tower``)
  vllm-pixels        the same with ``vision_tower: vllm``: vLLM gets the pictures (subextract's vLLM
                     plugin runs HunYuanVL's tower batched per step)
  vllm-native        the engine before subextract's plugin: vLLM's own HunYuanVL, its tower once per crop,
                     on the V1 model runner (the V2 runner cannot start that class)
  transformers       the transformers engine (PyTorch generate) at batch 1 and batched (``--tf-batch``)
  vllm-default       the in-process vLLM engine with vLLM's own defaults (compiled, CUDA graphs;
                     chunked prefill is on by default in vLLM's V1 engine)
  vllm-nochunk       the same without chunked prefill (enable_chunked_prefill false), eager
  vllm-preset        the preset's options (chunked prefill, 16384-token steps, no prefix or image
                     cache), eager; plus the levers: fed 16 at a time as the pipeline does, stacked
                     strips (the stacked pass alone, and the whole path with replies forced to one
                     line per strip by a grammar), quarter-size pictures, no log-probabilities, and
                     the vision tower run batched over each step's images (bench/gpu_vision.py)
  server-aA-rR[-seq][-vis]
                     R ``vllm serve`` replicas on the one GPU, each with A API-server processes,
                     requests kept in flight continuously by a streaming client; plus the product's
                     openai engine against the first replica. ``seq``: each replica started once
                     the one before has measured its memory; ``vis``: the vision tower batched;
                     ``ship``: the server line docs/gpu.md gives for the preset (compiled) instead of
                     the benchmark's eager one

  shipped-rR         the preset as shipped with ``ocr.replicas`` R: the product's own engine processes
                     on the one GPU (stages/ocr/replicas.py); one call of --n crops, 16 at a time, and
                     4R callers at once reading 64 crops a call for --phase-s seconds
  replicas-rR[-compiled]
                     R in-process engines (the product's ``--engine vllm``), one process each, on the
                     one GPU, started one after another, with the vision tower batched and 640x72
                     pictures; then phases in which 1, 2, 4, ... R of them read at once, each keeping
                     its engine fed with ``--replica-chunk`` crops a call: aggregate crops/s and GPU
                     utilisation per phase. The first replica first measures single-crop latency
                     alone. ``compiled``: vLLM's compiled engine with CUDA graphs instead of eager

Load levels: in-process, a level is the number of crops in one ``read_batch`` (they are read
together, so the full-response latency of each is the batch's time); over HTTP it is the number
of requests kept in flight (a new one starts as soon as one ends).

Every vLLM setting also records the prompt tokens vLLM makes of the engine's request (or the
server of a chat request) against the model's Hugging Face processor's for the same picture, and
the vision-tower settings the batched embeddings against the per-crop ones.

Usage (on the GPU machine, with vLLM and torch importable):
  python bench/gpu.py MODEL_DIR --make-model hunyuanocr      # a config-only HunyuanOCR-shaped model
  python bench/gpu.py MODEL_DIR --out DIR [--sets transformers,vllm-default,...] [--tokens 24]
Writes DIR/results.json (every number), DIR/table.md (the table docs/gpu.md carries) and DIR/ceiling.md.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import dataclasses
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WORDS = ("the quick brown fox jumps over a lazy dog where are you going tonight thank you for "
         "your help see you tomorrow it is getting late we should go home").split()
LEVELS = {"in_process": (1, 4, 16, 64, 256), "http": (1, 4, 16, 64, 256, 512)}


def band_crops(count: int, width: int = 1280, height: int = 144, seed: int = 0) -> list[np.ndarray]:
    """Grey bands (noisy mid-grey) with one white, black-outlined text line each."""
    from PIL import Image, ImageDraw, ImageFont

    rng = np.random.default_rng(seed)
    font = ImageFont.load_default(size=int(height * 0.42))
    crops = []
    for i in range(count):
        picture = Image.fromarray(np.clip(rng.normal(95, 25, (height, width)), 0, 255).astype("uint8"))
        text = f"{i:03d} " + " ".join(rng.choice(WORDS, int(rng.integers(4, 8))))
        draw = ImageDraw.Draw(picture)
        box = draw.textbbox((0, 0), text, font=font, stroke_width=3)
        x, y = max(0, (width - (box[2] - box[0])) // 2), max(0, (height - (box[3] - box[1])) // 2)
        draw.text((x, y), text, fill=235, font=font, stroke_width=3, stroke_fill=10)
        crops.append(np.asarray(picture))
    return crops


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"p50": math.nan, "p95": math.nan}
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return {"p50": ordered[len(ordered) // 2], "p95": p95}


def doubling_level(levels: dict[str, dict[str, Any]]) -> int | None:
    """The smallest load whose full-response p50 is at least twice that of load 1."""
    base = levels.get("1", {}).get("full_s", {}).get("p50")
    for level, row in sorted(levels.items(), key=lambda kv: int(kv[0])):
        if base and row["full_s"]["p50"] >= 2 * base:
            return int(level)
    return None


# -- in-process engines -----------------------------------------------------------------------------

def ocr_settings(preset: str, engine: str, model: str, tokens: int, options: dict[str, Any] | None,
                 replace_options: bool = False):
    from subextract.config import load_settings

    settings = load_settings(preset, overrides={"ocr": {"engine": engine, "model": model, "max_tokens": tokens,
                                                        "engine_options": options if not replace_options else None}})
    if replace_options:
        settings = dataclasses.replace(settings, ocr=dataclasses.replace(settings.ocr, engine_options=dict(options)))
    return settings.ocr


def engine_rounds_parser(description: str) -> argparse.ArgumentParser:
    """The arguments of the one-engine A/B benches (gpu_hostwork.py, gpu_stack.py, gpu_callers.py):
    the model, the output folder, the preset, the crops read a round, the rounds, the reply length
    and engine options over the preset's."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--out", required=True)
    parser.add_argument("--preset", default="hunyuanocr")
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=24, help="reply tokens (a stack: per strip)")
    parser.add_argument("--engine-options", type=json.loads, default={},
                        help="JSON merged over the preset's engine options (a small model on the CPU)")
    return parser


def force_reply_length(engine: Any, tokens: int, logprobs: bool = True) -> None:
    """Every reply exactly ``tokens`` long: random weights would otherwise run to max_tokens."""
    if engine.name == "transformers":
        engine.generation_kwargs.update(max_new_tokens=tokens, min_new_tokens=tokens)
        return
    from vllm import SamplingParams

    # The engine's own choices of how vLLM hands replies back (flat log-probabilities, no
    # detokenising) stay as they are: they are part of the path measured.
    kept = {name: getattr(engine._params, name) for name in ("flat_logprobs", "detokenize", "skip_special_tokens")
            if hasattr(engine._params, name)}
    engine._params = SamplingParams(temperature=0.0, max_tokens=tokens, min_tokens=tokens, ignore_eos=True,
                                    logprobs=0 if logprobs else None, **kept)


def timed_read(engine: Any, crops: list[np.ndarray]) -> float:
    began = time.perf_counter()
    engine.read_batch(crops)
    return time.perf_counter() - began


def read_with_latencies(engine: Any, crops: list[np.ndarray], tokens: int) -> tuple[float, list[float]]:
    """The batch's time, and each request's time to its first token: vLLM's own per-request
    metric of the same read where the engine logs stats, otherwise the time to a one-token
    reply of the same batch (transformers: no cache could make that second read cheaper)."""
    captured: list[Any] = []
    # With the vision tower run by subextract, vLLM's own first-token clock starts after it: time a
    # one-token reply of the whole read instead.
    if engine.name == "vllm" and getattr(engine, "_tower", None) is None:
        generate = engine._llm.generate

        def recording(*args: Any, **kwargs: Any) -> Any:
            outputs = generate(*args, **kwargs)
            captured.extend(outputs)
            return outputs

        engine._llm.generate = recording
    try:
        seconds = timed_read(engine, crops)
    finally:
        if captured or (engine.name == "vllm" and getattr(engine, "_tower", None) is None):
            engine._llm.generate = generate
    firsts = [o.metrics.first_token_latency for o in captured if getattr(o, "metrics", None) is not None]
    if len(firsts) == len(crops) and all(v > 0 for v in firsts):
        return seconds, firsts
    force_reply_length(engine, 1)
    try:
        first = timed_read(engine, crops)
    finally:
        force_reply_length(engine, tokens)
    return seconds, [first] * len(crops)


def in_process_levels(engine: Any, tokens: int, levels: tuple[int, ...], budget_s: float) -> dict[str, dict[str, Any]]:
    """Each level on crops the engine has never seen (seeded apart from the bulk run's): vLLM's
    default prefix and image caches would otherwise turn a repeated crop into a cache hit."""
    rows: dict[str, dict[str, Any]] = {}
    for level in levels:
        repeats = max(1, min(8, 64 // level))
        crops = band_crops(level * repeats, seed=1000 + level)
        full, first = [], []
        began = time.perf_counter()
        for r in range(repeats):
            seconds, firsts = read_with_latencies(engine, crops[r * level:(r + 1) * level], tokens)
            full.extend([seconds] * level)
            first.extend(firsts)
            if time.perf_counter() - began > budget_s:
                break
        rows[str(level)] = {"first_token_s": percentiles(first), "full_s": percentiles(full),
                            "crops_per_s": level / statistics.median(full)}
        print(f"  load {level}: full p50 {rows[str(level)]['full_s']['p50']:.3f} s, "
              f"first {rows[str(level)]['first_token_s']['p50']:.3f} s", flush=True)
    return rows


def checked(measure: Any) -> Any:
    """A check's result, or its error as the result (a check that fails is a finding too)."""
    try:
        return measure()
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def prompt_tokens(engine: Any, crop: np.ndarray) -> dict[str, Any]:
    """The tokens vLLM makes of the engine's own request for one crop, against the model's Hugging
    Face processor's for the chat template's prompt and the same picture."""
    from transformers import AutoProcessor
    from vllm import SamplingParams

    from subextract.stages.ocr.vlm import prepare, stack_strips, to_pil

    settings = engine.settings
    picture = prepare(crop, settings.max_side, settings.max_pixels)
    sent = engine._llm.generate(engine.requests([picture]), SamplingParams(max_tokens=1), use_tqdm=False)[0]
    processor = AutoProcessor.from_pretrained(settings.model)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": settings.prompt}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    reference = processor(text=[text], images=[to_pil(picture)], return_tensors="pt")["input_ids"][0].tolist()
    return {"vllm": len(sent.prompt_token_ids), "hf_processor": len(reference),
            "same_ids": list(sent.prompt_token_ids) == reference}


def tower_against_per_crop(engine: Any, crops: list[np.ndarray]) -> dict[str, Any]:
    """subextract's batched tower against transformers' own per-crop tower (the same module and
    weights, one crop at a time), on the GPU in the engine's dtype: the largest relative difference."""
    import torch

    from subextract.stages.ocr.vlm import prepare

    tower = engine._tower
    pictures = [prepare(c, engine.settings.max_side, engine.settings.max_pixels) for c in crops]
    batched = tower.embed(pictures)
    worst = 0.0
    with torch.inference_mode():
        for picture, (embeds, grid) in zip(pictures, batched):
            patches, _ = tower.patches([picture])
            alone = tower.tower(patches[0].to(tower.dtype), grid_thw=grid.to(tower.device)).pooler_output
            alone = alone.reshape(-1, alone.shape[-1]).float().cpu()
            worst = max(worst, float((embeds.float() - alone).norm() / alone.norm()))
    return {"max_relative_difference": worst, "crops": len(crops), "dtype": str(tower.dtype)}


def vllm_tower_against_per_crop(engine: Any, crops: list[np.ndarray]) -> dict[str, Any]:
    """subextract's plugin: vLLM's HunYuanVL tower batched by grid size against vLLM's own per-crop
    loop, the same weights, inside the running engine."""
    import torch
    from transformers import AutoImageProcessor

    from subextract.stages.ocr.vlm import prepare, stack_strips, to_pil

    settings = engine.settings
    batch = AutoImageProcessor.from_pretrained(settings.model).preprocess(
        images=[to_pil(prepare(c, settings.max_side, settings.max_pixels)) for c in crops], return_tensors="pt")

    def compare(model: Any) -> float:
        from subextract.clients.vllm_hunyuan_vl import vision_tower

        grids = batch["image_grid_thw"].tolist()
        pixels = batch["pixel_values"].to(model.visual.device)
        with torch.inference_mode():
            batched = vision_tower(model.visual, pixels, grids)
            alone = model.visual(pixels, grid_thw=grids)
        return max(float((b.float() - a.float()).norm() / a.float().norm()) for b, a in zip(batched, alone))

    return {"max_relative_difference": max(engine._llm.apply_model(compare)), "crops": len(crops)}


def bulk(engine: Any, crops: list[np.ndarray]) -> dict[str, float]:
    seconds = timed_read(engine, crops)
    return {"crops": len(crops), "seconds": seconds, "crops_per_s": len(crops) / seconds}


def fed_16_at_a_time(engine: Any, crops: list[np.ndarray]) -> dict[str, float]:
    """256 crops read 16 a call, as one video's pipeline feeds the engine."""
    began = time.perf_counter()
    for start in range(0, 256, 16):
        engine.read_batch(crops[start:start + 16])
    return {"crops": 256, "crops_per_s": 256 / (time.perf_counter() - began)}


def worker_in_process(args: argparse.Namespace) -> dict[str, Any]:
    crops = band_crops(max(args.n, 256))
    result: dict[str, Any] = {"setting": args.worker, "tokens": args.tokens}
    began = time.perf_counter()
    if args.worker == "transformers":
        settings = ocr_settings(args.preset, "transformers", args.model, args.tokens,
                                {"load_format": "dummy", "dtype": "bfloat16", "batch_size": 1}, replace_options=True)
    elif args.worker == "vllm-default":
        settings = ocr_settings(args.preset, "vllm", args.model, args.tokens,
                                {"load_format": "dummy", "trust_remote_code": False, "disable_log_stats": False},
                                replace_options=True)
    elif args.worker in ("vllm-shipped", "vllm-pixels", "vllm-native"):
        # The preset as shipped (its options, its vision_tower), with random weights.
        settings = ocr_settings(args.preset, "vllm", args.model, args.tokens,
                                {"load_format": "dummy", "disable_log_stats": False})
        if args.worker == "vllm-native":
            # The engine before this round: vLLM's own HunYuanVL (its tower once per crop) on the V1 model
            # runner (the V2 runner cannot start the native class), without subextract's vLLM plugin.
            os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "0"
            from subextract.clients import vllm_plugin

            vllm_plugin.register = lambda: False
    elif args.worker == "vllm-nochunk":
        settings = ocr_settings(args.preset, "vllm", args.model, args.tokens,
                                {"load_format": "dummy", "trust_remote_code": False, "disable_log_stats": False,
                                 "enforce_eager": True, "enable_chunked_prefill": False, "max_model_len": 4096,
                                 "limit_mm_per_prompt": {"image": 1}, "enable_prefix_caching": False,
                                 "mm_processor_cache_gb": 0}, replace_options=True)
    else:  # vllm-preset
        settings = ocr_settings(args.preset, "vllm", args.model, args.tokens,
                                {"load_format": "dummy", "trust_remote_code": False, "disable_log_stats": False,
                                 "enforce_eager": True, "enable_chunked_prefill": True})
    if args.worker in ("vllm-default", "vllm-nochunk", "vllm-pixels", "vllm-native"):
        settings = dataclasses.replace(settings, vision_tower="vllm")  # vLLM is handed the pictures
    if args.runner_v1:
        os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "0"
        result["model_runner"] = "V1"
    if args.picture:
        width, height = (int(v) for v in args.picture.split("x"))
        settings = dataclasses.replace(settings, max_side=width, max_pixels=width * height)
        result["picture"] = args.picture
    from subextract.stages.ocr import create_engine

    engine = create_engine(settings)
    result["start_s"] = time.perf_counter() - began
    result["engine_options"] = settings.engine_options
    if engine.name == "vllm":
        config = engine._llm.llm_engine.vllm_config
        result["vllm"] = {"max_num_seqs": config.scheduler_config.max_num_seqs,
                          "max_num_batched_tokens": config.scheduler_config.max_num_batched_tokens,
                          "chunked_prefill": config.scheduler_config.enable_chunked_prefill,
                          "enforce_eager": config.model_config.enforce_eager}
    force_reply_length(engine, args.tokens)
    engine.read_batch(crops[:4])  # warm-up: first-call allocations and kernels stay out of the numbers
    print(f"{args.worker}: up in {result['start_s']:.1f} s", flush=True)
    if engine.name == "vllm":
        result["vision_tower"] = "subextract" if getattr(engine, "_tower", None) is not None else "vllm"
        result["prompt_tokens"] = checked(lambda: prompt_tokens(engine, crops[0]))
        print(f"  prompt tokens: {result['prompt_tokens']}", flush=True)
        if result["vision_tower"] == "subextract":
            result["tower_check"] = checked(lambda: tower_against_per_crop(engine, crops[:4]))
        elif args.worker == "vllm-pixels":
            result["tower_check"] = checked(lambda: vllm_tower_against_per_crop(engine, crops[:4]))
        if "tower_check" in result:
            print(f"  tower check: {result['tower_check']}", flush=True)

    if engine.name == "transformers":
        result["batch1"] = bulk(engine, crops[:args.tf_n1])
        result["levels"] = in_process_levels(engine, args.tokens, (1,), args.level_budget)
        for batch in args.tf_batch:
            engine.batch_size = batch
            engine.read_batch(crops[:batch])  # warm-up at this batch size
            result[f"batch{batch}"] = bulk(engine, crops[:min(len(crops), max(2 * batch, args.tf_nb))])
            print(f"  batch {batch}: {result[f'batch{batch}']['crops_per_s']:.1f} crops/s", flush=True)
        result["levels"].update(in_process_levels(engine, args.tokens,
                                                  tuple(x for x in (4, 16, 64) if x <= max(args.tf_batch)),
                                                  args.level_budget))
        result["bulk"] = result[f"batch{max(args.tf_batch)}"]
    elif args.worker == "vllm-native":  # slow: fewer crops and loads
        result["bulk"] = bulk(engine, crops[:min(args.n, 128)])
        print(f"  bulk 128: {result['bulk']['crops_per_s']:.1f} crops/s", flush=True)
        result["levels"] = in_process_levels(engine, args.tokens, (1, 16), args.level_budget)
    else:
        result["bulk"] = bulk(engine, crops[:args.n])
        print(f"  bulk {args.n}: {result['bulk']['crops_per_s']:.1f} crops/s", flush=True)
        result["levels"] = in_process_levels(engine, args.tokens, args.levels['in_process'], args.level_budget)
        if args.worker == "vllm-preset":
            result["levers"] = in_process_levers(engine, crops, args)
        elif args.worker == "vllm-shipped":
            result["levers"] = {"pipeline_16_at_a_time": fed_16_at_a_time(engine, crops)}
            print(f"  16 at a time: {result['levers']['pipeline_16_at_a_time']['crops_per_s']:.1f} crops/s",
                  flush=True)
    result["doubling_load"] = doubling_level(result["levels"])
    return result


def in_process_levers(engine: Any, crops: list[np.ndarray], args: argparse.Namespace) -> dict[str, Any]:
    """What each lever gives the in-process engine, against ``bulk`` (all crops in one call). Each
    lever is measured on its own; one that fails is recorded and the next still runs."""
    from subextract.stages.ocr.vlm import prepare, stack_strips

    levers: dict[str, Any] = {}
    base = engine.settings
    n = min(args.n, args.lever_n)

    def lever(name: str, measure: Any) -> None:
        try:
            levers[name] = measure()
        except Exception as exc:  # noqa: BLE001 - a lever vLLM refuses is a result too
            levers[name] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}", "crops_per_s": math.nan}
        finally:
            engine.settings = base
            force_reply_length(engine, args.tokens)
        print(f"  lever {name}: {levers[name].get('crops_per_s', math.nan):.1f} crops/s "
              f"{levers[name].get('error', '')}", flush=True)

    def no_logprobs() -> dict[str, Any]:
        force_reply_length(engine, args.tokens, logprobs=False)
        return bulk(engine, crops[:n])

    def quarter_pixels() -> dict[str, Any]:
        engine.settings = dataclasses.replace(base, max_side=640, max_pixels=640 * 72)
        return bulk(engine, crops[:n])

    def stacked_pass(stack: int) -> dict[str, Any]:
        # The stacked pass alone: what stacking gives when every reply has one line per strip.
        strips = [prepare(c, base.max_side, base.max_pixels) for c in crops[:n]]
        pictures = [stack_strips(strips[i:i + stack]) for i in range(0, len(strips) - stack + 1, stack)]
        force_reply_length(engine, args.tokens * stack)
        began = time.perf_counter()
        engine._generate(pictures, [args.tokens * stack] * len(pictures))
        seconds = time.perf_counter() - began
        return {"crops": len(pictures) * stack, "crops_per_s": len(pictures) * stack / seconds,
                "reply_tokens": args.tokens * stack}

    def stacked_whole(stack: int) -> dict[str, Any]:
        """The product's whole stacked path (``read_batch``: stack, send, split the reply, map it
        back) with every reply forced to one line per strip by a grammar: N lines of 20 letters."""
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        regex = "\\n".join(["[a-z]{20}"] * stack)
        engine.settings = dataclasses.replace(base, stack=stack, max_tokens=64 * stack)
        engine._params = SamplingParams(temperature=0.0, max_tokens=64 * stack, logprobs=0,
                                        structured_outputs=StructuredOutputsParams(regex=regex))
        began = time.perf_counter()
        readings = engine.read_batch(crops[:n])
        seconds = time.perf_counter() - began
        one_line = sum(1 for r in readings if len(r.lines) == 1)
        return {"crops": n, "crops_per_s": n / seconds, "stack": stack, "readings_of_one_line": one_line,
                "reply": "N lines of 20 letters (structured output)"}

    lever("pipeline_16_at_a_time", lambda: fed_16_at_a_time(engine, crops))
    lever("no_logprobs", no_logprobs)
    lever("quarter_pixels_640x72", quarter_pixels)
    for stack in (4, 8):
        lever(f"stack{stack}_pass", lambda stack=stack: stacked_pass(stack))
    for stack in (1, 4, 8):
        lever(f"stack{stack}_whole_forced_lines", lambda stack=stack: stacked_whole(stack))
    architectures = engine._llm.llm_engine.vllm_config.model_config.hf_config.architectures or []
    if "PaddleOCRVLForConditionalGeneration" in architectures:
        import gpu_vision
        from PIL import Image

        gpu_vision.apply(force=True)
        try:
            pictures = [Image.fromarray(prepare(c, base.max_side, base.max_pixels)).convert("RGB") for c in crops[:4]]
            levers["vision_batched_check"] = {"max_relative_difference": gpu_vision.same_embeddings(
                engine._llm, engine.settings.model, pictures), "crops_per_s": math.nan}
        except Exception as exc:  # noqa: BLE001
            levers["vision_batched_check"] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        print(f"  vision batched check: {levers['vision_batched_check']}", flush=True)
        lever("vision_batched", lambda: bulk(engine, crops[:n]))
        lever("vision_batched_16_at_a_time", lambda: fed_16_at_a_time(engine, crops))
        lever("vision_batched_quarter_pixels", quarter_pixels)
        lever("vision_batched_no_logprobs", no_logprobs)
        lever("vision_batched_stack8_whole_forced_lines", lambda: stacked_whole(8))
        gpu_vision.revert()
    return levers


# -- vllm serve ---------------------------------------------------------------------------------------

def png_url(crop: np.ndarray) -> str:
    """The picture as the product's openai engine sends it (a stored PNG): until 2026-12-02 the
    bench's own client sent PIL's deflated PNG, ~15 ms of encoding a request."""
    from subextract.stages.ocr.vlm import to_png

    return "data:image/png;base64," + base64.b64encode(to_png(crop)).decode("ascii")


async def _stream_one(client: Any, url: str, body: dict[str, Any]) -> tuple[float, float]:
    began = time.perf_counter()
    first = None
    async with client.stream("POST", url, json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if first is None and line.startswith("data: {") and '"content"' in line:
                first = time.perf_counter() - began
    return (first if first is not None else math.nan), time.perf_counter() - began


async def _closed_loop(urls: list[str], bodies: list[dict[str, Any]], in_flight: int, total: int,
                       ) -> list[tuple[float, float, float]]:
    import httpx

    done: list[tuple[float, float, float]] = []
    counter = iter(range(total))
    limits = httpx.Limits(max_connections=in_flight + 8, max_keepalive_connections=in_flight + 8)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        async def loop() -> None:
            for i in counter:
                first, full = await _stream_one(client, urls[i % len(urls)], bodies[i % len(bodies)])
                done.append((first, full, time.perf_counter()))

        await asyncio.gather(*(loop() for _ in range(in_flight)))
    return done


def client_process(urls: list[str], bodies: list[dict[str, Any]], in_flight: int, total: int,
                   start_at: float) -> list[tuple[float, float, float]]:
    while time.time() < start_at:
        time.sleep(0.005)
    offset = time.time() - time.perf_counter()
    return [(f, full, end + offset) for f, full, end in asyncio.run(_closed_loop(urls, bodies, in_flight, total))]


def http_level(pool: ProcessPoolExecutor, urls: list[str], bodies: list[dict[str, Any]], in_flight: int,
               total: int) -> dict[str, Any]:
    """``in_flight`` requests kept in flight by several client processes (one Python process
    parsing hundreds of streams would be the bottleneck, not the server)."""
    clients = max(1, min(4, in_flight // 32))
    start_at = time.time() + 0.5
    futures = [pool.submit(client_process, urls, bodies[c::clients], in_flight // clients, total // clients, start_at)
               for c in range(clients)]
    records = [r for f in futures for r in f.result()]
    span = max(r[2] for r in records) - start_at
    return {"first_token_s": percentiles([r[0] for r in records if not math.isnan(r[0])]),
            "full_s": percentiles([r[1] for r in records]), "requests": len(records),
            "crops_per_s": len(records) / span}


def vision_plugin(folder: Path) -> Path:
    """A folder that, on a process's path, registers ``gpu_vision.apply`` as a vLLM general plugin
    (vLLM runs those in every process it starts: API servers and engine cores)."""
    info = folder / "subextract_bench_vision-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: subextract-bench-vision\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[vllm.general_plugins]\nbatch_vision = gpu_vision:apply\n")
    return folder


def shipped_server_options(preset: str, replicas: int) -> list[str]:
    """The server line docs/gpu.md gives for the preset (its engine options as `vllm serve`
    flags: compiled, CUDA graphs), the memory split between the replicas."""
    from subextract.config import load_settings

    options = dict(load_settings(preset).ocr.engine_options)
    options["gpu_memory_utilization"] = round(options.get("gpu_memory_utilization", 0.9) / replicas, 3)
    options.pop("trust_remote_code", None)  # the benchmark's local model is read natively
    flags = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is False:
            flags.append("--no-" + key.replace("_", "-"))
        elif value is True:
            flags.append(flag)
        else:
            flags += [flag, json.dumps(value) if isinstance(value, (dict, list)) else str(value)]
    return flags


def start_servers(args: argparse.Namespace, replicas: int, api_servers: int, log_dir: Path,
                  one_after_another: bool = False, batched_vision: bool = False,
                  shipped: bool = False) -> list[subprocess.Popen]:
    """R ``vllm serve`` replicas. Started together, vLLM's memory profiling of one sees the others
    allocate and asserts; ``one_after_another`` starts each once the one before has measured its
    memory (its log's "Available KV cache memory") or is ready."""
    env = dict(os.environ)
    if batched_vision:
        env["SUBEXTRACT_BENCH_BATCH_VISION"] = "1"
        env["PYTHONPATH"] = os.pathsep.join([str(vision_plugin(log_dir / "plugin")), str(Path(__file__).parent),
                                             env.get("PYTHONPATH", "")])
    processes = []
    for r in range(replicas):
        # Several API-server processes need the `vllm serve` entry point; one is the plain API server.
        entry = ["vllm.entrypoints.cli.main", "serve"] if api_servers > 1 else ["vllm.entrypoints.openai.api_server",
                                                                                "--model"]
        command = [sys.executable, "-m", *entry, args.model, "--load-format", "dummy",
                   "--host", "127.0.0.1", "--port", str(args.port + r)]
        if shipped:
            command += shipped_server_options(args.preset, replicas)
        else:
            command += ["--max-model-len", "4096", "--max-num-seqs", "512", "--max-num-batched-tokens", "16384",
                        "--no-enable-prefix-caching", "--mm-processor-cache-gb", "0", "--limit-mm-per-prompt",
                        '{"image": 1}', "--enforce-eager", "--gpu-memory-utilization", f"{0.85 / replicas:.3f}"]
        if api_servers > 1:
            command += ["--api-server-count", str(api_servers)]
        log_path = log_dir / f"server{r}.log"
        log = open(log_path, "w")
        processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                          env=env))
        if one_after_another and r < replicas - 1:
            began = time.perf_counter()
            while time.perf_counter() - began < args.ready_timeout and processes[-1].poll() is None:
                text = log_path.read_text(errors="replace")
                if "Available KV cache memory" in text or "Application startup complete" in text:
                    break
                time.sleep(0.5)
            print(f"  replica {r} measured its memory after {time.perf_counter() - began:.1f} s", flush=True)
    return processes


def wait_ready(processes: list[subprocess.Popen], bases: list[str], timeout: float, path: str = "/v1/models") -> None:
    """Until every server answers 200 at ``path`` (a vLLM server's model list, by default)."""
    import httpx

    began = time.perf_counter()
    pending = set(range(len(bases)))
    while pending:
        for r in list(pending):
            if processes[r].poll() is not None:
                raise RuntimeError(f"server {r} exited with {processes[r].returncode}")
            try:
                if httpx.get(bases[r] + path, timeout=2).status_code == 200:
                    pending.discard(r)
            except httpx.TransportError:
                pass
        if time.perf_counter() - began > timeout:
            raise RuntimeError("servers not ready in time")
        time.sleep(0.5)


def worker_server(args: argparse.Namespace) -> dict[str, Any]:
    _, api_part, replica_part, *flags = args.worker.split("-")
    api_servers, replicas = int(api_part[1:]), int(replica_part[1:])
    result: dict[str, Any] = {"setting": args.worker, "tokens": args.tokens, "replicas": replicas,
                              "api_servers": api_servers, "one_after_another": "seq" in flags,
                              "batched_vision": "vis" in flags, "shipped_options": "ship" in flags}
    crops = band_crops(64, seed=1)
    urls_png = [png_url(c) for c in crops]
    log_dir = Path(args.out)
    began = time.perf_counter()
    processes = start_servers(args, replicas, api_servers, log_dir, "seq" in flags, "vis" in flags, "ship" in flags)
    bases = [f"http://127.0.0.1:{args.port + r}" for r in range(replicas)]
    try:
        wait_ready(processes, bases, args.ready_timeout)
        result["start_s"] = time.perf_counter() - began
        print(f"{args.worker}: up in {result['start_s']:.1f} s", flush=True)
        import httpx

        model = httpx.get(bases[0] + "/v1/models", timeout=5).json()["data"][0]["id"]
        from subextract.config import load_settings

        prompt = load_settings(args.preset).ocr.prompt
        bodies = [{"model": model, "stream": True, "temperature": 0.0, "max_tokens": args.tokens,
                   "min_tokens": args.tokens, "ignore_eos": True, "logprobs": True,
                   "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": u}},
                                                             {"type": "text", "text": prompt}]}]}
                  for u in urls_png]
        urls = [b + "/v1/chat/completions" for b in bases]
        result["prompt_tokens"] = checked(lambda: served_prompt_tokens(args, urls[0], model, prompt, crops[0]))
        print(f"  prompt tokens: {result['prompt_tokens']}", flush=True)
        levels: dict[str, dict[str, Any]] = {}
        with ProcessPoolExecutor(max_workers=8) as pool:
            http_level(pool, urls, bodies, 8, 16)  # warm-up
            for in_flight in args.levels['http']:
                total = 24 if in_flight == 1 else max(16, min(2 * in_flight, 1024))
                levels[str(in_flight)] = http_level(pool, urls, bodies, in_flight, total)
                row = levels[str(in_flight)]
                print(f"  in flight {in_flight}: {row['crops_per_s']:.1f} crops/s, "
                      f"full p50 {row['full_s']['p50']:.3f} s, first {row['first_token_s']['p50']:.3f} s", flush=True)
        result["levels"] = levels
        result["doubling_load"] = doubling_level(levels)
        result["bulk"] = max(levels.values(), key=lambda row: row["crops_per_s"])
        if replicas == 1:
            result["product_engine"] = product_openai_engine(args, bases[0] + "/v1")
    finally:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    return result


def served_prompt_tokens(args: argparse.Namespace, url: str, model: str, prompt: str,
                         crop: np.ndarray) -> dict[str, Any]:
    """The prompt tokens the server counts for one chat request (its own chat rendering), against
    the model's Hugging Face processor's for the same picture."""
    import httpx
    from PIL import Image
    from transformers import AutoProcessor

    body = {"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": png_url(crop)}}, {"type": "text", "text": prompt}]}]}
    served = httpx.post(url, json=body, timeout=120).json()["usage"]["prompt_tokens"]
    processor = AutoProcessor.from_pretrained(args.model)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    reference = processor(text=[text], images=[Image.fromarray(crop).convert("RGB")], return_tensors="pt")
    return {"server": served, "hf_processor": int(reference["input_ids"].shape[1])}


def product_openai_engine(args: argparse.Namespace, server: str) -> dict[str, Any]:
    """subextract's own --engine openai (PNG per request, bounded concurrency) on 512 crops."""
    from subextract.config import load_settings
    from subextract.stages.ocr import create_engine

    crops = band_crops(min(args.n, 256), seed=2)
    rows = {}
    for concurrency in (16, 128, 256):
        overrides = {"engine": "openai", "server": server, "model": "", "concurrency": concurrency,
                     "max_tokens": args.tokens}
        settings = load_settings(args.preset, overrides={"ocr": overrides})
        engine = create_engine(settings.ocr)
        engine.read_batch(crops[:8])
        rows[f"concurrency{concurrency}"] = bulk(engine, crops)
        print(f"  product openai engine, concurrency {concurrency}: "
              f"{rows[f'concurrency{concurrency}']['crops_per_s']:.1f} crops/s", flush=True)
    return rows


# -- in-process replicas --------------------------------------------------------------------------------


def replica_options(replicas: int, compiled: bool, extra: dict[str, Any]) -> dict[str, Any]:
    return {"load_format": "dummy", "trust_remote_code": False, "disable_log_stats": False,
            "enable_chunked_prefill": True, "gpu_memory_utilization": round(0.85 / replicas, 3),
            "enforce_eager": not compiled, **extra}


def worker_replica(args: argparse.Namespace) -> dict[str, Any]:
    """One replica: start, measure (the first one alone) single-crop latency, say ready, then read
    in the phases of the schedule the parent writes once every replica is up."""
    _, index_part, count_part, mode = args.worker.split("-")
    index, count = int(index_part), int(count_part)
    folder = Path(args.out) / args.replica_dir
    import gpu_vision

    gpu_vision.apply(force=True)
    began = time.perf_counter()
    options = replica_options(count, mode == "compiled", args.replica_options)
    settings = ocr_settings(args.preset, "vllm", args.model, args.tokens, options)
    settings = dataclasses.replace(settings, max_side=640, max_pixels=640 * 72)
    from subextract.stages.ocr import create_engine

    engine = create_engine(settings)
    force_reply_length(engine, args.tokens)
    crops = band_crops(args.replica_chunk, seed=100 + index)
    engine.read_batch(crops[:8])
    engine.read_batch(crops[:64])
    result: dict[str, Any] = {"index": index, "start_s": time.perf_counter() - began}
    if index == 0:
        result["levels"] = in_process_levels(engine, args.tokens, (1, 16, 64, 256), 6)
    (folder / f"ready{index}").write_text(str(result["start_s"]))
    schedule_path = folder / "schedule.json"
    while not schedule_path.exists():
        time.sleep(0.1)
    schedule = json.loads(schedule_path.read_text())
    phases = []
    for phase in schedule:
        batches = []
        if index < phase["active"]:
            while time.time() < phase["start"]:
                time.sleep(0.005)
            while time.time() < phase["end"]:
                started = time.time()
                engine.read_batch(crops)
                batches.append((started, time.time(), len(crops)))
        phases.append({"active": phase["active"], "batches": batches})
        while time.time() < phase["end"]:
            time.sleep(0.05)
    result["phases"] = phases
    return result


def worker_replicas(args: argparse.Namespace) -> dict[str, Any]:
    _, replica_part, *flags = args.worker.split("-")
    replicas, compiled = int(replica_part[1:]), "compiled" in flags
    folder = Path(args.out) / args.worker
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*"):
        if stale.is_file():
            stale.unlink()
    env = dict(os.environ, OMP_NUM_THREADS="2", VLLM_ENABLE_V1_MULTIPROCESSING="0")
    result: dict[str, Any] = {"setting": args.worker, "tokens": args.tokens, "replicas_asked": replicas,
                              "compiled": compiled, "picture": "640x72", "batched_vision": True,
                              "engine_options": replica_options(replicas, compiled, args.replica_options),
                              "chunk": args.replica_chunk}
    began = time.perf_counter()
    processes, starts = [], []
    for r in range(replicas):
        if processes and time.perf_counter() - began > args.start_budget:
            print(f"  start budget spent: {len(processes)} replicas", flush=True)
            break
        command = [sys.executable, __file__, args.model, "--out", args.out, "--tokens", str(args.tokens),
                   "--preset", args.preset, "--replica-chunk", str(args.replica_chunk), "--replica-dir", args.worker,
                   "--replica-options", json.dumps(args.replica_options),
                   "--worker", f"replica-{r}-{replicas}-{'compiled' if compiled else 'eager'}"]
        log = open(folder / f"replica{r}.log", "w")
        processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                          start_new_session=True))
        while not (folder / f"ready{r}").exists() and processes[-1].poll() is None:
            time.sleep(0.2)
        if processes[-1].poll() is not None and not (folder / f"ready{r}").exists():
            result.setdefault("errors", []).append(
                f"replica {r} exited {processes[-1].returncode}: "
                + (folder / f"replica{r}.log").read_text(errors="replace")[-600:])
            processes.pop()
            break
        starts.append(time.perf_counter() - began)
        print(f"  replica {r} ready at {starts[-1]:.1f} s", flush=True)
    result["ready_at_s"] = starts
    result["start_s"] = starts[-1] if starts else None
    active = len(processes)
    counts = sorted({n for n in (1, 2, 4, 8, 16) if n < active} | {active}) if active else []
    first = time.time() + 2
    schedule = []
    for n in counts:
        schedule.append({"active": n, "start": first, "end": first + args.phase_s})
        first += args.phase_s + 8  # a call begun just before the end runs on past it
    (folder / "schedule.json").write_text(json.dumps(schedule))
    phase_rows = []
    for phase in schedule:
        while time.time() < phase["start"]:
            time.sleep(0.05)
        memory = GpuMemory()
        time.sleep(max(0.0, phase["end"] - time.time()))
        phase_rows.append({"active": phase["active"], "gpu": memory.stop_load()})
    for process in processes:
        try:
            process.wait(timeout=args.phase_s * 3 + 60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    replies = []
    for r in range(active):
        path = folder / f"replica-{r}.json"
        if path.exists():
            replies.append(json.loads(path.read_text()))
    for row, phase in zip(phase_rows, schedule):
        batches = [b for reply in replies for p in reply["phases"] if p["active"] == row["active"]
                   for b in p["batches"]]
        if batches:
            span = max(b[1] for b in batches) - phase["start"]
            row["crops"] = sum(b[2] for b in batches)
            row["crops_per_s"] = row["crops"] / span
            row["per_replica"] = row["crops_per_s"] / row["active"]
            row["batch_s_p50"] = statistics.median(b[1] - b[0] for b in batches)
        print(f"  {row['active']} replicas reading: {row.get('crops_per_s', math.nan):.1f} crops/s, "
              f"GPU busy {row['gpu'].get('utilisation_mean')} % mean", flush=True)
    result["phases"] = phase_rows
    lone = next((reply for reply in replies if reply["index"] == 0), {})
    result["levels"] = lone.get("levels", {})
    result["doubling_load"] = doubling_level(result["levels"]) if result["levels"] else None
    measured = [row for row in phase_rows if "crops_per_s" in row]
    result["bulk"] = max(measured, key=lambda row: row["crops_per_s"]) if measured else {"crops_per_s": math.nan}
    return result


def worker_shipped_replicas(args: argparse.Namespace) -> dict[str, Any]:
    """``shipped-rR``: the preset as shipped with ``ocr.replicas`` R (the product's own engine
    processes, stages/ocr/replicas.py), random weights, replies of ``--tokens`` (``max_tokens``: a
    random-weight model never ends a reply early). Measured: one call of ``--n`` crops; fed 16 at a
    time as one video's pipeline feeds it; R x 4 callers at once, 64 crops a call, for ``--phase-s``
    (the batch runner's and the service's jobs); single-crop full replies."""
    from concurrent.futures import ThreadPoolExecutor

    from subextract.stages.ocr import create_engine

    replicas = int(args.worker.split("-")[1][1:])
    settings = ocr_settings(args.preset, "vllm", args.model, args.tokens,
                            {"load_format": "dummy", **args.replica_options})
    if args.picture:
        width, height = (int(v) for v in args.picture.split("x"))
        settings = dataclasses.replace(settings, max_side=width, max_pixels=width * height)
    settings = dataclasses.replace(settings, replicas=replicas)
    result: dict[str, Any] = {"setting": args.worker, "tokens": args.tokens, "replicas": replicas,
                              "engine_options": settings.engine_options, "picture": args.picture or "preset"}
    began = time.perf_counter()
    engine = create_engine(settings)
    result["start_s"] = time.perf_counter() - began
    print(f"{args.worker}: up in {result['start_s']:.1f} s", flush=True)
    if replicas == 1:  # one engine is shared between threads as the product shares it: one batch at a time
        from concurrent.futures import Future

        from subextract.stages.ocr import SerializedEngine

        ready: Future = Future()
        ready.set_result(engine)
        engine = SerializedEngine(ready)
    crops = band_crops(max(args.n, 256))
    engine.read_batch(crops[:8 * replicas])  # warm-up: first-call allocations and kernels in every replica
    result["bulk"] = bulk(engine, crops[:args.n])
    print(f"  bulk {args.n}: {result['bulk']['crops_per_s']:.1f} crops/s", flush=True)
    result["pipeline_16_at_a_time"] = fed_16_at_a_time(engine, crops)
    print(f"  16 at a time: {result['pipeline_16_at_a_time']['crops_per_s']:.1f} crops/s", flush=True)
    callers, chunk = 4 * replicas, 64

    def caller(index: int) -> int:
        mine = band_crops(chunk, seed=500 + index)
        done, end = 0, time.perf_counter() + args.phase_s
        while time.perf_counter() < end:
            engine.read_batch(mine)
            done += chunk
        return done

    began = time.perf_counter()
    with ThreadPoolExecutor(callers) as pool:
        done = sum(pool.map(caller, range(callers)))
    result["callers"] = {"callers": callers, "chunk": chunk, "crops": done,
                         "crops_per_s": done / (time.perf_counter() - began)}
    print(f"  {callers} callers x {chunk}: {result['callers']['crops_per_s']:.1f} crops/s", flush=True)
    singles = [timed_read(engine, [crop]) for crop in band_crops(8, seed=900)]
    result["levels"] = {"1": {"full_s": percentiles(singles), "crops_per_s": 1 / statistics.median(singles)}}
    print(f"  one crop: full p50 {result['levels']['1']['full_s']['p50']:.3f} s", flush=True)
    if result["callers"]["crops_per_s"] > result["bulk"]["crops_per_s"]:
        result["bulk"] = result["callers"]
    if replicas > 1:
        engine.close()
    return result


# -- the ceiling: the arithmetic one crop needs against the GPU's matrix rate -----------------------------

DATASHEET_BF16_TFLOPS = 989.4  # H100/H200 SXM, dense bf16 (the datasheet's lead; the bench measures its own)


def worker_peak(args: argparse.Namespace) -> dict[str, Any]:
    """The GPU's bf16 matrix rate through PyTorch: an 8192^3 product on random data, the median of
    ten after three warm-ups (METHOD.md's ceiling)."""
    import torch

    size = 8192
    a, b = (torch.randn(size, size, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    times = []
    for i in range(13):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.mm(a, b)
        end.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end) / 1000)
    return {"setting": "peak", "bf16_tflops": 2 * size ** 3 / statistics.median(times) / 1e12,
            "device": torch.cuda.get_device_name()}


def crop_arithmetic(model_dir: str, preset: str, tokens: int, picture: str = "", stack: int = 1) -> dict[str, Any]:
    """Floating-point operations (a multiply-add is two) to read one crop, from the model's config
    and its processor: every linear layer and convolution of the vision tower over the crop's
    patches (the patch grid the model's image processor makes of the preset's crop), the merger's
    over the merged patches and the visual tokens, the text model's over the prompt (its tokens as
    the processor makes them) and the reply's steps, the output projection once per reply token,
    and attention's two products (the tower's over each crop's patches, the text model's causal
    prefill and each decode step over its context). HunYuanVL's module names; other models count
    their whole tower at the patch count. With ``stack`` > 1 the picture is that many crops stacked
    as the engine stacks them (``--stack``), its reply ``tokens`` per crop, and the figures per crop
    are the stacked picture's divided by ``stack``."""
    import torch
    import transformers

    from subextract.config import load_settings
    from subextract.stages.ocr.vlm import prepare, stack_strips, to_pil

    settings = load_settings(preset).ocr
    max_side, max_pixels = settings.max_side, settings.max_pixels
    if picture:
        width, height = (int(v) for v in picture.split("x"))
        max_side, max_pixels = width, width * height
    crop = prepare(band_crops(1)[0], max_side, max_pixels)
    if stack > 1:
        crop = stack_strips([crop] * stack)
    tokens *= stack
    processor = transformers.AutoProcessor.from_pretrained(model_dir)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": settings.prompt}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[text], images=[to_pil(crop)], return_tensors="pt")
    _, grid_h, grid_w = (int(v) for v in inputs["image_grid_thw"][0])
    config = transformers.AutoConfig.from_pretrained(model_dir)
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(config)
    prompt = int(inputs["input_ids"].shape[1])
    visual_tokens = int((inputs["input_ids"][0] == config.image_token_id).sum())
    patches = grid_h * grid_w
    merge = config.vision_config.spatial_merge_size
    vision = text_linear = head = 0.0
    for name, module in model.named_modules():
        if not isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)):
            continue
        weights = module.weight.numel()
        if "lm_head" in name:
            head += 2 * weights * tokens
        elif "vision" in name or "visual" in name:
            rows = patches
            if "merger" in name:
                rows = visual_tokens if isinstance(module, torch.nn.Linear) else patches // merge ** 2
            vision += 2 * weights * rows
        else:
            text_linear += 2 * weights * (prompt + tokens - 1)
    vc, tc = config.vision_config, config.text_config
    vision += 4 * patches ** 2 * vc.hidden_size * vc.num_hidden_layers
    width = tc.num_attention_heads * (tc.head_dim or tc.hidden_size // tc.num_attention_heads)
    attention = 4 * width * tc.num_hidden_layers * (prompt ** 2 / 2 + tokens * (prompt + tokens / 2))
    total = vision + text_linear + head + attention
    return {"picture": f"{crop.shape[1]}x{crop.shape[0]}", "resized_to": f"{grid_w * vc.patch_size}x"
            f"{grid_h * vc.patch_size}", "patches": patches, "visual_tokens": visual_tokens, "prompt_tokens": prompt,
            "reply_tokens": tokens, "stack": stack, "vision_tflop": vision / 1e12 / stack,
            "text_tflop": (text_linear + head + attention) / 1e12 / stack,
            "tflop_per_crop": total / 1e12 / stack}


def ceiling(args: argparse.Namespace, results: list[dict[str, Any]]) -> dict[str, Any]:
    """The ceiling in crops/s (the measured matrix rate over one crop's arithmetic) and each
    setting's achieved share of it (MFU)."""
    arithmetic = crop_arithmetic(args.model, args.preset, args.tokens, args.picture)
    peak = next((r for r in results if r.get("setting") == "peak" and "bf16_tflops" in r), None)
    rate = peak["bf16_tflops"] if peak else DATASHEET_BF16_TFLOPS
    out = {"setting": "ceiling", **arithmetic, "peak_tflops": rate,
           "peak_source": "measured (8192^3 bf16 product)" if peak else "datasheet",
           "ceiling_crops_per_s": rate / arithmetic["tflop_per_crop"],
           "datasheet_ceiling_crops_per_s": DATASHEET_BF16_TFLOPS / arithmetic["tflop_per_crop"], "mfu": {}}
    for r in results:
        rate_crops = r.get("bulk", {}).get("crops_per_s")
        if rate_crops and r.get("setting") not in ("peak", "ceiling"):
            out["mfu"][r["setting"]] = rate_crops * arithmetic["tflop_per_crop"] / rate
    return out


def ceiling_text(c: dict[str, Any]) -> str:
    lines = [f"One crop ({c['picture']}, resized by the processor to {c['resized_to']}: {c['patches']} patches, "
             f"{c['visual_tokens']} visual tokens, a {c['prompt_tokens']}-token prompt, {c['reply_tokens']} reply "
             f"tokens): {c['vision_tflop']:.3f} TFLOP vision tower + {c['text_tflop']:.3f} TFLOP text = "
             f"{c['tflop_per_crop']:.3f} TFLOP.",
             f"Tensor-core ceiling at {c['peak_tflops']:.0f} TFLOP/s ({c['peak_source']}): "
             f"{c['ceiling_crops_per_s']:.0f} crops/s (datasheet {DATASHEET_BF16_TFLOPS:.0f}: "
             f"{c['datasheet_ceiling_crops_per_s']:.0f}); 50 % of it: {c['ceiling_crops_per_s'] / 2:.0f}.", ""]
    lines += ["| setting | MFU (achieved share of the ceiling) |", "|---|---|"]
    lines += [f"| {name} | {share * 100:.1f} % |" for name, share in c["mfu"].items()]
    return "\n".join(lines) + "\n"


def make_model(args: argparse.Namespace) -> int:
    """``--make-model hunyuanocr``: the config-only HunyuanOCR-shaped model directory (the tests'
    tokenizer and processor, the published sizes), and what vLLM's own config reader sees in it."""
    sys.path.insert(0, str(REPO / "tests"))
    from vlm_fixtures import build_hunyuan_ocr_shape

    build_hunyuan_ocr_shape(Path(args.model))
    print(f"made {args.model}", flush=True)
    try:
        from vllm.transformers_utils.config import get_config, uses_xdrope_dim
    except ImportError:
        return 0
    config = get_config(args.model, trust_remote_code=False)
    print(f"vLLM reads: {type(config).__name__}, xdrope axes {uses_xdrope_dim(config)}, image start token "
          f"{getattr(config, 'image_start_token_id', None)}, vision out {config.vision_config.out_hidden_size}",
          flush=True)
    return 0


# -- orchestration --------------------------------------------------------------------------------------

class GpuMemory:
    """The GPU's used memory and utilisation, polled through nvidia-smi while a setting runs; the
    peak memory above the idle reading is the setting's, the utilisation is the share of each
    sample period in which a kernel ran (nvidia-smi's ``utilization.gpu``)."""

    def __init__(self, period: float = 0.5) -> None:
        self.idle, _ = self._read()
        self.peak = self.idle
        self.utilisation: list[float] = []
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    @staticmethod
    def _read() -> tuple[float, float]:
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,utilization.gpu",
                                  "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=10, check=False).stdout
            rows = [[float(x) for x in line.split(",")] for line in out.strip().splitlines()]
            return sum(r[0] for r in rows) / 1024, max(r[1] for r in rows)
        except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
            return math.nan, math.nan

    def _poll(self) -> None:
        while not self._stop.wait(self._period):
            memory, utilisation = self._read()
            self.peak = max(self.peak, memory)
            self.utilisation.append(utilisation)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak - self.idle

    def stop_load(self) -> dict[str, float]:
        """Memory above idle (GiB) and utilisation (mean over the samples where the GPU was busy at
        all, and the share of samples above 50 %)."""
        memory = self.stop()
        busy = [u for u in self.utilisation if u > 0]
        return {"memory_gib": round(memory, 1), "samples": len(self.utilisation),
                "utilisation_mean": round(statistics.mean(self.utilisation), 1) if self.utilisation else math.nan,
                "utilisation_busy_mean": round(statistics.mean(busy), 1) if busy else 0.0,
                "utilisation_max": max(self.utilisation, default=math.nan)}


def run_setting(args: argparse.Namespace, setting: str) -> dict[str, Any]:
    out = Path(args.out)
    command = [sys.executable, __file__, args.model, "--out", args.out, "--worker", setting, "--tokens",
               str(args.tokens), "--n", str(args.n), "--preset", args.preset, "--port", str(args.port),
               "--ready-timeout", str(args.ready_timeout), "--tf-batch", ",".join(map(str, args.tf_batch)),
               "--levels", json.dumps(args.levels), "--level-budget", str(args.level_budget),
               "--tf-n1", str(args.tf_n1), "--tf-nb", str(args.tf_nb), "--lever-n", str(args.lever_n),
               "--replica-chunk", str(args.replica_chunk), "--phase-s", str(args.phase_s),
               "--start-budget", str(args.start_budget), "--replica-options", json.dumps(args.replica_options),
               "--picture", args.picture, *(["--runner-v1"] if args.runner_v1 else [])]
    memory = GpuMemory()
    began = time.perf_counter()
    with open(out / f"{setting}.log", "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            process.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    load = memory.stop_load()
    gpu_gib = load["memory_gib"]
    path = out / f"{setting}.json"
    if process.returncode == 0 and path.exists():
        result = json.loads(path.read_text())
    else:
        tail = (out / f"{setting}.log").read_text(errors="replace")[-1500:]
        result = {"setting": setting, "error": f"rc {process.returncode} after {time.perf_counter() - began:.0f} s",
                  "log_tail": tail}
    result["gpu_memory_gib"] = gpu_gib
    result["gpu_load"] = load
    result["wall_s"] = time.perf_counter() - began
    return result


def fmt(value: Any, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}"


def table(results: list[dict[str, Any]], tokens: int) -> str:
    lines = [f"Replies forced to {tokens} tokens each (random weights never stop). Latency: p50 / p95 in ms at "
             "load 1 (one crop alone) and at the largest load measured; load = crops in one call (in-process) or "
             "requests in flight (server).", "",
             "| engine, setting | crops/s | first token, load 1 | full reply, load 1 | full reply, top load "
             "| load where latency doubles | GPU memory GiB | start s |",
             "|---|---|---|---|---|---|---|---|"]
    rows = []
    for r in results:
        if r.get("setting") == "transformers" and "batch1" in r:  # batch 1 and batched are two rows
            batched = max(int(k[5:]) for k in r if k.startswith("batch") and k[5:].isdigit())
            rows.append(dict(r, setting="transformers, batch 1", bulk=r["batch1"],
                             levels={"1": r["levels"]["1"]}, doubling_load=None))
            rows.append(dict(r, setting=f"transformers, batch {batched}"))
        else:
            rows.append(r)
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['setting']} | failed: {r['error']} | | | | | {fmt(r.get('gpu_memory_gib'), 1)} | |")
            continue
        levels = r.get("levels", {})
        one = levels.get("1", {})
        top_level = max(levels, key=int) if levels else None
        top = levels.get(top_level, {}) if top_level else {}
        ms = lambda row, key, p: fmt(row.get(key, {}).get(p, math.nan) * 1000)  # noqa: E731
        lines.append(
            f"| {r['setting']} | {fmt(r['bulk']['crops_per_s'], 1)} | {ms(one, 'first_token_s', 'p50')} / "
            f"{ms(one, 'first_token_s', 'p95')} | {ms(one, 'full_s', 'p50')} / {ms(one, 'full_s', 'p95')} | "
            f"{ms(top, 'full_s', 'p50')} / {ms(top, 'full_s', 'p95')} at {top_level} | "
            f"{r.get('doubling_load') or '> ' + str(top_level)} | {fmt(r.get('gpu_memory_gib'), 1)} | "
            f"{fmt(r.get('start_s'), 0)} |")
    extra = []
    for r in results:
        for key in ("batch1",) + tuple(k for k in r if k.startswith("batch") and k[5:].isdigit() and k != "batch1"):
            if key in r:
                extra.append(f"| {r['setting']} {key.replace('batch', 'batch ')} | {fmt(r[key]['crops_per_s'], 1)} |")
        for name, row in r.get("levers", {}).items():
            extra.append(f"| {r['setting']}: {name.replace('_', ' ')} | {fmt(row['crops_per_s'], 1)} |")
        for name, row in r.get("product_engine", {}).items():
            extra.append(f"| {r['setting']}: product --engine openai, {name} | {fmt(row['crops_per_s'], 1)} |")
        for level, row in r.get("levels", {}).items():
            extra.append(f"| {r['setting']} at load {level} | {fmt(row['crops_per_s'], 1)} |")
        for row in r.get("phases", []):
            extra.append(f"| {r['setting']}: {row['active']} reading at once (GPU busy "
                         f"{fmt(row['gpu'].get('utilisation_mean'))} % mean) | {fmt(row.get('crops_per_s'), 1)} |")
    if extra:
        lines += ["", "| engine, setting, lever | crops/s |", "|---|---|"] + extra
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--out", help="the results folder (every mode but --make-model)")
    parser.add_argument("--sets", default="transformers,vllm-default,vllm-nochunk,vllm-preset")
    parser.add_argument("--tokens", type=int, default=24, help="forced reply length (tokens)")
    parser.add_argument("--n", type=int, default=512, help="crops in one call for crops/s")
    parser.add_argument("--preset", default="paddleocr-vl")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--timeout", type=float, default=300, help="seconds a setting may take, start included")
    parser.add_argument("--ready-timeout", type=float, default=240)
    parser.add_argument("--level-budget", type=float, default=20, help="seconds per load level, in-process")
    parser.add_argument("--tf-batch", type=lambda s: [int(x) for x in s.split(",")], default=[16, 64])
    parser.add_argument("--lever-n", type=int, default=256, help="crops per lever measurement")
    parser.add_argument("--tf-n1", type=int, default=16, help="crops for transformers batch 1")
    parser.add_argument("--tf-nb", type=int, default=128, help="crops for transformers batched")
    parser.add_argument("--levels", type=json.loads, default=LEVELS, help="load levels, JSON like the default")
    parser.add_argument("--picture", default="", help="in-process settings: crops scaled to fit WIDTHxHEIGHT "
                        "(e.g. 640x72) instead of the preset's size")
    parser.add_argument("--replica-chunk", type=int, default=256, help="replicas: crops per read_batch call")
    parser.add_argument("--phase-s", type=float, default=20, help="replicas: seconds each phase reads")
    parser.add_argument("--start-budget", type=float, default=330,
                        help="replicas: no further replica is started after this many seconds")
    parser.add_argument("--replica-options", type=json.loads, default={},
                        help="replicas, shipped-rR: more vllm.LLM options, JSON")
    parser.add_argument("--make-model", choices=["hunyuanocr"],
                        help="write a config-only model of this published shape to MODEL_DIR and stop")
    parser.add_argument("--runner-v1", action="store_true",
                        help="in-process settings: vLLM's V1 model runner (VLLM_USE_V2_MODEL_RUNNER=0)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--replica-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make_model:
        return make_model(args)
    if not args.out:
        parser.error("--out is required")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.worker:
        if args.worker.startswith("replica-"):
            result = worker_replica(args)
            (out / args.replica_dir / f"replica-{result['index']}.json").write_text(json.dumps(result, default=str))
            return 0
        workers = {"server": worker_server, "replicas": worker_replicas, "peak": worker_peak,
                   "shipped": worker_shipped_replicas}
        result = workers.get(args.worker.split("-")[0], worker_in_process)(args)
        (out / f"{args.worker}.json").write_text(json.dumps(result, indent=1, default=str))
        return 0
    results_path = out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else []
    for setting in args.sets.split(","):
        print(f"== {setting}", flush=True)
        results = [r for r in results if r["setting"] != setting] + [run_setting(args, setting)]
        results_path.write_text(json.dumps(results, indent=1, default=str))
        (out / "table.md").write_text(table([r for r in results if r.get("setting") not in ("peak", "ceiling")],
                                            args.tokens))
        if "error" in results[-1]:
            print(results[-1]["error"], results[-1]["log_tail"][-800:], flush=True)
    measured = [r for r in results if r.get("setting") not in ("ceiling",)]
    try:
        results = measured + [ceiling(args, measured)]
        results_path.write_text(json.dumps(results, indent=1, default=str))
        (out / "ceiling.md").write_text(ceiling_text(results[-1]))
        print(ceiling_text(results[-1]))
    except Exception as exc:  # noqa: BLE001 - the table stands without it
        print(f"ceiling not computed: {type(exc).__name__}: {exc}", flush=True)
    print(table([r for r in results if r.get("setting") not in ("peak", "ceiling")], args.tokens))
    return 0


if __name__ == "__main__":
    sys.exit(main())
