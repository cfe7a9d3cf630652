"""What users of other command-line tools type by habit: a pipe closed by ``head``, a closed
stdout, two videos on one line, ``--version`` on a sub-command, ``-v`` and ``--help`` read by
people. Real processes: a pipe's end and a closed descriptor only exist there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import subextract

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_videos"
SRT = str(SAMPLES / "zh_bottom.srt")


def run_into_closed_pipe(*args: str) -> subprocess.CompletedProcess:
    """The command with stdout a pipe whose reader has gone (``| head`` after its lines): every
    write fails with EPIPE, deterministically."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "subextract", *args], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=120, cwd=REPO, check=False)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [["--list-languages"], ["score", SRT, SRT], ["score", SRT, SRT, "--json"]],
                         ids=["list-languages", "score", "score-json"])
def test_a_closed_pipe_ends_quietly(args):
    result = run_into_closed_pipe(*args)
    assert result.returncode == 141, result.stderr
    assert result.stderr == ""


def run_with_stdout_closed(*args: str) -> subprocess.CompletedProcess:
    """``subextract ARGS >&-``."""
    return subprocess.run([sys.executable, "-m", "subextract", *args], stdout=None, stderr=subprocess.PIPE, text=True,
                          timeout=120, cwd=REPO, check=False, preexec_fn=lambda: os.close(1))


def test_output_to_a_closed_stdout_is_refused_before_the_work(tmp_path):
    result = run_with_stdout_closed(str(SAMPLES / "en_two_line.mp4"), "-o", "-", "--region", "bottom")
    assert result.returncode == 2
    assert result.stderr == "subextract: error: -o -: stdout is closed; give -o FILE\n"


def test_score_to_a_closed_stdout_is_one_line():
    result = run_with_stdout_closed("score", SRT, SRT)
    assert result.returncode == 2
    assert result.stderr == "subextract: error: stdout is closed: nothing could be written (give -o FILE)\n"


def test_a_closed_stdout_does_not_matter_when_nothing_goes_there(tmp_path):
    out = tmp_path / "a.srt"
    result = run_with_stdout_closed(str(SAMPLES / "zh_bottom.mp4"), "--end", "3", "--region", "bottom", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert out.exists()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "subextract", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO, check=False)


@pytest.mark.parametrize("args", [["a.mp4", "b.mp4"], ["a.mp4", "--lang", "zh", "b.mp4"]])
def test_two_videos_are_sent_to_batch(args):
    result = cli(*args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "subextract: error: one video at a time; for 2 use batch: subextract batch a.mp4 b.mp4 " \
                            "--out DIR\n"


@pytest.mark.parametrize("command", ["batch", "score", "translate", "serve"])
def test_every_sub_command_has_version(command):
    result = cli(command, "--version")
    assert result.returncode == 0 and result.stdout == f"subextract {subextract.__version__}\n", result.stderr


def test_help_lists_the_exit_statuses():
    text = cli("--help").stdout
    for status in ("exit status:", "  0    done", "  2    bad input", "  3    not done whole", "--fail-on-empty",
                   "  130  interrupted", "  141"):
        assert status in text


def test_verbose_describes_the_appearance_in_words(tmp_path):
    result = cli(str(SAMPLES / "en_translucent_box.mp4"), "--end", "4", "-q", "-v", "-o", str(tmp_path / "a.srt"))
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stderr.splitlines() if "subtitle appearance" in line)
    assert "Appearance(" not in line and "told apart by brightness" in line and "learned from" in line


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_shell_completion_as_readme_says(shell):
    """README: ``shtab --shell=bash subextract.cli.completion_parser``."""
    result = subprocess.run([sys.executable, "-m", "shtab", f"--shell={shell}", "subextract.cli.completion_parser"],
                            capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
    assert result.returncode == 0, result.stderr
    for word in ("batch", "score", "translate", "serve", "--lang", "--fail-on-empty", "--out", "--to", "--version"):
        assert word in result.stdout
