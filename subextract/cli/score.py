"""``subextract score REF HYP``: accuracy and timing of a subtitle file against a reference."""

from __future__ import annotations

import argparse
import json
import sys

from subextract.cli.options import positive_arg
from subextract.scoring import CueFileError, format_score, load_cues, score


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="subextract score",
                                     description="Score a hypothesis SRT/WebVTT file against a reference one.")
    parser.add_argument("reference", metavar="REF", help="reference .srt or .vtt")
    parser.add_argument("hypothesis", metavar="HYP", help="hypothesis .srt or .vtt")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.add_argument("--fps", type=positive_arg, metavar="N",
                        help="video frame rate; enables the within-one-frame share")
    return parser


def run(args: argparse.Namespace) -> int:
    """0 on success, 2 on a bad file (one stderr line)."""
    try:
        reference = load_cues(args.reference)
        hypothesis = load_cues(args.hypothesis)
    except CueFileError as err:
        print(f"subextract score: error: {err}", file=sys.stderr)
        return 2
    result = score(reference, hypothesis, frame_duration=1 / args.fps if args.fps else None)
    print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) if args.json else format_score(result))
    return 0
