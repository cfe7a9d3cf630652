"""Several jobs sharing one in-process engine, as the batch runner and the service share it on a GPU
(docs/gpu.md, tenth round): C callers at once, each reading ``--chunk`` crops a call (one video's
pipeline hands the engine ~16 at a time) for ``--phase-s`` seconds, through

  one-at-a-time   a lock around the engine: each caller's batch is one engine call (the product
                  before 2026-12-05)
  handed-together the product's SerializedEngine: the batches handed over while the engine reads
                  are read together in its next call

alternating inside each round, on one engine (the preset as shipped, random weights, every reply
forced to ``--tokens`` tokens as bench/gpu.py does).

    python bench/gpu_callers.py MODEL_DIR --out DIR [--callers 4,16] [--chunk 16] [--phase-s 8]
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from gpu import band_crops, engine_rounds_parser, force_reply_length, ocr_settings  # noqa: E402


class OneAtATime:
    """The engine behind a lock: every caller's batch is a call of its own."""

    def __init__(self, engine: Any) -> None:
        self._engine, self._lock = engine, threading.Lock()

    def read_batch(self, images: Any, line_boxes: Any = None) -> Any:
        with self._lock:
            return self._engine.read_batch(images, line_boxes=line_boxes)


def phase(shared: Any, callers: int, chunk: int, seconds: float) -> dict[str, float]:
    calls = []

    def caller(index: int) -> int:
        mine = band_crops(chunk, seed=700 + index)
        done, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            began = time.perf_counter()
            shared.read_batch(mine)
            calls.append(time.perf_counter() - began)
            done += chunk
        return done

    began = time.perf_counter()
    with ThreadPoolExecutor(callers) as pool:
        done = sum(pool.map(caller, range(callers)))
    return {"crops_per_s": done / (time.perf_counter() - began), "call_s_p50": statistics.median(calls)}


def main() -> int:
    parser = engine_rounds_parser(__doc__)
    parser.add_argument("--callers", default="4,16")
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--phase-s", type=float, default=8)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from subextract.stages.ocr import SerializedEngine, create_engine

    began = time.perf_counter()
    engine = create_engine(ocr_settings(args.preset, "vllm", args.model, args.tokens, {"load_format": "dummy",
                                                                                    **args.engine_options}))
    start_s = time.perf_counter() - began
    force_reply_length(engine, args.tokens)
    engine.read_batch(band_crops(8))
    ready: Future = Future()
    ready.set_result(engine)
    wrappers = {"one-at-a-time": OneAtATime(engine), "handed-together": SerializedEngine(ready)}
    print(f"up in {start_s:.1f} s", flush=True)
    rows: dict[str, dict[str, list[float]]] = {}
    for round_ in range(args.rounds):
        names = list(wrappers) if round_ % 2 == 0 else list(reversed(wrappers))
        for callers in (int(c) for c in args.callers.split(",")):
            for name in names:
                row = phase(wrappers[name], callers, args.chunk, args.phase_s)
                rows.setdefault(f"{callers}", {}).setdefault(name, []).append(row["crops_per_s"])
                print(f"round {round_ + 1}, {callers} callers x {args.chunk}, {name}: {row['crops_per_s']:.1f} crops/s, "
                      f"call p50 {row['call_s_p50'] * 1000:.0f} ms", flush=True)
    result = {"preset": args.preset, "tokens": args.tokens, "chunk": args.chunk, "phase_s": args.phase_s,
              "start_s": start_s, "rows": rows,
              "medians": {c: {name: statistics.median(v) for name, v in by.items()} for c, by in rows.items()}}
    (out / "callers.json").write_text(json.dumps(result, indent=1))
    for callers, by in result["medians"].items():
        print(f"{callers} callers: " + ", ".join(f"{name} {rate:.1f}" for name, rate in by.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
