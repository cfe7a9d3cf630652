"""Command line: ``subextract VIDEO [options]`` and the ``score`` and ``batch`` sub-commands. Parses and prints only."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

from subextract.config import Settings, load_settings, preset_names
from subextract.errors import SubextractError

SUBCOMMANDS = ("score", "batch")

_EPILOG = """examples:
  subextract movie.mp4 --lang zh              writes movie.zh.srt next to the video
  subextract talk.mkv -o - --format json      cues with confidence as JSON on stdout
  subextract clip.mp4 --start 60 --end 120 --region bottom --config fast
  subextract https://host/live.m3u8 --region bottom --format jsonl -o - --watchlist words.txt
                                              one JSON line per cue as soon as it is final

sub-commands:
  subextract score REF.srt HYP.srt [--json]   accuracy and timing of HYP against REF
  subextract batch INPUT... --out DIR         many videos, resumable, in parallel (docs/batch.md)
"""


def time_arg(value: str) -> float:
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


def _number(value: str, convert, kind: str, valid, requirement: str):
    try:
        number = convert(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {kind}: {value!r}") from None
    if not valid(number):
        raise argparse.ArgumentTypeError(f"must be {requirement}: {value!r}")
    return number


def positive_arg(value: str) -> float:
    return _number(value, float, "a number", lambda n: n > 0 and math.isfinite(n), "a positive number")


def count_arg(value: str) -> int:
    return _number(value, int, "a whole number", lambda n: n >= 1, "at least 1")


def _engine_option(value: str) -> tuple[str, object]:
    """``KEY=VALUE`` with VALUE read as YAML (``64``, ``true``, ``{image: 1}``, ``bfloat16``)."""
    import yaml

    key, sep, text = value.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE: {value!r}")
    try:
        return key.strip(), yaml.safe_load(text)
    except yaml.YAMLError:
        raise argparse.ArgumentTypeError(f"not a YAML value: {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="subextract", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
        description="Extract hardcoded (burned-in) subtitles from a video into SRT, WebVTT or JSON.")
    parser.add_argument("video", help="video file (anything FFmpeg reads), or an http(s)/rtmp(s) URL or HLS stream")
    parser.add_argument("--lang", default="all", metavar="CODE",
                        help="language of the lines to keep and of the output name, e.g. zh, en; "
                             "'all' keeps every line of bilingual subtitles (default: all)")
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="output file, or - for stdout (default: VIDEO.LANG.FORMAT next to the video)")
    parser.add_argument("--format", choices=("srt", "vtt", "json", "jsonl"), default="srt",
                        help="output format; jsonl writes one JSON object per cue as soon as it is final "
                             "(default: srt)")
    parser.add_argument("--start", type=time_arg, default=0.0, metavar="TIME", help="start of the range to process")
    parser.add_argument("--end", type=time_arg, metavar="TIME", help="end of the range to process")
    parser.add_argument("--region", metavar="WHERE",
                        help="where subtitles are: auto (found by text detection), bottom, top, or X,Y,W,H "
                             "in pixels (default: from the preset, auto)")
    parser.add_argument("--fps", type=positive_arg, metavar="N",
                        help="analyse N frames a second instead of every frame; boundaries are still "
                             "snapped to the exact frame")
    parser.add_argument("--config", metavar="NAME|FILE",
                        help=f"preset ({', '.join(preset_names())}) or a YAML file overriding default.yaml")
    add_engine_options(parser)
    add_feed_options(parser)
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    return parser


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """The OCR engine options (shared with ``subextract batch``)."""
    ocr = parser.add_argument_group("OCR engine (see docs/gpu.md)")
    ocr.add_argument("--engine", choices=("rapidocr", "vllm", "openai"),
                     help="rapidocr: embedded, CPU; vllm: a vision-language model run in this process; openai: "
                          "any OpenAI-compatible server such as `vllm serve` (default: from the preset, rapidocr)")
    ocr.add_argument("--model", metavar="PATH|NAME",
                     help="vllm: model directory or hub id; openai: served model name (default: from the preset, "
                          "or the server's only model)")
    ocr.add_argument("--server", metavar="URL", help="openai: the API's base URL, e.g. http://127.0.0.1:8000/v1; "
                                                     "an API key is read from $SUBEXTRACT_API_KEY")
    ocr.add_argument("--concurrency", type=count_arg, metavar="N", help="openai: requests in flight at once")
    ocr.add_argument("--stack", type=count_arg, metavar="N",
                     help="stack N subtitle strips into one picture per request (faster on a GPU; a reply that "
                          "does not give one line per strip is read again strip by strip)")
    ocr.add_argument("--engine-option", action="append", type=_engine_option, metavar="KEY=VALUE",
                     help="vllm: one keyword argument of vllm.LLM (a YAML value), e.g. max_num_seqs=64; repeatable")


def add_feed_options(parser: argparse.ArgumentParser) -> None:
    """Moderation options (shared with ``subextract batch``)."""
    feed = parser.add_argument_group("moderation feeds (see docs/batch.md)")
    feed.add_argument("--watchlist", metavar="FILE",
                      help="words or phrases, or re:REGEX, one a line: matching cues get their terms in the "
                           "jsonl 'flags' field")
    feed.add_argument("--only-flagged", action="store_true", help="write only the cues matching the watchlist")


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The preset or config file, overridden by the command-line options given."""
    overrides = {"region": {"mode": args.region}, "sample": {"fps": args.fps},
                 "ocr": {"engine": args.engine, "model": args.model, "server": args.server,
                         "concurrency": args.concurrency, "stack": args.stack,
                         "engine_options": dict(args.engine_option) if args.engine_option else None}}
    return load_settings(args.config, overrides)


def default_output(video: str, lang: str, fmt: str) -> str:
    stem = Path(video)
    suffix = f".{lang}.{fmt}" if lang not in ("all", "auto") else f".{fmt}"
    return str(stem.with_suffix("")) + suffix


class _ProgressBar:
    """A tqdm bar on a terminal: seconds of video decoded, segments found, ETA."""

    def __init__(self, enabled: bool) -> None:
        self._bar = None
        self._enabled = enabled

    def __call__(self, done: float, total: float | None, segments: int) -> None:
        if not self._enabled:
            return
        if self._bar is None:
            from tqdm import tqdm

            # A live stream has no length: a counter of seconds read instead of a bar with an ETA.
            bar_format = ("{l_bar}{bar}| {n:.1f}/{total:.1f} s video [{elapsed}<{remaining}{postfix}]" if total
                          else "{n:.1f} s video [{elapsed}{postfix}]")
            self._bar = tqdm(total=round(total, 1) if total else None, unit="s", unit_scale=False, file=sys.stderr,
                             bar_format=bar_format)
        self._bar.n = min(round(done, 1), self._bar.total) if self._bar.total else round(done, 1)
        self._bar.set_postfix_str(f"{segments} segments", refresh=False)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def json_metadata(video: str, lang: str, result) -> dict:
    """What ``--format json`` says beside the cues: the video, the bands used, run statistics."""
    s = result.stats
    return {"video": video, "duration": result.info.duration, "language": lang,
            "bands": [dataclasses.asdict(band) for band in result.bands],
            "stats": {"ocr_calls": s.ocr_calls, "ocr_seconds": round(s.ocr_seconds, 3), "segments": s.segments,
                      "frames": s.frames, "wall_seconds": round(s.wall_seconds, 3),
                      "realtime_factor": round(s.realtime_factor, 2)},
            "complete": result.complete, "warnings": result.warnings}


def run_extract(args: argparse.Namespace) -> int:
    from subextract.pipeline.run import extract
    from subextract.feeds import CueFeed, FeedSink, watchlist_option
    from subextract.stages.probe import check_readable
    from subextract.stages.source import is_url
    from subextract.stages.write import check_writable, render, write_text

    check_readable(args.video)
    if is_url(args.video) and not args.output:
        raise SubextractError(f"{args.video}: a URL has no folder to write next to; give -o FILE or -o -")
    output = args.output or default_output(args.video, args.lang, args.format)
    check_writable(output, args.force)
    feed = CueFeed(args.video, watchlist_option(args.watchlist, args.only_flagged), args.only_flagged)
    settings = settings_from_args(args)
    bar = _ProgressBar(enabled=not args.quiet and sys.stderr.isatty())
    # jsonl goes out cue by cue while the video runs; the other formats are written whole at the end.
    sink = FeedSink(output) if args.format == "jsonl" else None
    try:
        result = extract(args.video, settings, lang=args.lang, start=args.start, end=args.end, progress=bar,
                         on_cue=feed.streaming_to(sink) if sink is not None else None)
    finally:
        bar.close()
        if sink is not None:
            sink.close()
    cues = feed.kept(result.cues)
    s = result.stats
    if sink is None:
        write_text(output, render(cues, args.format, json_metadata(args.video, args.lang, result)))
    elif not sink.lines:
        write_text(output, "")  # nothing to stream: still an (empty) feed file, as an SRT would be
    for warning in result.warnings:
        print(f"subextract: warning: {warning}", file=sys.stderr)
    if result.error is not None:
        print(f"subextract: error: {result.error}", file=sys.stderr)
        print(f"subextract: warning: stopped early; the {len(cues)} cues read before that were written",
              file=sys.stderr)
    if not args.quiet:
        where = "stdout" if output == "-" else output
        rate = f" ({s.ocr_calls / s.ocr_seconds:.1f} crops/s)" if s.ocr_seconds > 0 else ""
        print(f"subextract: {len(cues)} cues → {where} | {s.ocr_calls} OCR calls{rate}, {s.segments} segments, "
              f"{s.frames} frames | {s.wall_seconds:.1f} s wall, {s.realtime_factor:.1f}x real time", file=sys.stderr)
    return 0 if result.complete else 3


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "score":
            from subextract import scoring

            return scoring.main(argv[1:])
        if argv and argv[0] == "batch":
            from subextract import batch

            return batch.main(argv[1:])
        return run_extract(build_parser().parse_args(argv))
    except SubextractError as exc:
        print(f"subextract: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("subextract: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
