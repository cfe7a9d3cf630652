"""``subextract score REF HYP``: accuracy and timing of a subtitle file against a reference."""

from __future__ import annotations

import argparse
import json
import sys

from subextract.cli.options import positive_arg
from subextract.scoring import CueFileError, format_score, score
from subextract.subtitle_input import read_subtitles


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="subextract score",
        description="Score a hypothesis subtitle file against a reference one (SRT, WebVTT or ASS, in UTF-8, UTF-16, "
                    "GBK, Big5…; SRT and WebVTT read strictly: a malformed block is an error).")
    parser.add_argument("reference", metavar="REF", help="reference .srt, .vtt or .ass")
    parser.add_argument("hypothesis", metavar="HYP", help="hypothesis .srt, .vtt or .ass")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.add_argument("--fps", type=positive_arg, metavar="N",
                        help="video frame rate; enables the within-one-frame share")
    return parser


def run(args: argparse.Namespace) -> int:
    """0 on success, 2 on a bad file (one stderr line)."""
    try:
        reference = read_subtitles(args.reference)
        hypothesis = read_subtitles(args.hypothesis)
    except CueFileError as err:
        print(f"subextract score: error: {err}", file=sys.stderr)
        return 2
    for path, read in ((args.reference, reference), (args.hypothesis, hypothesis)):
        if read.unusual_encoding:
            print(f"subextract score: {path} read as {read.encoding}", file=sys.stderr)
    result = score(reference.cues, hypothesis.cues, frame_duration=1 / args.fps if args.fps else None)
    print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) if args.json else format_score(result))
    return 0
