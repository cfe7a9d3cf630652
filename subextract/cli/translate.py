"""``subextract translate SUBS --to LANG``: an existing SRT or WebVTT file translated by an LLM."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from subextract.cli.extract import print_translation_summary
from subextract.cli.options import (add_config_option, add_logging_options, add_translator_options, language_arg,
                                    settings_from_args)
from subextract.cli.progress import TranslationProgress
from subextract.errors import SubextractError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="subextract translate", description="Translate a subtitle file (SRT, WebVTT or ASS, in UTF-8, "
                                                 "UTF-16, GBK, Big5…) with an LLM, keeping every cue and its times.")
    parser.add_argument("subtitles", help="the SRT, WebVTT (.vtt) or ASS (.ass, .ssa) file to translate")
    parser.add_argument("--to", required=True, type=language_arg("--to"), metavar="LANG",
                        help="target language: a tag or a name, e.g. en, pt-BR, zh-Hant, English")
    parser.add_argument("--from", dest="source", type=language_arg("--from"), metavar="LANG",
                        help="the file's language (default: detected from its text)")
    parser.add_argument("-o", "--output", metavar="PATH",
                        help="output file, or - for stdout (default: SUBS with its language tag replaced by LANG, "
                             "or SUBS.FROM+LANG with --bilingual)")
    parser.add_argument("--format", choices=("srt", "vtt", "ass", "txt", "json"),
                        help="output format (default: the input's)")
    add_config_option(parser)
    add_translator_options(parser)
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    add_logging_options(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    from subextract.job import language_output, translation_tag
    from subextract.schema import Cue
    from subextract.scoring import CueFileError
    from subextract.stages.language import detect_language
    from subextract.stages.write import check_writable, render, write_text
    from subextract.subtitle_input import ASS_SUFFIXES, read_subtitles
    from subextract.translate import open_translator, source_language, translate_cues

    suffix = Path(args.subtitles).suffix.lower()
    fmt = args.format or ("vtt" if suffix == ".vtt" else "ass" if suffix in ASS_SUFFIXES else "srt")
    try:
        read = read_subtitles(args.subtitles)
    except CueFileError as exc:
        raise SubextractError(str(exc)) from None
    if read.unusual_encoding:
        print(f"subextract: {args.subtitles} read as {read.encoding}", file=sys.stderr)
    timed = read.cues
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
    translator = open_translator(settings_from_args(args).translate, args.glossary, needed_by="subextract translate")
    progress = TranslationProgress(not args.quiet and sys.stderr.isatty(), args.to)
    try:
        translation = translate_cues(translator, cues, source, args.to, progress)
    finally:
        progress.close()
        translator.model.close()
    print_translation_summary(translation, source, args.to, args.quiet)
    chosen = translation.cues(args.bilingual)
    write_text(output, render(chosen, fmt, {"subtitles": args.subtitles, "translation": translation.summary}))
    if not args.quiet:
        print(f"subextract: {len(chosen)} cues → {'stdout' if output == '-' else output}", file=sys.stderr)
    return 3 if translation.result.stats.kept_original else 0  # cues left untranslated: not a whole translation
