#!/usr/bin/env python3
"""Where one video's time goes, stage by stage: wall seconds, this process's CPU seconds (all
threads) and FFmpeg's (the children's) for probing, the region pre-scan (its decode and its
detector apart), the appearance pre-scan, the main decode with segmenting and hashing, OCR,
alignment and writing.

The stages run one after the other here (``extract`` overlaps decoding and OCR), so each one's
cost is its own. The pre-scan's pieces are timed by wrapping the functions ``scan_video`` calls.

    python bench/stage_times.py sample_videos/zh_bottom.mp4 [--region bottom] [--lang zh] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import subextract.pipeline.run as run  # noqa: E402
import subextract.stages.region as region  # noqa: E402
from subextract.config import load_settings  # noqa: E402
from subextract.stages.ocr import create_engine  # noqa: E402
from subextract.stages.write import render, write_text  # noqa: E402

Totals = dict[str, list[float]]  # stage → [wall, own CPU, FFmpeg CPU]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def timed(totals: Totals, stage: str):
    wall, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    try:
        yield
    finally:
        spent = totals[stage]
        spent[0] += time.perf_counter() - wall
        spent[1] += time.process_time() - cpu
        spent[2] += _children_cpu() - children


def wrap(totals: Totals, module, name: str, stage: str) -> None:
    original = getattr(module, name)

    def timed_call(*args, **kwargs):
        with timed(totals, stage):
            return original(*args, **kwargs)

    setattr(module, name, timed_call)


def measure(video: str, settings, totals: Totals) -> dict:
    with timed(totals, "engine set-up"):
        engine = create_engine(settings.ocr)
    detector = (lambda: engine.text_detector()) if hasattr(engine, "text_detector") else None
    with timed(totals, "scan (probe + pre-scans + appearance)"):
        scan = run.scan_video(video, settings, detector=detector)
    with timed(totals, "main decode + segmenting/hashing"):
        segmented = run.segment_video(scan, settings)
    firsts = segmented.first_showings()
    with timed(totals, "OCR"):
        readings = engine.read_batch([segment.image for segment, _ in firsts], [segment.lines for segment, _ in firsts])
    with timed(totals, "language tags"):
        readings = {key: run.tag_reading(reading) for (_, key), reading in zip(firsts, readings)}
    with timed(totals, "alignment (+ boundary re-decodes)"):
        result = run.cues_from_segments(segmented, readings, settings)
    with timed(totals, "writing"), tempfile.TemporaryDirectory() as folder:
        write_text(str(Path(folder) / "out.json"), render(result.cues, "json", result.metadata()))
    return {"cues": len(result.cues), "segments": len(segmented.segments), "reads": len(firsts),
            "duration": scan.info.duration}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("video")
    parser.add_argument("--config", action="append", help="preset or YAML (repeatable)")
    parser.add_argument("--region", help="auto, bottom, top or X,Y,W,H")
    parser.add_argument("--lang", help="the subtitles' language, as subextract's --lang")
    parser.add_argument("--repeat", type=int, default=1, help="runs to average (the first loads the models)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    settings = load_settings(args.config)
    if args.region:
        settings = replace(settings, region=replace(settings.region, mode=args.region))
    if args.lang:
        settings = replace(settings, ocr=replace(settings.ocr, lang=args.lang))
    totals: Totals = defaultdict(lambda: [0.0, 0.0, 0.0])
    wrap(totals, run, "probe", "  probe")
    wrap(totals, region, "prescan_frames", "  region pre-scan decode")
    if hasattr(run, "prescan_frames"):
        wrap(totals, run, "prescan_frames", "  appearance pre-scan decodes")
    wrap(totals, region, "detect_boxes", "  region detector")
    wrap(totals, run, "learn_appearance", "  appearance learning")
    facts = {}
    for _ in range(args.repeat):
        facts = measure(args.video, settings, totals)
    rows = {stage: [round(value / args.repeat, 3) for value in spent] for stage, spent in totals.items()}
    if args.json:
        print(json.dumps({"video": args.video, **facts, "stages": rows}, indent=1))
        return 0
    print(f"{args.video}: {facts}; mean of {args.repeat} run(s)")
    print(f"{'stage':42} {'wall s':>8} {'CPU s':>8} {'FFmpeg CPU s':>13}")
    for stage, (wall, cpu, children) in rows.items():
        print(f"{stage:42} {wall:8.3f} {cpu:8.3f} {children:13.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
