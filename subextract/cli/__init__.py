"""The command line: ``subextract VIDEO`` and its sub-commands. Each command is a module with
``build_parser()`` and ``run(args)``; this one chooses by the first word and turns the errors
explained to the user into one line on stderr and an exit code (2: bad input, 130: interrupted)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from subextract.errors import SubextractError

COMMANDS = {  # the first word → the module running it
    "batch": "subextract.cli.batch",
    "score": "subextract.cli.score",
    "translate": "subextract.cli.translate",
    "serve": "subextract.serve.main",
}


def main(argv: Sequence[str] | None = None) -> int:
    from subextract.cli.options import configure_logging, reset_input_options

    argv = list(sys.argv[1:] if argv is None else argv)
    name = argv[0] if argv and argv[0] in COMMANDS else None
    module = importlib.import_module(COMMANDS[name] if name else "subextract.cli.extract")
    try:
        args = module.build_parser().parse_args(argv[1:] if name else argv)
        configure_logging(args)
        return module.run(args)
    except SubextractError as exc:
        print(f"subextract: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("subextract: interrupted", file=sys.stderr)
        return 130
    finally:
        reset_input_options()
