"""Tiny random-weight vision-language models, built offline in seconds, for the vLLM engine tests.

Real architectures (the ones the presets target) shrunk to hidden size 64 and two layers, with a
~1k-token byte-level BPE trained here on a few KB of CJK and Latin text. The text they produce is
garbage; the tests assert structure (one reading per crop, cue times, concurrency, errors).

Two details keep the output non-empty: ``lm_head`` is untied from the embeddings and its rows for
special tokens are zeroed, so greedy decoding never picks an end-of-sequence or image token first
and every reply carries some text. Images are bounded inside the processor (``max_pixels``) so
each image costs at most ~16 tokens on the CPU.
"""

from __future__ import annotations

from pathlib import Path

PADDLE_SPECIALS = ["<unk>", "<|begin_of_sentence|>", "</s>", "<|end_of_sentence|>",
                   "<|IMAGE_PLACEHOLDER|>", "<|IMAGE_START|>", "<|IMAGE_END|>", "<|video_pad|>"]

# PaddleOCR-VL's chat template: user turn "User: <image>PROMPT\n", generation prompt "Assistant:\n".
PADDLE_CHAT_TEMPLATE = (
    "{{- '<|begin_of_sentence|>' -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'user' -%}User: "
    "{%- for c in message['content'] if c['type'] == 'image' -%}<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>{%- endfor -%}"
    "{%- for c in message['content'] if c['type'] == 'text' -%}{{ c['text'] }}{%- endfor -%}\n"
    "{%- elif message['role'] == 'assistant' -%}Assistant:\n"
    "{%- for c in message['content'] if c['type'] == 'text' -%}{{ c['text'] }}{%- endfor -%}</s>"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}Assistant:\n{%- endif -%}"
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


def _untie_and_mute_specials(model, special_ids: list[int]) -> None:
    """Give lm_head its own weights with zero rows for special tokens (see the module docstring)."""
    import torch

    model.config.tie_word_embeddings = False
    text_config = getattr(model.config, "text_config", None)
    if text_config is not None:
        text_config.tie_word_embeddings = False
    head = model.get_output_embeddings()
    with torch.no_grad():
        weight = torch.nn.Parameter(head.weight.detach().clone())
        weight[special_ids] = 0
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
    _untie_and_mute_specials(model, list(ids.values()))
    model.save_pretrained(target)
    # 28x28 pixels per image token: at most 16 tokens per image, at least 4.
    image_processor = PaddleOCRVLImageProcessorPil(min_pixels=4 * 28 * 28, max_pixels=16 * 28 * 28)
    PaddleOCRVLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                         chat_template=PADDLE_CHAT_TEMPLATE).save_pretrained(target)
    return target
