"""Runs the real-vLLM tests (test_vllm_engine.py, test_openai_engine.py, test_translate_vllm.py,
test_vllm_prompts.py, test_serve_vllm.py), the transformers engine's and HunyuanOCR's vision
tower's (test_transformers_engine.py, test_vllm_vision_tower.py: torch lives in .venv-vllm too)
from the main test command. vLLM's CPU build needs its own virtualenv (a pinned CPU torch, no
torchvision), so under the main .venv those modules skip themselves and this test makes
.venv-vllm (scripts/setup_vllm.sh: ~4 minutes the first time, a no-op after) and runs them there;
its failure shows their output. Run inside .venv-vllm, the modules run directly and this one
steps aside.

When this test is among those collected, the set-up and the run start in the background as the
session starts (conftest.py calls ``start_in_background``): the download and the vLLM servers'
start-up overlap the rest of the suite instead of adding to it, and this test waits for them."""

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


class BackgroundSuite:
    """scripts/setup_vllm.sh, then the modules' pytest in .venv-vllm, in one process group whose
    output goes to a file; the set-up's exit status and the run's are told apart by a marker."""

    def __init__(self) -> None:
        self.log = Path(tempfile.mkdtemp(prefix="subextract-vllm-")) / "suite.log"
        run = " ".join([".venv-vllm/bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:logging",
                        "-m", "slow", *MODULES])
        script = (f"timeout {SETUP_LIMIT_S} bash scripts/setup_vllm.sh || {{ echo 'SETUP FAILED'; exit 90; }}\n"
                  f"echo 'SETUP DONE'\nexec timeout {RUN_LIMIT_S} {run}\n")
        env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0")
        with self.log.open("w") as sink:
            self.process = subprocess.Popen(["bash", "-c", script], cwd=REPO, stdout=sink, stderr=subprocess.STDOUT,
                                            env=env, start_new_session=True)

    def wait(self) -> tuple[int, str]:
        deadline = time.monotonic() + SETUP_LIMIT_S + RUN_LIMIT_S + 60
        while self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(1)
        self.stop()
        return self.process.returncode, self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


_suite: BackgroundSuite | None = None


def start_in_background(items: list[pytest.Item]) -> None:
    """Called by conftest.py once the session's tests are collected."""
    global _suite
    if _suite is None and importlib.util.find_spec("vllm") is None and any(i.nodeid == NODE_ID for i in items):
        sys.stderr.write("subextract: the vLLM tests run in .venv-vllm in the background (built first: "
                         "~4 minutes the first time); their result comes with test_vllm_suite.py\n")
        _suite = BackgroundSuite()


def stop_background() -> None:
    if _suite is not None:
        _suite.stop()


@pytest.mark.slow
def test_vllm_modules_pass_in_their_virtualenv(capsys):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is importable here: the vLLM modules run directly in this session")
    suite = _suite or BackgroundSuite()  # started here when the collection hook did not run
    status, output = suite.wait()
    setup, _, run = output.partition("SETUP DONE\n")
    assert "SETUP FAILED" not in output and run, f"scripts/setup_vllm.sh failed:\n{setup[-8000:]}"
    summary = run.strip().splitlines()[-1:] or ["no output"]
    with capsys.disabled():
        print(f"\nvLLM tests in .venv-vllm: {summary[0]}", flush=True)
    assert status == 0, f"vLLM tests failed in .venv-vllm:\n{run[-16000:]}"
    assert " passed" in summary[0] and "skipped" not in summary[0], run[-3000:]
