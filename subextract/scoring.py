"""Score a hypothesis subtitle file against a reference (design.md §3 "How we measure"); the
command is ``cli/score.py``. SRT and WebVTT files are read strictly by the readers below (a
malformed block is an error, not silently skipped or merged into its neighbour's text).

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
from rapidfuzz.distance import Levenshtein
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

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


class _CueSyntaxError(ValueError):
    """A malformed block or timing line, raised by the readers, which do not know the file's path."""


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
    except _CueSyntaxError as err:
        raise CueFileError(f"{path}: {err}") from err


# Our own reader because no permissively licensed one is strict: pysubs2 skips a malformed
# block silently and srt joins it into the cue before it (pysrt, which was strict, is GPL-3.0).
# Each block is an optional cue number, a timing line and the text; the timing is checked
# strictly, since lenient readers take "00:00:0X,500" as 0.5 s and "00:00:61,000" as 61 s.
_SRT_TIME = r"(\d+):(\d{2}):(\d{2})[,.](\d{3})"
_SRT_TIMING = re.compile(rf"^\s*{_SRT_TIME}\s+-->\s+{_SRT_TIME}(?:\s+.*)?$")


def _parse_srt(text: str) -> list[TimedText]:
    cues = []
    for first_line, block in _blocks(text.splitlines()):
        timing = 1 if "-->" not in block[0] and len(block) > 1 else 0  # some writers leave the number out
        if "-->" not in block[timing] or (timing and not block[0].strip().isdigit()):
            raise _CueSyntaxError(f"invalid SRT block ending at line {first_line + len(block) - 1}")
        start, end = _check_timing(block[timing], first_line + timing, _SRT_TIMING, "HH:MM:SS,mmm --> HH:MM:SS,mmm")
        cues.append(TimedText(start / 1000, end / 1000, strip_markup("\n".join(block[timing + 1:]))))
    return cues


def _check_timing(line: str, number: int, pattern: re.Pattern[str], form: str) -> tuple[int, int]:
    """A cue's timing line, strictly: the form, minutes and seconds below 60, end not before start.
    Its start and end in milliseconds."""
    match = pattern.match(line)
    if match is None:
        raise _CueSyntaxError(f"line {number}: invalid timing {line.strip()!r} (expected {form})")
    groups = [int(group) if group else 0 for group in match.groups()]
    half = len(groups) // 2
    if any(part >= 60 for part in (*groups[1:3], *groups[half + 1:half + 3])):
        raise _CueSyntaxError(f"line {number}: minutes and seconds must be below 60 in {line.strip()!r}")
    start, end = (sum(g * f for g, f in zip(groups[i:i + half], (3_600_000, 60_000, 1000, 1))) for i in (0, half))
    if end < start:
        raise _CueSyntaxError(f"line {number}: the cue ends before it starts ({line.strip()!r})")
    return start, end


# WebVTT (header, optional cue ids, "." before milliseconds, optional hours, cue settings after
# the end time, NOTE/STYLE/REGION blocks): the subset a scorer needs is this small reader.
_VTT_TIMING = re.compile(
    r"^\s*((?:\d+:)?\d{2}:\d{2}\.\d{3})\s+-->\s+((?:\d+:)?\d{2}:\d{2}\.\d{3})(?:\s.*)?$"
)
_VTT_SKIPPED_BLOCKS = ("NOTE", "STYLE", "REGION")
_VTT_TIME = r"(?:(\d+):)?(\d{2}):(\d{2})\.(\d{3})"
_VTT_STRICT = re.compile(rf"^\s*{_VTT_TIME}\s+-->\s+{_VTT_TIME}(?:\s.*)?$")


def _parse_vtt(text: str) -> list[TimedText]:
    lines = text.splitlines()
    if not lines or not re.match(r"WEBVTT(?:[ \t]|$)", lines[0]):
        raise _CueSyntaxError("missing WEBVTT header")
    (_, header), *blocks = _blocks(lines)
    if any("-->" in line for line in header):
        raise _CueSyntaxError("no blank line between the WEBVTT header and the first cue")
    return [
        _parse_vtt_cue(first_line, block)
        for first_line, block in blocks
        if block[0].split(maxsplit=1)[0] not in _VTT_SKIPPED_BLOCKS
    ]


def _blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
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
        raise _CueSyntaxError(f"invalid WebVTT cue at line {first_line}")
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
    """(reference index, hypothesis index) pairs, sorted by reference index.

    The assignment maximizes total tIoU over the eligible pairs only (tIoU >= 0.5): a dense
    matrix of every pair grows with the square of the cue count (two 20,000-cue files: 16 GB),
    while a cue overlaps only its few neighbours in time. Maximum-weight matching on that sparse
    graph is a full minimum-weight matching (scipy's LAPJVsp) once each cue may also stay
    unmatched: reference ``r`` pairs with its own stand-in column at cost 2, hypothesis ``h``
    with its own stand-in row at cost 2, a pair costs ``2 - tIoU``, and a stand-in row takes a
    stand-in column where the real pair (r, h) was taken. Every full matching has n + m edges,
    so its cost is 2(n + m) minus the tIoU it pairs: the least cost is the most total tIoU.
    """
    if not reference or not hypothesis:
        return []
    refs, hyps, tiou = _eligible_pairs(reference, hypothesis)
    if not len(refs):
        return []
    n, m, pairs = len(reference), len(hypothesis), len(refs)
    rows = np.concatenate([refs, np.arange(n), n + np.arange(m), n + hyps])
    cols = np.concatenate([hyps, m + np.arange(n), np.arange(m), m + refs])
    costs = np.concatenate([2.0 - tiou, np.full(n + m + pairs, 2.0)])
    graph = csr_matrix((costs, (rows, cols)), shape=(n + m, m + n))
    matched_rows, matched_cols = min_weight_full_bipartite_matching(graph)
    real = (matched_rows < n) & (matched_cols < m)
    return sorted((int(r), int(c)) for r, c in zip(matched_rows[real], matched_cols[real]))


def _eligible_pairs(reference: list[TimedText], hypothesis: list[TimedText]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(reference indexes, hypothesis indexes, tIoU) of the pairs with tIoU >= 0.5. Such a pair
    overlaps in time and its hypothesis is at most twice as long as the reference (the overlap
    is at most the shorter one, the union at least the longer one), so it starts after
    ``ref.start - 2 * ref length`` and before ``ref.end``: only the hypotheses starting in that
    window are candidates, found by binary search in their sorted starts."""
    ref = np.array([(cue.start, cue.end) for cue in reference], dtype=float)
    hyp = np.array([(cue.start, cue.end) for cue in hypothesis], dtype=float)
    order = np.argsort(hyp[:, 0], kind="stable")
    starts = hyp[order, 0]
    length = ref[:, 1] - ref[:, 0]
    low = np.searchsorted(starts, ref[:, 0] - 2 * length, side="left")
    high = np.searchsorted(starts, ref[:, 1], side="right")
    counts = np.maximum(high - low, 0)
    refs = np.repeat(np.arange(len(ref)), counts)
    firsts = np.repeat(low - (np.cumsum(counts) - counts), counts)
    hyps = order[firsts + np.arange(counts.sum())]
    ref_start, ref_end, hyp_start, hyp_end = ref[refs, 0], ref[refs, 1], hyp[hyps, 0], hyp[hyps, 1]
    intersection = np.clip(np.minimum(ref_end, hyp_end) - np.maximum(ref_start, hyp_start), 0, None)
    union = (ref_end - ref_start) + (hyp_end - hyp_start) - intersection
    with np.errstate(divide="ignore", invalid="ignore"):
        tiou = np.where(union > 0, intersection / union, 0.0)
    eligible = tiou >= MIN_TIOU
    return refs[eligible], hyps[eligible], tiou[eligible]


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
