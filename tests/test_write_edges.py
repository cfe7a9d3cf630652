"""The writers and the overwrite policy at the values where they turn: the ASS script's header and
style for the picture's size, the band at the middle of the picture, damaged spans that touch a
cue, SRT text in braces, plain text's blank lines, the 4 KiB sniff of an existing file, an output
that is its input, a stdout that fails, the process's umask. Real parsers read what is written."""

from __future__ import annotations

import errno
import io
import json
import os

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
