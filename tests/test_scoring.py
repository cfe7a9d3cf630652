"""Tests for the scorer (design.md §3): matching, text and timing metrics, loaders, CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pysrt
import pytest

from subextract.scoring import (
    CueFileError,
    Score,
    TimedText,
    load_cues,
    normalize_text,
    score,
)
from subextract.cli import main as cli_main


def main(argv: list[str]) -> int:
    return cli_main(["score", *argv])

Cue = tuple[float, float, str]  # start s, end s, text

# Normalized lengths: "helloworld" 10, "goodmorning" 11, "seeyou" 6.
REFERENCE: list[Cue] = [
    (1.0, 3.0, "Hello, world!"),
    (4.0, 6.0, "Good morning."),
    (7.0, 9.0, "See you!"),
]
REF_CHARS = 27


def write_srt(path: Path, cues: list[Cue]) -> Path:
    items = [
        pysrt.SubRipItem(index, start=round(start * 1000), end=round(end * 1000), text=text)
        for index, (start, end, text) in enumerate(cues, start=1)
    ]
    pysrt.SubRipFile(items).save(str(path), encoding="utf-8")
    return path


def score_srts(
    tmp_path: Path, reference: list[Cue], hypothesis: list[Cue], fps: float | None = None
) -> Score:
    """Score through real files so every test also exercises the SRT round trip."""
    ref = load_cues(write_srt(tmp_path / "ref.srt", reference))
    hyp = load_cues(write_srt(tmp_path / "hyp.srt", hypothesis))
    return score(ref, hyp, frame_duration=1 / fps if fps else None)


def cues(*spans: tuple[float, float]) -> list[TimedText]:
    return [TimedText(start, end, "x") for start, end in spans]


# ---------------------------------------------------------------------------
# Whole-file metrics


def test_identical_files_are_perfect(tmp_path: Path) -> None:
    result = score_srts(tmp_path, REFERENCE, REFERENCE, fps=25)
    assert result == Score(
        ref_cues=3,
        hyp_cues=3,
        matched=3,
        precision=1.0,
        recall=1.0,
        f1=1.0,
        e2e_precision=1.0,
        e2e_recall=1.0,
        e2e_f1=1.0,
        exact_share=1.0,
        cer=0.0,
        sequence_cer=0.0,
        start_error_ms_median=0.0,
        start_error_ms_p90=0.0,
        end_error_ms_median=0.0,
        end_error_ms_p90=0.0,
        within_one_frame_share=1.0,
    )


def test_shift_of_one_frame_is_reported_in_ms_and_within_one_frame(tmp_path: Path) -> None:
    shifted = [(start + 0.04, end + 0.04, text) for start, end, text in REFERENCE]
    at_25 = score_srts(tmp_path, REFERENCE, shifted, fps=25)
    assert at_25.matched == 3
    assert at_25.start_error_ms_median == 40.0
    assert at_25.start_error_ms_p90 == 40.0
    assert at_25.end_error_ms_median == 40.0
    assert at_25.end_error_ms_p90 == 40.0
    assert at_25.within_one_frame_share == 1.0
    # At 30 fps one frame is 33.3 ms (+1 ms tolerance): a 40 ms shift is outside.
    assert score_srts(tmp_path, REFERENCE, shifted, fps=30).within_one_frame_share == 0.0
    assert score_srts(tmp_path, REFERENCE, shifted).within_one_frame_share is None


def test_within_one_frame_counts_starts_and_ends_separately() -> None:
    reference = cues((0.0, 2.0), (3.0, 5.0))
    # Boundary errors: 41 ms (frame + 1 ms tolerance: in), 0, 42 ms (out), 0.
    hypothesis = cues((0.041, 2.0), (3.042, 5.0))
    assert score(reference, hypothesis, frame_duration=0.04).within_one_frame_share == 0.75


def test_timing_percentiles_interpolate_linearly() -> None:
    reference = cues((0.0, 2.0), (3.0, 5.0), (6.0, 8.0))
    hypothesis = cues((0.0, 2.0), (3.01, 5.0), (6.1, 8.0))  # start errors 0, 10, 100 ms
    result = score(reference, hypothesis)
    assert result.start_error_ms_median == 10.0
    assert result.start_error_ms_p90 == pytest.approx(82.0)  # 10 + 0.8 * (100 - 10)
    assert result.end_error_ms_median == 0.0
    assert result.end_error_ms_p90 == 0.0


def test_missed_cue_lowers_recall_and_adds_its_chars_to_cer(tmp_path: Path) -> None:
    result = score_srts(tmp_path, REFERENCE, [REFERENCE[0], REFERENCE[2]])
    assert (result.matched, result.precision, result.recall) == (2, 1.0, pytest.approx(2 / 3))
    assert result.f1 == pytest.approx(0.8)
    assert result.cer == pytest.approx(11 / REF_CHARS)  # "goodmorning"
    assert result.sequence_cer == pytest.approx(11 / REF_CHARS)
    assert result.exact_share == pytest.approx(2 / 3)


def test_extra_cue_lowers_precision_and_adds_its_chars_to_cer(tmp_path: Path) -> None:
    hypothesis = [*REFERENCE, (10.0, 12.0, "Logo text")]  # "logotext": 8 chars
    result = score_srts(tmp_path, REFERENCE, hypothesis)
    assert (result.matched, result.precision, result.recall) == (3, 0.75, 1.0)
    assert result.e2e_precision == 0.75
    assert result.cer == pytest.approx(8 / REF_CHARS)
    assert result.exact_share == 1.0


def test_single_substitution_gives_one_edit_over_reference_chars(tmp_path: Path) -> None:
    hypothesis = [(1.0, 3.0, "Hello, wurld!"), *REFERENCE[1:]]
    result = score_srts(tmp_path, REFERENCE, hypothesis)
    assert result.cer == pytest.approx(1 / REF_CHARS)
    assert result.sequence_cer == pytest.approx(1 / REF_CHARS)
    assert result.exact_share == pytest.approx(2 / 3)
    assert result.e2e_f1 == 1.0  # 1 edit in 10 chars: CER 0.1 is still a hit


def test_pair_above_cer_threshold_is_matched_but_not_an_e2e_hit(tmp_path: Path) -> None:
    hypothesis = [(1.0, 3.0, "Hallo, wurld!"), *REFERENCE[1:]]  # 2 edits in 10 chars
    result = score_srts(tmp_path, REFERENCE, hypothesis)
    assert (result.matched, result.f1) == (3, 1.0)
    assert (result.e2e_precision, result.e2e_recall) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert result.cer == pytest.approx(2 / REF_CHARS)


def test_sequence_cer_ignores_timing_and_file_order() -> None:
    reference = [TimedText(0.0, 2.0, "ab"), TimedText(3.0, 5.0, "cd")]
    # Listed out of order and far off in time: nothing matches, the text is all there.
    hypothesis = [TimedText(30.0, 32.0, "cd"), TimedText(20.0, 22.0, "ab")]
    result = score(reference, hypothesis)
    assert result.matched == 0
    assert result.cer == 2.0  # 4 missed + 4 extra over 4
    assert result.sequence_cer == 0.0


def test_multi_line_cue_equals_its_lines_joined(tmp_path: Path) -> None:
    result = score_srts(
        tmp_path, [(0.0, 2.0, "First line,\nsecond line")], [(0.0, 2.0, "first line second line")]
    )
    assert (result.exact_share, result.cer) == (1.0, 0.0)


# ---------------------------------------------------------------------------
# Matching


def test_pair_below_half_tiou_is_not_matched() -> None:
    result = score(cues((0.0, 2.0)), cues((1.0, 3.0)))  # tIoU 1/3
    assert (result.matched, result.precision, result.recall) == (0, 0.0, 0.0)
    assert result.start_error_ms_median is None


def test_pair_at_exactly_half_tiou_is_matched() -> None:
    assert score(cues((0.0, 2.0)), cues((0.0, 1.0))).matched == 1


def test_matching_is_one_to_one_and_keeps_the_better_pair() -> None:
    reference = [TimedText(0.0, 2.0, "a")]
    hypothesis = [TimedText(0.2, 2.0, "b"), TimedText(0.0, 2.0, "a")]  # tIoU 0.9 and 1.0
    result = score(reference, hypothesis)
    assert (result.matched, result.precision, result.recall) == (1, 0.5, 1.0)
    assert (result.exact_share, result.start_error_ms_median) == (1.0, 0.0)
    assert result.cer == 1.0  # the unmatched "b" is an extra character


def test_matching_is_globally_optimal_not_greedy() -> None:
    # Greedy takes ref1-hyp1 (tIoU 0.9) and leaves ref2-hyp2 at 0.3; the optimum pairs
    # ref1-hyp2 (0.5) and ref2-hyp1 (0.89).
    reference = cues((0.0, 10.0), (2.0, 10.0))
    hypothesis = cues((1.0, 10.0), (0.0, 5.0))
    assert score(reference, hypothesis).matched == 2


def test_pairs_below_threshold_do_not_outweigh_an_eligible_pair() -> None:
    # tIoU: ref1-hyp1 0.43, ref1-hyp2 0.67, ref2-hyp1 0.11, ref2-hyp2 0.43. Raw total IoU
    # prefers the two 0.43 pairs, which then both fail the threshold.
    reference = cues((3.0, 9.0), (1.0, 7.0))
    hypothesis = cues((6.0, 10.0), (4.0, 8.0))
    result = score(reference, hypothesis)
    assert result.matched == 1
    assert result.start_error_ms_median == 1000.0  # ref1 (3 s) with hyp2 (4 s)


def test_zero_length_cues_are_never_matched() -> None:
    assert score(cues((1.0, 1.0)), cues((1.0, 1.0))).matched == 0


# ---------------------------------------------------------------------------
# Edge cases


def test_both_empty_is_perfect() -> None:
    result = score([], [], frame_duration=0.04)
    assert (result.f1, result.e2e_f1, result.exact_share) == (1.0, 1.0, 1.0)
    assert (result.cer, result.sequence_cer) == (0.0, 0.0)
    assert result.start_error_ms_median is None
    assert result.within_one_frame_share is None


def test_empty_reference_with_hypothesis() -> None:
    result = score([], [TimedText(0.0, 1.0, "abc")])
    assert (result.precision, result.recall, result.f1) == (0.0, 1.0, 0.0)
    assert result.cer == 3.0  # 3 extra chars over max(1, 0)


def test_empty_hypothesis() -> None:
    result = score([TimedText(0.0, 1.0, "abc")], [])
    assert (result.precision, result.recall, result.f1) == (1.0, 0.0, 0.0)
    assert (result.cer, result.sequence_cer) == (1.0, 1.0)


def test_non_positive_frame_duration_is_rejected() -> None:
    with pytest.raises(ValueError, match="frame_duration"):
        score([], [], frame_duration=0)


# ---------------------------------------------------------------------------
# Normalization


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, World!", "helloworld"),
        ("ＡＢＣ　１２３！", "abc123"),  # full-width letters, digits, space, punctuation
        (" a\tb\nc  ", "abc"),
        ("你好，世界！", "你好世界"),
        ("「こんにちは」…", "こんにちは"),
        ("It's $5 — ok? ♪", "its5ok"),  # symbols (S*) go with punctuation (P*)
        ("zero\u200bwidth\ufeff", "zerowidth"),  # invisible format characters
        ("Café", "café"),  # letters with marks are content
        ("ﬁ", "fi"),  # NFKC compatibility ligature
    ],
)
def test_normalize_text(text: str, expected: str) -> None:
    assert normalize_text(text) == expected


def test_normalization_applies_before_comparing(tmp_path: Path) -> None:
    result = score_srts(tmp_path, [(0.0, 2.0, "你好，世界！")], [(0.0, 2.0, "你好 世界")])
    assert (result.exact_share, result.cer) == (1.0, 0.0)


# ---------------------------------------------------------------------------
# Loading


def test_srt_loading_strips_tags(tmp_path: Path) -> None:
    text = "{\\an8}<i>Top</i>\n<font color=red>line</font>"
    path = write_srt(tmp_path / "a.srt", [(1.5, 2.25, text)])
    assert load_cues(path) == [TimedText(1.5, 2.25, "Top\nline")]


VTT = """\ufeffWEBVTT - a title
Kind: captions

NOTE a comment
spanning lines

STYLE
::cue { color: yellow }

intro
00:01.000 --> 00:02.500 align:start line:0
<v Bob>Hello</v> &amp; <i>bye</i>

01:00:03.000 --> 01:00:04.000
<c.yellow>two</c>
lines
"""


def test_vtt_loading(tmp_path: Path) -> None:
    path = tmp_path / "a.vtt"
    path.write_text(VTT, encoding="utf-8")
    assert load_cues(path) == [
        TimedText(1.0, 2.5, "Hello & bye"),
        TimedText(3603.0, 3604.0, "two\nlines"),
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("00:01.000 --> 00:02.000\nhi\n", "missing WEBVTT header"),
        ("WEBVTT\n00:01.000 --> 00:02.000\nhi\n", "no blank line between"),
        ("WEBVTT\n\nid\n00:01,000 --> 00:02,000\nhi\n", "invalid WebVTT cue at line 3"),
    ],
)
def test_invalid_vtt_raises(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.vtt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CueFileError, match=message):
        load_cues(path)


def test_invalid_srt_raises(tmp_path: Path) -> None:
    path = tmp_path / "bad.srt"
    path.write_text("1\n00:00:01,000 --> 00:00:02,000\nok\n\nnot a cue\nat all\n", encoding="utf-8")
    with pytest.raises(CueFileError, match="invalid SRT block ending at line 6"):
        load_cues(path)


def test_non_utf8_file_raises(tmp_path: Path) -> None:
    path = tmp_path / "bad.srt"
    path.write_bytes(b"1\n00:00:01,000 --> 00:00:02,000\n\xff\xfe\xfa\n")
    with pytest.raises(CueFileError, match="not valid utf-8 text"):
        load_cues(path)


# ---------------------------------------------------------------------------
# CLI


def test_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = write_srt(tmp_path / "ref.srt", REFERENCE)
    hyp = write_srt(tmp_path / "hyp.srt", REFERENCE[:2])
    assert main([str(ref), str(hyp), "--json", "--fps", "25"]) == 0
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert list(data) == [field.name for field in dataclasses.fields(Score)]
    assert (data["ref_cues"], data["hyp_cues"], data["matched"]) == (3, 2, 2)
    assert data["within_one_frame_share"] == 1.0
    assert out.err == ""


def test_cli_human_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = write_srt(tmp_path / "ref.srt", REFERENCE)
    assert main([str(ref), str(ref)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "cues     ref 3  hyp 3  matched 3"
    assert lines[1] == "cue      P 1.000  R 1.000  F1 1.000"
    assert lines[-1] == "frame    within one frame n/a"


def test_cli_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = write_srt(tmp_path / "ref.srt", REFERENCE)
    missing = tmp_path / "missing.srt"
    assert main([str(ref), str(missing)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == f"subextract score: error: {missing}: No such file or directory\n"


def test_cli_unparseable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.srt"
    bad.write_text("WEBVTT\n\n00:01.000 --> 00:02.000\nhi\n", encoding="utf-8")
    assert main([str(bad), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("subextract score: error: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("fps", ["0", "-25", "inf", "nan", "abc"])
def test_cli_rejects_bad_fps(tmp_path: Path, fps: str) -> None:
    ref = write_srt(tmp_path / "ref.srt", REFERENCE)
    with pytest.raises(SystemExit) as exit_info:
        main([str(ref), str(ref), "--fps", fps])
    assert exit_info.value.code == 2
