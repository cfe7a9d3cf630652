"""Refusals that depend on file permissions, checked even as root; and no test skips for want of fonts.

Root reads and writes anything, so as root these checks run in a child process whose capability
bounding set lacks CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (``setpriv``): still uid 0, so it can
run the virtualenv's interpreter under /root, but bound by permission bits like any user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import conftest


def unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.fail("running as root without setpriv: apt-get install -y util-linux", pytrace=False)
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


def run_unprivileged(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*unprivileged(), *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


@pytest.fixture
def scratch():
    folder = Path(tempfile.mkdtemp(prefix="subextract-perm-"))
    yield folder
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.rmtree(folder)


def test_the_child_really_is_bound_by_permission_bits(scratch):
    locked = scratch / "locked"
    locked.write_text("secret")
    locked.chmod(0)
    result = run_unprivileged(sys.executable, "-c", f"open({str(locked)!r}).read()")
    assert result.returncode != 0 and "PermissionError" in result.stderr


def test_check_writable_refuses_a_read_only_folder(scratch):
    folder = scratch / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    code = ("from subextract.stages.write import check_writable\n"
            "from subextract.errors import SubextractError\n"
            "try:\n    check_writable(__import__('sys').argv[1], force=False)\n"
            "except SubextractError as exc:\n    print(exc)\n")
    result = run_unprivileged(sys.executable, "-c", code, str(folder / "x.srt"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{folder / 'x.srt'}: folder {folder} is not writable"


def test_the_cli_refuses_an_unreadable_video_with_exit_2(scratch):
    video = scratch / "locked.mp4"
    video.write_bytes(b"\x00" * 16)
    video.chmod(0)
    result = run_unprivileged(sys.executable, "-m", "subextract", str(video), "-o", str(scratch / "out.srt"))
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("subextract: error:") and "permission denied" in line and str(video) in line
    assert not (scratch / "out.srt").exists()


def test_the_cli_refuses_an_unwritable_output_folder_before_any_work(scratch):
    folder = scratch / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    sample = Path(__file__).resolve().parent.parent / "sample_videos" / "zh_bottom.mp4"
    result = run_unprivileged(sys.executable, "-m", "subextract", str(sample), "-o", str(folder / "out.srt"))
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == f"subextract: error: {folder / 'out.srt'}: folder {folder} is not writable"


def test_a_missing_font_fails_the_run_with_the_install_line():
    with pytest.raises(pytest.fail.Exception, match=r"apt-get install -y fonts-nothing-such"):
        conftest._font_or_fail(("no-such-font-file.ttf",), ":lang=xx-nothing", "fonts-nothing-such")


def test_check_readable_refuses_a_file_without_read_permission(scratch):
    locked = scratch / "locked.mp4"
    locked.write_bytes(b"\x00" * 16)
    locked.chmod(0)
    code = ("import sys\nfrom subextract.stages.probe import check_readable\n"
            "from subextract.errors import SubextractError\n"
            "try:\n    check_readable(sys.argv[1])\nexcept SubextractError as exc:\n    print(exc)\n")
    result = run_unprivileged(sys.executable, "-c", code, str(locked))
    assert result.returncode == 0, result.stderr
    assert "permission denied" in result.stdout and str(locked) in result.stdout
