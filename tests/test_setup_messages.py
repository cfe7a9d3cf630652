"""The test command says what it is doing while it builds .venv-vllm (minutes, once) instead of
staying silent: scripts/setup_vllm.sh announces the build before pip starts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_vllm_build_is_announced_before_it_starts(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup_vllm.sh", tmp_path / "scripts")
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    # A virtualenv whose pip fails at once: the announcement must come before any install work.
    fake = tmp_path / ".venv-vllm" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    run = subprocess.run(["bash", "scripts/setup_vllm.sh"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode != 0
    first = run.stderr.splitlines()[0]
    assert "building .venv-vllm" in first and "usually" in first and "minutes" in first, run.stderr
