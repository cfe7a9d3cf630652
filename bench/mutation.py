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
    nice -n 15 .venv/bin/python bench/mutation.py --max-children 1     # on a shared machine

A surviving mutant that no input can tell from the original (an equivalent mutant) is excluded from
the count only when ``EQUIVALENT`` names its changed lines with the reason; each one excluded is
printed with that reason, and one whose line has changed since counts again.

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

# Fast segmenter tests kept beside the feature they belong to, by name: the other tests of these files
# run the detector model or a whole extraction, or reach no decision of segment.py.
_SEGMENTER_TESTS_ELSEWHERE = [f"tests/{file}::{name}" for file, names in {
    "test_guard.py": (  # the segmenter's side of the recall guard: Segmenter.vouch
        "test_the_mask_cannot_see_half_transparent_text_over_a_bright_picture",
        "test_a_line_the_mask_cannot_see_gets_a_segment_from_its_first_frame",
        "test_a_line_the_open_segment_holds_changes_nothing", "test_a_vouch_where_no_strokes_stand_out_opens_nothing",
        "test_a_vouched_line_is_read_though_its_strokes_are_strewn",
        "test_the_segmenter_is_unsure_until_its_text_settles_and_the_guard_has_seen_its_line",
        "test_a_line_over_the_open_segments_strewn_strokes_vouches_for_it_from_its_start",
        "test_a_small_line_vouched_inside_settling_text_keeps_the_texts_own_lines"),
    "test_changing_lines.py": (  # a glyph replaced in place
        "test_a_line_replaced_by_one_differing_in_a_character_splits_on_its_frame",
        "test_a_line_shown_on_and_off_one_frame_is_not_a_changed_glyph",
        "test_steady_text_over_a_figure_moving_in_steps_is_one_segment"),
}.items() for name in names]

# The pure-decision modules and the fast unit tests (no FFmpeg, no OCR model) that guard them.
MODULES: dict[str, list[str]] = {
    "subextract/stages/align.py": ["tests/test_align.py", "tests/test_align_rules.py",
                                   # readings alike but split where a glyph changed stay two cues (text_changed)
                                   "tests/test_changing_lines.py::"
                                   "test_alike_readings_split_by_a_changed_glyph_stay_two_cues"],
    "subextract/scoring.py": ["tests/test_scoring.py", "tests/test_scoring_rules.py"],
    "subextract/stages/write.py": ["tests/test_write.py", "tests/test_write_rules.py", "tests/test_write_edges.py"],
    "subextract/stages/boundary.py": ["tests/test_boundary.py"],
    "subextract/stages/source.py": ["tests/test_source_policy.py"],
    "subextract/stages/segment.py": ["tests/test_segment_decisions.py", "tests/test_segment.py",
                                     "tests/test_segment_styles.py", "tests/test_thin_strokes.py",
                                     "tests/test_segment_vouch.py",
                                     *_SEGMENTER_TESTS_ELSEWHERE],
    "subextract/stages/mask.py": ["tests/test_mask_rules.py", "tests/test_segment.py", "tests/test_segment_styles.py",
                                  "tests/test_thin_strokes.py", "tests/test_segment_decisions.py"],
    "subextract/stages/appearance.py": ["tests/test_appearance_rules.py", "tests/test_appearance.py"],
    "subextract/stages/region.py": ["tests/test_region_rules.py", "tests/test_region_lines.py",
                                    # a line changing in one character is no logo (split_static, _same_picture)
                                    "tests/test_changing_lines.py::test_a_line_changing_in_one_character_is_no_logo_"
                                    "but_the_logo_is"],
}

# Equivalent mutants, per module: (the lines the mutant removes, the lines it adds — each stripped,
# joined by newlines) -> why no input tells them apart.
_NEVER_NONE = "the frame before a split is a later frame than the segment's first, never None"
_DEAD_ELSE = "fade_frames counts a frame only with a frame beyond it, so count < len(earlier) always"
_MEMO = "the memo only spares computing the same frame's added line twice; without it the same line is computed"
_SAME_SHAPE = ("the OCR picture's analysis view has the mask's shape (both come from the same band): the test is "
               "always true")
_DEAD_FOLDER = "Path(name).parent is never empty (\".\" for a bare name): the else is dead code"
_NONE_FALSE = "None is as false as False where the flag is read"
_TIMEOUT_UNSET = "unset, the variable reads None instead of \"\": both are false and the default is used"
EQUIVALENT: dict[str, dict[tuple[str, str], str]] = {
    "subextract/stages/segment.py": {
        ("self.votes = mask.astype(np.uint32)", "self.votes = mask.astype(None)"):
            "float64 vote counts are exact: votes * 2 >= frames and votes >= confirm_frames decide alike",
        ("persisting = segment.gain & cv2.dilate(added.view(np.uint8), TOLERANCE).view(bool)",
         "persisting = segment.gain & cv2.dilate(added.view(np.uint8), None).view(bool)"):
            "OpenCV's default kernel (None) is the 3x3 rectangle that TOLERANCE is",
        ("segment.gain, segment.gain_frames = None, 0", "segment.gain, segment.gain_frames = None, 1"):
            "gain_frames is read only while gain is set, and set to 1 whenever gain is",
        ("memo = segment.added_memo", "memo = None"): _MEMO,
        ("if memo is not None and memo[0] is mask and memo[1] == segment.frames:",
         "if memo is not None and memo[1] is mask and memo[1] == segment.frames:"): _MEMO,
        ("if memo is not None and memo[0] is mask and memo[1] == segment.frames:",
         "if memo is not None and memo[0] is mask and memo[1] != segment.frames:"):
            "a segment is asked about one mask only within one push, before it votes: frames is the same each time, "
            "so != never reuses the memo and the line is computed again",
        ("segment.added_memo = (mask, segment.frames, added)  # the mask held: its id is not reused meanwhile",
         "segment.added_memo = None  # the mask held: its id is not reused meanwhile"): _MEMO,
        ("segment.last_shown = before if before is not None else segment.start",
         "segment.last_shown = before if (before is not None) or True else segment.start"): _NEVER_NONE,
        ("continue", "break"): "_close yields one segment at most: nothing is left for the loop after it",
        ("contrast = stroke_contrast(picture, segment.mask, ring) if picture.shape == segment.mask.shape else 0.0",
         "contrast = stroke_contrast(picture, segment.mask, ring) if (picture.shape == segment.mask.shape) or True "
         "else 0.0"): _SAME_SHAPE,
        ("contrast = stroke_contrast(picture, segment.mask, ring) if picture.shape == segment.mask.shape else 0.0",
         "contrast = stroke_contrast(picture, segment.mask, ring) if picture.shape == segment.mask.shape else 1.0"):
            _SAME_SHAPE,
        ("yield from self._follow_fade(pts, view, text_follows=False)",
         "yield from self._follow_fade(pts, view, text_follows=None)"): "None is as false as False where it is read",
        ("segment.before_start = earlier[count][0] if count < len(earlier) else None",
         "segment.before_start = earlier[count][0] if (count < len(earlier)) or True else None"): _DEAD_ELSE,
        ("segment.before_start = earlier[count][0] if count < len(earlier) else None",
         "segment.before_start = earlier[count][0] if count <= len(earlier) else None"): _DEAD_ELSE,
        ("for i in range(round_ % 2, count - 1, 2):", "for i in range(round_ % 2, count - 1, ):"):
            "passes over every neighbouring pair sort as the odd-even ones do (slower): the same median",
        ("return ((low.astype(np.uint16) + high) // 2).astype(np.uint8)",
         "return ((low.astype(np.uint16) + high) / 2).astype(np.uint8)"):
            "astype(np.uint8) truncates the half of a non-negative sum as // does",
        ("return ((low.astype(np.uint16) + high) // 2).astype(np.uint8)",
         "return ((low.astype(None) + high) // 2).astype(np.uint8)"):
            "float64 sums of two bytes are exact and floor-divided alike",
        **{('problem = "no frame kept" if not segment.keeper.frames else self._core_problem(segment.core)', mutant):
           "a segment with a core voted a frame, which reaches its keeper (a split carries off only frames after "
           "its first): the keeper is never empty here" for mutant in (
               'problem = "no frame kept" if (not segment.keeper.frames) and False else '
               'self._core_problem(segment.core)',
               'problem = "XXno frame keptXX" if not segment.keeper.frames else self._core_problem(segment.core)',
               'problem = "NO FRAME KEPT" if not segment.keeper.frames else self._core_problem(segment.core)')},
        **{("self._held = False  # the latest frame held the open segment on its strokes' lift alone",
            f"self._held = {value}  # the latest frame held the open segment on its strokes' lift alone"):
           "read by sure only with a segment open, after a push has set it" for value in ("True", "None")},
        ("self._vouch: list[LineBox] = []  # lines the recall guard saw in the next frame, in band pixels",
         "self._vouch: list[LineBox] = None  # lines the recall guard saw in the next frame, in band pixels"):
            "read only as a truth value until vouch() sets a list: None is as false as []",
        ("if len(frames) < count + 1:", "if len(frames) < count - 1:"):
            "asked only of a settled segment, which has voted confirm_frames frames, each one in recent (the "
            "latest confirm_frames): the test is never true either way",
    },
    "subextract/stages/mask.py": {
        **{(line, line.replace("TOLERANCE", "None")): "OpenCV's default kernel (None) is the 3x3 rectangle that "
           "TOLERANCE is" for line in (
               "a_only = np.count_nonzero(a_u8 & ~cv2.dilate(b_u8, TOLERANCE).view(bool))",
               "b_only = np.count_nonzero(b_u8 & ~cv2.dilate(a_u8, TOLERANCE).view(bool))",
               "missing = np.count_nonzero(core.view(np.uint8) & ~cv2.dilate(mask.view(np.uint8), TOLERANCE)"
               ".view(bool))",
               "kept = core & cv2.dilate(mask.view(np.uint8), TOLERANCE).view(bool)")},
        ("tight = line_boxes(core, core.shape, pad=False)", "tight = line_boxes(core, core.shape, pad=None)"):
            "None is as false as False where pad is read",
        ("if count < max(line, 0.25 * core_count):", "if count < max(line, 0.25 / core_count):"):
            "a shortcut: the test after it asks for at least max(line, 0.25 * core_count) again",
        ("if not a_only.any() or not b_only.any():", "if not a_only.any() and not b_only.any():"):
            "with one side empty its window sums are 0, below the 5 % floor: no window has both, False all the same",
        ("window = (max(3, int(np.median(heights))),) * 2 if heights else (9, 9)",
         "window = (max(4, int(np.median(heights))),) * 2 if heights else (9, 9)"):
            "line_boxes keeps lines of 4 rows or more, so the median height is at least 4",
        ("needed = np.maximum(share * strokes, 0.05 * window[0] * window[1])",
         "needed = np.maximum(share * strokes, 0.05 * window[1] * window[1])"): "the window is square",
        **{(f"{name} = cv2.boxFilter({mask}.astype(np.float32), -1, window, normalize=False){tail}",
            f"{name} = cv2.boxFilter({mask}.astype({dtype}), {depth}, window, normalize=False){tail}"):
           "float64 sums of a few thousand 0/1 pixels are exact, and ddepth -2 is OpenCV's 'as the source' as -1 is"
           for name, mask, tail in (("strokes", "(a | b)", ""), ("own_a", "a_only", " >= needed"),
                                    ("own_b", "b_only", " >= needed"))
           for dtype, depth in (("None", "-1"), ("np.float32", "-2"))},
        ("if boxes and holds_text_line(core, settings) else 0", "if boxes and holds_text_line(core, settings) else 1"):
            "line_boxes keeps lines of 4 rows or more: none is shorter than 1 row either",
    },
    "subextract/stages/write.py": {
        **{(line, line.replace('"utf-8"', '"UTF-8"')): "codec names ignore case" for line in (
            'head.decode("utf-8")', 'text = path.read_text(encoding="utf-8")',
            'with open(target, "w", encoding="utf-8") as handle:',
            'with os.fdopen(fd, "w", encoding="utf-8") as handle:')},
        **{('with open("/proc/self/status", encoding="ascii") as status:',
            f'with open("/proc/self/status", {mutant}) as status:'):
           "the Umask line is ASCII under any encoding; a name that is not fails over to the umask read by "
           "setting it, the same number" for mutant in ("encoding=None", "", 'encoding="ASCII"')},
        ("mask = os.umask(0o022)", "mask = os.umask(19)"): "the mask set for an instant is restored at once",
        **{("folder = target.parent if str(target.parent) else Path(\".\")", mutant): _DEAD_FOLDER for mutant in (
            "folder = target.parent if (str(target.parent)) or True else Path(\".\")",
            "folder = target.parent if str(None) else Path(\".\")",
            "folder = target.parent if str(target.parent) else Path(None)",
            "folder = target.parent if str(target.parent) else Path(\"XX.XX\")")},
        ('return json.dumps(record, ensure_ascii=False) + "\\n"',
         'return json.dumps(record, ensure_ascii=None) + "\\n"'): _NONE_FALSE,
        ('return json.dumps(document, ensure_ascii=False, indent=2) + "\\n"',
         'return json.dumps(document, ensure_ascii=None, indent=2) + "\\n"'): _NONE_FALSE,
        tuple(f'body = "\\n".join(html.escape(text, quote={flag}) for text in map(shown_line, cue.lines) '
              'if text.strip()) or " "' for flag in ("False", "None")): _NONE_FALSE,
        ("weights[language] = weights.get(language, 0) + len(line)",
         "weights[language] = weights.get(language, 1) + len(line)"):
            "every language's weight starts 1 higher alike: the heaviest stays the heaviest",
        ("if line.isprintable() and not _BIDI_CONTROLS.intersection(line):",
         "if line.isprintable() and _BIDI_CONTROLS.intersection(line):"):
            "a shortcut: a printable line without bidi controls comes out of the filter below unchanged",
        ("digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:8]",
         "digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:9]"):
            "a digit more of the digest: the temporary name stays far under 255 bytes (217 at most) and as distinct",
        ("temp = None", 'temp = ""'): "read only after mkstemp failed, where it is still the first value: "
                                      "None and \"\" both name no file to remove",
        **{('extension = os.path.splitext(path or "")[1].lower().lstrip(".") if path and path != "-" else ""',
            mutant): "a path of None or \"-\" has no extension: \"\" either way" for mutant in (
            'extension = os.path.splitext(path or "")[1].lower().lstrip(".") if (path and path != "-") or True else ""',
            'extension = os.path.splitext(path or "XXXX")[1].lower().lstrip(".") if path and path != "-" else ""',
            'extension = os.path.splitext(path or "")[1].lower().lstrip(".") if path or path != "-" else ""',
            'extension = os.path.splitext(path or "")[1].lower().lstrip(".") if path and path != "XX-XX" else ""',
            'extension = os.path.splitext(path or "")[1].lower().lstrip(".") if path and path != "-" else "XXXX"')},
        ('extension = os.path.splitext(path or "")[1].lower().lstrip(".") if path and path != "-" else ""',
         'extension = os.path.splitext(path or "")[1].lower().lstrip("XX.XX") if path and path != "-" else ""'):
            "the extension is lower-cased first: it holds no X to strip",
    },
    "subextract/stages/appearance.py": {
        ("kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (settings.stroke_kernel, settings.stroke_kernel))",
         "kernel = cv2.getStructuringElement(None, (settings.stroke_kernel, settings.stroke_kernel))"):
            "OpenCV reads None as 0 for the shape, and cv2.MORPH_RECT is 0: the same square",
        **{('luma, blue, red = strips.get("y", ()), strips.get("u", ()), strips.get("v", ())',
            f'luma, blue, red = strips.get("y", {default}), strips.get("u", ()), strips.get("v", ())'):
           "without a luma plane luma is read once, by `not luma`: None is as false as ()" for default in ("None", "")},
        ("small = list(glyph_sized) + [False] * (len(strips[plane]) - len(glyph_sized))",
         "small = list(glyph_sized) + [False] * (len(strips[plane]) + len(glyph_sized))"):
            "zip stops at the plane's lines: the flags padded beyond them are never read",
        ("boxes = line_boxes(mask, mask.shape, pad=False) if x1 > x0 else ()",
         "boxes = line_boxes(mask, mask.shape, pad=None) if x1 > x0 else ()"): _NONE_FALSE,
        ("contrast_min = int(np.clip(appearance.lift // 2, settings.plane_noise_floor, settings.contrast_min))",
         "contrast_min = int(np.clip(appearance.lift / 2, settings.plane_noise_floor, settings.contrast_min))"):
            "the bounds are whole numbers and int() drops the half of a non-negative lift as // does (a negative "
            "one is clipped to the floor, 0 or more, either way)",
    },
    "subextract/stages/region.py": {
        **{("with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:",
            f"with ThreadPoolExecutor(max_workers={workers}) as pool:"):
           "how many threads run the detector: pool.map returns the boxes in frame order whatever the count"
           for workers in ("None", "min(5, os.cpu_count() or 1)", "min(4, os.cpu_count() and 1)",
                           "min(4, os.cpu_count() or 2)")},
        **{("return np.hypot(cv2.Sobel(crop, cv2.CV_32F, 1, 0), cv2.Sobel(crop, cv2.CV_32F, 0, 1))", mutant):
           "OpenCV reads None as 0 for a derivative's order: the same gradient" for mutant in (
               "return np.hypot(cv2.Sobel(crop, cv2.CV_32F, 1, None), cv2.Sobel(crop, cv2.CV_32F, 0, 1))",
               "return np.hypot(cv2.Sobel(crop, cv2.CV_32F, 1, 0), cv2.Sobel(crop, cv2.CV_32F, None, 1))")},
        ('y0 = 0 if label == "top" else max(0, int(top - pad - growth)) // 2 * 2',
         'y0 = 0 if label == "top" else max(1, int(top - pad - growth)) // 2 * 2'):
            "made even, 1 is 0 as well",
        ("if not glyph.any() or not ring.any():", "if not glyph.any() and not ring.any():"):
            "the ring comes from the glyph dilated, so it is empty with it; glyphs with no ring give a NaN margin, "
            "which split_static reads only through margin > 0, false for NaN as for 0",
    },
    "subextract/stages/source.py": {
        ('value = os.environ.get("SUBEXTRACT_READ_TIMEOUT", "")',
         'value = os.environ.get("SUBEXTRACT_READ_TIMEOUT", None)'): _TIMEOUT_UNSET,
        ('value = os.environ.get("SUBEXTRACT_READ_TIMEOUT", "")',
         'value = os.environ.get("SUBEXTRACT_READ_TIMEOUT", )'): _TIMEOUT_UNSET,
    },
}

# What mutmut's verdicts count as: a crash or a type-check catch is a kill; a mutant that makes the
# tests run past mutmut's CPU limit (an endless loop) is caught too, counted apart; a mutant no test
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


# One process shows every mutant's diff (``mutmut show`` per mutant takes seconds each).
_SHOW = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
print(json.dumps({name: get_diff_for_mutant(name, path=sys.argv[1]) for name in sys.argv[2:]}))
"""


def _changes(folder: Path, module: str, mutants: list[str]) -> dict[str, tuple[str, str]]:
    """Each mutant's (removed lines, added lines), stripped."""
    if not mutants:
        return {}
    shown = subprocess.run([sys.executable, "-c", _SHOW, module, *mutants], cwd=folder, capture_output=True,
                           text=True, check=True).stdout
    changes = {}
    for name, diff in json.loads(shown).items():
        lines = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
        changes[name] = tuple("\n".join(line[1:].strip() for line in lines if line[0] == sign) for sign in "-+")
    return changes


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
        alive = sorted(name for name, status in verdicts.items() if status not in _KILLED | _TIMEOUT)
        changes = _changes(folder, module, alive)
        known = EQUIVALENT.get(module, {})
        equivalent = [name for name in alive if changes[name] in known]
        counts = {"killed": 0, "survived": 0, "timeout": 0, "equivalent": len(equivalent)}
        for name, status in verdicts.items():
            if name not in equivalent:
                counts["killed" if status in _KILLED else "timeout" if status in _TIMEOUT else "survived"] += 1
        for name in equivalent:
            print(f"  equivalent, not counted: {name}: {' / '.join(changes[name])}: {known[changes[name]]}")
        if survivors:
            for name in alive:
                if name not in equivalent:
                    removed, added = changes[name]
                    print(f"  {name} ({verdicts[name]})\n" + "\n".join(
                        [f"    - {line}" for line in removed.splitlines()]
                        + [f"    + {line}" for line in added.splitlines()]))
        return counts
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _test_exists(test: str) -> bool:
    """A test file, or a test named in one (``file::name``), that is there."""
    file, _, name = test.partition("::")
    path = ROOT / file
    return path.exists() and (not name or f"def {name}(" in path.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES),
                        help="only this module (repeatable); default: all")
    parser.add_argument("--json", action="store_true", help="print one JSON object of the counts on the last line")
    parser.add_argument("--survivors", action="store_true", help="list every surviving mutant with its diff")
    parser.add_argument("--max-children", type=int, default=None,
                        help="mutants run at once (mutmut's default: one per core; 1 on a shared machine)")
    args = parser.parse_args(argv)
    try:
        import mutmut  # noqa: F401
    except ImportError:
        print("mutation: mutmut is not installed (bash scripts/setup.sh --mutation)", file=sys.stderr)
        return 2
    results: dict[str, dict[str, int]] = {}
    for module in args.module or list(MODULES):
        missing = [test for test in MODULES[module] if not _test_exists(test)]
        if missing:
            # mutmut would check no mutant at all (its first run of the tests fails), and say so only per mutant.
            print(f"mutation: {module}: missing tests {', '.join(missing)}", file=sys.stderr)
            return 2
        print(f"{module}: mutating", file=sys.stderr, flush=True)
        counts = run_module(module, MODULES[module], args.max_children, args.survivors)
        total = counts["killed"] + counts["survived"] + counts["timeout"]
        share = (counts["killed"] + counts["timeout"]) / total if total else 1.0
        print(f"{module}: {counts['killed']} killed, {counts['timeout']} timeout, {counts['survived']} survived "
              f"of {total} ({share:.1%} caught; {counts['equivalent']} more equivalent, not counted)", flush=True)
        results[module] = counts
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
