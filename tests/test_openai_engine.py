"""The OpenAI-compatible client against a real ``vllm`` API server (its CPU build) serving a tiny
random-weight PaddleOCR-VL on 127.0.0.1: cues at the reference times, requests really in flight
together, clear errors for a wrong model or address, and a server killed mid-run.

A recording proxy sits between client and server where a test needs to see the traffic: it
forwards every request unchanged and notes when each chat completion was in flight.

vLLM lives in its own virtualenv (.venv-vllm, scripts/setup_vllm.sh): under the main one this
module is skipped and test_vllm_suite.py runs it there instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import pytest

pytest.importorskip("vllm", reason="runs in .venv-vllm, through test_vllm_suite.py")

from subextract.cli import main  # noqa: E402
from subextract.config import load_settings  # noqa: E402
from subextract.errors import SubextractError  # noqa: E402
from subextract.stages.ocr import create_engine  # noqa: E402
from subextract.stages.ocr.vlm import prepare  # noqa: E402
from vlm_fixtures import (REPO, SAMPLE, RecordingProxy, VllmServer, free_port, recording, reference_cues,  # noqa: E402
                          serving, tiny_config, tiny_hunyuan_ocr, tiny_model)

pytestmark = pytest.mark.slow
END = 12.0
API_KEY = "sk-test-never-printed"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[VllmServer]:
    """One server for the module; the last test kills it."""
    base = tmp_path_factory.getbasetemp()
    with serving(tiny_model(base), tmp_path_factory.mktemp("server") / "vllm.log", images=1) as running:
        yield running


@pytest.fixture
def proxy(server) -> Iterator[RecordingProxy]:
    with recording(server.url) as proxy:
        yield proxy


def openai_settings(server_url: str, **changes):
    settings = load_settings(overrides={"ocr": {"engine": "openai", "server": server_url, "prompt": "OCR:",
                                                "max_tokens": 12}})
    return dataclasses.replace(settings.ocr, **changes)


def test_pipeline_over_http(proxy, tmp_path):
    out = tmp_path / "cues.json"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(a) for a in (SAMPLE, "--engine", "openai", "--server", proxy.url, "--concurrency", 4,
                                      "--config", tiny_config(tmp_path / "tiny.yaml"), "--end", END,
                                      "--region", "bottom", "--format", "json", "-o", out)])
    assert code == 0, err.getvalue()
    result = json.loads(out.read_text())
    expected = reference_cues(END)
    found = [t for c in result["cues"] for t in (c["start"], c["end"])]
    # frame-exact, as with the embedded engine: boundaries come from the segmenter, whatever reads the text
    assert found == pytest.approx([t for cue in expected for t in cue], abs=1e-3)
    assert all(cue["lines"] and len(cue["languages"]) == len(cue["lines"]) for cue in result["cues"])
    assert len(proxy.completions) == result["stats"]["ocr_calls"] == len(expected)


def test_requests_overlap_and_carry_the_api_key(proxy, monkeypatch):
    monkeypatch.setenv("SUBEXTRACT_API_KEY", API_KEY)
    engine = create_engine(openai_settings(proxy.url, concurrency=4))
    rng = np.random.default_rng(0)
    crops = [rng.integers(0, 256, (72, 640), dtype=np.uint8) for _ in range(12)]
    readings = engine.read_batch(crops)
    assert len(readings) == 12 and all(reading.lines for reading in readings)
    assert len(proxy.completions) == 12
    assert 2 <= proxy.max_in_flight() <= 4, proxy.completions
    assert proxy.authorizations == {f"Bearer {API_KEY}"}


def test_the_server_reads_the_pixels_the_engine_prepared(proxy):
    """Each request's picture (a stored PNG, in a body serialised around it) decodes, the way vLLM
    decodes it, to exactly the pixels the engine prepared: a grey band scaled down to max_side, a
    colour one in OpenCV's BGR order, a view into a larger frame; and vLLM reads each one."""
    from vllm.multimodal.media.image import ImageMediaIO

    settings = openai_settings(proxy.url, concurrency=1, max_side=512)
    rng = np.random.default_rng(3)
    frame = rng.integers(0, 256, (120, 700), dtype=np.uint8)
    crops = [rng.integers(0, 256, (72, 640), dtype=np.uint8), rng.integers(0, 256, (48, 400, 3), dtype=np.uint8),
             frame[30:90, 50:450]]
    create_engine(settings).read_batch(crops)
    assert len(proxy.bodies) == len(crops) and all(reply.get("choices") for reply in proxy.replies)
    shapes = []
    for body, crop in zip(proxy.bodies, crops):
        media_type, data = body["messages"][0]["content"][0]["image_url"]["url"].removeprefix("data:").split(";base64,")
        received = np.asarray(ImageMediaIO(image_mode="RGB").load_base64(media_type, data).media)
        prepared = prepare(crop, settings.max_side, settings.max_pixels)
        assert np.array_equal(received, np.dstack([prepared] * 3) if prepared.ndim == 2 else prepared[..., ::-1])
        shapes.append(received.shape)
        assert body["messages"][0]["content"][1] == {"type": "text", "text": "OCR:"}
    assert shapes == [(58, 512, 3), (48, 400, 3), (60, 400, 3)]


def test_special_tokens_kept_only_where_the_preset_says(proxy):
    assert load_settings("deepseek-ocr").ocr.skip_special_tokens is False  # its recipe's setting
    assert load_settings("hunyuanocr").ocr.skip_special_tokens is True
    crops = [np.random.default_rng(1).integers(0, 256, (72, 640), dtype=np.uint8)]
    create_engine(openai_settings(proxy.url)).read_batch(crops)
    readings = create_engine(openai_settings(proxy.url, skip_special_tokens=False)).read_batch(crops)
    assert "skip_special_tokens" not in proxy.bodies[0]  # other servers need not know vLLM's extension
    assert proxy.bodies[1]["skip_special_tokens"] is False
    assert len(readings) == 1 and readings[0].lines  # vLLM accepted it


def test_wrong_model_names_the_served_ones(server):
    with pytest.raises(SubextractError, match=r"has no model 'hunyuan'; it serves: .*tiny-paddleocr-vl"):
        create_engine(openai_settings(server.url, model="hunyuan"))


def test_unreachable_server_names_the_address():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(SubextractError, match=f"OCR server {url} is unreachable"):
        create_engine(openai_settings(url))


def test_server_killed_mid_run(server, tmp_path):
    """Runs last: it kills the module's server once the first crop has been read."""
    out = tmp_path / "cues.srt"
    config = tiny_config(tmp_path / "tiny.yaml", retries=2, timeout=20)
    finished_before = server.successes()
    run = subprocess.Popen([sys.executable, "-m", "subextract", str(SAMPLE), "--engine", "openai",
                            "--server", server.url, "--concurrency", "1", "--config", str(config),
                            "--region", "bottom", "-o", str(out)], cwd=REPO, stderr=subprocess.PIPE,
                           text=True, env=dict(os.environ, SUBEXTRACT_API_KEY=API_KEY))
    deadline = time.monotonic() + 120
    while server.successes() <= finished_before and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    server.kill()
    _, err = run.communicate(timeout=300)
    assert run.returncode == 3, err  # partial results: the cues read before the server died are written
    errors = [line for line in err.splitlines() if line.startswith("subextract: error:")]
    assert len(errors) == 1, err
    assert f"OCR server {server.url} is unreachable" in errors[0] and "gave up after 3 attempts" in errors[0]
    assert API_KEY not in err
    # The cue read before the server died is kept.
    assert out.exists() and "-->" in out.read_text(), err


def test_hunyuanocr_preset_through_the_server(tmp_path_factory, tmp_path):
    """HunyuanOCR's architecture served by vLLM (its Transformers backend on this CPU build) and
    read through the hunyuanocr preset: its subtitle prompt, repetition penalty and tail cleanup.
    The server's prompt for each crop is the model's processor's: as many tokens as the processor
    makes of the chat template's prompt and the picture sent (no image start or end doubled)."""
    model = tiny_hunyuan_ocr(tmp_path_factory.getbasetemp())
    out = tmp_path / "cues.json"
    with serving(model, tmp_path / "vllm.log", images=1, hunyuan_vl=True) as running, \
            recording(running.url) as proxy:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main([str(a) for a in (SAMPLE, "--config", "hunyuanocr", "--config",
                                          # a request retried after a timeout on a loaded machine is read twice
                                          tiny_config(tmp_path / "tiny.yaml", prompt="提取图片中的字幕。",
                                                      timeout=600),
                                          "--engine", "openai", "--server", proxy.url, "--model", model,
                                          "--end", END,
                                          "--region", "bottom", "--format", "json", "-o", out)])
        assert code == 0, err.getvalue() + running.log_tail()
        finished = running.successes()
    result = json.loads(out.read_text())
    assert result["stats"]["ocr_calls"] == result["stats"]["segments"] == len(reference_cues(END))
    assert finished == result["stats"]["ocr_calls"]
    assert [reply["usage"]["prompt_tokens"] for reply in proxy.replies] == processor_token_counts(model, proxy.bodies)


def processor_token_counts(model, bodies: list[dict]) -> list[int]:
    """The tokens the model's Hugging Face processor makes of each chat request: its chat template
    over the request's text, and the request's picture."""
    import base64

    from PIL import Image
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(str(model))
    counts = []
    for body in bodies:
        image, text = body["messages"][0]["content"]
        picture = Image.open(io.BytesIO(base64.b64decode(image["image_url"]["url"].split(",", 1)[1]))).convert("RGB")
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text["text"]}]}]
        prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        counts.append(int(processor(text=[prompt], images=[picture], return_tensors="pt")["input_ids"].shape[1]))
    return counts
