"""The scorer's decisions at their limits: the end-to-end hit rule (CER over the *reference*), the
tIoU pairing, rates with unequal counts, percentiles, the one-frame limit, and what the command
prints. Thresholds come from ``subextract.scoring``, never copied."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from test_scoring import write_srt

from subextract.scoring import (FRAME_TOLERANCE_MS, MAX_HIT_CER, MIN_TIOU, CueFileError, TimedText, format_score,
                                load_cues, normalize_text, score)
from subextract.cli import main as cli_main


def main(argv: list[str]) -> int:
    return cli_main(["score", *argv])


def one(ref_text: str, hyp_text: str):
    return score([TimedText(0.0, 2.0, ref_text)], [TimedText(0.0, 2.0, hyp_text)])


def text_of(length: int) -> str:
    return "abcdefghijklmnopqrstuvwxyz"[:length] if length <= 26 else ("abcdefghij" * (length // 10 + 1))[:length]


def test_hit_rule_divides_by_the_reference_length_deletion_at_the_limit():
    # 10 reference characters, one dropped: 1/10 is the limit itself (a hit); over the 9
    # characters read it would be 1/9, a miss
    edits_at_limit = round(MAX_HIT_CER * 10)
    reference = text_of(10)
    result = one(reference, reference[edits_at_limit:])
    assert result.matched == 1 and result.e2e_f1 == 1.0


def test_hit_rule_divides_by_the_reference_length_insertions():
    # 90 reference characters, 10 inserted: 10/90 is a miss; over the 100 read it would be 0.1, a hit
    reference = text_of(90)
    edits = round(MAX_HIT_CER * 100)
    result = one(reference, reference + "z" * edits)
    assert edits / len(reference) > MAX_HIT_CER >= edits / (len(reference) + edits)
    assert result.matched == 1 and result.e2e_f1 == 0.0


def test_hit_rule_just_over_the_limit_is_a_miss():
    reference = text_of(20)
    edits = int(MAX_HIT_CER * 20) + 1
    result = one(reference, "z" * edits + reference[edits:])
    assert result.matched == 1 and result.e2e_f1 == 0.0 and result.f1 == 1.0


def test_e2e_rates_with_unequal_counts():
    reference = [TimedText(0.0, 1.0, "one"), TimedText(2.0, 3.0, "two"), TimedText(4.0, 5.0, "three")]
    hypothesis = [TimedText(0.0, 1.0, "one"), TimedText(2.0, 3.0, "xyz")]
    result = score(reference, hypothesis)
    assert (result.e2e_precision, result.e2e_recall) == (0.5, pytest.approx(1 / 3))
    assert result.e2e_f1 == pytest.approx(2 * 1 / 5)
    assert result.f1 == pytest.approx(2 * 2 / 5)


def test_disjoint_cues_are_never_paired():
    result = score([TimedText(0.0, 1.0, "a")], [TimedText(5.0, 6.0, "a")])
    assert result.matched == 0


def test_short_cues_pair_by_their_overlap_not_by_seconds():
    # a 0.4 s cue against a 0.4 s cue shifted by 0.1 s: tIoU 0.3 / 0.5 = 0.6
    result = score([TimedText(0.0, 0.4, "a")], [TimedText(0.1, 0.5, "a")])
    assert 0.3 / 0.5 >= MIN_TIOU and result.matched == 1


def test_zero_length_cues_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = score([TimedText(1.0, 1.0, "a")], [TimedText(1.0, 1.0, "a")])
    assert result.matched == 0


def test_median_and_p90_of_three_errors():
    reference = [TimedText(t, t + 1.0, "x") for t in (0.0, 10.0, 20.0)]
    hypothesis = [TimedText(0.0, 1.0, "x"), TimedText(10.0, 11.04, "x"), TimedText(20.0, 21.1, "x")]
    result = score(reference, hypothesis)
    assert result.end_error_ms_median == 40.0 and result.end_error_ms_p90 == pytest.approx(88.0)
    assert result.start_error_ms_median == 0.0 and result.start_error_ms_p90 == 0.0


def test_errors_are_rounded_to_the_microsecond():
    result = score([TimedText(0.0, 1.0, "x")], [TimedText(0.0012345, 1.0, "x")])
    assert result.start_error_ms_median == 1.234  # ms with three decimals: microseconds


def test_one_frame_limit_is_the_frame_plus_the_ms_tolerance():
    frame = 0.04
    limit_ms = frame * 1000 + FRAME_TOLERANCE_MS
    reference = [TimedText(0.0, 1.0, "x")]
    just_in = score(reference, [TimedText(limit_ms / 1000 - 1e-6, 1.0, "x")], frame_duration=frame)
    just_out = score(reference, [TimedText(limit_ms / 1000 + 2e-5, 1.0, "x")], frame_duration=frame)
    assert just_in.within_one_frame_share == 1.0
    assert just_out.within_one_frame_share == 0.5  # the end is exact, the start is not


def test_normalize_keeps_letters_marks_and_numbers_only():
    assert normalize_text("Ａｂｃ　１２３！?\u200b — déjà vu") == "abc123déjàvu"


def test_human_format_shows_every_number(tmp_path):
    reference = [TimedText(0.0, 1.0, "hello"), TimedText(2.0, 3.0, "world")]
    hypothesis = [TimedText(0.04, 1.0, "hello"), TimedText(2.0, 3.12, "word")]
    assert format_score(score(reference, hypothesis, frame_duration=0.04)).splitlines() == [
        "cues     ref 2  hyp 2  matched 2",
        "cue      P 1.000  R 1.000  F1 1.000",
        "e2e      P 0.500  R 0.500  F1 0.500  exact 0.500",
        "text     CER 0.1000  sequence CER 0.1000",
        "start ms median 20.0  p90 36.0",
        "end ms   median 60.0  p90 108.0",
        "frame    within one frame 0.750",
    ]


def test_cli_fps_sets_the_frame_duration(tmp_path, capsys):
    ref = write_srt(tmp_path / "ref.srt", [(0.0, 1.0, "x")])
    hyp = write_srt(tmp_path / "hyp.srt", [(0.06, 1.0, "x")])
    assert main([str(ref), str(hyp), "--json", "--fps", "25"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["within_one_frame_share"] == 0.5  # 60 ms is more than one 40 ms frame
    assert out.startswith('{\n  "ref_cues": 1,\n')


def test_cli_accepts_a_fractional_fps(tmp_path, capsys):
    ref = write_srt(tmp_path / "ref.srt", [(0.0, 1.0, "x")])
    assert main([str(ref), str(ref), "--json", "--fps", "0.5"]) == 0
    assert json.loads(capsys.readouterr().out)["within_one_frame_share"] == 1.0


@pytest.mark.parametrize("fps", ["abc", "0"])
def test_cli_bad_fps_message(tmp_path, capsys, fps):
    ref = write_srt(tmp_path / "ref.srt", [(0.0, 1.0, "x")])
    with pytest.raises(SystemExit):
        main([str(ref), str(ref), "--fps", fps])
    assert "argument --fps: " in capsys.readouterr().err


def test_cli_help(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    raw = capsys.readouterr().out
    assert "\n\nScore a hypothesis subtitle file against a reference one (SRT, WebVTT or ASS" in raw
    text = " ".join(raw.split())
    assert text.startswith("usage: subextract score [-h] [--json] [--fps N] [--version] REF HYP")
    for fragment in ("SRT and WebVTT read strictly: a malformed block is an error",
                     "REF reference .srt, .vtt or .ass", "HYP hypothesis .srt, .vtt or .ass",
                     "--json print the scores as JSON",
                     "--fps N video frame rate; enables the within-one-frame share"):
        assert fragment in text


@pytest.mark.parametrize("content, message", [
    ("hello\n", "missing WEBVTT header"),
    ("WEBVTT\n00:01.000 --> 00:02.000\nhi\n", "no blank line between the WEBVTT header and the first cue"),
    ("WEBVTT\n\ncue-1\n", "invalid WebVTT cue at line 3"),
])
def test_vtt_errors_are_exact(tmp_path: Path, content, message):
    path = tmp_path / "bad.vtt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CueFileError) as caught:
        load_cues(path)
    assert str(caught.value) == f"{path}: {message}"


def test_vtt_note_blocks_with_text_are_skipped(tmp_path: Path):
    path = tmp_path / "notes.vtt"
    path.write_text("WEBVTT\n\nNOTE a comment with words\n\n00:01.000 --> 00:02.000\nhi\n", encoding="utf-8")
    assert load_cues(path) == [TimedText(1.0, 2.0, "hi")]


def test_twenty_thousand_cues_score_in_bounded_memory():
    """Only cues that overlap in time are candidates for a pair: two 20,000-cue files took 16 GB
    as a dense matrix of every pair (3 GB each for the tIoU matrix alone); measured in a child
    process, whose peak RSS is its own."""
    import subprocess
    import sys

    child = """
import random, resource
from subextract.scoring import TimedText, score
rng = random.Random(7)
reference, hypothesis, t = [], [], 0.0
for i in range(20000):
    start = t + rng.uniform(0.05, 1.0)
    end = start + rng.uniform(0.8, 4.0)
    t = end
    reference.append(TimedText(start, end, "ab"))
    hypothesis.append(TimedText(max(0.0, start + rng.uniform(-0.2, 0.2)), end + rng.uniform(-0.2, 0.2), "ab"))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = score(reference, hypothesis)
print(result.matched, before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
    run = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    matched, before_kib, peak_kib = map(int, run.stdout.split())
    assert matched == 20000
    assert peak_kib - before_kib < 200 * 1024, (before_kib, peak_kib)  # KiB: under 200 MiB for the scoring itself
