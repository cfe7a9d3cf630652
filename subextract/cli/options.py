"""What the sub-commands share: argument types, the option groups, and the one route from
options to settings (``settings_from_args``: the preset or config files, then the options given)."""

from __future__ import annotations

import argparse
import logging
import math
import sys

from subextract.config import Settings, load_settings, preset_names
from subextract.errors import SubextractError
from subextract.stages.ocr import ENGINES
from subextract.times import MAX_SECONDS, checked_seconds

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
    try:
        return checked_seconds(total, "time")  # each part finite, the sum may still overflow (1e308:0)
    except SubextractError:
        raise argparse.ArgumentTypeError(f"not a time: {value!r} (at most {MAX_SECONDS / 3600:g} hours)") from None


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


def engine_option_arg(value: str) -> tuple[str, object]:
    """``KEY=VALUE`` with VALUE read as YAML (``64``, ``true``, ``{image: 1}``, ``bfloat16``)."""
    import yaml

    key, sep, text = value.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE: {value!r}")
    try:
        return key.strip(), yaml.safe_load(text)
    except yaml.YAMLError:
        raise argparse.ArgumentTypeError(f"not a YAML value: {text!r}") from None


# The language options raise SubextractError, not argparse's error: their message names the
# closest codes in one line, which argparse's usage lines would bury.
def reading_language_arg(value: str) -> str:
    """``--lang``: the code of a language subextract tells apart (``en-US``, ``English`` → ``en``)."""
    from subextract.langtags import reading_language

    return reading_language(value, "--lang")


def language_arg(option: str):
    """The type of ``--translate``, ``--to``, ``--from``: a standard tag, variant kept (``pt_BR``
    → ``pt-BR``)."""
    from subextract.langtags import translation_language

    def parse(value: str) -> str:
        return translation_language(value, option)

    return parse


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="NAME|FILE", action="append",
                        help=f"preset ({', '.join(preset_names())}) or a YAML file overriding default.yaml; "
                             "repeat to layer them, e.g. --config paddleocr-vl --config hunyuan-mt")


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """The OCR engine options (shared with ``subextract batch``)."""
    ocr = parser.add_argument_group("OCR engine (see docs/gpu.md)")
    ocr.add_argument("--engine", choices=tuple(ENGINES),
                     help="; ".join(f"{name}: {traits.summary}" for name, traits in ENGINES.items())
                          + " (default: from the preset, rapidocr)")
    ocr.add_argument("--model", metavar="PATH|NAME",
                     help="vllm: model directory or hub id; openai: served model name (default: from the preset, "
                          "or the server's only model)")
    ocr.add_argument("--server", action="append", metavar="URL",
                     help="openai: the API's base URL, e.g. http://127.0.0.1:8000/v1; an API key is read from "
                          "$SUBEXTRACT_UPSTREAM_KEY or $SUBEXTRACT_API_KEY; again for each replica of the model (each request goes to the one "
                          "with the fewest in flight)")
    ocr.add_argument("--concurrency", type=count_arg, metavar="N", help="openai: requests in flight at once")
    ocr.add_argument("--stack", type=count_arg, metavar="N",
                     help="stack N subtitle strips into one picture per request (faster on a GPU; a reply that "
                          "does not give one line per strip is read again strip by strip)")
    ocr.add_argument("--ocr-replicas", type=count_arg, metavar="N",
                     help="vllm, transformers: N copies of the engine on the one GPU, each in a process of its own "
                          "(more crops a second where one engine's per-request work on one CPU core is the limit; "
                          "vLLM's gpu_memory_utilization is shared between them)")
    ocr.add_argument("--engine-option", action="append", type=engine_option_arg, metavar="KEY=VALUE",
                     help="vllm: one keyword argument of vllm.LLM (a YAML value), e.g. max_num_seqs=64; repeatable")


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
    group.add_argument("--translate", metavar="LANG", type=language_arg("--translate"),
                       help="also write the cues translated into LANG (e.g. en) by an LLM, as VIDEO.LANG.FORMAT")


def check_translation_options(args: argparse.Namespace) -> None:
    """--translate/--bilingual against --lang and --format (shared with ``subextract batch``)."""
    if args.bilingual and not args.translate:
        raise SubextractError("--bilingual needs --translate LANG")
    if args.translate and args.translate == args.lang:
        raise SubextractError(f"--translate {args.translate}: the cues are already in that language")
    if args.translate and args.format == "jsonl":
        raise SubextractError("--translate works on the whole cue list: use --format srt, vtt or json")


def add_fail_on_empty_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fail-on-empty", action="store_true",
                        help="exit 3 when no cue is written (a script's check that --lang or the region kept "
                             "something)")


def add_feed_options(parser: argparse.ArgumentParser) -> None:
    """Moderation options (shared with ``subextract batch``)."""
    feed = parser.add_argument_group("moderation feeds (see docs/batch.md)")
    feed.add_argument("--watchlist", metavar="FILE",
                      help="words or phrases, or re:REGEX, one a line: matching cues get their terms in the "
                           "jsonl 'flags' field")
    feed.add_argument("--only-flagged", action="store_true", help="write only the cues matching the watchlist")


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


def reset_input_options() -> None:
    """Back to the defaults the Python API runs with (public addresses only, real containers only)."""
    from subextract.stages.netguard import NetworkPolicy, set_policy
    from subextract.stages.source import set_input_format

    set_policy(NetworkPolicy())
    set_input_format(None)


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The preset or config files, overridden by the command-line options given (options a
    sub-command lacks count as not given). A translator server means the openai engine."""
    def given(name: str):
        return getattr(args, name, None)

    server = given("translator_server")
    overrides = {"region": {"mode": given("region")}, "sample": {"fps": given("fps")}, "ocr": ocr_overrides(args),
                 "translate": {"engine": "openai" if server else None, "server": server,
                               "model": given("translator_model")}}
    return load_settings(args.config, overrides)


def ocr_overrides(args: argparse.Namespace) -> dict:
    """The OCR engine options given (``add_engine_options``) as the ``ocr`` section's keys: one
    place for every command, so that ``--server`` given once or per replica means the same to
    ``subextract``, ``batch`` and ``serve``."""
    servers = getattr(args, "server", None)
    options = getattr(args, "engine_option", None)
    return {"engine": getattr(args, "engine", None), "model": getattr(args, "model", None),
            "server": " ".join(servers) if servers else None, "concurrency": getattr(args, "concurrency", None),
            "stack": getattr(args, "stack", None), "replicas": getattr(args, "ocr_replicas", None),
            "engine_options": dict(options) if options else None}


def add_logging_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("diagnostics")
    group.add_argument("-v", "--verbose", action="count", default=0,
                       help="explain what the run decides (the subtitle band, the text test, each segment and why "
                            "one was dropped); -vv for every detail")
    group.add_argument("--log-level", choices=("debug", "info", "warning", "error"),
                       help="the logging level itself (default: warning, or info/debug with -v/-vv)")


def configure_logging(args: argparse.Namespace) -> None:
    """Diagnostics go to stderr through the logging module; the library itself configures nothing."""
    verbose = getattr(args, "verbose", 0)
    level = (getattr(args, "log_level", None) or ("debug" if verbose > 1 else "info" if verbose else "warning"))
    logging.basicConfig(level=level.upper(), stream=sys.stderr, force=True,
                        format="subextract: %(levelname)s: %(name)s: %(message)s")
