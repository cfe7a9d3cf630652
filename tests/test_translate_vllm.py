"""Translation against a real vLLM (its CPU build) running a tiny random-weight Hunyuan-MT built
offline, in-process and through ``python -m vllm.entrypoints.openai.api_server`` on 127.0.0.1.

A random model never follows the numbered-line protocol, so every batch goes down the whole
ladder (retry → split → cue by cue): the tests assert the output's shape — the same cues at the
same times, a non-empty translation for each, the bilingual layout — and the traffic: numbered
batches with context, retries at the retry temperature, glossary terms in the prompts, requests
in flight together, and a server killed half-way.

vLLM lives in its own virtualenv (.venv-vllm, scripts/setup_vllm.sh): under the main one this
module is skipped and test_vllm_suite.py runs it there instead.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pysrt
import pytest
import yaml

pytest.importorskip("vllm", reason="runs in .venv-vllm, through test_vllm_suite.py")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")             # GiB; the default takes 92% of RAM
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")     # in-process: half the start time and RAM

from subextract.cli import main  # noqa: E402
from subextract.stages.align import Cue  # noqa: E402
from subextract.stages.write import render_vtt  # noqa: E402
from vlm_fixtures import (REPO, SAMPLE, SAMPLE_SRT, RecordingProxy, VllmServer, recording, serving,  # noqa: E402
                          tiny_translator)

pytestmark = pytest.mark.slow
END = 12.0  # the sample's first three cues
MAX_MODEL_LEN = 2048


def translator_config(path) -> str:
    """Short replies and a small engine: the model's text is garbage anyway."""
    settings = {"translate": {"max_tokens": 24, "batch_size": 4, "context_cues": 2, "concurrency": 4,
                              "engine_options": {"dtype": "float32", "max_model_len": MAX_MODEL_LEN,
                                                 "max_num_seqs": 16, "enforce_eager": True,
                                                 "enable_prefix_caching": False}}}
    path.write_text(yaml.safe_dump(settings))
    return str(path)


def run_cli(*argv: object) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, err.getvalue()


def times(subs) -> list[tuple[int, int]]:
    return [(cue.start.ordinal, cue.end.ordinal) for cue in subs]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_translator(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def server(model, tmp_path_factory) -> Iterator[VllmServer]:
    """One server for the module; the last test kills it."""
    with serving(model, tmp_path_factory.mktemp("server") / "vllm.log", max_model_len=MAX_MODEL_LEN) as running:
        yield running


@pytest.fixture
def proxy(server) -> Iterator[RecordingProxy]:
    with recording(server.url) as proxy:
        yield proxy


def test_webvtt_file_in_process(model, tmp_path):
    reference = pysrt.open(str(SAMPLE_SRT))
    webvtt_file = tmp_path / "zh_bottom.zh.vtt"
    webvtt_file.write_text(render_vtt([Cue(c.start.ordinal / 1000, c.end.ordinal / 1000, tuple(c.text.splitlines()),
                                           ("zh",) * len(c.text.splitlines()), 1.0) for c in reference]))
    out = tmp_path / "zh_bottom.en.json"
    code, err = run_cli("translate", webvtt_file, "--to", "en", "--translator-model", model,
                        "--config", translator_config(tmp_path / "t.yaml"), "--format", "json", "-o", out)
    assert code == 0, err
    result = json.loads(out.read_text())
    assert [(round(c["start"] * 1000), round(c["end"] * 1000)) for c in result["cues"]] == times(reference)
    assert all(c["text"].strip() and c["languages"] == ["en"] for c in result["cues"])
    stats = result["translation"]
    assert stats["from"] == "zh" and stats["to"] == "en" and stats["cues"] == len(reference)
    # Garbage never matches the numbering: every batch was retried, split, and read cue by cue.
    assert stats["retries"] > 0 and stats["splits"] > 0 and stats["single"] == len(reference)
    assert stats["kept_original"] == 0


def test_video_with_translation_through_a_server(proxy, tmp_path):
    original = tmp_path / "zh_bottom.zh.srt"
    code, err = run_cli(SAMPLE, "--lang", "zh", "--end", END, "--region", "bottom", "--translate", "en",
                        "--translator-server", proxy.url, "--config", translator_config(tmp_path / "t.yaml"),
                        "-o", original)
    assert code == 0, err
    translated = tmp_path / "zh_bottom.en.srt"
    source, target = pysrt.open(str(original)), pysrt.open(str(translated))
    assert len(source) == 3 and times(target) == times(source)
    assert all(cue.text.strip() for cue in target)
    prompts = [body["messages"][-1]["content"] for body in proxy.bodies]
    assert any("1: " in p and "2: " in p for p in prompts)                 # numbered batches went first
    assert {body["temperature"] for body in proxy.bodies} == {0.0, 0.7}     # retries at the retry temperature
    assert any("参考上面的信息" in p for p in prompts)                          # cue-by-cue requests carry context
    assert proxy.max_in_flight() >= 2


def test_bilingual_with_glossary(proxy, tmp_path):
    first_line = pysrt.open(str(SAMPLE_SRT))[0].text.splitlines()[0]
    term = first_line[:2]
    glossary = tmp_path / "terms.tsv"
    glossary.write_text(f"# pinned names\n{term}\tPINNED-TERM\n")
    out = tmp_path / "zh_bottom.zh+en.srt"
    code, err = run_cli("translate", SAMPLE_SRT, "--to", "en", "--bilingual", "--glossary", glossary,
                        "--translator-server", proxy.url, "--config", translator_config(tmp_path / "t.yaml"),
                        "-o", out)
    assert code == 0, err
    reference, bilingual = pysrt.open(str(SAMPLE_SRT)), pysrt.open(str(out))
    assert times(bilingual) == times(reference)
    for original, both in zip(reference, bilingual):
        lines = both.text.splitlines()
        assert lines[:-1] == original.text.splitlines() and lines[-1].strip()
    prompts = [body["messages"][-1]["content"] for body in proxy.bodies]
    assert any(f"{term} 翻译成 PINNED-TERM" in p for p in prompts)
    assert all("PINNED-TERM" not in p for p in prompts if term not in p)


def test_batch_with_translation(proxy, tmp_path):
    out = tmp_path / "subs"
    argv = ["batch", SAMPLE, "--out", out, "--lang", "zh", "--end", 8, "--region", "bottom", "--translate", "en",
            "--translator-server", proxy.url, "--config", translator_config(tmp_path / "t.yaml"), "-q"]
    code, err = run_cli(*argv)
    assert code == 0, err
    original, translated = pysrt.open(str(out / "zh_bottom.zh.srt")), pysrt.open(str(out / "zh_bottom.en.srt"))
    assert len(original) == 2 and times(translated) == times(original)
    record = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()][-1]
    assert record["status"] == "done" and record["outputs"] == ["zh_bottom.zh.srt", "zh_bottom.en.srt"]
    assert record["translation"]["cues"] == 2
    requests = len(proxy.bodies)
    assert run_cli(*argv) == (0, "") and len(proxy.bodies) == requests  # a re-run skips the done video


def test_server_killed_mid_translation(server, proxy, tmp_path):
    """Runs last: it kills the module's server once translation has begun (as the first reply
    is on its way: the run cannot finish first however slow the machine). The extracted cues
    are kept, nothing translated is half-written, one error line, exit code 3."""
    original = tmp_path / "zh_bottom.zh.srt"
    config = tmp_path / "t.yaml"
    translator_config(config)
    settings = yaml.safe_load(config.read_text())
    settings["translate"].update(concurrency=1, request_retries=1, batch_size=1)
    config.write_text(yaml.safe_dump(settings))
    proxy.before_reply = lambda answered: server.kill()
    run = subprocess.run([sys.executable, "-m", "subextract", str(SAMPLE), "--lang", "zh", "--region", "bottom",
                          "--translate", "en", "--translator-server", proxy.url, "--config", str(config),
                          "-o", str(original)], cwd=REPO, stderr=subprocess.PIPE, text=True, timeout=600)
    err = run.stderr
    assert len(proxy.completions) == 1, err
    assert run.returncode == 3, err
    errors = [line for line in err.splitlines() if line.startswith("subextract: error:")]
    assert len(errors) == 1 and "translation failed" in errors[0] and proxy.url in errors[0], err
    assert len(pysrt.open(str(original))) == len(pysrt.open(str(SAMPLE_SRT)))
    assert not (tmp_path / "zh_bottom.en.srt").exists()
    assert not list(tmp_path.glob(".*.part"))
