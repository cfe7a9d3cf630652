"""The writers and the overwrite policy at the values where they turn: the ASS script's header and
style for the picture's size, the band at the middle of the picture, damaged spans that touch a
cue, SRT text in braces, plain text's blank lines, the 4 KiB sniff of an existing file, an output
that is its input, a stdout that fails, the process's umask. Real parsers read what is written."""

from __future__ import annotations

import errno
import io
import json
import os

import pysrt
import pysubs2
import pytest

from subextract.errors import SubextractError
from subextract.schema import Cue
from subextract.stages import write
from subextract.stages.write import (_is_subtitle_text, _process_umask, check_replaceable, check_writable, render,
                                     silence_stdout, top_bands, write_text)


def cue(start: float, end: float, *lines: str, band: int = 0) -> Cue:
    return Cue(start=start, end=end, lines=lines, languages=("en",) * len(lines), confidence=0.9, band=band)


# --------------------------------------------------------------------------------------------
# ASS: the script's size and its style
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("metadata, width, height", [({"width": 1280, "height": 720}, 1280, 720),
                                                     ({"width": 1280}, 1280, 1080), ({"height": 720}, 1920, 720),
                                                     (None, 1920, 1080), ({"width": 0, "height": 0}, 1920, 1080)])
def test_ass_script_is_sized_to_the_picture(metadata, width, height):
    script = pysubs2.SSAFile.from_string(render([cue(0.0, 1.0, "Hello")], "ass", metadata))
    assert script.info == {"WrapStyle": "0", "ScaledBorderAndShadow": "yes", "Collisions": "Normal",
                           "PlayResX": str(width), "PlayResY": str(height), "ScriptType": "v4.00+"}
    style = script.styles["Default"]
    # 5.5 % of the height, an outline of a pixel per 540 rows (at least one), no shadow, 4 % margin
    assert (style.fontsize, style.outline, style.shadow, style.marginv) == \
        (round(height * 0.055), max(1.0, height / 540), 0.0, round(height * 0.04))


def test_ass_style_at_small_and_odd_heights():
    small = pysubs2.SSAFile.from_string(render([cue(0.0, 1.0, "x")], "ass", {"width": 320, "height": 270}))
    assert small.styles["Default"].outline == 1.0 and small.styles["Default"].fontsize == 15
    odd = pysubs2.SSAFile.from_string(render([cue(0.0, 1.0, "x")], "ass", {"width": 1000, "height": 1001}))
    style = odd.styles["Default"]
    assert (style.fontsize, style.marginv) == (55, 40) and style.outline == pytest.approx(1001 / 540)


# --------------------------------------------------------------------------------------------
# Top bands
# --------------------------------------------------------------------------------------------

def test_a_band_is_at_the_top_while_its_middle_is_above_the_pictures():
    assert top_bands({"height": 400, "bands": [{"y": 0, "height": 100}, {"y": 150, "height": 100},
                                               {"y": 149, "height": 100}]}) == {0, 2}
    assert top_bands({"height": 400, "bands": [{"height": 399}, {"height": 400}]}) == {0}  # y defaults to 0
    assert top_bands({"height": 400, "bands": [{"y": 199.5}, {"y": 200}]}) == {0}  # height defaults to 0
    assert top_bands({"height": 400, "bands": [{"y": 100, "height": 150}]}) == {0}  # middle 175
    assert top_bands({"height": 400, "bands": [{"y": 100, "height": 201}]}) == set()  # middle 200.5
    assert top_bands({"bands": [{"y": 0, "height": 10}]}) == set() and top_bands(None) == set()
    assert top_bands({"height": 400}) == set()


# --------------------------------------------------------------------------------------------
# JSON's damaged spans, SRT's braces, plain text, WebVTT's empty cue
# --------------------------------------------------------------------------------------------

def test_a_cue_is_damaged_where_it_overlaps_a_span_not_where_it_touches_one():
    cues = [cue(1.0, 2.0, "before"), cue(2.0, 3.0, "inside"), cue(3.0, 4.0, "after"), cue(0.5, 5.0, "around")]
    document = json.loads(render(cues, "json", {"damaged": [{"start": 2.0, "end": 3.0}]}))
    assert [c["damaged"] for c in document["cues"]] == [False, True, False, True]
    assert document["damaged"] == [{"start": 2.0, "end": 3.0}]
    assert "damaged" not in json.loads(render(cues, "json", {"damaged": []}))["cues"][0]
    assert "damaged" not in json.loads(render(cues, "json", {"video": "v.mp4"}))["cues"][0]


def test_srt_keeps_braces_read_off_the_picture():
    text = render([cue(0.0, 1.0, "{\\an8}Chapter {one}")], "srt")
    assert text == "1\n00:00:00,000 --> 00:00:01,000\n{\\an8}Chapter {one}\n\n"


def test_plain_text_is_one_paragraph_per_cue_without_blank_lines_or_trailing_space_lost():
    cues = [cue(0.0, 1.0, "first line", "", "second line "), cue(1.0, 2.0, "next cue"), cue(2.0, 3.0, " ")]
    assert render(cues, "txt") == "first line\nsecond line \n\nnext cue\n"
    assert render([cue(0.0, 1.0, "only", "\n")], "txt") == "only\n"
    assert render([], "txt") == ""


def test_an_empty_webvtt_cue_keeps_a_blank_line_of_text():
    assert render([cue(0.0, 1.0, "")], "vtt") == "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n \n"


# --------------------------------------------------------------------------------------------
# What an existing file is: the 4 KiB sniff
# --------------------------------------------------------------------------------------------

def test_an_empty_or_unreadable_file_may_be_replaced(tmp_path):
    empty = tmp_path / "movie.mp4"
    empty.write_bytes(b"")
    assert _is_subtitle_text(empty)  # empty: nothing to lose, whatever its name
    assert _is_subtitle_text(tmp_path)  # unreadable (a folder): the write itself will say why


def test_only_text_under_a_subtitle_name_is_a_subtitle_file(tmp_path):
    (tmp_path / "a.srt").write_bytes(b"1\n00:00:01,000 --> 00:00:02,000\nhi\n")
    (tmp_path / "b.SRT").write_bytes(b"hi\n")
    (tmp_path / "c.txt").write_bytes("今天".encode())
    (tmp_path / "d.srt").write_bytes(b"hi\0there")
    (tmp_path / "e.srt").write_bytes(b"\0")
    (tmp_path / "f.mp4").write_bytes(b"hi\n")
    (tmp_path / "g.srt").write_bytes(b"hi \xff there")
    assert [_is_subtitle_text(tmp_path / name) for name in ("a.srt", "b.SRT", "c.txt", "d.srt", "e.srt", "f.mp4",
                                                             "g.srt")] == [True, True, True, False, False, False, False]


def test_the_sniff_reads_the_first_4_kib_and_forgives_a_character_it_cut(tmp_path):
    def sniff(data: bytes) -> bool:
        path = tmp_path / "out.vtt"
        path.write_bytes(data)
        return _is_subtitle_text(path)

    assert sniff(b"a" * 4093 + "😀".encode())  # the 4-byte character cut after 3 bytes (at len - 3)
    assert sniff(b"a" * 4095 + "今".encode())  # a 3-byte one cut after 1 byte
    assert not sniff(b"a" * 4092 + b"\xff" + b"aaa")  # a bad byte at len - 4 is no cut character
    assert sniff(b"a" * 4096 + b"\xff\0")  # beyond the first 4 KiB nothing is read
    assert sniff(b"a" * 4096 + b"\0")


# --------------------------------------------------------------------------------------------
# An output that is an input
# --------------------------------------------------------------------------------------------

def test_an_output_that_is_an_input_is_refused_with_force_and_without(tmp_path):
    video = tmp_path / "clip.srt"
    video.write_text("1\n00:00:01,000 --> 00:00:02,000\nhi\n", encoding="utf-8")
    message = f"{video}: is the input {video}; refusing to overwrite it (give another -o)"
    for force in (True, False):
        with pytest.raises(SubextractError) as refused:
            check_writable(str(video), force, [str(video)])
        assert str(refused.value) == message
    with pytest.raises(SubextractError) as refused:
        check_replaceable(str(video), ["https://example.com/v.mp4", str(video)])
    assert str(refused.value) == message
    check_replaceable(str(video), [str(tmp_path / "missing.mp4"), "https://example.com/v.mp4"])


def test_an_existing_file_that_is_no_subtitle_is_refused_in_so_many_words(tmp_path):
    notes = tmp_path / "notes.srt"
    notes.write_bytes(b"\0binary")
    with pytest.raises(SubextractError) as refused:
        check_replaceable(str(notes))
    assert str(refused.value) == (f"{notes}: exists and is not a subtitle file this tool writes; refusing to overwrite "
                                  "it, whatever the flags (move it or give another output name)")


# --------------------------------------------------------------------------------------------
# stdout
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stdout", [None, "read-only"])
def test_a_closed_stdout_is_refused_before_any_work(monkeypatch, tmp_path, stdout):
    if stdout == "read-only":
        stdout = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - closed below
    monkeypatch.setattr("sys.stdout", stdout)
    try:
        with pytest.raises(SubextractError) as refused:
            check_writable("-", force=False)
    finally:
        if stdout is not None:
            stdout.close()
    assert str(refused.value) == "-o -: stdout is closed; give -o FILE"


class _FailingStdout(io.StringIO):
    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise self.error


@pytest.mark.parametrize("error, reason", [
    (BrokenPipeError(errno.EPIPE, "Broken pipe"), "the reader closed the pipe"),
    (OSError(errno.ENOSPC, "No space left on device"), "cannot write (No space left on device)"),
])
def test_a_failed_write_to_stdout_says_why_in_one_line(monkeypatch, error, reason):
    monkeypatch.setattr("sys.stdout", _FailingStdout(error))
    with pytest.raises(SubextractError) as failed:
        write_text("-", "text")
    assert str(failed.value) == f"stdout: {reason}"


def test_stdout_silenced_after_a_failure_writes_nowhere(tmp_path, monkeypatch):
    """silence_stdout points stdout's file descriptor at the null device: later writes (and the
    flush at exit) go nowhere instead of failing again."""
    captured = tmp_path / "stdout"
    with open(captured, "w", encoding="utf-8") as stdout:
        monkeypatch.setattr("sys.stdout", stdout)
        silence_stdout()
        os.write(stdout.fileno(), b"after the failure")
    assert captured.read_bytes() == b""
    monkeypatch.setattr("sys.stdout", io.StringIO())  # no file descriptor: nothing to redirect
    silence_stdout()


# --------------------------------------------------------------------------------------------
# The umask
# --------------------------------------------------------------------------------------------

def _umask_now() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no /proc: the umask is read by setting it")
def test_the_umask_is_read_from_proc_without_setting_it(monkeypatch):
    """Linux shows the umask in /proc: reading it sets nothing (another thread creating a file
    meanwhile would get the temporary mask)."""
    previous = os.umask(0o027)
    try:
        def refused(_mask: int) -> int:
            raise AssertionError("the umask was set")

        monkeypatch.setattr(os, "umask", refused)
        assert _process_umask() == 0o027
    finally:
        monkeypatch.undo()
        os.umask(previous)


def test_without_proc_the_umask_is_read_by_setting_and_restoring_it(monkeypatch):
    def no_proc(*_args, **_kwargs):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")

    previous = os.umask(0o037)
    try:
        monkeypatch.setattr(write, "open", no_proc, raising=False)
        assert _process_umask() == 0o037
        assert _umask_now() == 0o037  # restored
    finally:
        os.umask(previous)


# --------------------------------------------------------------------------------------------
# What an existing JSON or JSONL file is: ours, or someone else's
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, text", [
    ("out.json", render([cue(1.0, 2.0, "Hello")], "json")),
    ("out.JSON", '{"cues": []}'),
    ("out.jsonl", render([cue(1.0, 2.0, "Hello")], "jsonl")),
    ("out.jsonl", '\n  \n{"start": 1.0, "text": "after blank lines"}\n'),
    ("out.jsonl", "\n\n"),  # no record at all: nothing to lose
])
def test_a_json_output_of_this_tool_may_be_replaced(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    check_replaceable(str(path))


@pytest.mark.parametrize("name, text", [
    ("package.json", '{"name": "app", "version": "1.0.0"}'),
    ("out.json", "[1, 2, 3]"),
    ("out.json", '{"cues": "not a list"}'),
    ("out.json", "{not json"),
    ("out.jsonl", '{"name": "a log line"}\n'),
    ("out.jsonl", "[1.0, 2.0]\n"),
    ("out.jsonl", "plain words\n"),
    ("out.json", '{"cues": [], "note": "' + "a" * 5000 + '\udcff"}'),  # UTF-8 for 4 KiB, then not
])
def test_other_json_under_an_output_name_is_refused(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(SubextractError, match="is not a subtitle file this tool writes"):
        check_replaceable(str(path))


def test_a_json_file_is_read_to_tell_it_apart_up_to_64_mib(tmp_path):
    """A JSON output is read whole: one of exactly the limit still is (trailing whitespace is JSON),
    one past it is someone else's whatever it holds (a sparse file: nothing of it is written)."""
    limit = 64 * 1024 * 1024
    at_limit = tmp_path / "at.json"
    document = b'{"cues": []}'
    at_limit.write_bytes(document + b" " * (limit - len(document)))
    check_replaceable(str(at_limit))
    past = tmp_path / "past.json"
    with open(past, "wb") as handle:
        handle.write(document + b" " * 8192)
        handle.truncate(limit + 1)
    with pytest.raises(SubextractError, match="is not a subtitle file this tool writes"):
        check_replaceable(str(past))


@pytest.fixture
def ascii_locale():
    """The C locale for this process's text files (no UTF-8 mode): a file opened without an
    encoding is ASCII, as under LANG=C."""
    import locale

    previous = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        assert "utf" not in locale.getpreferredencoding(False).lower()
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, previous)


def test_under_an_ascii_locale_outputs_are_written_and_recognised_as_utf8(tmp_path, ascii_locale):
    path = tmp_path / "out.json"
    write_text(str(path), render([cue(1.0, 2.0, "今天天气很好")], "json"))
    assert json.loads(path.read_bytes().decode("utf-8"))["cues"][0]["text"] == "今天天气很好"
    check_replaceable(str(path))  # read back as UTF-8: still this tool's JSON


def test_under_an_ascii_locale_a_fifo_gets_utf8(tmp_path, ascii_locale):
    fifo = tmp_path / "pipe.srt"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_text(str(fifo), "今天\n")
        assert os.read(reader, 100) == "今天\n".encode("utf-8")
    finally:
        os.close(reader)


# --------------------------------------------------------------------------------------------
# Lines as a subtitle file may hold them
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, shown", [
    ("Plain line, 今天 ä", "Plain line, 今天 ä"),
    ("tab\tseparated", "tab separated"),  # no other control character to drop
    ("bell\x07 nul\x00 esc\x1b[31m del\x7f c1\x85 end", "bell nul esc[31m del c1 end"),
    ("\u202eevil\u202c \u2066iso\u2069 \u200fRLM and \u200eLRM kept", "evil iso \u200fRLM and \u200eLRM kept"),
    ("\u202a\tboth\x00", " both"),
])
def test_shown_line_drops_control_characters_and_bidi_overrides_and_keeps_the_rest(line, shown):
    assert write.shown_line(line) == shown


def test_an_arrow_in_an_srt_line_cannot_split_the_cue():
    text = render([cue(1.0, 2.0, "00:00:05,000 --> 00:00:06,000", "A --> B"), cue(3.0, 4.0, "next")], "srt")
    assert [item.text for item in pysrt.from_string(text)] == ["00:00:05,000 -> 00:00:06,000\nA -> B", "next"]


@pytest.mark.parametrize("last_line", ["Malcolm X", "a trailing tab\t", "NBSP\u00a0"])
def test_plain_text_ends_with_the_last_line_as_read(last_line):
    text = render([cue(0.0, 1.0, "first"), cue(1.0, 2.0, last_line)], "txt")
    assert text == f"first\n\n{write.shown_line(last_line)}\n"


# --------------------------------------------------------------------------------------------
# The output's format: --format and the name's extension
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, given, fmt", [
    (None, None, "srt"), ("-", None, "srt"), ("out", None, "srt"), ("notes.log", None, "srt"),
    ("out.vtt", None, "vtt"), ("OUT.ASS", None, "ass"), ("clip.mp4.jsonl", None, "jsonl"),
    ("out.vtt", "vtt", "vtt"), ("-", "json", "json"), (None, "txt", "txt"), ("notes.log", "vtt", "vtt"),
    ("out", "ass", "ass"),
])
def test_the_format_is_given_or_the_names_or_srt(path, given, fmt):
    assert write.output_format(path, given) == fmt


@pytest.mark.parametrize("path, given, named", [("out.vtt", "srt", "vtt"), ("OUT.Json", "jsonl", "json"),
                                                ("clip.txt", "ass", "txt")])
def test_a_format_the_name_contradicts_is_refused(path, given, named):
    with pytest.raises(SubextractError) as refused:
        write.output_format(path, given)
    assert str(refused.value) == f"{path}: the name says {named}, --format says {given}; give one that agrees"


# --------------------------------------------------------------------------------------------
# File names
# --------------------------------------------------------------------------------------------

def test_a_file_name_of_255_bytes_is_accepted_and_one_more_refused(tmp_path):
    check_writable(str(tmp_path / ("x" * 251 + ".srt")), force=False)
    check_writable(str(tmp_path / ("字" * 83 + "x.srt")), force=False)  # 249 + 6 bytes
    too_long = tmp_path / ("x" * 252 + ".srt")
    with pytest.raises(SubextractError) as refused:
        check_writable(str(too_long), force=False)
    assert str(refused.value) == f"{too_long}: the file name is longer than 255 bytes, more than a folder holds"


def test_temporary_files_of_names_alike_in_their_first_48_characters_differ():
    common = "A film with a long title, part one of three - chapter"
    first, second = write.temporary_prefix(common + " 1.srt"), write.temporary_prefix(common + " 2.srt")
    assert first != second and first.startswith("." + common[:48] + ".")
