"""Score a hypothesis subtitle file against a reference (design.md §3 "How we measure"); the
command is ``cli/score.py``. Files are read with pysrt in its strict mode (a malformed block is
an error, not silently skipped as pysubs2 would) and WebVTT by the reader below.

Cues are matched one-to-one by temporal IoU, then text and timing are compared over the
matched pairs. Text is compared after `normalize_text`, so punctuation, case, spacing and
line breaks never count as errors.
"""

from __future__ import annotations

import html
import os
import re
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pysrt
from rapidfuzz.distance import Levenshtein
from scipy.optimize import linear_sum_assignment

MIN_TIOU = 0.5
MAX_HIT_CER = 0.1
# SRT stores whole milliseconds, so a frame-exact boundary may be off by up to 1 ms.
FRAME_TOLERANCE_MS = 1.0


@dataclass(frozen=True)
class TimedText:
    start: float  # seconds
    end: float  # seconds
    text: str  # lines joined with "\n", markup removed


class CueFileError(ValueError):
    """A subtitle file is missing, unreadable or not valid SRT/WebVTT."""


class _VttSyntaxError(ValueError):
    """Raised by the WebVTT parser, which does not know the file's path."""


# ---------------------------------------------------------------------------
# Loading


_HTML_TAG = re.compile(r"<[^>]*>")  # <i>, </b>, <font ...>, VTT <c.x>, <v Name>, <00:01.000>
_ASS_OVERRIDE = re.compile(r"\{\\[^}]*\}")  # {\an8}, {\i1}: libass tags leak into SRT


def strip_markup(text: str) -> str:
    return _ASS_OVERRIDE.sub("", _HTML_TAG.sub("", text))


def load_cues(path: str | os.PathLike[str]) -> list[TimedText]:
    """Read an SRT or (by the `.vtt` suffix) WebVTT file, in file order.

    Raises CueFileError with a one-line message on any failure.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as err:
        raise CueFileError(f"{path}: {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise CueFileError(f"{path}: not valid {err.encoding} text") from err
    return parse_cues(text, path)


def parse_cues(text: str, path: str | os.PathLike[str]) -> list[TimedText]:
    """The cues of an SRT or (by ``path``'s `.vtt` suffix) WebVTT file's text, strictly.

    Raises CueFileError with a one-line message naming ``path``.
    """
    path = Path(path)
    try:
        if path.suffix.lower() == ".vtt":
            return _parse_vtt(text)
        return _parse_srt(text)
    except pysrt.Error as err:
        # With ERROR_RAISE pysrt puts the 0-based index of the blank line closing the bad
        # block first: that is the 1-based number of the block's last line.
        raise CueFileError(f"{path}: invalid SRT block ending at line {err.args[0]}") from err
    except (_VttSyntaxError, _TimingError) as err:
        raise CueFileError(f"{path}: {err}") from err


def _parse_srt(text: str) -> list[TimedText]:
    _check_srt_timings(text)
    # ERROR_RAISE: pysrt's default silently skips malformed blocks, which would score a
    # broken file as if cues were merely missed.
    items = pysrt.from_string(text, error_handling=pysrt.ERROR_RAISE)
    return [
        TimedText(item.start.ordinal / 1000, item.end.ordinal / 1000, strip_markup(item.text))
        for item in items
    ]


# pysrt reads any digits it finds: "00:00:0X,500" as 0.5 s, "00:00:61,000" as 61 s, an end
# before the start as given. Each block's timing line is checked strictly first.
_SRT_TIME = r"(\d+):(\d{2}):(\d{2})[,.](\d{3})"
_SRT_TIMING = re.compile(rf"^\s*{_SRT_TIME}\s+-->\s+{_SRT_TIME}(?:\s+.*)?$")


def _check_srt_timings(text: str) -> None:
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        if not lines[number].strip():
            number += 1
            continue
        # A block: its cue number, then its timing line (some writers leave the number out).
        timing = number + 1 if "-->" not in lines[number] and number + 1 < len(lines) else number
        if "-->" in lines[timing]:  # a block without one is no cue at all: pysrt says so
            _check_timing(lines[timing], timing + 1, _SRT_TIMING, "HH:MM:SS,mmm --> HH:MM:SS,mmm")
        number = timing + 1
        while number < len(lines) and lines[number].strip():
            number += 1


def _check_timing(line: str, number: int, pattern: re.Pattern[str], form: str) -> None:
    """A cue's timing line, strictly: the form, minutes and seconds below 60, end not before start."""
    match = pattern.match(line)
    if match is None:
        raise _TimingError(f"line {number}: invalid timing {line.strip()!r} (expected {form})")
    groups = [int(group) if group else 0 for group in match.groups()]
    half = len(groups) // 2
    if any(part >= 60 for part in (*groups[1:3], *groups[half + 1:half + 3])):
        raise _TimingError(f"line {number}: minutes and seconds must be below 60 in {line.strip()!r}")
    start, end = (sum(g * f for g, f in zip(groups[i:i + half], (3_600_000, 60_000, 1000, 1))) for i in (0, half))
    if end < start:
        raise _TimingError(f"line {number}: the cue ends before it starts ({line.strip()!r})")


class _TimingError(ValueError):
    """A timing line that is malformed or impossible; the message names its line."""


# pysrt cannot read WebVTT (header, optional cue ids, "." before milliseconds, optional
# hours, cue settings after the end time, NOTE/STYLE/REGION blocks). The subset a scorer
# needs is this small parser; a dependency for it is not worth it.
_VTT_TIMING = re.compile(
    r"^\s*((?:\d+:)?\d{2}:\d{2}\.\d{3})\s+-->\s+((?:\d+:)?\d{2}:\d{2}\.\d{3})(?:\s.*)?$"
)
_VTT_SKIPPED_BLOCKS = ("NOTE", "STYLE", "REGION")
_VTT_TIME = r"(?:(\d+):)?(\d{2}):(\d{2})\.(\d{3})"
_VTT_STRICT = re.compile(rf"^\s*{_VTT_TIME}\s+-->\s+{_VTT_TIME}(?:\s.*)?$")


def _parse_vtt(text: str) -> list[TimedText]:
    lines = text.splitlines()
    if not lines or not re.match(r"WEBVTT(?:[ \t]|$)", lines[0]):
        raise _VttSyntaxError("missing WEBVTT header")
    (_, header), *blocks = _vtt_blocks(lines)
    if any("-->" in line for line in header):
        raise _VttSyntaxError("no blank line between the WEBVTT header and the first cue")
    return [
        _parse_vtt_cue(first_line, block)
        for first_line, block in blocks
        if block[0].split(maxsplit=1)[0] not in _VTT_SKIPPED_BLOCKS
    ]


def _vtt_blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
    """Blank-line separated blocks, each with the 1-based number of its first line."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    for number, line in enumerate([*lines, ""], start=1):
        if line.strip():
            current.append(line)
        elif current:
            blocks.append((number - len(current), current))
            current = []
    return blocks


def _parse_vtt_cue(first_line: int, block: list[str]) -> TimedText:
    timing_index = 0 if "-->" in block[0] else 1  # a cue may start with an identifier line
    match = _VTT_TIMING.match(block[timing_index]) if timing_index < len(block) else None
    if match is None:
        raise _VttSyntaxError(f"invalid WebVTT cue at line {first_line}")
    _check_timing(block[timing_index], first_line + timing_index, _VTT_STRICT, "[HH:]MM:SS.mmm --> [HH:]MM:SS.mmm")
    # Unescape after stripping tags so that an escaped "&lt;i&gt;" stays text.
    body = html.unescape(strip_markup("\n".join(block[timing_index + 1 :])))
    return TimedText(_vtt_seconds(match[1]), _vtt_seconds(match[2]), body)


def _vtt_seconds(stamp: str) -> float:
    # Rounded to whole milliseconds so that the same cue read from SRT or WebVTT is equal.
    seconds = 0.0
    for part in stamp.split(":"):
        seconds = seconds * 60 + float(part)
    return round(seconds, 3)


# ---------------------------------------------------------------------------
# Scoring


def normalize_text(s: str) -> str:
    """NFKC, lowercase, keep content characters only.

    Content means Unicode letters, marks and numbers (categories L*, M*, N*): this drops
    whitespace, punctuation (P*) and symbols (S*) as §3 asks, and also invisible format and
    control characters (C*: zero-width space, BOM, bidi marks) that no reader would see.
    """
    folded = unicodedata.normalize("NFKC", s).lower()
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] in "LMN")


@dataclass(frozen=True)
class Score:
    ref_cues: int
    hyp_cues: int
    matched: int
    precision: float
    recall: float
    f1: float
    e2e_precision: float
    e2e_recall: float
    e2e_f1: float
    exact_share: float
    cer: float
    sequence_cer: float
    start_error_ms_median: float | None
    start_error_ms_p90: float | None
    end_error_ms_median: float | None
    end_error_ms_p90: float | None
    within_one_frame_share: float | None

    def to_dict(self) -> dict[str, int | float | None]:
        return asdict(self)


def score(
    reference: list[TimedText],
    hypothesis: list[TimedText],
    frame_duration: float | None = None,
) -> Score:
    """Compare `hypothesis` with `reference`; `frame_duration` (seconds) enables the
    within-one-frame share.

    Pairing: one-to-one, maximizing total temporal IoU (intersection over union of the
    [start, end] intervals) among pairs with tIoU >= 0.5; text plays no part in pairing.
    A matched pair is an end-to-end hit when its CER (edits / normalized reference chars,
    denominator at least 1) is <= 0.1.

    Edge cases, chosen so that every number stays defined and "nothing to do" is perfect:
    - A rate whose denominator is zero is 1.0 (no reference cues: recall and exact share
      1.0; no hypothesis cues: precision 1.0). F1 is 2*matched / (ref_cues + hyp_cues), so
      it is 1.0 only when both files are empty and 0.0 when exactly one is.
    - CER and sequence CER divide by max(1, reference chars): with an empty reference each
      extra hypothesis character costs 1.0.
    - Timing errors are None without matched pairs; the within-one-frame share is None
      without matched pairs or without `frame_duration`.
    - Zero-length cues have tIoU 0 with everything and are never matched.
    Percentiles interpolate linearly between samples (numpy's default).
    """
    if frame_duration is not None and frame_duration <= 0:
        raise ValueError(f"frame_duration must be positive, got {frame_duration}")
    ref_norm = [normalize_text(cue.text) for cue in reference]
    hyp_norm = [normalize_text(cue.text) for cue in hypothesis]
    pairs = _match(reference, hypothesis)
    pair_edits = [Levenshtein.distance(ref_norm[r], hyp_norm[h]) for r, h in pairs]
    pair_cers = [edits / max(1, len(ref_norm[r])) for edits, (r, _) in zip(pair_edits, pairs)]
    hits = sum(cer <= MAX_HIT_CER for cer in pair_cers)
    exact = sum(edits == 0 for edits in pair_edits)
    ref_chars = max(1, sum(map(len, ref_norm)))
    start_errors = [_error_ms(hypothesis[h].start - reference[r].start) for r, h in pairs]
    end_errors = [_error_ms(hypothesis[h].end - reference[r].end) for r, h in pairs]
    n_ref, n_hyp, n_matched = len(reference), len(hypothesis), len(pairs)
    return Score(
        ref_cues=n_ref,
        hyp_cues=n_hyp,
        matched=n_matched,
        precision=_rate(n_matched, n_hyp),
        recall=_rate(n_matched, n_ref),
        f1=_rate(2 * n_matched, n_ref + n_hyp),
        e2e_precision=_rate(hits, n_hyp),
        e2e_recall=_rate(hits, n_ref),
        e2e_f1=_rate(2 * hits, n_ref + n_hyp),
        exact_share=_rate(exact, n_ref),
        cer=_unmatched_plus_edits(ref_norm, hyp_norm, pairs, pair_edits) / ref_chars,
        sequence_cer=_sequence_edits(reference, ref_norm, hypothesis, hyp_norm) / ref_chars,
        start_error_ms_median=_percentile(start_errors, 50),
        start_error_ms_p90=_percentile(start_errors, 90),
        end_error_ms_median=_percentile(end_errors, 50),
        end_error_ms_p90=_percentile(end_errors, 90),
        within_one_frame_share=_within_frame_share(start_errors + end_errors, frame_duration),
    )


def _match(reference: list[TimedText], hypothesis: list[TimedText]) -> list[tuple[int, int]]:
    """(reference index, hypothesis index) pairs, sorted by reference index."""
    if not reference or not hypothesis:
        return []
    tiou = _tiou_matrix(reference, hypothesis)
    # Zero the ineligible pairs before assigning: otherwise the assignment could give up
    # a pair above the threshold for several below it that add up to more total IoU.
    eligible = np.where(tiou >= MIN_TIOU, tiou, 0.0)
    rows, cols = linear_sum_assignment(eligible, maximize=True)
    return [(int(r), int(c)) for r, c in zip(rows, cols) if eligible[r, c] > 0]


def _tiou_matrix(reference: list[TimedText], hypothesis: list[TimedText]) -> np.ndarray:
    ref = np.array([(cue.start, cue.end) for cue in reference], dtype=float)
    hyp = np.array([(cue.start, cue.end) for cue in hypothesis], dtype=float)
    ref_start, ref_end = ref[:, :1], ref[:, 1:]
    hyp_start, hyp_end = hyp[:, 0], hyp[:, 1]
    overlap = np.minimum(ref_end, hyp_end) - np.maximum(ref_start, hyp_start)
    intersection = np.clip(overlap, 0, None)
    union = (ref_end - ref_start) + (hyp_end - hyp_start) - intersection
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, intersection / union, 0.0)


def _unmatched_plus_edits(
    ref_norm: list[str],
    hyp_norm: list[str],
    pairs: list[tuple[int, int]],
    pair_edits: list[int],
) -> int:
    matched_ref = {r for r, _ in pairs}
    matched_hyp = {h for _, h in pairs}
    missed = sum(len(text) for i, text in enumerate(ref_norm) if i not in matched_ref)
    extra = sum(len(text) for i, text in enumerate(hyp_norm) if i not in matched_hyp)
    return sum(pair_edits) + missed + extra


def _sequence_edits(
    reference: list[TimedText],
    ref_norm: list[str],
    hypothesis: list[TimedText],
    hyp_norm: list[str],
) -> int:
    return Levenshtein.distance(
        _in_time_order(reference, ref_norm), _in_time_order(hypothesis, hyp_norm)
    )


def _in_time_order(cues: list[TimedText], texts: list[str]) -> str:
    # Stable sort: cues with equal times (e.g. two positioned cues) keep file order.
    order = sorted(range(len(cues)), key=lambda i: (cues[i].start, cues[i].end))
    return "".join(texts[i] for i in order)


def _rate(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 1.0


def _error_ms(delta_seconds: float) -> float:
    # Rounded to the microsecond: differences of float seconds carry noise such as
    # 40.000000000000036 ms that would otherwise leak into reports and comparisons.
    return round(abs(delta_seconds) * 1000, 3)


def _percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def _within_frame_share(errors_ms: list[float], frame_duration: float | None) -> float | None:
    if frame_duration is None or not errors_ms:
        return None
    limit_ms = frame_duration * 1000 + FRAME_TOLERANCE_MS
    return sum(error <= limit_ms for error in errors_ms) / len(errors_ms)


# ---------------------------------------------------------------------------
# Reporting and CLI


def format_score(score: Score) -> str:
    """A few aligned lines for people; `Score.to_dict` is the machine form."""
    s = score
    return "\n".join(
        [
            f"cues     ref {s.ref_cues}  hyp {s.hyp_cues}  matched {s.matched}",
            f"cue      P {s.precision:.3f}  R {s.recall:.3f}  F1 {s.f1:.3f}",
            f"e2e      P {s.e2e_precision:.3f}  R {s.e2e_recall:.3f}  F1 {s.e2e_f1:.3f}"
            f"  exact {s.exact_share:.3f}",
            f"text     CER {s.cer:.4f}  sequence CER {s.sequence_cer:.4f}",
            f"start ms median {_fmt(s.start_error_ms_median)}  p90 {_fmt(s.start_error_ms_p90)}",
            f"end ms   median {_fmt(s.end_error_ms_median)}  p90 {_fmt(s.end_error_ms_p90)}",
            f"frame    within one frame {_fmt(s.within_one_frame_share, '.3f')}",
        ]
    )


def _fmt(value: float | None, spec: str = ".1f") -> str:
    return "n/a" if value is None else format(value, spec)
