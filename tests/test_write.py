"""Writers: SRT/VTT/JSON read back by real parsers; output checks; atomic replacement."""

from __future__ import annotations

import io
import json
import os
import stat

import pysrt
import pytest
import webvtt

from subextract.errors import SubextractError
from subextract.schema import Cue
from subextract.stages.write import check_writable, render, render_json, render_srt, render_vtt, write_text

CUES = [
    Cue(start=1.0, end=2.5, lines=("Hello world",), languages=("en",), confidence=0.9512),
    Cue(start=61.042, end=63.96, lines=("First line,", "second line."), languages=("en", "en"), confidence=0.8),
    Cue(start=3725.5, end=3727.001, lines=("今天天气很好", "The weather is nice today"), languages=("zh", "en"),
        confidence=0.7321, band=1),
]


def test_srt_reads_back_with_pysrt():
    items = pysrt.from_string(render_srt(CUES))
    assert len(items) == 3
    assert [i.index for i in items] == [1, 2, 3]
    assert [(i.start.ordinal, i.end.ordinal) for i in items] == [(1000, 2500), (61042, 63960), (3725500, 3727001)]
    assert [i.text for i in items] == ["Hello world", "First line,\nsecond line.",
                                       "今天天气很好\nThe weather is nice today"]


def test_srt_text_layout():
    text = render_srt(CUES[:2])
    assert text.startswith("1\n00:00:01,000 --> 00:00:02,500\nHello world\n\n2\n00:01:01,042 --> 00:01:03,960\n")
    assert "First line,\nsecond line.\n" in text


def test_srt_times_round_to_the_millisecond():
    cue = Cue(start=0.0396, end=1.23449, lines=("x",), languages=("en",), confidence=1.0)
    (item,) = pysrt.from_string(render_srt([cue]))
    assert (item.start.ordinal, item.end.ordinal) == (40, 1234)


def test_empty_srt():
    assert pysrt.from_string(render_srt([])) == []


def test_vtt_reads_back_with_webvtt_from_buffer():
    document = webvtt.from_buffer(io.StringIO(render_vtt(CUES)))
    captions = list(document)
    assert [(c.start, c.end) for c in captions] == [
        ("00:00:01.000", "00:00:02.500"), ("00:01:01.042", "00:01:03.960"), ("01:02:05.500", "01:02:07.001")]
    assert [c.text for c in captions] == ["Hello world", "First line,\nsecond line.",
                                          "今天天气很好\nThe weather is nice today"]


def test_vtt_reads_back_from_a_file(tmp_path):
    path = tmp_path / "out.vtt"
    write_text(str(path), render(CUES, "vtt"))
    captions = list(webvtt.read(str(path)))
    assert len(captions) == 3
    assert captions[2].start_in_seconds == 3725 and captions[2].text.startswith("今天")
    assert path.read_text(encoding="utf-8").startswith("WEBVTT")


def test_vtt_escapes_markup_characters():
    cue = Cue(start=1.0, end=2.0, lines=("I <3 you", "Tom & Jerry"), languages=("en", "en"), confidence=0.9)
    body = render_vtt([cue]).split("-->", 1)[1]
    assert "&lt;3" in body and "&amp;" in body and "<3" not in body


def test_json_has_cues_with_confidence():
    document = json.loads(render_json(CUES, {"video": "clip.mp4", "language": "all"}))
    assert document["video"] == "clip.mp4" and document["language"] == "all"
    assert [c["start"] for c in document["cues"]] == [1.0, 61.042, 3725.5]
    assert [c["end"] for c in document["cues"]] == [2.5, 63.96, 3727.001]
    assert [c["confidence"] for c in document["cues"]] == [0.9512, 0.8, 0.7321]
    assert document["cues"][2]["lines"] == ["今天天气很好", "The weather is nice today"]
    assert document["cues"][2]["languages"] == ["zh", "en"]
    assert document["cues"][2]["band"] == 1
    assert document["cues"][1]["text"] == "First line,\nsecond line."
    assert "今天" in render(CUES, "json")  # UTF-8 text, not \\u escapes


def test_unknown_format():
    with pytest.raises(SubextractError, match="unknown format 'sbv'"):
        render(CUES, "sbv")


# --------------------------------------------------------------------------------------------
# check_writable
# --------------------------------------------------------------------------------------------

def test_check_writable_new_file(tmp_path):
    check_writable(str(tmp_path / "new.srt"), force=False)
    check_writable("-", force=False)


def test_check_writable_existing_needs_force(tmp_path):
    path = tmp_path / "old.srt"
    path.write_text("1\n")
    with pytest.raises(SubextractError, match=r"already exists \(use --force to overwrite\)$"):
        check_writable(str(path), force=False)
    check_writable(str(path), force=True)


def test_check_writable_missing_folder(tmp_path):
    with pytest.raises(SubextractError, match=r"folder .*missing.* does not exist$"):
        check_writable(str(tmp_path / "missing" / "x.srt"), force=False)


def test_check_writable_directory(tmp_path):
    with pytest.raises(SubextractError, match="is a directory"):
        check_writable(str(tmp_path), force=True)


def test_check_writable_relative_name_in_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    check_writable("movie.srt", force=False)


# --------------------------------------------------------------------------------------------
# write_text
# --------------------------------------------------------------------------------------------

def test_write_text_creates_and_replaces_without_leftovers(tmp_path):
    path = tmp_path / "out.srt"
    write_text(str(path), "first\n")
    write_text(str(path), render_srt(CUES))
    assert len(pysrt.open(str(path), encoding="utf-8")) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.srt"]


def test_write_text_stdout(capsys):
    write_text("-", "1\n00:00:01,000 --> 00:00:02,000\nHi\n")
    assert capsys.readouterr().out == "1\n00:00:01,000 --> 00:00:02,000\nHi\n"


def test_failed_write_leaves_no_temp_file(tmp_path):
    target = tmp_path / "out.srt"
    target.mkdir()  # appeared after check_writable: os.replace onto a directory fails
    with pytest.raises(SubextractError, match="cannot write"):
        write_text(str(target), "text\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.srt"]


def test_written_file_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "out.srt"
        write_text(str(path), "text\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_write_into_a_fifo_writes_through(tmp_path):
    fifo = tmp_path / "pipe.srt"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is waiting, as with `-o >(gzip)`
    try:
        check_writable(str(fifo), force=True)
        write_text(str(fifo), "1\n00:00:01,000 --> 00:00:02,000\nHi\n")
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a regular file"
        assert os.read(reader, 4096) == b"1\n00:00:01,000 --> 00:00:02,000\nHi\n"
    finally:
        os.close(reader)
