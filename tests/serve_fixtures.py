"""A real ``subextract serve`` process on 127.0.0.1 for the service tests, and the CLI's output
on the same sample to compare the service's downloads with."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_videos"
ZH_SAMPLE = SAMPLES / "zh_bottom.mp4"
EN_SAMPLE = SAMPLES / "en_two_line.mp4"
API_KEY = "test-key-7f3a"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """``subextract serve`` in its own process; ``client`` talks to it with the API key."""

    def __init__(self, data: Path, *args: str, api_key: str | None = API_KEY, env: dict[str, str] | None = None) -> None:
        self.data = data
        self.env = env or {}
        self.args = args
        self.api_key = api_key
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data.parent / f"{data.name}-server-{self.port}.log"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 180) -> "Server":  # the engine loads slowly on a busy machine
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for variable in ("SUBEXTRACT_API_KEY", "SUBEXTRACT_SERVICE_KEY"):
            env.pop(variable, None)
        if self.api_key:
            env["SUBEXTRACT_SERVICE_KEY"] = self.api_key
        env.update(self.env)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "subextract", "serve", "--port", str(self.port), "--data", str(self.data),
                 "--config", "fast", *self.args], stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited ({self.process.returncode}):\n{self.log_text()}")
            try:
                if httpx.get(f"{self.url}/ready", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the server did not become ready:\n{self.log_text()}")

    def log_text(self, tail: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-tail:]

    def logged(self, words: str) -> bool:
        return words in self.log.read_text(errors="replace")

    def client(self, **kwargs) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=kwargs.pop("timeout", 60), **kwargs)

    def kill(self) -> None:
        """``kill -9``: no shutdown code runs."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            return -9


def module_server(folder: str, *args: str):
    """A module's ``server`` fixture: one service for the module's tests, on a data folder of its
    own (``folder``), started with the command-line ``args``."""
    @pytest.fixture(scope="module")
    def server(tmp_path_factory):
        running = Server(tmp_path_factory.mktemp(folder) / "data", *args).start()
        yield running
        running.stop()

    return server


@pytest.fixture(scope="module")
def client(server):
    """An API client of the module's ``server`` (the key sent with every request)."""
    with server.client() as api:
        yield api


def upload(client: httpx.Client, video: Path, **fields) -> httpx.Response:
    with open(video, "rb") as handle:
        return client.post("/v1/jobs", files={"file": (video.name, handle, "video/mp4")},
                           data={k: str(v) for k, v in fields.items()})


def wait_for(client: httpx.Client, job_id: str, states=("done", "failed", "cancelled"), timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in states:
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} still {job['status']} after {timeout} s")


@pytest.fixture(scope="session")
def zh_cli_srt(tmp_path_factory) -> str:
    """The CLI's SRT of the Chinese sample with the preset the test servers use."""
    from subextract.cli import main

    out = tmp_path_factory.mktemp("cli") / "zh_bottom.srt"
    assert main([str(ZH_SAMPLE), "--config", "fast", "-o", str(out), "-q"]) == 0
    return out.read_text(encoding="utf-8")
