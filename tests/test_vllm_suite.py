"""Runs the real-vLLM tests (test_vllm_engine.py, test_openai_engine.py, test_translate_vllm.py,
test_vllm_prompts.py), the transformers engine's and HunyuanOCR's vision tower's
(test_transformers_engine.py, test_vllm_vision_tower.py: torch lives in .venv-vllm too) from the main test
command. vLLM's CPU build needs its own virtualenv (a pinned CPU torch, no torchvision), so
under the main .venv those modules skip themselves and this test makes .venv-vllm
(scripts/setup_vllm.sh: ~4 minutes the first time, a no-op after) and runs them there; its
failure shows their output. Run inside .venv-vllm, the modules run directly and this one steps
aside."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODULES = ["tests/test_vllm_engine.py", "tests/test_openai_engine.py", "tests/test_translate_vllm.py",
           "tests/test_transformers_engine.py", "tests/test_vllm_prompts.py", "tests/test_vllm_vision_tower.py",
           "tests/test_serve_vllm.py"]


@pytest.mark.slow
def test_vllm_modules_pass_in_their_virtualenv(capsys):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is importable here: the vLLM modules run directly in this session")
    # Its progress lines go to the terminal, not into pytest's capture: the first build takes
    # minutes and a silent test command looks hung.
    with capsys.disabled():
        print(flush=True)  # off pytest's line of dots
        setup = subprocess.run(["bash", "scripts/setup_vllm.sh"], cwd=REPO, stdout=subprocess.PIPE, stderr=None,
                               text=True, timeout=1800, check=False)
        print("subextract: running the vLLM tests in .venv-vllm (usually 2-4 minutes)", flush=True)
    assert setup.returncode == 0, f"scripts/setup_vllm.sh failed (its messages are above):\n{setup.stdout[-8000:]}"
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0")
    command = [".venv-vllm/bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:logging",
               "-m", "slow", *MODULES]
    run = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1500, env=env, check=False)
    summary = run.stdout.strip().splitlines()[-1:] or ["no output"]
    print(f"vLLM tests in .venv-vllm: {summary[0]}")
    assert run.returncode == 0, f"vLLM tests failed in .venv-vllm:\n{run.stdout[-12000:]}\n{run.stderr[-4000:]}"
    assert " passed" in summary[0] and "skipped" not in summary[0], run.stdout[-3000:]
