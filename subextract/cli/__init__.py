"""The command line: ``subextract VIDEO`` and its sub-commands. Each command is a module with
``build_parser()`` and ``run(args)``; this one chooses by the first word and turns the errors
explained to the user into one line on stderr and an exit code (EXIT_STATUSES)."""

from __future__ import annotations

import argparse
import errno
import importlib
import io
import sys
from collections.abc import Sequence

from subextract.errors import SubextractError

COMMANDS = {  # the first word → the module running it
    "batch": "subextract.cli.batch",
    "score": "subextract.cli.score",
    "translate": "subextract.cli.translate",
    "serve": "subextract.serve.main",
}

EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 2, 130, 141  # 141: 128 + SIGPIPE, as a shell tool killed by it
EXIT_STATUSES = """exit status:
  0    done
  1    batch: some videos failed (the manifest says why)
  2    bad input or usage (one line on stderr says what)
  3    not done whole: the video is damaged or was cut short, cues were left untranslated, or
       --fail-on-empty and no cue was written
  130  interrupted (Ctrl-C, SIGTERM)
  141  the reader of stdout went away (| head): the rest was not written"""


class ClosedStdout(io.TextIOBase):
    """What ``sys.stdout`` is when the process started with it closed (``>&-``): a write fails
    as a write to a closed descriptor does, instead of Python's silent None."""

    def writable(self) -> bool:
        return False

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "stdout is closed")


def command_parser(name: str | None) -> argparse.ArgumentParser:
    """The parser of ``subextract NAME`` (None: ``subextract VIDEO``), ``--version`` added to each."""
    from subextract import __version__

    parser = importlib.import_module(COMMANDS[name] if name else "subextract.cli.extract").build_parser()
    parser.add_argument("--version", action="version", version=f"subextract {__version__}")
    return parser


def completion_parser() -> argparse.ArgumentParser:
    """Every command in one parser, the sub-commands as sub-parsers, for shell completion
    generators: ``shtab --shell=bash subextract.cli.completion_parser`` (README, "Shell completion")."""
    parser = command_parser(None)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        child = command_parser(name)
        commands.add_parser(name, parents=[child], add_help=False, help=child.description)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from subextract.cli.options import configure_logging, reset_input_options
    from subextract.stages.write import silence_stdout

    argv = list(sys.argv[1:] if argv is None else argv)
    name = argv[0] if argv and argv[0] in COMMANDS else None
    module = importlib.import_module(COMMANDS[name] if name else "subextract.cli.extract")
    if sys.stdout is None:
        sys.stdout = ClosedStdout()
    try:
        args = command_parser(name).parse_args(argv[1:] if name else argv)
        configure_logging(args)
        return module.run(args)
    except SubextractError as exc:
        print(f"subextract: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("subextract: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader took what it wanted (| head): say nothing more, as cat or grep would, and
        # never let the flush at exit fail again with a traceback.
        silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if exc.errno != errno.EBADF or not isinstance(sys.stdout, ClosedStdout):
            raise
        print("subextract: error: stdout is closed: nothing could be written (give -o FILE)", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        reset_input_options()
