#!/usr/bin/env python3
"""How well the embedded engine reads the lines of videos in a Tesseract language, segment by
segment, against their reference cues: the reading stage alone, without segmentation or
alignment, so a change to how lines are read is measured on hundreds of real line pictures in a
minute instead of a benchmark run.

    python bench/tesseract_lines.py --videos DIR [DIR ...] --work WORK [--only NAME ...]

Each video (``*.mp4`` beside its ``.srt`` and ``.json`` sidecar, as sample_videos/make_samples.py
writes them) whose language is read by Tesseract is run once through subextract with
``--save-crops`` into WORK (kept: later runs reuse them); then every saved segment picture that
lies within one reference cue for at least half its time is read again by the engine and its
reading compared with the cue's text. Prints per video the segments read within 10 % of their
letters (the scorer's end-to-end hit) and the CER, then the totals and the CPU seconds spent
reading. Segments outside every cue are counted when they read as text.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import cv2
from rapidfuzz.distance import Levenshtein

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from subextract.config import load_settings  # noqa: E402
from subextract.scoring import MAX_HIT_CER, load_cues, normalize_text  # noqa: E402
from subextract.stages.ocr.routed import RoutedEngine  # noqa: E402
from subextract.stages.ocr.scripts import uses_tesseract  # noqa: E402


def video_language(sidecar: Path) -> str:
    data = json.loads(sidecar.read_text(encoding="utf-8"))
    return data.get("lang") or data["languages"][0]


def saved_crops(video: Path, lang: str, work: Path) -> Path:
    """The folder of ``video``'s segment pictures (``--save-crops``), made once."""
    folder = work / video.stem
    if not (folder / "crops" / "crops.jsonl").exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "subextract", str(video), "--lang", lang, "-o", str(folder / "out.srt"),
                        "--force", "--quiet", "--save-crops", str(folder / "crops")], check=True, cwd=ROOT)
    return folder / "crops"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", nargs="+", type=Path, required=True, help="folders of generated videos")
    parser.add_argument("--work", type=Path, required=True, help="where the segment pictures are kept")
    parser.add_argument("--only", nargs="*", default=[], help="video names to read (default: all)")
    args = parser.parse_args()
    settings = load_settings()
    engines: dict[str, RoutedEngine] = {}
    totals = {"segments": 0, "hits": 0, "edits": 0, "letters": 0, "outside": 0}
    cpu = 0.0
    for folder in args.videos:
        for sidecar in sorted(folder.glob("*.json")):
            video, lang = sidecar.with_suffix(".mp4"), video_language(sidecar)
            if not video.exists() or not uses_tesseract(lang) or (args.only and video.stem not in args.only):
                continue
            crops = saved_crops(video, lang, args.work)
            reference = load_cues(sidecar.with_suffix(".srt"))
            engine = engines.setdefault(lang, RoutedEngine(dataclasses.replace(settings.ocr, lang=lang)))
            counts = {"segments": 0, "hits": 0, "edits": 0, "letters": 0, "outside": 0}
            for line in (crops / "crops.jsonl").read_text(encoding="utf-8").splitlines():
                saved = json.loads(line)
                picture = cv2.imread(str(crops / saved["file"]), cv2.IMREAD_GRAYSCALE)
                started = time.process_time()
                reading = engine.read_batch([picture], [tuple(tuple(box) for box in saved["lines"])])[0]
                cpu += time.process_time() - started
                read = normalize_text(" ".join(text_line.text for text_line in reading.lines))
                overlap, cue = max(((min(saved["end"], cue.end) - max(saved["start"], cue.start), cue) for cue in reference),
                                   key=lambda pair: pair[0])
                if overlap < 0.5 * (saved["end"] - saved["start"]):
                    counts["outside"] += bool(read)
                    continue
                truth = normalize_text(cue.text)
                edits = Levenshtein.distance(truth, read)
                counts["segments"] += 1
                counts["hits"] += edits <= MAX_HIT_CER * len(truth)
                counts["edits"] += edits
                counts["letters"] += len(truth)
            print(f"{video.stem:30s} segments {counts['segments']:3d}  read {counts['hits']:3d}  "
                  f"CER {counts['edits'] / max(1, counts['letters']):.3f}  text outside cues {counts['outside']}")
            for key in totals:
                totals[key] += counts[key]
    print(f"all: segments {totals['segments']}  read {totals['hits']}  CER {totals['edits'] / max(1, totals['letters']):.4f}  "
          f"text outside cues {totals['outside']}  reading CPU {cpu:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
