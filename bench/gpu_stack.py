"""Stacked strips on one GPU (docs/gpu.md, tenth round): the in-process engine with the preset as
shipped reads the same crops with ``ocr.stack`` k, k crops stacked into one picture a request, for
each k in ``--stacks``, the k's alternating (in a rotated order) inside each round.

The ninth round found vLLM's host work per request (~5 ms a crop on one core) the limit: the
vision tower alone runs at 45 % of the matrix rate. Stacking cuts the requests k-fold; HunyuanOCR's
processor upscales a single 1280x144 strip to 1536x192 anyway, so k strips cost fewer patches
than k pictures. What it costs in the tower and the prompt is counted from the config
(``gpu.crop_arithmetic`` with ``stack``), and each k's achieved rate is reported two ways: crops/s
against the unstacked crop's ceiling (the issue's target: the ceiling a crop read alone allows),
and the achieved TFLOP/s of the work actually done against the measured matrix rate (MFU).

Random weights reply with no line structure, so the product's stacked path would read every stack
again strip by strip. Here each reply is forced to ``--tokens`` tokens per strip (min = max, end of
sequence ignored) and its text is then cut into k lines before the engine maps it back: the whole
product path (prepare, stack, the tower, vLLM, decoding, the split, one Reading per crop) as it
runs where the model answers one line per strip, which a real HunyuanOCR must be shown to do.

    python bench/gpu.py MODEL_DIR --make-model hunyuanocr      # on the CPU, then carried
    python bench/gpu_stack.py MODEL_DIR --out DIR [--n 512] [--rounds 3] [--stacks 1,2,4,8]
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from gpu import (DATASHEET_BF16_TFLOPS, GpuMemory, band_crops, crop_arithmetic, fed_16_at_a_time,  # noqa: E402
                 engine_rounds_parser, force_reply_length, ocr_settings, worker_peak)


def lines_per_strip(engine: Any, stack: int) -> None:
    """Each reply cut into ``stack`` lines, as a model that reads one line per strip answers."""
    from subextract.stages.ocr.vlm import Reply

    generate = engine.__class__._generate.__get__(engine)

    def cut(pictures: Any, limits: Any) -> list[Any]:
        replies = generate(pictures, limits)
        if stack == 1:
            return replies
        return [Reply(text="\n".join(f"{i} {reply.text[:12]}" for i in range(stack)), confidence=reply.confidence)
                for reply in replies]

    engine._generate = cut


def stacked(engine: Any, base: Any, stack: int, tokens: int) -> None:
    engine.settings = dataclasses.replace(base, stack=stack, max_tokens=tokens * stack)
    force_reply_length(engine, tokens * stack)
    lines_per_strip(engine, stack)


def read_stacked(engine: Any, base: Any, crops: list[Any], stack: int, tokens: int) -> tuple[float, int]:
    stacked(engine, base, stack, tokens)
    began = time.perf_counter()
    readings = engine.read_batch(crops)
    seconds = time.perf_counter() - began
    return len(crops) / seconds, sum(1 for r in readings if len(r.lines) == 1)


def tower_seconds(engine: Any, base: Any, crops: list[Any], stack: int) -> float:
    """The product's vision tower alone over the stacked pictures of ``crops``."""
    from subextract.stages.ocr.vlm import chunks, grouped_pictures, prepare

    strips = [prepare(c, base.max_side, base.max_pixels) for c in crops]
    pictures = grouped_pictures(strips, chunks(len(strips), stack))
    began = time.perf_counter()
    engine._tower.embed(pictures)
    return time.perf_counter() - began


def main() -> int:
    parser = engine_rounds_parser(__doc__)
    parser.add_argument("--stacks", default="1,2,4,8")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stacks = [int(k) for k in args.stacks.split(",")]

    result: dict[str, Any] = {"preset": args.preset, "n": args.n, "tokens_per_strip": args.tokens,
                              "stacks": stacks}
    import torch

    result["peak"] = worker_peak(args) if torch.cuda.is_available() else {"bf16_tflops": DATASHEET_BF16_TFLOPS,
                                                                          "device": "none (the datasheet's rate)"}
    peak = result["peak"]["bf16_tflops"]
    result["arithmetic"] = {str(k): crop_arithmetic(args.model, args.preset, args.tokens, stack=k) for k in stacks}
    single = crop_arithmetic(args.model, args.preset, args.tokens)
    result["ceiling_crops_per_s"] = peak / single["tflop_per_crop"]
    print(f"peak {peak:.0f} TFLOP/s; one crop {single['tflop_per_crop']:.3f} TFLOP: ceiling "
          f"{result['ceiling_crops_per_s']:.0f} crops/s", flush=True)
    for k in stacks:
        a = result["arithmetic"][str(k)]
        print(f"stack {k}: picture {a['picture']} -> {a['resized_to']}, {a['patches']} patches, prompt "
              f"{a['prompt_tokens']} tokens; {a['tflop_per_crop']:.3f} TFLOP a crop", flush=True)

    from subextract.stages.ocr import create_engine

    began = time.perf_counter()
    base = ocr_settings(args.preset, "vllm", args.model, args.tokens, {"load_format": "dummy", **args.engine_options})
    engine = create_engine(base)
    import vllm

    result.update(start_s=time.perf_counter() - began, vllm=vllm.__version__,
                  vision_tower="subextract" if engine._tower is not None else "vllm")
    crops = band_crops(args.n)
    for k in stacks:  # warm-up: each picture size's first pass compiles and allocates
        read_stacked(engine, base, crops[:8 * k], k, args.tokens)
    print(f"up in {result['start_s']:.1f} s, vLLM {vllm.__version__}, tower {result['vision_tower']}", flush=True)

    rates: dict[int, list[float]] = {k: [] for k in stacks}
    busy: dict[int, list[float]] = {k: [] for k in stacks}
    one_line: dict[int, list[int]] = {k: [] for k in stacks}
    for round_ in range(args.rounds):
        order = stacks[round_ % len(stacks):] + stacks[:round_ % len(stacks)]
        for k in order:
            gpu = GpuMemory(period=0.2)
            rate, lines = read_stacked(engine, base, crops, k, args.tokens)
            load = gpu.stop_load()
            rates[k].append(rate)
            busy[k].append(load["utilisation_mean"])
            one_line[k].append(lines)
            print(f"round {round_ + 1} stack {k}: {rate:.1f} crops/s, GPU busy {load['utilisation_mean']} %, "
                  f"readings of one line {lines}/{len(crops)}", flush=True)
    fed_16 = {}
    for k in stacks:
        stacked(engine, base, k, args.tokens)
        fed_16[k] = fed_16_at_a_time(engine, crops)["crops_per_s"]
        print(f"stack {k}, fed 16 crops a call as one video's pipeline: {fed_16[k]:.1f} crops/s", flush=True)
    tower = ({k: len(crops) / tower_seconds(engine, base, crops, k) for k in stacks}
             if engine._tower is not None else {})

    rows = {}
    for k in stacks:
        a = result["arithmetic"][str(k)]
        median = statistics.median(rates[k])
        rows[str(k)] = {"crops_per_s": rates[k], "median": median, "min": min(rates[k]), "max": max(rates[k]),
                        "gpu_busy_mean": busy[k], "readings_of_one_line": one_line[k],
                        "share_of_crop_ceiling": median / result["ceiling_crops_per_s"],
                        "achieved_tflops": median * a["tflop_per_crop"],
                        "mfu": median * a["tflop_per_crop"] / peak,
                        "tower_alone_crops_per_s": tower.get(k), "fed_16_at_a_time_crops_per_s": fed_16[k]}
    result["rows"] = rows
    (out / "stack.json").write_text(json.dumps(result, indent=1))
    table = ["| stack | picture → processor | TFLOP a crop | crops/s median (range) | of the crop ceiling | "
             "MFU of the work done | tower alone crops/s | GPU busy % | fed 16 a call |", "|---|---|---|---|---|---|---|---|---|"]
    for k in stacks:
        a, r = result["arithmetic"][str(k)], rows[str(k)]
        tower_rate = f"{r['tower_alone_crops_per_s']:.0f}" if r["tower_alone_crops_per_s"] else "-"
        table.append(f"| {k} | {a['picture']} → {a['resized_to']} | {a['tflop_per_crop']:.3f} | {r['median']:.1f} "
                     f"({r['min']:.1f}-{r['max']:.1f}) | {100 * r['share_of_crop_ceiling']:.1f} % | "
                     f"{100 * r['mfu']:.1f} % | {tower_rate} | {statistics.median(r['gpu_busy_mean']):.0f} | {r['fed_16_at_a_time_crops_per_s']:.1f} |")
    (out / "stack.md").write_text("\n".join(table) + "\n")
    print("\n".join(table), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
