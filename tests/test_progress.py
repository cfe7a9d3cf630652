"""The progress bar on a real terminal (a pseudo-terminal): says what it does from the start and
redraws a few times a second, not once a frame."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"


def on_terminal(*args: str) -> tuple[subprocess.Popen, bytes]:
    """Run the command line with stderr on a 120-column pseudo-terminal; what the terminal showed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "subextract", *args], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    process.wait(timeout=300)
    return process, output


def test_the_bar_is_drawn_a_few_times_a_second_and_starts_with_what_it_does(tmp_path):
    began = time.monotonic()
    process, output = on_terminal(str(SAMPLES / "en_two_line.mp4"), "-o", str(tmp_path / "x.srt"))
    assert process.returncode == 0
    wall = time.monotonic() - began
    text = output.decode("utf-8", "replace")
    assert text.lstrip("\r").startswith("probing"), text[:200]
    assert "finding the subtitle band" in text and "reading" in text and "segments" in text
    redraws = text.count("\r")
    assert redraws <= 8 * wall + 10, (redraws, wall)  # a redraw per frame would be 550 for this 22 s clip
    assert len(output) < 20_000, len(output)


def test_a_batch_shows_one_overall_bar_of_videos_with_the_lines_above_it(tmp_path):
    process, output = on_terminal("batch", str(SAMPLES / "zh_bottom.mp4"), str(SAMPLES / "en_two_line.mp4"),
                                  "--out", str(tmp_path / "out"), "--end", "2")
    assert process.returncode == 0
    text = output.decode("utf-8", "replace")
    assert "subextract batch: 2 videos, 2 to do" in text
    assert "0/2" in text and "2/2" in text and "video" in text  # the bar: videos done of those to do
    assert "[1/2] done" in text and "[2/2] done" in text and "Traceback" not in text
