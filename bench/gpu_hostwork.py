"""The in-process engine's host work per request, A/B on one GPU (docs/gpu.md, eighth round).

One engine (the preset as shipped, random weights, every reply forced to ``--tokens`` tokens as in
bench/gpu.py), one process; each round reads the same ``--n`` crops in one ``read_batch`` along
every path, alternating, so the paths share the machine, the engine and its warm state:

  text          the prompt's text in every request, vLLM's per-token log-probability dicts and its
                detokenizer (the engine before the eighth round)
  ids           the prompt's token ids, tokenised once at start
  ids-flat      the same with ``flat_logprobs``
  ids-flat-dec  the same with vLLM told not to detokenise, the replies decoded by the engine in one batch

The paths are the engine's own: its fallbacks where a vLLM lacks a feature (no ids: ``_prompt_ids``
None; no flat lists: ``flat_logprobs`` off; no decoding here: ``detokenize`` on). Each round also
checks that every path's readings (text and confidence) equal the text path's, and that the engine's
own decoding gives vLLM's text for the same completions. Then one-crop latency per path, and a
cProfile of one read of the newest path.

  python bench/gpu_hostwork.py MODEL_DIR --out DIR [--n 512] [--rounds 3] [--tokens 24]
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from gpu import band_crops, engine_rounds_parser, force_reply_length, ocr_settings, percentiles  # noqa: E402

PATHS = ("text", "ids", "ids-flat", "ids-flat-dec")


def set_path(engine: Any, path: str, prompt_ids: list[int]) -> None:
    engine._prompt_ids = None if path == "text" else prompt_ids
    params = engine._params.clone()
    params.flat_logprobs = path in ("ids-flat", "ids-flat-dec")
    params.detokenize = path != "ids-flat-dec"
    engine._params = params


def readings(result: list[Any]) -> list[tuple[tuple[str, ...], float]]:
    return [(tuple(line.text for line in r.lines), r.confidence) for r in result]


def decoding_check(engine: Any, pictures: list[Any]) -> dict[str, Any]:
    """The engine's batched decoding against vLLM's detokenizer, for the same completions."""
    from subextract.stages.ocr.vllm_engine import decode_replies

    params = engine._params.clone()
    params.detokenize = True
    outputs = engine._llm.generate(engine.requests(pictures), params, use_tqdm=False)
    began = time.perf_counter()
    here = decode_replies(engine._llm.get_tokenizer(), outputs)
    seconds = time.perf_counter() - began
    by_vllm = [o.outputs[0].text for o in outputs]
    return {"replies": len(here), "same": sum(a == b for a, b in zip(here, by_vllm)), "decode_s": seconds}


def main() -> int:
    parser = engine_rounds_parser(__doc__)
    parser.add_argument("--one-crop", type=int, default=40, help="single-crop reads per path for latency")
    parser.add_argument("--paths", default=",".join(PATHS))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = args.paths.split(",")

    from subextract.stages.ocr import create_engine
    from subextract.stages.ocr.vlm import prepare

    began = time.perf_counter()
    settings = ocr_settings(args.preset, "vllm", args.model, args.tokens, {"load_format": "dummy", **args.engine_options})
    engine = create_engine(settings)
    result: dict[str, Any] = {"preset": args.preset, "n": args.n, "tokens": args.tokens,
                              "start_s": time.perf_counter() - began, "paths": paths,
                              "vision_tower": "subextract" if engine._tower is not None else "vllm",
                              "prompt_ids": len(engine._prompt_ids or [])}
    import vllm

    result["vllm"] = vllm.__version__
    force_reply_length(engine, args.tokens)
    prompt_ids = engine._prompt_ids
    crops = band_crops(args.n)
    engine.read_batch(crops[:8])  # warm-up
    print(f"up in {result['start_s']:.1f} s, vLLM {vllm.__version__}, tower {result['vision_tower']}", flush=True)

    pictures = [prepare(c, settings.max_side, settings.max_pixels) for c in crops[:64]]
    result["decoding_check"] = decoding_check(engine, pictures)
    print(f"decoding check: {result['decoding_check']}", flush=True)

    rows: dict[str, list[float]] = {p: [] for p in paths}
    same: dict[str, list[int]] = {p: [] for p in paths}
    for round_ in range(args.rounds):
        reference = None
        for path in paths:
            set_path(engine, path, prompt_ids)
            start = time.perf_counter()
            read = readings(engine.read_batch(crops))
            rate = len(crops) / (time.perf_counter() - start)
            rows[path].append(rate)
            reference = reference or read
            same[path].append(sum(a == b for a, b in zip(read, reference)))
            print(f"round {round_ + 1} {path}: {rate:.1f} crops/s, readings as 'text': {same[path][-1]}/{len(read)}",
                  flush=True)
    result["bulk"] = {p: {"crops_per_s": rows[p], "median": statistics.median(rows[p]), "min": min(rows[p]),
                          "max": max(rows[p]), "readings_same_as_text": same[p]} for p in paths}

    result["one_crop_s"] = {}
    for path in (paths[0], paths[-1]):
        set_path(engine, path, prompt_ids)
        times = []
        for crop in crops[:args.one_crop]:
            start = time.perf_counter()
            engine.read_batch([crop])
            times.append(time.perf_counter() - start)
        result["one_crop_s"][path] = percentiles(times)
        print(f"one crop {path}: {result['one_crop_s'][path]}", flush=True)

    set_path(engine, paths[-1], prompt_ids)
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    engine.read_batch(crops)
    profile.disable()
    result["profiled_crops_per_s"] = len(crops) / (time.perf_counter() - start)
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text)
    stats.sort_stats("tottime").print_stats(35)
    stats.sort_stats("cumulative").print_stats(45)
    (out / "profile.txt").write_text(f"profiled {paths[-1]}: {result['profiled_crops_per_s']:.1f} crops/s\n"
                                     + text.getvalue())
    (out / "hostwork.json").write_text(json.dumps(result, indent=1))
    for path in paths:
        row = result["bulk"][path]
        print(f"{path:14s} median {row['median']:.1f} crops/s ({row['min']:.1f}-{row['max']:.1f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
