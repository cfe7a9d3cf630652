"""``subextract serve --engine openai`` in front of a real ``vllm serve`` (vLLM's CPU build, a tiny
random-weight PaddleOCR-VL on 127.0.0.1): the deployment compose.yaml describes. The service starts
with one ``--server`` per replica as batch does, reads a sample through the server at the
reference times, and sends the upstream key — never its own — to vLLM, which requires it.

Runs in .venv-vllm (test_vllm_suite.py runs it there from the main test command).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest

pytest.importorskip("vllm", reason="runs in .venv-vllm, through test_vllm_suite.py")

from serve_fixtures import Server, upload, wait_for  # noqa: E402
from vlm_fixtures import SAMPLE, free_port, reference_cues, tiny_config, tiny_model  # noqa: E402

pytestmark = pytest.mark.slow
UPSTREAM_KEY = "vllm-upstream-secret"
SERVICE_KEY = "service-own-secret"
END = 12.0


@pytest.fixture(scope="module")
def vllm_url(tmp_path_factory):
    """Two replicas of the tiny model behind vLLM's API server, each requiring the upstream key."""
    model = tiny_model(tmp_path_factory.getbasetemp())
    servers = []
    for replica in range(2):
        port = free_port()
        log = tmp_path_factory.mktemp("vllm") / f"vllm-{replica}.log"
        command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
                   "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32", "--max-model-len", "512",
                   "--max-num-seqs", "16", "--enforce-eager", "--no-enable-prefix-caching",
                   "--mm-processor-cache-gb", "0", "--limit-mm-per-prompt", '{"image": 1}',
                   "--api-key", UPSTREAM_KEY]
        with log.open("w") as sink:
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
                                       env=dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1"))
        servers.append((process, f"http://127.0.0.1:{port}/v1", log))
    try:
        for process, url, log in servers:
            deadline = time.monotonic() + 400
            while True:
                assert process.poll() is None, log.read_text()[-4000:]
                try:
                    if httpx.get(f"{url}/models", timeout=2,
                                 headers={"Authorization": f"Bearer {UPSTREAM_KEY}"}).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, log.read_text()[-4000:]
                time.sleep(1)
        assert httpx.get(f"{servers[0][1]}/models", timeout=5).status_code == 401  # the key is really required
        yield [url for _, url, _ in servers]
    finally:
        for process, _, _ in servers:
            if process.poll() is None:
                os.killpg(process.pid, 9)
                process.wait()


def test_the_service_reads_a_sample_through_vllm_serve_with_the_upstream_key(vllm_url, tmp_path):
    config = tiny_config(tmp_path / "tiny.yaml")
    server = Server(tmp_path / "data", "--engine", "openai", "--server", vllm_url[0], "--server", vllm_url[1],
                    "--config", str(config), api_key=SERVICE_KEY, env={"SUBEXTRACT_UPSTREAM_KEY": UPSTREAM_KEY})
    server.start(timeout=300)
    try:
        assert httpx.get(f"{server.url}/v1/jobs", timeout=5).status_code == 401
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {SERVICE_KEY}"},
                          timeout=60) as client:
            job_id = upload(client, SAMPLE, end=END, region="bottom").json()["id"]
            job = wait_for(client, job_id, timeout=300)
            assert job["status"] == "done", job
            cues = client.get(f"/v1/jobs/{job_id}/subtitles.json").json()["cues"]
        found = [t for cue in cues for t in (cue["start"], cue["end"])]
        # Within a frame (25 fps) of the reference: the test servers' "fast" preset samples more sparsely.
        assert found == pytest.approx([t for cue in reference_cues(END) for t in cue], abs=0.041)
        assert all(cue["lines"] for cue in cues)
    finally:
        server.stop()
