"""Command line: ``subextract VIDEO [options]`` and the ``score`` sub-command. Parses and prints only."""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
from pathlib import Path

from subextract.config import load_settings, preset_names
from subextract.errors import SubextractError

SUBCOMMANDS = ("score",)

_EPILOG = """examples:
  subextract movie.mp4 --lang zh              writes movie.zh.srt next to the video
  subextract talk.mkv -o - --format json      cues with confidence as JSON on stdout
  subextract clip.mp4 --start 60 --end 120 --region bottom --config fast

sub-commands:
  subextract score REF.srt HYP.srt [--json]   accuracy and timing of HYP against REF
"""


def _seconds(value: str) -> float:
    """Seconds as ``90``, ``1:30`` or ``0:01:30.5``."""
    try:
        parts = [float(p) for p in value.split(":")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time: {value!r} (use seconds or [HH:]MM:SS)") from None
    if len(parts) > 3 or any(p < 0 or not math.isfinite(p) for p in parts):
        raise argparse.ArgumentTypeError(f"not a time: {value!r}")
    total = 0.0
    for part in parts:
        total = total * 60 + part
    return total


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not (number > 0 and math.isfinite(number)):
        raise argparse.ArgumentTypeError(f"must be a positive number: {value!r}")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="subextract", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
        description="Extract hardcoded (burned-in) subtitles from a video into SRT, WebVTT or JSON.")
    parser.add_argument("video", help="video file (anything FFmpeg reads)")
    parser.add_argument("--lang", default="all", metavar="CODE",
                        help="language of the lines to keep and of the output name, e.g. zh, en; "
                             "'all' keeps every line of bilingual subtitles (default: all)")
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="output file, or - for stdout (default: VIDEO.LANG.FORMAT next to the video)")
    parser.add_argument("--format", choices=("srt", "vtt", "json"), default="srt", help="output format (default: srt)")
    parser.add_argument("--start", type=_seconds, default=0.0, metavar="TIME", help="start of the range to process")
    parser.add_argument("--end", type=_seconds, metavar="TIME", help="end of the range to process")
    parser.add_argument("--region", metavar="WHERE",
                        help="where subtitles are: auto (found by text detection), bottom, top, or X,Y,W,H "
                             "in pixels (default: from the preset, auto)")
    parser.add_argument("--fps", type=_positive, metavar="N",
                        help="analyse N frames a second instead of every frame; boundaries are still "
                             "snapped to the exact frame")
    parser.add_argument("--config", metavar="NAME|FILE",
                        help=f"preset ({', '.join(preset_names())}) or a YAML file overriding default.yaml")
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    return parser


def default_output(video: str, lang: str, fmt: str) -> str:
    stem = Path(video)
    suffix = f".{lang}.{fmt}" if lang not in ("all", "auto") else f".{fmt}"
    return str(stem.with_suffix("")) + suffix


class _ProgressBar:
    """A tqdm bar on a terminal: seconds of video decoded, segments found, ETA."""

    def __init__(self, enabled: bool) -> None:
        self._bar = None
        self._enabled = enabled

    def __call__(self, done: float, segments: int, total: float) -> None:
        if not self._enabled:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=round(total, 1), unit="s", unit_scale=False, file=sys.stderr,
                             bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s video [{elapsed}<{remaining}{postfix}]")
        self._bar.n = min(round(done, 1), self._bar.total)
        self._bar.set_postfix_str(f"{segments} segments", refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run_extract(args: argparse.Namespace) -> int:
    from subextract.pipeline.run import extract
    from subextract.stages.probe import check_readable
    from subextract.stages.write import check_writable, render, write_text

    check_readable(args.video)
    output = args.output or default_output(args.video, args.lang, args.format)
    check_writable(output, args.force)
    overrides = {"region": {"mode": args.region}, "sample": {"fps": args.fps}}
    settings = load_settings(args.config, overrides)
    bar = _ProgressBar(enabled=not args.quiet and sys.stderr.isatty())
    total = {"seconds": 0.0}

    def progress(done: float, segments: int) -> None:
        bar(done, segments, total["seconds"])

    from subextract.stages.probe import probe

    info = probe(args.video)
    total["seconds"] = max(0.0, (min(args.end, info.duration) if args.end else info.duration) - args.start)
    try:
        result = extract(args.video, settings, lang=args.lang, start=args.start, end=args.end, progress=progress)
    finally:
        bar.close()
    s = result.stats
    metadata = {"video": args.video, "duration": info.duration, "language": args.lang,
                "bands": [dataclasses.asdict(band) for band in result.bands],
                "stats": {"ocr_calls": s.ocr_calls, "segments": s.segments, "frames": s.frames,
                          "wall_seconds": round(s.wall_seconds, 3), "realtime_factor": round(s.realtime_factor, 2)},
                "complete": result.complete, "warnings": result.warnings}
    write_text(output, render(result.cues, args.format, metadata))
    for warning in result.warnings:
        print(f"subextract: warning: {warning}", file=sys.stderr)
    if not args.quiet:
        where = "stdout" if output == "-" else output
        print(f"subextract: {len(result.cues)} cues → {where} | {s.ocr_calls} OCR calls, {s.segments} segments, "
              f"{s.frames} frames | {s.wall_seconds:.1f} s wall, {s.realtime_factor:.1f}x real time", file=sys.stderr)
    return 0 if result.complete else 3


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "score":
            from subextract import scoring

            return scoring.main(argv[1:])
        return run_extract(build_parser().parse_args(argv))
    except SubextractError as exc:
        print(f"subextract: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("subextract: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
