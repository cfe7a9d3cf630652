"""The transformers engine (PyTorch ``generate``, batched) on the CPU with the tiny random-weight
PaddleOCR-VL of vlm_fixtures: batching must not change what is read (left padding), the
pipeline reads every segment with it, and the in-process vLLM engine reads the same text from
the same model and prompt.

torch and transformers live in .venv-vllm: under the main virtualenv this module is skipped and
test_vllm_suite.py runs it there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import json
import multiprocessing
import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pytest.importorskip("torch", reason="runs in .venv-vllm, through test_vllm_suite.py")
pytest.importorskip("transformers", reason="runs in .venv-vllm, through test_vllm_suite.py")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

from subextract.cli import main  # noqa: E402
from subextract.config import load_settings  # noqa: E402
from subextract.errors import SubextractError  # noqa: E402
from subextract.stages.ocr import create_engine  # noqa: E402
from subextract.stages.ocr import replicas as replicas_module  # noqa: E402
from vlm_fixtures import (SAMPLE, TINY_ENGINE_OPTIONS, reference_cues, tiny_config, tiny_hunyuan_ocr,  # noqa: E402
                          tiny_model)

pytestmark = pytest.mark.slow
FRAME = 0.04  # the sample is 25 fps
END = 12.0    # the sample's first three cues


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_model(tmp_path_factory.getbasetemp())


def settings_for(model, engine: str = "transformers", **options):
    settings = load_settings(overrides={"ocr": {"engine": engine, "model": str(model), "prompt": "OCR:",
                                                "max_tokens": 12}})
    base = {"dtype": "float32"} if engine == "transformers" else TINY_ENGINE_OPTIONS
    return dataclasses.replace(settings.ocr, engine_options={**base, **options})


def engine_for(model, engine: str = "transformers", **options):
    return create_engine(settings_for(model, engine, **options))


def band_crops(count: int) -> list[np.ndarray]:
    """Crops of different sizes: a different number of visual tokens each, so a batch's prompts
    differ in length and padding matters."""
    rng = np.random.default_rng(3)
    return [rng.integers(0, 256, (56 + 24 * (i % 3), 320 + 160 * i), dtype=np.uint8) for i in range(count)]


def texts(readings) -> list[str]:
    return [reading.text for reading in readings]


def test_batched_reads_what_one_at_a_time_reads(model):
    crops = band_crops(5)
    one = engine_for(model, batch_size=1).read_batch(crops)
    batched = engine_for(model, batch_size=4).read_batch(crops)  # a batch of 4, then one of 1
    assert len(one) == len(batched) == len(crops)
    assert all(reading.lines for reading in one)
    assert texts(batched) == texts(one)
    for reading in batched:
        assert 0 < reading.confidence <= 1  # mean token probability from generate's scores


def test_random_weights_from_the_config_alone(model, tmp_path):
    config_only = tmp_path / "config-only"
    shutil.copytree(model, config_only, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    engine = engine_for(config_only, load_format="dummy", batch_size=2)
    readings = engine.read_batch(band_crops(3))
    assert len(readings) == 3 and all(reading.lines for reading in readings)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vLLM beside transformers")
def test_reads_what_the_vllm_engine_reads(model):
    crops = band_crops(4)
    ours = engine_for(model, batch_size=4)
    reference = engine_for(model, "vllm")
    assert ours._prompt == reference._prompt  # both render the model's chat template the same way
    assert texts(ours.read_batch(crops)) == texts(reference.read_batch(crops))


def test_hunyuanocr_preset(tmp_path_factory):
    """HunyuanOCR's architecture through its preset (its subtitle prompt, repetition penalty and
    tail cleanup), one at a time and batched."""
    model = tiny_hunyuan_ocr(tmp_path_factory.getbasetemp())
    settings = load_settings("hunyuanocr", {"ocr": {"engine": "transformers", "model": str(model), "max_tokens": 12}})
    crops = band_crops(3)
    readings = {}
    for batch in (1, 3):
        engine = create_engine(dataclasses.replace(settings.ocr, engine_options={"dtype": "float32",
                                                                                "batch_size": batch}))
        assert engine._prompt.endswith("提取图片中的字幕。<｜hy_Assistant｜>")
        readings[batch] = engine.read_batch(crops)
    assert len(readings[1]) == len(crops) and all(reading.lines for reading in readings[1])
    assert texts(readings[3]) == texts(readings[1])


@pytest.mark.parametrize("replicas", [1, 2])
def test_pipeline_reads_every_segment(model, tmp_path, replicas):
    """One engine, or two engine processes behind --ocr-replicas (stages/ocr/replicas.py)."""
    out = tmp_path / "cues.json"
    config = tiny_config(tmp_path / "tiny.yaml", engine_options={"dtype": "float32", "batch_size": 8})
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(SAMPLE), "--engine", "transformers", "--model", str(model), "--config", str(config),
                     "--ocr-replicas", str(replicas), "--end", str(END), "--region", "bottom", "--format", "json",
                     "-o", str(out)])
    assert code == 0, err.getvalue()
    result = json.loads(out.read_text())
    expected = reference_cues(END)
    found = [t for c in result["cues"] for t in (c["start"], c["end"])]
    assert found == pytest.approx([t for cue in expected for t in cue], abs=FRAME + 1e-3)
    assert result["stats"]["ocr_calls"] == result["stats"]["segments"] == len(expected)
    assert all(cue["lines"] for cue in result["cues"])


def test_missing_model_is_one_clear_line(tmp_path):
    settings = dataclasses.replace(load_settings().ocr, engine="transformers", model=str(tmp_path / "no-such-model"))
    with pytest.raises(SubextractError, match="transformers could not load model .*no-such-model") as caught:
        create_engine(settings)
    assert "\n" not in str(caught.value)


def test_replicas_read_what_one_engine_reads_from_several_threads_at_once(model, monkeypatch):
    """--ocr-replicas 2: two engine processes behind one read_batch; each caller's readings in its
    batch's order, the same texts one engine reads, callers on several threads served at once.
    The chunk size is the parent's choice: made small here, a few crops show the cut."""
    monkeypatch.setattr(replicas_module, "MIN_CHUNK", 2)
    crops = band_crops(5)
    expected = texts(engine_for(model, batch_size=4).read_batch(crops))
    replicated = create_engine(dataclasses.replace(settings_for(model, batch_size=4), replicas=2))
    replicas = list(replicated._replicas)
    try:
        pids = {replica._process.pid for replica in replicas}
        assert len(pids) == 2 and os.getpid() not in pids
        assert texts(replicated.read_batch(crops)) == expected
        with ThreadPoolExecutor(3) as pool:
            batches = list(pool.map(lambda order: [crops[i] for i in order], ([4, 3, 2, 1, 0], [1], [2, 0])))
            results = list(pool.map(replicated.read_batch, batches))
        assert [texts(r) for r in results] == [[expected[i] for i in order]
                                                for order in ([4, 3, 2, 1, 0], [1], [2, 0])]
        assert replicated.read_batch([]) == []
        # A batch below two chunks' worth goes whole to one replica; a larger one is cut between them.
        before = [replica.read for replica in replicas]
        assert texts(replicated.read_batch(crops[:3])) == expected[:3]
        assert sorted(replica.read - b for replica, b in zip(replicas, before)) == [0, 3]
        before = [replica.read for replica in replicas]
        assert texts(replicated.read_batch(crops[:4])) == expected[:4]
        assert [replica.read - b for replica, b in zip(replicas, before)] == [2, 2]
    finally:
        replicated.close()
    assert not any(replica._process.is_alive() for replica in replicas)


def test_a_replica_that_cannot_start_is_one_line_and_leaves_no_process(tmp_path):
    settings = dataclasses.replace(load_settings().ocr, engine="transformers", model=str(tmp_path / "no-such-model"),
                                   replicas=2)
    before = set(multiprocessing.active_children())
    with pytest.raises(SubextractError, match="transformers could not load model .*no-such-model") as caught:
        create_engine(settings)
    assert "\n" not in str(caught.value)
    assert set(multiprocessing.active_children()) <= before
