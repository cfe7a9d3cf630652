"""``subextract batch INPUT... --out DIR``: many videos into a mirrored output tree (the runner
is ``subextract.batch``; this module parses its options and shows its progress)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from subextract.batch import LIST_EXTENSIONS, VIDEO_EXTENSIONS, BatchRunner, Options, Shard, discover, run_batch
from subextract.cli.options import (add_config_option, add_engine_options, add_fail_on_empty_option, add_feed_options,
                                    add_input_options,
                                    add_logging_options, add_translate_option, add_translator_options,
                                    apply_input_options, check_translation_options, count_arg, positive_arg,
                                    reading_language_arg, settings_from_args, time_arg)
from subextract.cli.progress import BatchProgress
from subextract.errors import SubextractError
from subextract.feeds import FeedSink, watchlist_option
from subextract.stages.write import FORMATS

if TYPE_CHECKING:
    from subextract.scale.ray_runner import RayOptions


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="subextract batch", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Extract the subtitles of many videos into a mirrored output tree. Re-running the same "
                    "command skips videos already done (same input, same settings) and redoes failed, "
                    "interrupted and changed ones. See docs/batch.md.",
        epilog="exit status: 0 all done, 1 some videos failed (see the manifest), 2 bad usage, 3 with "
               "--fail-on-empty: some video gave no cue, 130 interrupted")
    parser.add_argument("inputs", nargs="*", metavar="INPUT",
                        help="video files, folders (searched recursively by video extension), list files "
                             f"({', '.join(LIST_EXTENSIONS)}: one path or URL a line) or http(s)/rtmp(s) URLs")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (created; holds manifest.jsonl)")
    parser.add_argument("--jobs", type=count_arg, metavar="N", help="videos processed at once, each in a child process with its own engine where the "
                        "engine allows (rapidocr, openai), else on threads sharing one in-process model (default: 1)")
    parser.add_argument("--lang", default="all", metavar="LANG", type=reading_language_arg,
                        help="as for subextract VIDEO: zh, zh-Hant, en-US, English… (default: all)")
    parser.add_argument("--format", choices=FORMATS, default="srt",
                        help="format of each video's output (default: srt)")
    parser.add_argument("--start", type=time_arg, default=0.0, metavar="TIME", help="start of each video's range")
    parser.add_argument("--end", type=time_arg, metavar="TIME", help="end of each video's range")
    parser.add_argument("--region", metavar="WHERE",
                        help="auto, bottom, top or X,Y,W,H in pixels, fractions (0,0.8,1,0.2) or percent "
                             "(0%%,80%%,100%%,20%%): one box for videos of every size (default: from the preset)")
    parser.add_argument("--fps", type=positive_arg, metavar="N", help="analyse N frames a second")
    add_config_option(parser)
    parser.add_argument("--retry-failed", action="store_true", help="redo only the videos that failed before")
    parser.add_argument("--overwrite-edited", action="store_true",
                        help="replace outputs that changed since they were written (by default they are kept and "
                             "the new result goes beside them as NAME.new.EXT)")
    parser.add_argument("--hash", action="store_true",
                        help="know unchanged inputs by content (SHA-256) rather than size and modification time")
    add_fail_on_empty_option(parser)
    parser.add_argument("--feed", metavar="PATH|-",
                        help="also stream every cue of every video as JSON lines, each as soon as it is final, to "
                             "stdout (-) or a file (appended to, so it gathers the cues of every run)")
    add_engine_options(parser)
    add_scale_options(parser)
    translation = add_translator_options(parser)
    add_translate_option(translation)
    add_feed_options(parser)
    add_input_options(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no per-video lines, no summary")
    add_logging_options(parser)
    return parser


# What --ray takes as a cluster's address; anything else after it is an input (``--ray videos/``).
RAY_ADDRESS = re.compile(r"auto|local|ray://\S+|[\w.-]+:\d+")


def shard_arg(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_scale_options(parser: argparse.ArgumentParser) -> None:
    scale = parser.add_argument_group("scale-out (docs/scale.md)")
    scale.add_argument("--shard", type=shard_arg, metavar="I/N",
                       help="do only shard I of N (0 <= I < N) of the videos, with its own manifest "
                            "(manifest.shard-I-of-N.jsonl): one process per shard, e.g. a Kubernetes Indexed Job "
                            "or a Slurm array, all writing to the same --out")
    scale.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                       help="run on a Ray cluster (needs Ray Data: pip install 'ray[data]', or from a clone "
                            "pip install '.[ray]'): ADDRESS as ray.init takes it (auto, ray://HOST:10001); alone, "
                            "a local cluster on this machine")
    scale.add_argument("--ray-split", action="store_true",
                       help="split each video: segments on CPU workers, crops read by --ray-readers engine actors "
                            "shared by all videos, cues written per video")
    scale.add_argument("--ray-workers", type=count_arg, metavar="N",
                       help="videos processed at once (default: the cluster's CPUs; with --ray-split less the readers')")
    scale.add_argument("--ray-readers", type=count_arg, default=1, metavar="N",
                       help="--ray-split: OCR engine actors (default: 1)")
    scale.add_argument("--ray-gpus", type=positive_arg, default=0.0, metavar="G",
                       help="--ray-split: GPUs each reader holds (1 for a vLLM replica a GPU; default: none)")
    scale.add_argument("--ray-batch", type=count_arg, default=64, metavar="N",
                       help="--ray-split: crops a reader reads at once (default: 64)")


def _ray_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What ``--ray`` took is an address, or the first input (``--ray videos/``); Ray's options
    without ``--ray``, and the batch options Ray cannot honour with it, are refused."""
    if args.ray is not None and not RAY_ADDRESS.fullmatch(args.ray):
        args.inputs.insert(0, args.ray)
        args.ray = "local"
    if not args.inputs:
        parser.error("the following arguments are required: INPUT")
    given = [name for name, value in (("--ray-split", args.ray_split), ("--ray-workers", args.ray_workers),
                                      ("--ray-gpus", args.ray_gpus)) if value]
    if args.ray is None and given:
        parser.error(f"{given[0]} needs --ray")
    if args.ray is not None:
        refused = [name for name, value in (("--jobs", args.jobs), ("--feed", args.feed),
                                            ("--translate", args.translate)) if value]
        if refused:
            parser.error(f"{refused[0]} is not available with --ray"
                         + (" (--ray-workers sets the videos processed at once)" if refused[0] == "--jobs" else ""))


def ray_options(args: argparse.Namespace) -> "RayOptions":
    from subextract.scale.ray_runner import RayOptions

    return RayOptions(address=None if args.ray == "local" else args.ray, split=args.ray_split,
                      workers=args.ray_workers, readers=args.ray_readers, gpus_per_reader=args.ray_gpus,
                      read_batch=args.ray_batch)


def _silence_stderr() -> None:
    """Later lines (and the flush at exit) go nowhere instead of failing again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stderr.fileno())
    except (OSError, ValueError):  # stderr is no real file (a test's buffer)
        pass


def run(args: argparse.Namespace) -> int:
    _ray_arguments(build_parser(), args)
    apply_input_options(args)
    check_translation_options(args)
    settings = settings_from_args(args)
    translator = None
    if args.translate:
        from subextract.translate import open_translator

        # Opened before anything is written: a missing translator fails the batch now, not video by video.
        translator = open_translator(settings.translate, args.glossary)
    out_dir = Path(args.out)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SubextractError(f"{out_dir}: cannot create the output folder ({exc.strerror})") from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise SubextractError(f"{out_dir}: the output folder is not writable")
    watchlist = watchlist_option(args.watchlist, args.only_flagged)
    jobs = discover(args.inputs, out_dir, args.lang, args.format)
    if not jobs:
        raise SubextractError(f"no videos found in {' '.join(args.inputs)} "
                              f"(extensions: {' '.join(sorted(VIDEO_EXTENSIONS))})")
    if args.shard is not None:  # after discover: every shard names the outputs as the whole batch would
        jobs = args.shard.select(jobs)
    runner = BatchRunner
    if args.ray is not None:
        try:
            from subextract.scale.ray_runner import ray_runner
        except ImportError as exc:
            raise SubextractError(f"--ray needs Ray Data: pip install 'ray[data]' (from a clone of subextract: "
                                  f"pip install '.[ray]') ({exc})") from None
        runner = ray_runner(ray_options(args))
    # A feed file gathers the cues of every run (a re-run adds the videos it redoes).
    feed = FeedSink(args.feed, mode="a") if args.feed else None
    options = Options(out_dir=out_dir, settings=settings, lang=args.lang, fmt=args.format,
                      start=args.start, end=args.end, jobs=args.jobs or 1, use_hash=args.hash,
                      retry_failed=args.retry_failed, watchlist=watchlist, only_flagged=args.only_flagged,
                      feed=feed, quiet=args.quiet, translate=args.translate, bilingual=args.bilingual,
                      translator=translator, overwrite_edited=args.overwrite_edited, shard=args.shard,
                      fail_on_empty=args.fail_on_empty)
    bar: BatchProgress | None = None

    def planned(count: int) -> None:
        nonlocal bar
        bar = BatchProgress(enabled=not args.quiet and sys.stderr.isatty(), total=count)
        options.on_finished = lambda _record: bar.advance()

    def say(text: str) -> None:
        try:
            bar.write(text) if bar is not None else print(text, file=sys.stderr, flush=True)
        except OSError:  # the reader went away (`batch ... 2>&1 | head -1`): the batch goes on, unheard
            _silence_stderr()

    options.on_planned = planned
    options.say = say
    try:
        return run_batch(jobs, options, runner)
    finally:
        if bar is not None:
            bar.close()
        if translator is not None:
            translator.model.close()
