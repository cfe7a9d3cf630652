"""``translate`` and ``score`` read what this tool writes (SRT, WebVTT, ASS) in the encodings
subtitle files come in (GBK, Big5, UTF-16 with a BOM), say which encoding they used, and keep
SRT's strict reading; ``--format txt`` and ``ExtractionResult.to_string``."""

from __future__ import annotations

import json

import pysrt
import pytest

from subextract.schema import Cue
from subextract.stages.write import render
from test_cli import run_cli
from test_serve_jobs import translator_url  # noqa: F401  (an OpenAI-compatible endpoint on 127.0.0.1)

SIMPLIFIED = [(1.0, 2.5, ("今天天气很好",)), (3.0, 4.0, ("我们明天再见", "不见不散"))]
TRADITIONAL = [(1.0, 2.5, ("今天天氣很好",)), (3.0, 4.0, ("我們明天再見", "不見不散"))]


def cues(table) -> list[Cue]:
    return [Cue(start, end, lines, ("zh",) * len(lines), 1.0) for start, end, lines in table]


def write(path, text: str, encoding: str = "utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


@pytest.mark.parametrize("fmt", ["ass", "vtt", "srt"])
def test_score_reads_what_we_write(tmp_path, fmt):
    reference = write(tmp_path / "ref.srt", render(cues(SIMPLIFIED), "srt"))
    hypothesis = write(tmp_path / f"hyp.{fmt}", render(cues(SIMPLIFIED), fmt, {"width": 1280, "height": 720}))
    code, out, err = run_cli("score", reference, hypothesis, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["hyp_cues"] == 2 and result["e2e_f1"] == 1.0 and result["exact_share"] == 1.0
    assert result["start_error_ms_median"] == 0.0


@pytest.mark.parametrize("encoding, table, said", [("gbk", SIMPLIFIED, "gb18030"), ("big5", TRADITIONAL, "big5"),
                                                   ("utf-16", SIMPLIFIED, "utf-16")])
def test_score_reads_legacy_encodings_and_says_which(tmp_path, encoding, table, said):
    reference = write(tmp_path / "ref.srt", render(cues(table), "srt"))
    hypothesis = write(tmp_path / "hyp.srt", render(cues(table), "srt"), encoding)
    code, out, err = run_cli("score", reference, hypothesis, "--json")
    assert code == 0, err
    assert json.loads(out)["exact_share"] == 1.0
    assert err == f"subextract score: {hypothesis} read as {said}\n"


def test_score_keeps_its_strict_reading_in_any_encoding(tmp_path):
    reference = write(tmp_path / "ref.srt", render(cues(SIMPLIFIED), "srt"))
    broken = write(tmp_path / "hyp.srt", "1\n00:00:0X,500 --> 00:00:02,000\n今天天气很好\n", "gbk")
    code, out, err = run_cli("score", reference, broken)
    assert code == 2 and out == "" and "line 2: invalid timing" in err


def test_a_binary_file_is_refused_in_one_line(tmp_path):
    reference = write(tmp_path / "ref.srt", render(cues(SIMPLIFIED), "srt"))
    binary = tmp_path / "hyp.srt"
    binary.write_bytes(bytes(range(256)) * 4)
    code, out, err = run_cli("score", reference, binary)
    assert code == 2 and len(err.splitlines()) == 1 and "not a subtitle file" in err


@pytest.mark.parametrize("name, encoding, said", [("subs.ass", "utf-8", None), ("subs.zh.srt", "gbk", "gb18030"),
                                                  ("subs.zh.srt", "utf-16", "utf-16")])
def test_translate_reads_ass_and_legacy_encodings(tmp_path, translator_url, name, encoding, said):  # noqa: F811
    fmt = "ass" if name.endswith(".ass") else "srt"
    source = write(tmp_path / name, render(cues(SIMPLIFIED), fmt, {"width": 1280, "height": 720}), encoding)
    out = tmp_path / f"out.{fmt}"
    code, _, err = run_cli("translate", source, "--to", "en", "--from", "zh", "--translator-server", translator_url,
                           "-o", out, "-q")
    assert code == 0, err
    assert err == (f"subextract: {source} read as {said}\n" if said else "")
    code, scored, err = run_cli("score", write(tmp_path / "times.srt", render(cues(SIMPLIFIED), "srt")), out, "--json")
    assert code == 0 and json.loads(scored)["f1"] == 1.0  # the same cues at the same times, now in English
    assert "Subtitle line number 1 in English" in out.read_text(encoding="utf-8")


def test_txt_is_one_cue_per_paragraph(zh_clip):
    code, out, err = run_cli(zh_clip, "--format", "txt", "-o", "-", "--region", "bottom", "-q")
    assert code == 0, err
    assert out == "今天天气很好\n\n我们明天再见\n"


def test_to_string_beside_save(tmp_path):
    from subextract.pipeline.run import ExtractionResult, Stats
    from subextract.schema import VideoInfo

    info = VideoInfo(path="v.mp4", duration=5.0, fps=25.0, width=1280, height=720, rotation=0, codec="h264")
    result = ExtractionResult(info=info, bands=[], cues=cues(SIMPLIFIED), stats=Stats())
    assert result.to_string("txt") == "今天天气很好\n\n我们明天再见\n不见不散\n"
    srt = pysrt.from_string(result.to_string())
    assert [item.text for item in srt] == ["今天天气很好", "我们明天再见\n不见不散"]
    result.save(tmp_path / "a.txt")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == result.to_string("txt")


def test_writing_never_sets_the_process_umask(tmp_path, monkeypatch):
    """os.umask is process-wide: set while a batch's or the service's other threads create files,
    theirs would get its value. The writer reads it once, at import."""
    import os
    import stat

    from subextract.stages.write import write_text

    def refuse(_mask):
        raise AssertionError("os.umask called while writing")

    monkeypatch.setattr(os, "umask", refuse)
    write_text(str(tmp_path / "a.srt"), "1\n00:00:01,000 --> 00:00:02,000\nhi\n")
    from subextract.stages import write

    assert stat.S_IMODE((tmp_path / "a.srt").stat().st_mode) == 0o666 & ~write._UMASK
