#!/usr/bin/env python3
"""Mutation benchmark: how many small deliberate bugs the fast unit tests catch, per decision module.

mutmut (3.x) rewrites each function of a module into many one-token variants (``<`` for ``<=``,
``-`` for ``+``, another constant, a dropped argument...), runs the module's own unit tests
against each and counts the mutants the tests kill. mutmut rather than cosmic-ray: it runs on
Python 3.11 here, forks each mutant from a process that has imported the tests already
(cosmic-ray starts a fresh test run per mutant: ~2 s of imports each on two cores) and runs only
the tests that reach the mutated function, so a module takes seconds to minutes, not hours;
it also never edits the checkout (its mutants live in a copy).

Each module is mutated in a throw-away copy of the package and the tests, with its own mutmut
configuration, so the checkout stays clean and modules never share results.

    .venv/bin/python bench/mutation.py                       # every module, a table
    .venv/bin/python bench/mutation.py --json                # ... and one JSON object on the last line
    .venv/bin/python bench/mutation.py --module subextract/scoring.py --survivors

Needs the ``mutation`` extra: ``bash scripts/setup.sh --mutation``. Not run in CI (minutes of
both cores); the numbers are in docs/development.md ("Mutation benchmark").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The pure-decision modules and the fast unit tests (no FFmpeg, no OCR model) that guard them.
MODULES: dict[str, list[str]] = {
    "subextract/stages/align.py": ["tests/test_align.py", "tests/test_align_rules.py"],
    "subextract/scoring.py": ["tests/test_scoring.py", "tests/test_scoring_rules.py"],
    "subextract/stages/write.py": ["tests/test_write.py", "tests/test_write_rules.py"],
    "subextract/stages/boundary.py": ["tests/test_boundary.py"],
    "subextract/stages/source.py": ["tests/test_source_policy.py"],
}

# What mutmut's verdicts count as: a crash or a type-check catch is a kill; a mutant no test
# reaches ("no tests") or one mutmut could not judge counts against the tests, as a survivor.
_KILLED = {"killed", "segfault", "caught by type check"}
_TIMEOUT = {"timeout"}


def _workspace(module: str, tests: list[str]) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="subextract-mutation-"))
    shutil.copytree(ROOT / "subextract", folder / "subextract", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", folder / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", folder / "pyproject.toml")
    selection = "".join(f"\n    {test}" for test in tests)
    (folder / "setup.cfg").write_text(f"[mutmut]\nsource_paths = subextract\nonly_mutate = {module}\n"
                                      f"pytest_add_cli_args_test_selection ={selection}\n", encoding="utf-8")
    return folder


def _verdicts(folder: Path, module: str) -> dict[str, str]:
    from mutmut.stats import status_by_exit_code

    meta = folder / "mutants" / f"{module}.meta"
    codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    return {name: status_by_exit_code[code] for name, code in codes.items()}


def _diff(folder: Path, mutant: str) -> str:
    shown = subprocess.run([sys.executable, "-m", "mutmut", "show", mutant], cwd=folder, capture_output=True,
                           text=True, check=False).stdout
    return "\n".join(line for line in shown.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))


def run_module(module: str, tests: list[str], max_children: int | None, survivors: bool) -> dict[str, int]:
    folder = _workspace(module, tests)
    try:
        command = [sys.executable, "-m", "mutmut", "run"]
        if max_children:
            command += ["--max-children", str(max_children)]
        result = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
        meta = folder / "mutants" / f"{module}.meta"
        if not meta.exists():
            tail = (result.stdout + result.stderr).strip().splitlines()[-15:]
            raise SystemExit(f"mutation: mutmut made no verdicts for {module}:\n" + "\n".join(tail))
        verdicts = _verdicts(folder, module)
        counts = {"killed": 0, "survived": 0, "timeout": 0}
        for status in verdicts.values():
            counts["killed" if status in _KILLED else "timeout" if status in _TIMEOUT else "survived"] += 1
        if survivors:
            for name, status in sorted(verdicts.items()):
                if status not in _KILLED | _TIMEOUT:
                    print(f"  {name} ({status})\n" + "\n".join(f"    {line}" for line in _diff(folder, name).splitlines()))
        return counts
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES),
                        help="only this module (repeatable); default: all")
    parser.add_argument("--json", action="store_true", help="print one JSON object of the counts on the last line")
    parser.add_argument("--survivors", action="store_true", help="list every surviving mutant with its diff")
    parser.add_argument("--max-children", type=int, default=None, help="mutants run at once (mutmut's default: one per core)")
    args = parser.parse_args(argv)
    try:
        import mutmut  # noqa: F401
    except ImportError:
        print("mutation: mutmut is not installed (bash scripts/setup.sh --mutation)", file=sys.stderr)
        return 2
    results: dict[str, dict[str, int]] = {}
    for module in args.module or list(MODULES):
        missing = [test for test in MODULES[module] if not (ROOT / test).exists()]
        if missing:
            print(f"mutation: {module}: missing test files {', '.join(missing)}", file=sys.stderr)
            return 2
        print(f"{module}: mutating", file=sys.stderr, flush=True)
        counts = run_module(module, MODULES[module], args.max_children, args.survivors)
        total = sum(counts.values())
        share = counts["killed"] / total if total else 1.0
        print(f"{module}: {counts['killed']} killed, {counts['survived']} survived, {counts['timeout']} timeout "
              f"of {total} ({share:.1%} killed)", flush=True)
        results[module] = counts
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
