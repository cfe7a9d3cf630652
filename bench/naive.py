#!/usr/bin/env python3
"""The naive baseline the benchmark measures subextract against: RapidOCR's detector and
recogniser (its defaults, the detector's input bounded to 960 px) on the bottom (or top) 30 % of
a frame every 0.5 s, neighbouring readings at least
80 % similar merged into one cue. It does not care how the text is drawn, and it is slow.
With --strip it reads 30 % strips starting elsewhere (subtitles set higher; a second track at the
top), each strip's readings merged on their own.

    python bench/naive.py VIDEO [--position bottom|top | --strip START ...] -o cues.json

Writes ``{"cues": [{"start", "end", "text"}], "ocr_calls": N}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from subextract.stages.probe import ffmpeg_exe, probe  # noqa: E402

INTERVAL = 0.5
SHARE = 0.3
SIMILAR = 80


def sampled_strips(video: str, start: float):
    """(time, BGR strip) every INTERVAL seconds, decoded by FFmpeg; the strip starts at the share
    start of the height."""
    info = probe(video)
    width, height = info.width // 2 * 2, int(info.height * SHARE) // 2 * 2
    y = min(round(info.height * start), info.height - height)
    command = [ffmpeg_exe(), "-nostdin", "-v", "error", "-i", video, "-vf",
               f"fps={1 / INTERVAL},crop={width}:{height}:0:{y}", "-f", "rawvideo", "-pix_fmt", "bgr24", "-"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE)
    size = width * height * 3
    index = 0
    while chunk := process.stdout.read(size):
        if len(chunk) < size:
            break
        yield index * INTERVAL, np.frombuffer(chunk, np.uint8).reshape(height, width, 3)
        index += 1
    process.wait()


def read(engine, strip: np.ndarray) -> str:
    result = engine(strip)
    if result.boxes is None or result.txts is None:
        return ""
    lines = sorted(zip(result.boxes, result.txts), key=lambda item: (item[0][:, 1].mean(), item[0][:, 0].min()))
    return "\n".join(text.strip() for _, text in lines if text.strip())


def strip_start(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1 - SHARE:
        raise argparse.ArgumentTypeError(f"a strip starts between 0 and {1 - SHARE:g} of the height")
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("video")
    parser.add_argument("--position", choices=("bottom", "top"), default="bottom")
    parser.add_argument("--strip", type=strip_start, action="append", metavar="START",
                        help=f"read the {SHARE:.0%} strip starting at this share of the height (repeatable; "
                             "replaces --position)")
    parser.add_argument("-o", "--output", required=True, type=Path)
    args = parser.parse_args()
    starts = args.strip or [1 - SHARE if args.position == "bottom" else 0.0]
    from rapidocr import RapidOCR

    # RapidOCR's defaults, but for the detector's input: its default ("min", 736) scales a 1280x216
    # strip *up* to 4362x736, which made this baseline ~40x slower than subextract for no gain.
    engine = RapidOCR(params={"Global.log_level": "error", "Det.limit_type": "max", "Det.limit_side_len": 960})
    cues: list[dict] = []
    calls = 0
    for start in starts:
        strip_cues: list[dict] = []
        for t, strip in sampled_strips(args.video, start):
            text = read(engine, strip)
            calls += 1
            if not text:
                continue
            last = strip_cues[-1] if strip_cues else None
            if last is not None and abs(last["end"] - t) < 1e-6 and fuzz.ratio(last["text"], text) >= SIMILAR:
                last["end"] = t + INTERVAL
            else:
                strip_cues.append({"start": t, "end": t + INTERVAL, "text": text})
        cues += strip_cues
    cues.sort(key=lambda cue: cue["start"])
    args.output.write_text(json.dumps({"cues": cues, "ocr_calls": calls}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
