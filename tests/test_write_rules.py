"""Writers and the overwrite policy at their edges: times past an hour, exact refusal messages,
the JSON/JSONL records, writes that fail, special files. Real parsers read what is written."""

from __future__ import annotations

import io
import json
import os
import stat
import sys

import pysrt
import pytest
import webvtt

from subextract.errors import SubextractError
from subextract.schema import Cue
from subextract.stages.write import (FORMATS, check_writable, cue_record, jsonl_line, jsonl_record, main_language,
                                     render, render_jsonl, write_text)


def cue(start: float, end: float, *lines: str, languages: tuple[str, ...] | None = None, **extra) -> Cue:
    return Cue(start=start, end=end, lines=lines, languages=languages or ("en",) * len(lines),
               confidence=extra.pop("confidence", 0.9), **extra)


LONG = [cue(3_599.9995, 3_661.0626, "An hour, a minute, a second"), cue(36_000.0, 36_001.25, "Ten hours")]


def test_vtt_times_past_an_hour_and_a_minute():
    captions = list(webvtt.from_buffer(io.StringIO(render(LONG, "vtt"))))
    assert [(c.start, c.end) for c in captions] == [("01:00:00.000", "01:01:01.063"), ("10:00:00.000", "10:00:01.250")]


def test_srt_times_past_an_hour():
    items = pysrt.from_string(render(LONG, "srt"))
    assert [(str(i.start), str(i.end)) for i in items] == [("01:00:00,000", "01:01:01,063"),
                                                           ("10:00:00,000", "10:00:01,250")]


def test_cue_record_rounds_times_to_the_millisecond():
    record = cue_record(cue(1.23449, 2.0004, "x", confidence=0.5, band=1))
    assert record == {"start": 1.234, "end": 2.0, "text": "x", "lines": ["x"],
                      "languages": ["en"], "confidence": 0.5, "band": 1}


@pytest.mark.parametrize("lines, languages, main", [
    (("你好，世界", "Hello, world"), ("zh", "en"), "en"),  # the longer line's language
    (("今天天气很好，我们出去走走吧", "Nice day"), ("zh", "en"), "zh"),
    (("Bonjour", "tout le monde", "Hi"), ("fr", "fr", "en"), "fr"),  # lines of one language add up
    ((), (), "und"),
])
def test_main_language_is_the_language_of_most_characters(lines, languages, main):
    assert main_language(Cue(0.0, 1.0, lines, languages, 0.9)) == main


def test_jsonl_records_name_the_video_and_the_main_language():
    line = jsonl_line(jsonl_record(cue(1.0, 2.0, "今天", languages=("zh",)), "clip.mp4"))
    assert line.endswith("}\n") and line.count("\n") == 1 and "今天" in line
    assert json.loads(line) == {"video": "clip.mp4", "start": 1.0, "end": 2.0, "text": "今天", "lines": ["今天"],
                                "languages": ["zh"], "confidence": 0.9, "band": 0, "language": "zh"}


def test_render_jsonl_one_line_per_cue_with_the_video():
    text = render(LONG, "jsonl", {"video": "film.mkv"})
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["video"] for r in records] == ["film.mkv", "film.mkv"]
    assert [r["text"] for r in records] == ["An hour, a minute, a second", "Ten hours"]
    assert json.loads(render_jsonl(LONG[:1]).splitlines()[0])["video"] == ""


def test_render_json_keeps_the_metadata_and_the_cues():
    document = json.loads(render(LONG, "json", {"video": "film.mkv", "bands": [{"label": "bottom"}]}))
    assert document["video"] == "film.mkv" and document["bands"] == [{"label": "bottom"}]
    assert [c["text"] for c in document["cues"]] == ["An hour, a minute, a second", "Ten hours"]
    assert json.loads(render([], "json")) == {"cues": []}


@pytest.mark.filterwarnings("ignore:Overflow in SubStation timestamp")  # ASS stops at 9:59:59.99; LONG has 10 h
def test_every_format_renders():
    assert FORMATS == ("srt", "vtt", "ass", "txt", "json", "jsonl")
    for fmt in FORMATS:
        assert render(LONG, fmt)


def test_unknown_format_message_lists_the_formats():
    with pytest.raises(SubextractError) as refused:
        render(LONG, "sbv")
    assert str(refused.value) == "unknown format 'sbv' (choose from srt, vtt, ass, txt, json, jsonl)"


TWO_BANDS = {"width": 1280, "height": 720, "bands": [{"x": 0, "y": 560, "width": 1280, "height": 160},
                                                     {"x": 0, "y": 0, "width": 1280, "height": 160}]}
PLACED = [Cue(1.0, 2.5, ("bottom line", "second {x} line"), ("en", "en"), 0.9, band=0),
          Cue(1.2, 2.0, ("top sign",), ("en",), 0.9, band=1)]


def test_ass_keeps_position_and_text_as_libass_reads_it():
    import pysubs2

    subs = pysubs2.SSAFile.from_string(render(PLACED, "ass", TWO_BANDS))
    assert subs.info["PlayResY"] == "720"
    bottom, top = subs.events
    assert (bottom.start, bottom.end, top.start) == (1000, 2500, 1200)
    assert top.text == r"{\an8}top sign"
    assert bottom.text == r"bottom line\Nsecond \{x\} line"  # braces escaped: not an override tag
    assert bottom.plaintext.splitlines()[0] == "bottom line"


def test_vtt_places_top_band_cues_at_the_top():
    body = render(PLACED, "vtt", TWO_BANDS)
    captions = list(webvtt.from_buffer(io.StringIO(body)))
    assert [c.text for c in captions] == ["bottom line\nsecond {x} line", "top sign"]
    assert "00:00:01.200 --> 00:00:02.000 line:0\n" in body
    assert "00:00:01.000 --> 00:00:02.500\n" in body


def test_no_band_geometry_means_default_placement():
    assert "an8" not in render(PLACED, "ass") and "line:0" not in render(PLACED, "vtt")


# --------------------------------------------------------------------------------------------
# The overwrite policy: exact refusals
# --------------------------------------------------------------------------------------------

def test_refusals_are_exact(tmp_path):
    existing = tmp_path / "old.srt"
    existing.write_text("1\n")
    cases = [
        (str(tmp_path), True, f"{tmp_path}: is a directory; give a file name with -o"),
        (str(existing), False, f"{existing}: already exists (use --force to overwrite)"),
        (str(tmp_path / "no" / "x.srt"), True, f"{tmp_path / 'no' / 'x.srt'}: folder {tmp_path / 'no'} does not exist"),
    ]
    for path, force, message in cases:
        with pytest.raises(SubextractError) as refused:
            check_writable(path, force=force)
        assert str(refused.value) == message
    assert existing.read_text() == "1\n"


def test_stdout_and_a_relative_name_are_always_writable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    check_writable("-", force=False)
    (tmp_path / "-").write_text("a file named -")
    check_writable("-", force=False)  # "-" means stdout, never that file
    check_writable("movie.srt", force=False)


def test_a_relative_name_in_a_missing_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SubextractError, match=r"^sub/x.srt: folder sub does not exist$"):
        check_writable("sub/x.srt", force=False)


def test_a_device_is_written_to_even_without_force(tmp_path):
    check_writable("/dev/null", force=False)
    write_text("/dev/null", "text\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_writing_to_stdout_leaves_no_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_text("-", "hello\n")
    assert capsys.readouterr().out == "hello\n" and list(tmp_path.iterdir()) == []


def test_a_failed_write_says_why_in_one_line(tmp_path):
    target = tmp_path / "out.srt"
    target.mkdir()
    with pytest.raises(SubextractError) as failed:
        write_text(str(target), "text\n")
    assert str(failed.value) == f"{target}: cannot write (Is a directory)"


def test_the_replacement_is_whole_and_keeps_the_usual_mode(tmp_path):
    import subprocess

    path = tmp_path / "out.srt"
    path.write_text("old text that is longer than the new one\n")
    # The process's umask as it starts (the writer reads it once: setting it is process-wide).
    code = "import sys; from subextract.stages.write import write_text; write_text(sys.argv[1], 'new\\n')"
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, preexec_fn=lambda: os.umask(0o027))
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["out.srt"]


def test_text_is_utf8(tmp_path):
    path = tmp_path / "out.srt"
    write_text(str(path), "今天\n")
    assert path.read_bytes() == "今天\n".encode("utf-8")
    assert sys.getdefaultencoding() == "utf-8"


# --------------------------------------------------------------------------------------------
# Encoding, quoting, layout
# --------------------------------------------------------------------------------------------

def test_output_is_utf8_whatever_the_locale(tmp_path):
    """Under a plain ASCII locale (no UTF-8 mode, no locale coercion) files are still UTF-8."""
    import subprocess

    code = ("import sys\nfrom subextract.stages.align import Cue\nfrom subextract.stages.write import render, write_text\n"
            "cues = [Cue(1.0, 2.0, ('\\u4eca\\u5929\\u5929\\u6c14\\u5f88\\u597d',), ('zh',), 0.9)]\n"
            "for fmt in ('srt', 'vtt', 'ass', 'txt', 'json', 'jsonl'):\n    write_text(sys.argv[1] + '.' + fmt, render(cues, fmt))\n"
            "import subextract.stages.write as w; w.write_text('/dev/null', render(cues, 'srt'))\n")
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    check = subprocess.run([sys.executable, "-c", "import locale; print(locale.getpreferredencoding(False))"],
                           capture_output=True, text=True, env=env, check=True)
    assert "utf" not in check.stdout.lower(), check.stdout  # the locale really is not UTF-8
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], capture_output=True, text=True,
                            env=env, check=False)
    assert result.returncode == 0, result.stderr
    for fmt in FORMATS:
        assert "今天天气很好" in (tmp_path / f"out.{fmt}").read_bytes().decode("utf-8")


def test_write_through_a_special_file_is_utf8_whatever_the_locale(tmp_path):
    import subprocess

    fifo = tmp_path / "pipe.srt"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
        code = "import sys\nfrom subextract.stages.write import write_text\nwrite_text(sys.argv[1], '\\u4eca\\u5929\\n')\n"
        result = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, env=env,
                                check=False)
        assert result.returncode == 0, result.stderr
        assert os.read(reader, 100) == "今天\n".encode("utf-8")
    finally:
        os.close(reader)


def test_vtt_keeps_quotes_as_they_are():
    body = render([cue(1.0, 2.0, 'He said "hi" and it\'s fine')], "vtt")
    assert 'He said "hi" and it\'s fine' in body and "&quot;" not in body and "&#x27;" not in body


def test_json_is_indented_by_two_spaces():
    text = render([cue(1.0, 2.0, "x")], "json", {"video": "a.mp4"})
    assert text.startswith('{\n  "video": "a.mp4",\n  "cues": [\n    {\n      "start": 1.0,')
    assert text.endswith("}\n")


def test_main_language_adds_up_every_line_of_a_language():
    assert main_language(Cue(0.0, 1.0, ("ab", "cd", "xyz"), ("en", "en", "fr"), 0.9)) == "en"


# --------------------------------------------------------------------------------------------
# Atomic replacement: the temporary file, and a write that fails half-way
# --------------------------------------------------------------------------------------------

_OPENED: list[str] | None = None


def _record_opens(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str):
        _OPENED.append(args[0])


sys.addaudithook(_record_opens)  # audit hooks stay for the process; this one records only inside `opened_during`


def opened_during(action) -> list[str]:
    global _OPENED
    _OPENED = []
    try:
        action()
        return _OPENED
    finally:
        _OPENED = None


def test_the_text_goes_to_a_hidden_part_file_beside_the_target_first(tmp_path):
    target = tmp_path / "movie.srt"
    opened = opened_during(lambda: write_text(str(target), "text\n"))
    temps = [path for path in opened if os.path.dirname(path) == str(tmp_path) and path != str(target)]
    assert len(temps) == 1, opened
    name = os.path.basename(temps[0])
    assert name.startswith(".movie.srt.") and name.endswith(".part")
    assert not os.path.exists(temps[0]) and target.read_text() == "text\n"


def test_a_write_that_fails_half_way_keeps_the_old_file_and_leaves_no_part_file(tmp_path):
    """A full disk, as the kernel reports it (RLIMIT_FSIZE: EFBIG), after the temporary file exists."""
    import resource
    import signal

    target = tmp_path / "movie.srt"
    target.write_text("the user's own edits\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, hard))
    try:
        with pytest.raises(SubextractError) as failed:
            write_text(str(target), "x" * 100_000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert str(failed.value) == f"{target}: cannot write (File too large)"
    assert target.read_text() == "the user's own edits\n"
    assert [p.name for p in tmp_path.iterdir()] == ["movie.srt"]


def test_a_target_in_a_missing_folder_fails_in_one_line(tmp_path):
    target = tmp_path / "gone" / "movie.srt"
    with pytest.raises(SubextractError) as failed:
        write_text(str(target), "text\n")
    assert str(failed.value) == f"{target}: cannot write (No such file or directory)"
