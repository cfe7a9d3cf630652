"""The vision-language engines' shared logic, without a model: prompt rendering, picture
preparation, repeated-tail cleanup, language tags, and stacked replies mapped back to crops.

``read_pictures`` takes the engine's request function as an argument; here it is a scripted
function over the pictures it receives (the real engines are exercised in test_vllm_engine.py
and test_openai_engine.py)."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
from PIL import Image

from subextract.config import load_settings
from subextract.schema import Reading
from subextract.stages.ocr import OcrFailure
from subextract.stages.ocr.vlm import (Reply, SendFailure, chunks, clean_repeated_tail, make_reading, prepare,
                                       read_pictures, reply_lines, split_language_tag, stack_strips, to_png,
                                       token_bound)


def ocr_settings(**changes):
    return dataclasses.replace(load_settings().ocr, **changes)


def crop(height: int = 40, width: int = 300, value: int = 0) -> np.ndarray:
    return np.full((height, width), value, np.uint8)


# -- preparation ------------------------------------------------------------------------------

def test_prepare_scales_down_to_the_limits_and_never_up():
    assert prepare(crop(216, 1920), max_side=1280, max_pixels=0).shape == (144, 1280)
    assert prepare(crop(216, 1920), max_side=0, max_pixels=1280 * 144).shape == (144, 1280)
    small = crop(30, 200)
    assert prepare(small, max_side=1280, max_pixels=1280 * 144) is small


def test_stack_strips_pads_to_the_widest_and_separates_strips():
    stacked = stack_strips([crop(40, 300, 200), crop(20, 100, 100)])
    gap = 40 // 4
    assert stacked.shape == (40 + gap + 20, 300)
    assert (stacked[:40] == 200).all() and (stacked[40:40 + gap] == 0).all()
    assert (stacked[40 + gap:, :100] == 100).all() and (stacked[40 + gap:, 100:] == 0).all()


def test_png_is_stored_lossless_and_in_the_servers_channel_order():
    """Not deflated (a smooth crop, which zlib would shrink, keeps all its bytes: writing is then
    ~0.3 ms a crop, not 15-50 ms), and PIL, as vLLM reads it, gets back every pixel: grey as grey,
    OpenCV's BGR as RGB, a view into a larger frame as its own pixels."""
    frame = np.random.default_rng(0).integers(0, 256, (100, 400, 3), dtype=np.uint8)
    smooth = np.tile(np.arange(256, dtype=np.uint8), (144, 5))
    for picture, expected in ((smooth, smooth), (frame, frame[..., ::-1]), (frame[10:60, 20:300, 1], None)):
        png = to_png(picture)
        with Image.open(io.BytesIO(png)) as decoded:
            assert decoded.format == "PNG" and decoded.mode == ("L" if picture.ndim == 2 else "RGB")
            assert np.array_equal(np.asarray(decoded), picture if expected is None else expected)
    assert len(to_png(smooth)) >= smooth.size


def test_chunks():
    assert chunks(5, 2) == [[0, 1], [2, 3], [4]]
    assert chunks(3, 1) == [[0], [1], [2]]
    assert chunks(0, 8) == []


# -- reply parsing ----------------------------------------------------------------------------

def test_repeated_tail_is_cut_to_one_copy():
    assert clean_repeated_tail("你好" + "再见" * 12, 10) == "你好再见"
    assert clean_repeated_tail("Hello\nHello\n" * 10, 10) == "Hello\n"


def test_short_repetitions_and_single_characters_are_text():
    assert clean_repeated_tail("哈哈哈哈哈哈", 10) == "哈哈哈哈哈哈"          # a laugh, not a loop
    assert clean_repeated_tail("Nooooooooooooooooooo", 10) == "Nooooooooooooooooooo"  # 1-char tails stay
    assert clean_repeated_tail("ab" * 20, 0) == "ab" * 20                   # 0 turns it off


def test_reply_lines_strip_and_drop_empty_lines():
    assert reply_lines("  今天天气很好 \n\n It is sunny today \n", 10) == ["今天天气很好", "It is sunny today"]
    assert reply_lines("\n \n", 10) == []


def test_language_tags():
    assert split_language_tag("[en] Hello") == ("en", "Hello")
    assert split_language_tag("[zh-Hans]你好") == ("zh-hans", "你好")
    assert split_language_tag("[Music] la la") == (None, "[Music] la la")
    assert split_language_tag("Hello [en]") == (None, "Hello [en]")


def test_reading_lines_get_boxes_confidence_and_the_models_tags():
    reading = make_reading(["[zh] 你好", "[en] Hello"], 0.8, (40, 300), tagged=True)
    assert [(line.text, line.language, line.box) for line in reading.lines] == [
        ("你好", "zh", (0, 0, 300, 20)), ("Hello", "en", (0, 20, 300, 40))]
    assert reading.confidence == pytest.approx(0.8)
    untagged = make_reading(["[zh] 你好"], 1.0, (40, 300), tagged=False)
    assert untagged.lines[0].text == "[zh] 你好" and untagged.lines[0].language == "und"


# -- prompts ----------------------------------------------------------------------------------

@pytest.mark.parametrize("preset, prompt", [("hunyuanocr", "提取图片中的字幕。"), ("paddleocr-vl", "OCR:"),
                                            ("deepseek-ocr", "Free OCR.")])
def test_presets_carry_their_models_prompts(preset, prompt):
    settings = load_settings(preset).ocr
    assert settings.prompt == prompt and settings.engine == "vllm" and settings.model
    assert settings.engine_options["enable_prefix_caching"] is False
    assert settings.engine_options["mm_processor_cache_gb"] == 0
    assert settings.engine_options["limit_mm_per_prompt"] == {"image": 1}


def test_deepseek_prompt_template_renders_the_raw_prompt():
    from subextract.stages.ocr.vllm_engine import render_prompt

    settings = load_settings("deepseek-ocr").ocr
    assert render_prompt(None, settings) == "<image>\nFree OCR."


def test_qwen_preset_asks_for_language_tags_and_bounds_pixels():
    settings = load_settings("qwen2.5-vl").ocr
    assert settings.tagged_lines and "[en]" in settings.prompt
    assert settings.max_pixels <= 28 * 28 * 256


# -- stacking ---------------------------------------------------------------------------------

class ScriptedModel:
    """Replies to each picture from its height: a stack of k 40-px strips (k*40 + (k-1)*10 px)
    gets ``stacked(k)``, a single strip gets its brightness as text."""

    def __init__(self, stacked):
        self.stacked = stacked
        self.calls: list[list[tuple[int, int]]] = []
        self.limits: list[list[int]] = []

    def __call__(self, pictures, limits):
        self.calls.append([p.shape for p in pictures])
        self.limits.append(list(limits))
        replies = []
        for picture in pictures:
            strips = (picture.shape[0] + 10) // 50
            text = self.stacked(strips) if strips > 1 else f"strip {int(picture.max())}"
            replies.append(Reply(text=text, confidence=0.5))
        return replies


def strips(count: int) -> list[np.ndarray]:
    return [crop(40, 300, value=10 * (i + 1)) for i in range(count)]


def texts(readings: list[Reading]) -> list[str]:
    return [reading.text for reading in readings]


def test_one_request_per_crop_without_stacking():
    model = ScriptedModel(stacked=lambda k: "")
    readings = read_pictures(strips(3), ocr_settings(stack=1), model)
    assert texts(readings) == ["strip 10", "strip 20", "strip 30"]
    assert model.calls == [[(40, 300)] * 3]


def test_stacked_reply_with_one_line_per_strip_maps_back_in_order():
    model = ScriptedModel(stacked=lambda k: "\n".join(f"line {i}" for i in range(k)))
    readings = read_pictures(strips(5), ocr_settings(stack=2), model)
    assert texts(readings) == ["line 0", "line 1", "line 0", "line 1", "strip 50"]
    assert model.calls == [[(90, 300), (90, 300), (40, 300)]]  # two stacks and the odd one out, one call
    assert all(r.confidence == 0.5 for r in readings)


def test_stacked_reply_with_the_wrong_line_count_is_read_strip_by_strip():
    model = ScriptedModel(stacked=lambda k: "a two-line\nsubtitle\nand one more")
    readings = read_pictures(strips(4), ocr_settings(stack=2), model)
    assert texts(readings) == ["strip 10", "strip 20", "strip 30", "strip 40"]
    assert model.calls == [[(90, 300), (90, 300)], [(40, 300)] * 4]


def test_failure_part_way_keeps_what_was_read():
    def failing(pictures, limits):
        raise SendFailure("OCR server http://x/v1 is unreachable", [Reply("first"), None, None])

    with pytest.raises(OcrFailure, match="unreachable") as caught:
        read_pictures(strips(3), ocr_settings(stack=1), failing)
    first, *rest = caught.value.readings
    assert first.text == "first" and rest == [None, None]


# -- reply length -------------------------------------------------------------------------------

def test_reply_bound_follows_the_text_lines():
    settings = ocr_settings(line_tokens=3.0, max_tokens=128)
    # one line 600 px wide and 50 high: 3 x 12 = 36 tokens, plus the slack
    assert token_bound([(0, 0, 600, 50)], settings) == 36 + 8
    # two such lines need twice that; a very long line is held at max_tokens
    assert token_bound([(0, 0, 600, 50), (0, 60, 600, 110)], settings) == 72 + 8
    assert token_bound([(0, 0, 4000, 20)], settings) == 128


def test_reply_bound_is_max_tokens_without_lines_or_when_off():
    assert token_bound(None, ocr_settings(line_tokens=3.0, max_tokens=100)) == 100
    assert token_bound([], ocr_settings(line_tokens=3.0, max_tokens=100)) == 100
    assert token_bound([(0, 0, 600, 50)], ocr_settings(line_tokens=0.0, max_tokens=100)) == 100


def test_each_request_gets_its_strips_bound_and_a_stack_their_sum():
    model = ScriptedModel(stacked=lambda k: "one line only")
    boxes = [[(0, 0, 100, 20)], [(0, 0, 200, 20)], [(0, 0, 300, 20)], []]
    settings = ocr_settings(stack=2, line_tokens=2.0, max_tokens=64)
    read_pictures(strips(4), settings, model, boxes)
    bounds = [10 + 8, 20 + 8, 30 + 8, 64]
    # stacked first (the sum, held at max_tokens); the replies miss a line, so each strip is read again with its own
    assert model.limits == [[bounds[0] + bounds[1], 64], bounds]
