"""``subextract VIDEO``: one video's subtitles into a file. Parses the options, runs the job
(``subextract.job``) and prints what happened."""

from __future__ import annotations

import argparse
import sys

from subextract.cli import EXIT_STATUSES
from subextract.cli.options import (add_config_option, add_engine_options, add_fail_on_empty_option, add_feed_options,
                                    add_input_options, add_logging_options, add_translate_option,
                                    add_translator_options, apply_input_options, check_translation_options,
                                    positive_arg, reading_language_arg, settings_from_args, time_arg)
from subextract.cli.progress import TranslationProgress, VideoProgress
from subextract.errors import SubextractError
from subextract.stages.write import FORMATS

_EPILOG = """examples:
  subextract movie.mp4 --lang zh              writes movie.zh.srt next to the video
  subextract talk.mkv -o - --format json      cues with confidence as JSON on stdout
  subextract clip.mp4 --start 60 --end 120 --region bottom --config fast
  subextract movie.mp4 --lang zh --translate en --translator-server http://gpu:8000/v1
                                              movie.zh.srt and movie.en.srt (same cues, same times)
  subextract https://host/live.m3u8 --region bottom --format jsonl -o - --watchlist words.txt
                                              one JSON line per cue as soon as it is final

sub-commands:
  subextract score REF.srt HYP.srt [--json]   accuracy and timing of HYP against REF
  subextract batch INPUT... --out DIR         many videos, resumable, in parallel (docs/batch.md)
  subextract translate SUBS.srt --to en       translate an existing SRT or WebVTT file
  subextract serve [--port 8000] [--data DIR] an HTTP service with a job queue and a proofreading page
  each takes --help and --version; shell completion: see README ("Shell completion")

""" + EXIT_STATUSES


class _ListLanguages(argparse.Action):
    """``subextract --list-languages``: prints the table and exits, as --version does."""

    def __init__(self, option_strings, dest, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from subextract.langtags import readable_languages
        from subextract.stages.ocr.scripts import better_models_dir, language_table, tessdata_dir

        names = readable_languages()
        print(f"Tesseract language data: {tessdata_dir() or 'none installed'}; "
              f"preferred: {better_models_dir() or 'none (scripts/setup.sh fetches them)'}")
        listed = set()
        for code, engine, model, installed, origin in language_table():
            listed.add(code)
            print(f"{code:4} {names.get(code, code)[:12]:12} {engine:10} {model:8} {origin}" if installed
                  else f"{code:4} {names.get(code, code)[:12]:12} {engine:10} not installed: apt-get install {model}")
        others = [f"{code} {name}" for code, name in names.items() if code not in listed]
        print(f"also told apart, read by rapidocr: {', '.join(others)}")
        print("--lang takes a code, a tag or an English name: zh, zh-Hant, zh_CN, cmn, Chinese; en, en-US, English")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """Positionals may come anywhere (``subextract a.mp4 --lang zh b.mp4``), so that a second
    video is always caught and the user sent to ``subextract batch``."""

    def parse_args(self, args=None, namespace=None):
        return self.parse_intermixed_args(args, namespace)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="subextract", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
        description="Extract hardcoded (burned-in) subtitles from a video into SRT, WebVTT or JSON.")
    parser.add_argument("video", help="video file (anything FFmpeg reads), or an http(s)/rtmp(s) URL or HLS stream")
    parser.add_argument("more_videos", nargs="*", help=argparse.SUPPRESS)  # refused in run(): batch does several
    parser.add_argument("--lang", default="all", metavar="LANG", type=reading_language_arg,
                        help="language of the lines to keep and of the output name: a code, a tag or an English "
                             "name (zh, zh-Hant, zh_CN, cmn, Chinese; en, en-US, eng, English); the output is named "
                             "by the language (VIDEO.zh.srt); 'all' keeps every line of bilingual subtitles "
                             "(default: all); subextract --list-languages shows which are read")
    parser.add_argument("--list-languages", action=_ListLanguages,
                        help="each --lang code, the recogniser that reads it and whether its model is installed")
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="output file, or - for stdout (default: VIDEO.LANG.FORMAT next to the video)")
    parser.add_argument("--format", choices=FORMATS,
                        help="output format; ass keeps each cue's position (top-band cues stay at the top); "
                             "jsonl writes one JSON object per cue as soon as it is final (default: -o's "
                             "extension, else srt)")
    parser.add_argument("--start", type=time_arg, default=0.0, metavar="TIME", help="start of the range to process")
    parser.add_argument("--end", type=time_arg, metavar="TIME", help="end of the range to process")
    parser.add_argument("--region", metavar="WHERE",
                        help="where subtitles are: auto (found by text detection), bottom, top, or a box X,Y,W,H "
                             "in pixels (0,600,1280,120), in shares of the picture (0,0.8,1,0.2) or in percent "
                             "(0%%,80%%,100%%,20%%) (default: from the preset, auto)")
    parser.add_argument("--fps", type=positive_arg, metavar="N",
                        help="analyse N frames a second instead of every frame; boundaries are still "
                             "snapped to the exact frame")
    add_config_option(parser)
    add_engine_options(parser)
    add_translate_option(add_translator_options(parser))
    add_feed_options(parser)
    add_input_options(parser)
    parser.add_argument("--save-crops", metavar="DIR",
                        help="also save each segment's OCR picture as a PNG named by its time, with crops.json "
                             "listing them and their readings (for proofreading, or OCR elsewhere)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    add_fail_on_empty_option(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    add_logging_options(parser)
    return parser



def run(args: argparse.Namespace) -> int:
    from subextract.feeds import watchlist_option
    from subextract.job import JobEvents, JobOptions, outputs_beside_video, run_job
    from subextract.stages.probe import check_readable
    from subextract.stages.source import is_url
    from subextract.stages.crops import check_crops_folder
    from subextract.stages.write import check_writable, output_format

    if args.more_videos:
        names = " ".join([args.video, *args.more_videos])
        raise SubextractError(f"one video at a time; for {1 + len(args.more_videos)} use batch: "
                              f"subextract batch {names} --out DIR")
    args.format = output_format(args.output, args.format)
    apply_input_options(args)
    check_readable(args.video)
    check_translation_options(args)
    if args.translate and args.output == "-" and not args.bilingual:
        raise SubextractError("--translate writes two files: give -o FILE (the translation goes beside it) "
                              "or add --bilingual for one")
    if is_url(args.video) and not args.output:
        raise SubextractError(f"{args.video}: a URL has no folder to write next to; give -o FILE or -o -")
    options = JobOptions(lang=args.lang, fmt=args.format, start=args.start, end=args.end,
                         watchlist=watchlist_option(args.watchlist, args.only_flagged), only_flagged=args.only_flagged,
                         translate=args.translate, bilingual=args.bilingual, save_crops=args.save_crops)
    outputs = outputs_beside_video(args.video, options, args.output)
    for path in (outputs.cues, outputs.translation):
        if path is not None:
            check_writable(path, args.force, [args.video])
    if args.save_crops:
        check_crops_folder(args.save_crops, args.force)
    settings = settings_from_args(args)
    translator = None
    if args.translate:
        from subextract.translate import open_translator

        translator = open_translator(settings.translate, args.glossary)
    bar = VideoProgress(enabled=not args.quiet and sys.stderr.isatty())
    translating = TranslationProgress(not args.quiet and sys.stderr.isatty(), args.translate or "")

    def place_fallback(path: str, text: str) -> str:
        from pathlib import Path

        from subextract.stages.write import check_replaceable, write_text

        if path == outputs.fallback:  # written only because the translator failed: never over a file unasked
            if Path(path).exists() and not args.force:
                raise SubextractError(f"{path} exists")
            check_replaceable(path, [args.video])
        write_text(path, text)
        return path

    try:
        job = run_job(args.video, settings, options, outputs, translator=translator, place=place_fallback,
                      events=JobEvents(progress=bar, stage=bar.stage, translation_progress=translating))
    finally:
        bar.close()
        translating.close()
        if translator is not None:
            translator.model.close()
    return _report(args, job, outputs)


def _report(args: argparse.Namespace, job, outputs) -> int:
    """The warnings, the summary lines and the exit code (3: something was not done whole)."""
    result, s = job.extraction, job.extraction.stats
    for warning in result.warnings:
        print(f"subextract: warning: {warning}", file=sys.stderr)
    if result.error is not None:
        print(f"subextract: error: {result.error}", file=sys.stderr)
        print(f"subextract: warning: stopped early; the {len(job.cues)} cues read before that were written",
              file=sys.stderr)
    if not args.quiet:
        where = "stdout" if outputs.cues == "-" else (outputs.cues or "translation")
        rate = f" ({s.ocr_calls / s.ocr_seconds:.1f} crops/s)" if s.ocr_seconds > 0 else ""
        print(f"subextract: {len(job.cues)} cues → {where} | {s.ocr_calls} OCR calls{rate}, {s.segments} segments, "
              f"{s.frames} frames | {s.wall_seconds:.1f} s wall, {s.realtime_factor:.1f}x real time", file=sys.stderr)
    if job.translation_error is not None:
        print(f"subextract: error: {job.translation_error}", file=sys.stderr)
        if outputs.fallback is not None:
            if outputs.fallback in job.written:
                print(f"subextract: warning: the extracted cues were written to {outputs.fallback}", file=sys.stderr)
            else:
                print(f"subextract: warning: the extracted cues were not kept: {job.fallback_refusal}",
                      file=sys.stderr)
    elif job.translation is not None:
        print_translation_summary(job.translation, job.translation_source, args.translate, args.quiet)
        if not args.quiet:
            where = "stdout" if outputs.translation == "-" else outputs.translation
            print(f"subextract: {len(job.translation.cues(args.bilingual))} "
                  f"{'bilingual' if args.bilingual else 'translated'} cues → {where}", file=sys.stderr)
    if args.fail_on_empty and not job.cues:
        print("subextract: error: no cue was written (--fail-on-empty)", file=sys.stderr)
        return 3
    return 0 if job.complete else 3


def print_translation_summary(translation, source: str, target: str, quiet: bool) -> None:
    for warning in translation.result.warnings:
        print(f"subextract: warning: {warning}", file=sys.stderr)
    if not quiet:
        t = translation.result.stats
        print(f"subextract: translated {t.cues} cues {source}→{target} | {t.requests} requests, {t.retries} retried, "
              f"{t.splits} batches split, {t.single} cues alone, {t.kept_original} untranslated"
              f"{f' ({t.untranslated_reasons()})' if t.kept_original else ''} | "
              f"{t.seconds:.1f} s", file=sys.stderr)
