"""Nothing the user made is lost: an output never replaces the input, through a link either, nor a
file that is not a subtitle file, whatever the flags."""

from __future__ import annotations

import os
import shutil

import pytest

from subextract.errors import SubextractError
from subextract.stages.write import check_replaceable, check_writable
from test_cli import FAST, assert_one_error_line, run_cli


@pytest.fixture
def video(zh_clip, tmp_path):
    return shutil.copy(zh_clip, tmp_path / "v.mp4")


def test_output_that_is_the_input_is_refused_even_with_force(video):
    before = open(video, "rb").read()
    code, out, err = run_cli(video, "-o", video, "--force", *FAST)
    assert_one_error_line(code, out, err, "is the input")
    assert open(video, "rb").read() == before


def test_output_that_is_a_link_to_the_input_is_refused(video, tmp_path):
    os.symlink(video, tmp_path / "link.srt")
    os.link(video, tmp_path / "hard.srt")
    before = open(video, "rb").read()
    for name in ("link.srt", "hard.srt"):
        code, out, err = run_cli(video, "-o", tmp_path / name, "--force", *FAST)
        assert code == 2 and "refusing to overwrite" in err, err
    assert open(video, "rb").read() == before


def test_a_video_named_srt_is_not_replaced_by_its_own_output(zh_clip, tmp_path):
    video = shutil.copy(zh_clip, tmp_path / "clip.srt")  # the default output name is the input's
    before = open(video, "rb").read()
    code, out, err = run_cli(video, "--force", *FAST)
    assert_one_error_line(code, out, err, "is the input")
    assert open(video, "rb").read() == before


def test_an_existing_file_that_is_no_subtitle_is_never_overwritten(video, zh_clip, tmp_path):
    other = shutil.copy(zh_clip, tmp_path / "other.srt")  # some other video, misnamed
    notes = tmp_path / "notes.json"
    notes.write_bytes(b"\x00\x01binary")
    for target in (other, notes):
        before = open(target, "rb").read()
        code, out, err = run_cli(video, "-o", target, "--force", *FAST)
        assert_one_error_line(code, out, err, "not a subtitle file")
        assert open(target, "rb").read() == before


@pytest.mark.parametrize("name, text", [("out.srt", ""), ("out.srt", "1\n00:00:01,000 --> 00:00:02,000\nhi\n"),
                                        ("out.vtt", "WEBVTT\n\n"), ("out.json", '{"cues": []}\n'),
                                        ("out.jsonl", '{"video": "x", "start": 1}\n'), ("out.srt", "\ufeff1\r\n")])
def test_our_own_kinds_of_output_may_be_replaced(tmp_path, name, text):
    target = tmp_path / name
    target.write_text(text, encoding="utf-8")
    check_writable(str(target), force=True, inputs=[str(tmp_path / "v.mp4")])


def test_a_text_file_not_named_as_an_output_is_not_replaced(video, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    code, out, err = run_cli(video, "-o", notes, "--force", *FAST)
    assert_one_error_line(code, out, err, "not a subtitle file")
    assert notes.read_text() == "my notes\n"


def test_check_replaceable_refuses_the_input(tmp_path):
    source = tmp_path / "a.mp4"
    source.write_bytes(b"\x00video")
    with pytest.raises(SubextractError, match="is the input"):
        check_replaceable(str(tmp_path / "." / "a.mp4"), [str(source)])
