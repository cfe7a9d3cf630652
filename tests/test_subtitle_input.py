"""SRT and WebVTT files read by ``score`` and ``translate`` are checked strictly: a malformed or
impossible timing is an error naming its line, never read as some other time and written back."""

from __future__ import annotations

import pytest

from subextract.scoring import CueFileError, load_cues
from test_cli import run_cli

GOOD_SRT = "1\n00:00:01,000 --> 00:00:02,500\nHello\n\n2\n00:00:03,000 --> 00:00:04,000\nWorld\n"


@pytest.mark.parametrize("text, line, fragment", [
    ("1\n00:00:0X,500 --> 00:00:02,000\nhi\n", 2, "invalid timing"),
    ("1\n00:00:01,5000 --> 00:00:02,000\nhi\n", 2, "invalid timing"),
    ("1\n00:00:01 --> 00:00:02,000\nhi\n", 2, "invalid timing"),
    (GOOD_SRT + "\n3\n00:00:05,000 --> 00:00:02,000\nback\n", 10, "ends before it starts"),
    ("1\n00:00:61,000 --> 00:01:05,000\nhi\n", 2, "below 60"),
    ("1\n00:75:00,000 --> 00:76:00,000\nhi\n", 2, "below 60"),
])
def test_bad_srt_timings_name_their_line(tmp_path, text, line, fragment):
    path = tmp_path / "bad.srt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CueFileError) as caught:
        load_cues(path)
    assert str(caught.value).startswith(f"{path}: line {line}: ") and fragment in str(caught.value)


@pytest.mark.parametrize("text, line, fragment", [
    ("WEBVTT\n\n00:01.000 --> 00:00.500\nback\n", 3, "ends before it starts"),
    ("WEBVTT\n\nid\n00:61.000 --> 01:02.000\nhi\n", 4, "below 60"),
])
def test_bad_vtt_timings_name_their_line(tmp_path, text, line, fragment):
    path = tmp_path / "bad.vtt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CueFileError, match=rf"line {line}: .*{fragment}"):
        load_cues(path)


def test_good_files_still_read(tmp_path):
    srt, vtt = tmp_path / "a.srt", tmp_path / "a.vtt"
    srt.write_text("\ufeff" + GOOD_SRT.replace("\n", "\r\n"), encoding="utf-8")
    vtt.write_text("WEBVTT\n\n1\n00:01.000 --> 00:02.500 align:start\nHello\n\n01:00:03.000 --> 01:00:04.000\nW\n")
    assert [(c.start, c.end, c.text) for c in load_cues(srt)] == [(1.0, 2.5, "Hello"), (3.0, 4.0, "World")]
    assert [(c.start, c.end) for c in load_cues(vtt)] == [(1.0, 2.5), (3603.0, 3604.0)]


@pytest.mark.parametrize("command", [["translate", "{bad}", "--to", "en"], ["score", "{good}", "{bad}"]])
def test_the_commands_refuse_it_in_one_line(tmp_path, command):
    bad, good = tmp_path / "bad.zh.srt", tmp_path / "good.srt"
    bad.write_text("1\n00:00:0X,500 --> 00:00:02,000\n你好\n", encoding="utf-8")
    good.write_text(GOOD_SRT, encoding="utf-8")
    code, out, err = run_cli(*[part.format(bad=bad, good=good) for part in command])
    assert code == 2 and out == "", err
    assert len(err.splitlines()) == 1 and "line 2: invalid timing" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.zh.srt", "good.srt"]  # nothing written


def test_translate_without_a_translator_names_its_own_command(tmp_path):
    subtitles = tmp_path / "a.zh.srt"
    subtitles.write_text(GOOD_SRT.replace("Hello", "你好").replace("World", "世界"), encoding="utf-8")
    code, out, err = run_cli("translate", subtitles, "--to", "en")
    assert code == 2 and out == ""
    assert err.startswith("subextract: error: subextract translate needs a translator: ") and "--translate " not in err
