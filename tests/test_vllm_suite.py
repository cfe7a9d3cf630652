"""Runs the real-vLLM tests (test_vllm_engine.py, test_openai_engine.py, test_translate_vllm.py,
test_vllm_prompts.py, test_serve_vllm.py), the transformers engine's and HunyuanOCR's vision
tower's (test_transformers_engine.py, test_vllm_vision_tower.py: torch lives in .venv-vllm too)
from the main test command. vLLM's CPU build needs its own virtualenv (a pinned CPU torch, no
torchvision), so under the main .venv those modules skip themselves and this test makes
.venv-vllm (scripts/setup_vllm.sh: ~4 minutes the first time, a no-op after) and runs them there;
its failure shows their output. Run inside .venv-vllm, the modules run directly and this one
steps aside.

When this test is among those collected, the set-up starts in the background as the session
starts (conftest.py calls ``start_in_background``): the download and install (~3 minutes, mostly
network and disk) overlap the rest of the suite instead of adding to it. The vLLM tests themselves
run when this test's turn comes, alone: run beside the suite, their CPU slowed its timing-bound
tests into failing."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODULES = ["tests/test_vllm_engine.py", "tests/test_openai_engine.py", "tests/test_translate_vllm.py",
           "tests/test_transformers_engine.py", "tests/test_vllm_prompts.py", "tests/test_vllm_vision_tower.py",
           "tests/test_serve_vllm.py"]
SETUP_LIMIT_S, RUN_LIMIT_S = 1800, 1500
NODE_ID = "tests/test_vllm_suite.py::test_vllm_modules_pass_in_their_virtualenv"


class BackgroundSetup:
    """scripts/setup_vllm.sh in a process group of its own, its output to a file."""

    def __init__(self) -> None:
        self.log = Path(tempfile.mkdtemp(prefix="subextract-vllm-")) / "setup.log"
        with self.log.open("w") as sink:
            self.process = subprocess.Popen(["timeout", str(SETUP_LIMIT_S), "bash", "scripts/setup_vllm.sh"], cwd=REPO,
                                            stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self) -> tuple[int, str]:
        deadline = time.monotonic() + SETUP_LIMIT_S + 60
        while self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(1)
        self.stop()
        return self.process.returncode, self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


_setup: BackgroundSetup | None = None


def start_in_background(items: list[pytest.Item]) -> None:
    """Called by conftest.py once the session's tests are collected."""
    global _setup
    if _setup is None and importlib.util.find_spec("vllm") is None and any(i.nodeid == NODE_ID for i in items):
        sys.stderr.write("subextract: .venv-vllm for the vLLM tests is set up in the background (~4 minutes "
                         "the first time); the tests run with test_vllm_suite.py\n")
        _setup = BackgroundSetup()


def stop_background() -> None:
    if _setup is not None:
        _setup.stop()


@pytest.mark.slow
def test_vllm_modules_pass_in_their_virtualenv(capsys):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is importable here: the vLLM modules run directly in this session")
    status, setup = (_setup or BackgroundSetup()).wait()  # started here when the collection hook did not run
    assert status == 0, f"scripts/setup_vllm.sh failed:\n{setup[-8000:]}"
    with capsys.disabled():
        print("\nsubextract: running the vLLM tests in .venv-vllm (usually 4-8 minutes)", flush=True)
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0")
    command = [".venv-vllm/bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:logging",
               "-m", "slow", *MODULES]
    run = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=RUN_LIMIT_S, env=env, check=False)
    summary = run.stdout.strip().splitlines()[-1:] or ["no output"]
    with capsys.disabled():
        print(f"vLLM tests in .venv-vllm: {summary[0]}", flush=True)
    assert run.returncode == 0, f"vLLM tests failed in .venv-vllm:\n{run.stdout[-12000:]}\n{run.stderr[-4000:]}"
    assert " passed" in summary[0] and "skipped" not in summary[0], run.stdout[-3000:]
