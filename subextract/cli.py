"""Command line: ``subextract VIDEO [options]`` and the ``score`` and ``batch`` sub-commands. Parses and prints only."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from pathlib import Path

from subextract.config import Settings, TranslateSettings, load_settings, preset_names
from subextract.errors import SubextractError

SUBCOMMANDS = ("score", "batch", "translate")

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
                        help="language of the lines to keep and of the output name, e.g. zh, en, ru, ar; "
                             "'all' keeps every line of bilingual subtitles (default: all); "
                             "subextract --list-languages shows which are installed")
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
    add_config_option(parser)
    add_engine_options(parser)
    add_translate_option(add_translator_options(parser))
    add_feed_options(parser)
    add_input_options(parser)
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    return parser


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """What inputs may open (shared with ``subextract batch``)."""
    from subextract.stages.source import LIST_FORMATS

    group = parser.add_argument_group("what inputs may open")
    group.add_argument("--allow-private-network", nargs="?", const="*", metavar="ADDR[:PORT],...",
                       help="let network inputs (and the segments, keys and redirects they name) reach loopback, "
                            "private, link-local and other non-public addresses: all of them, or only those "
                            "listed (e.g. 10.0.0.5:8080,192.168.0.0/16); by default only public addresses")
    group.add_argument("--input-format", choices=LIST_FORMATS,
                       help="read local inputs as this playlist or list format, which opens the files it names "
                            "(by default local inputs are opened only as real video containers)")


def apply_input_options(args: argparse.Namespace) -> None:
    """The network policy and the local input format for this run (set on every run, so one
    run's options never carry over to the next in the same process)."""
    from subextract.stages.netguard import NetworkPolicy, parse_allowances, set_policy
    from subextract.stages.source import read_timeout, set_input_format

    allowed = args.allow_private_network
    set_policy(NetworkPolicy(allow_all_private=allowed == "*",
                             allowances=parse_allowances(allowed) if allowed not in (None, "*") else (),
                             timeout=read_timeout()))
    set_input_format(args.input_format)


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="NAME|FILE", action="append",
                        help=f"preset ({', '.join(preset_names())}) or a YAML file overriding default.yaml; "
                             "repeat to layer them, e.g. --config paddleocr-vl --config hunyuan-mt")


def language_arg(value: str) -> str:
    from subextract.translate import checked_language

    try:
        return checked_language(value)
    except SubextractError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_translator_options(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The translator options (shared with ``subextract translate``); returns their group."""
    group = parser.add_argument_group("translation by an LLM (README, \"Translation\")")
    group.add_argument("--bilingual", action="store_true",
                       help="write one file whose cues hold the original lines and, below them, the translation")
    group.add_argument("--translator-server", metavar="URL",
                       help="an OpenAI-compatible server doing the translation, e.g. `vllm serve "
                            "tencent/Hunyuan-MT-7B` at http://HOST:8000/v1 (API key: $SUBEXTRACT_API_KEY)")
    group.add_argument("--translator-model", metavar="PATH|NAME",
                       help="the translation model: run in this process by vLLM, or the served model's name "
                            "with --translator-server (default: from the preset, or the server's only model)")
    group.add_argument("--glossary", metavar="FILE",
                       help="terms to translate one fixed way: SOURCE<TAB>TARGET per line")
    return group


def add_translate_option(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--translate", metavar="LANG", type=language_arg,
                       help="also write the cues translated into LANG (e.g. en) by an LLM, as VIDEO.LANG.FORMAT")


def check_translation_options(args: argparse.Namespace) -> None:
    """--translate/--bilingual against --lang and --format (shared with ``subextract batch``)."""
    if args.bilingual and not args.translate:
        raise SubextractError("--bilingual needs --translate LANG")
    if args.translate and args.translate == args.lang:
        raise SubextractError(f"--translate {args.translate}: the cues are already in that language")
    if args.translate and args.format == "jsonl":
        raise SubextractError("--translate works on the whole cue list: use --format srt, vtt or json")


def translator_settings(args: argparse.Namespace, settings: Settings) -> TranslateSettings:
    """The translate section with the translator options applied: a server means engine openai;
    a model alone runs in this process unless the preset says otherwise."""
    translate = settings.translate
    if args.translator_server:
        translate = dataclasses.replace(translate, engine="openai", server=args.translator_server)
    if args.translator_model:
        translate = dataclasses.replace(translate, model=args.translator_model, engine=translate.engine or "vllm")
    return translate


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """The OCR engine options (shared with ``subextract batch``)."""
    ocr = parser.add_argument_group("OCR engine (see docs/gpu.md)")
    ocr.add_argument("--engine", choices=("rapidocr", "vllm", "openai", "transformers"),
                     help="rapidocr: embedded, CPU; vllm: a vision-language model run in this process; openai: "
                          "any OpenAI-compatible server such as `vllm serve`; transformers: the same model through "
                          "PyTorch generate (debugging, baselines) (default: from the preset, rapidocr)")
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


_BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} s video [{elapsed}<{remaining}{postfix}]"
_COUNTER_FORMAT = "{desc}: {n:.1f} s video [{elapsed}{postfix}]"


class _ProgressBar:
    """A tqdm bar on a terminal: what the run is doing, seconds of video decoded, segments found,
    ETA. Redrawn at most every ``interval`` seconds: a redraw per frame writes ~4 KB a second."""

    def __init__(self, enabled: bool, file=None, interval: float = 0.25) -> None:
        self._bar = None
        self._enabled = enabled
        self._file = file
        self._interval = interval
        self._drawn = 0.0
        self._stage = ""

    def stage(self, name: str) -> None:
        """Shown from the start: probing and the pre-scan take seconds before any frame is read."""
        if not self._enabled:
            return
        self._stage = name
        if self._bar is None:
            self._open(None)
        self._bar.set_description_str(name, refresh=False)
        self._draw(force=True)

    def __call__(self, done: float, total: float | None, segments: int) -> None:
        if not self._enabled:
            return
        if self._bar is None:
            self._open(total)
        elif self._bar.total is None and total:  # opened while probing, before the length was known
            self._bar.total = round(total, 1)
            self._bar.bar_format = _BAR_FORMAT
        self._bar.n = min(round(done, 1), self._bar.total) if self._bar.total else round(done, 1)
        self._bar.set_postfix_str(f"{segments} segments", refresh=False)
        self._draw()

    def _open(self, total: float | None) -> None:
        from tqdm import tqdm

        # A live stream has no length: a counter of seconds read instead of a bar with an ETA.
        self._bar = tqdm(total=round(total, 1) if total else None, unit="s", unit_scale=False,
                         file=self._file or sys.stderr, bar_format=_BAR_FORMAT if total else _COUNTER_FORMAT,
                         desc=self._stage or "reading", mininterval=self._interval)

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._drawn >= self._interval:
            self._drawn = now
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.refresh()
            self._bar.close()


def json_metadata(video: str, lang: str, result) -> dict:
    """What ``--format json`` says beside the cues: the video, the bands used, run statistics."""
    s = result.stats
    return {"video": video, "duration": result.info.duration, "language": lang,
            "bands": [dataclasses.asdict(band) for band in result.bands],
            "stats": {"ocr_calls": s.ocr_calls, "ocr_seconds": round(s.ocr_seconds, 3), "segments": s.segments,
                      "frames": s.frames, "wall_seconds": round(s.wall_seconds, 3),
                      "realtime_factor": round(s.realtime_factor, 2)},
            "complete": result.complete, "warnings": result.warnings,
            "damaged": [dataclasses.asdict(span) for span in result.damaged]}


def _check_translation_args(args: argparse.Namespace) -> None:
    check_translation_options(args)
    if args.translate and args.output == "-" and not args.bilingual:
        raise SubextractError("--translate writes two files: give -o FILE (the translation goes beside it) "
                              "or add --bilingual for one")


def language_output(path: str, language: str, new_tag: str) -> str:
    """``path`` with its language tag (``movie.zh.srt``) replaced by ``new_tag``, or ``new_tag``
    added before the extension when it has none."""
    target = Path(path)
    stem, suffix = target.stem, target.suffix
    if language and stem.endswith(f".{language}"):
        stem = stem[: -len(language) - 1]
    return str(target.with_name(f"{stem}.{new_tag}{suffix}"))


def translation_tag(lang: str, target: str, bilingual: bool) -> str:
    """The language tag of a translation's file name: ``en``, or ``zh+en`` for a bilingual one."""
    return f"{lang if lang not in ('all', 'auto') else 'orig'}+{target}" if bilingual else target


def _translation_outputs(args: argparse.Namespace, output: str) -> tuple[str | None, str | None]:
    """(the original cues' file, the translation's file); the original's is None with --bilingual."""
    if not args.translate:
        return output, None
    if args.bilingual:
        tag = translation_tag(args.lang, args.translate, bilingual=True)
        return None, args.output or default_output(args.video, tag, args.format)
    return output, language_output(output, args.lang, args.translate)


def run_translation(translator, cues, source: str, target: str, quiet: bool):
    """Translate with a progress bar on a terminal and one summary line at the end."""
    from subextract.translate import translate_cues

    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if quiet or not sys.stderr.isatty():
            return
        if bar is None:
            from tqdm import tqdm

            bar = tqdm(total=total, unit="cue", desc=f"translating {source}→{target}", file=sys.stderr)
        bar.n = done
        bar.refresh()

    try:
        translation = translate_cues(translator, cues, source, target, progress)
    finally:
        if bar is not None:
            bar.close()
    for warning in translation.result.warnings:
        print(f"subextract: warning: {warning}", file=sys.stderr)
    if not quiet:
        t = translation.result.stats
        print(f"subextract: translated {t.cues} cues {source}→{target} | {t.requests} requests, {t.retries} retried, "
              f"{t.splits} batches split, {t.single} cues alone, {t.kept_original} untranslated"
              f"{f' ({t.untranslated_reasons()})' if t.kept_original else ''} | "
              f"{t.seconds:.1f} s", file=sys.stderr)
    return translation


def run_extract(args: argparse.Namespace) -> int:
    from subextract.pipeline.run import extract
    from subextract.feeds import CueFeed, FeedSink, watchlist_option
    from subextract.stages.probe import check_readable
    from subextract.stages.source import is_url
    from subextract.stages.write import check_writable, render, write_text

    apply_input_options(args)
    check_readable(args.video)
    _check_translation_args(args)
    if is_url(args.video) and not args.output:
        raise SubextractError(f"{args.video}: a URL has no folder to write next to; give -o FILE or -o -")
    output = args.output or default_output(args.video, args.lang, args.format)
    original_output, translation_output = _translation_outputs(args, output)
    for path in (original_output, translation_output):
        if path is not None:
            check_writable(path, args.force, [args.video])
    feed = CueFeed(args.video, watchlist_option(args.watchlist, args.only_flagged), args.only_flagged)
    settings = settings_from_args(args)
    translator = None
    if args.translate:
        from subextract.translate import open_translator

        translator = open_translator(translator_settings(args, settings), args.glossary)
    bar = _ProgressBar(enabled=not args.quiet and sys.stderr.isatty())
    # jsonl goes out cue by cue while the video runs; the other formats are written whole at the end.
    sink = FeedSink(output) if args.format == "jsonl" else None
    try:
        result = extract(args.video, settings, lang=args.lang, start=args.start, end=args.end, progress=bar,
                         on_cue=feed.streaming_to(sink) if sink is not None else None, on_stage=bar.stage)
    finally:
        bar.close()
        if sink is not None:
            sink.close()
    cues = feed.kept(result.cues)
    s = result.stats
    metadata = json_metadata(args.video, args.lang, result)
    if sink is None and original_output is not None:
        write_text(original_output, render(cues, args.format, metadata))
    elif sink is not None and not sink.lines:
        write_text(output, "")  # nothing to stream: still an (empty) feed file, as an SRT would be
    for warning in result.warnings:
        print(f"subextract: warning: {warning}", file=sys.stderr)
    if result.error is not None:
        print(f"subextract: error: {result.error}", file=sys.stderr)
        print(f"subextract: warning: stopped early; the {len(cues)} cues read before that were written",
              file=sys.stderr)
    if not args.quiet:
        where = "stdout" if output == "-" else (original_output or "translation")
        rate = f" ({s.ocr_calls / s.ocr_seconds:.1f} crops/s)" if s.ocr_seconds > 0 else ""
        print(f"subextract: {len(cues)} cues → {where} | {s.ocr_calls} OCR calls{rate}, {s.segments} segments, "
              f"{s.frames} frames | {s.wall_seconds:.1f} s wall, {s.realtime_factor:.1f}x real time", file=sys.stderr)
    status = 0 if result.complete else 3
    if translator is not None:
        status = max(status, _translate_and_write(args, translator, cues, metadata, translation_output))
    return status


def _translate_and_write(args: argparse.Namespace, translator, cues, metadata: dict, translation_output: str) -> int:
    """Write the translation (or, with --bilingual, the bilingual file); when the translator
    fails, the extracted cues are kept in the original's file and the exit code is 3."""
    from subextract.stages.write import check_replaceable, render, write_text
    from subextract.translate import source_language

    source = source_language(cues, args.lang)
    try:
        translation = run_translation(translator, cues, source, args.translate, args.quiet)
    except SubextractError as exc:
        print(f"subextract: error: translation failed: {exc}", file=sys.stderr)
        if args.bilingual:
            kept = default_output(args.video, args.lang, args.format)
            try:
                if Path(kept).exists() and not args.force:
                    raise SubextractError(f"{kept} exists")
                check_replaceable(kept, [args.video])
            except SubextractError as refusal:
                print(f"subextract: warning: the extracted cues were not kept: {refusal}", file=sys.stderr)
            else:
                write_text(kept, render(cues, args.format, metadata))
                print(f"subextract: warning: the extracted cues were written to {kept}", file=sys.stderr)
        return 3
    finally:
        translator.model.close()
    chosen = translation.cues(args.bilingual)
    write_text(translation_output, render(chosen, args.format, {**metadata, "translation": translation.summary}))
    if not args.quiet:
        where = "stdout" if translation_output == "-" else translation_output
        print(f"subextract: {len(chosen)} {'bilingual' if args.bilingual else 'translated'} cues → {where}",
              file=sys.stderr)
    return 3 if translation.result.stats.kept_original else 0  # cues left untranslated: not a whole translation


def run_translate_file(argv: list[str]) -> int:
    """``subextract translate SUBS --to LANG``: an existing SRT or WebVTT file translated."""
    from subextract.scoring import CueFileError, load_cues
    from subextract.stages.align import Cue
    from subextract.stages.language import detect_language
    from subextract.stages.write import check_writable, render, write_text
    from subextract.translate import open_translator, source_language

    parser = argparse.ArgumentParser(
        prog="subextract translate", description="Translate an SRT or WebVTT file with an LLM, keeping every "
                                                 "cue and its times.")
    parser.add_argument("subtitles", help="the SRT or WebVTT (.vtt) file to translate")
    parser.add_argument("--to", required=True, type=language_arg, metavar="LANG", help="target language, e.g. en")
    parser.add_argument("--from", dest="source", type=language_arg, metavar="LANG",
                        help="the file's language (default: detected from its text)")
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="output file, or - for stdout (default: SUBS with its language tag replaced by LANG, "
                             "or SUBS.FROM+LANG with --bilingual)")
    parser.add_argument("--format", choices=("srt", "vtt", "json"),
                        help="output format (default: the input's)")
    add_config_option(parser)
    add_translator_options(parser)
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    args = parser.parse_args(argv)
    fmt = args.format or ("vtt" if args.subtitles.lower().endswith(".vtt") else "srt")
    try:
        timed = load_cues(args.subtitles)
    except CueFileError as exc:
        raise SubextractError(str(exc)) from None
    cues = [Cue(t.start, t.end, tuple(lines), tuple(detect_language(line) for line in lines), 1.0)
            for t in timed for lines in [[line for line in t.text.splitlines() if line.strip()] or [""]]]
    source = args.source or source_language(cues)
    if source == args.to:
        raise SubextractError(f"{args.subtitles} is already in {args.to}")
    if args.output:
        output = args.output
    else:
        named = Path(args.subtitles).with_suffix(f".{fmt}")
        output = language_output(str(named), source, translation_tag(source, args.to, args.bilingual))
    check_writable(output, args.force, [args.subtitles])
    translator = open_translator(translator_settings(args, load_settings(args.config)), args.glossary,
                                 needed_by="subextract translate")
    try:
        translation = run_translation(translator, cues, source, args.to, args.quiet)
    finally:
        translator.model.close()
    chosen = translation.cues(args.bilingual)
    write_text(output, render(chosen, fmt, {"subtitles": args.subtitles, "translation": translation.summary}))
    if not args.quiet:
        print(f"subextract: {len(chosen)} cues → {'stdout' if output == '-' else output}", file=sys.stderr)
    return 3 if translation.result.stats.kept_original else 0  # cues left untranslated: not a whole translation


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "score":
            from subextract import scoring

            return scoring.main(argv[1:])
        if argv and argv[0] == "batch":
            from subextract import batch

            return batch.main(argv[1:])
        if argv and argv[0] == "translate":
            return run_translate_file(argv[1:])
        if argv == ["--list-languages"]:
            return list_languages()
        return run_extract(build_parser().parse_args(argv))
    except SubextractError as exc:
        print(f"subextract: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("subextract: interrupted", file=sys.stderr)
        return 130
    finally:
        _reset_input_options()


def list_languages() -> int:
    """``subextract --list-languages``: each --lang code, the recogniser that reads it and
    whether its model is installed (else the Debian package to install)."""
    from subextract.stages.ocr.scripts import language_table, tessdata_dir

    print(f"Tesseract language data: {tessdata_dir() or 'none installed'}")
    for code, engine, model, installed in language_table():
        print(f"{code:4} {engine:10} {model if installed else 'not installed: apt-get install ' + model}")
    return 0


def _reset_input_options() -> None:
    """Back to the defaults the Python API runs with (public addresses only, real containers only)."""
    from subextract.stages.netguard import NetworkPolicy, set_policy
    from subextract.stages.source import set_input_format

    set_policy(NetworkPolicy())
    set_input_format(None)


if __name__ == "__main__":
    sys.exit(main())
