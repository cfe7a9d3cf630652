"""Which of the segmenter's line boxes the embedded engine reads (stages/ocr/rapid.py): a
subtitle's lines share one size; a speck of the picture boxed beside them is no line."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from subextract.config import load_settings
from subextract.schema import Reading, TextLine
from subextract.stages.ocr import create_engine
from subextract.stages.ocr.rapid import RapidOcrEngine, subtitle_boxes

WQY = "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc"


@pytest.mark.parametrize(("boxes", "kept"), [
    ([(340, 45, 514, 86), (119, 102, 178, 110)], [(340, 45, 514, 86)]),  # a white scrap: 8 px against 41
    ([(300, 10, 700, 50), (420, 48, 580, 66)], [(300, 10, 700, 50), (420, 48, 580, 66)]),  # "sure." under a line
    ([(300, 10, 700, 50), (300, 50, 700, 90)], [(300, 10, 700, 50), (300, 50, 700, 90)]),
    ([], []),
])
def test_boxes_under_a_third_of_the_tallest_are_no_subtitle_line(boxes, kept):
    assert list(subtitle_boxes(boxes)) == kept


def _line_with_a_scrap(text: str) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(WQY, 24)
    band = Image.new("L", (854, 110), 120)
    draw = ImageDraw.Draw(band)
    x = (854 - draw.textlength(text, font=font)) / 2
    draw.text((x, 55), text, font=font, fill=250, stroke_width=1, stroke_fill=20)
    draw.text((x, 55), text, font=font, fill=250)
    draw.ellipse((120, 100, 178, 112), fill=245)  # a white scrap low in the band
    return np.asarray(band), (int(x - 15), 45, int(x + 15 + draw.textlength(text, font=font)), 88)


@pytest.mark.parametrize("lang", ["zh", "all"])
def test_a_speck_beside_the_line_is_not_read_nor_sends_the_band_to_the_detector(lang, monkeypatch):
    """The scrap's box reads as "一" below the trust: it sent the whole band to the detector,
    which joined what stood beside the line (a tripod's leg, as "/") to it."""
    engine = create_engine(replace(load_settings().ocr, lang=lang))

    def no_detector(self, bgr):
        raise AssertionError("the band went to the detector")

    monkeypatch.setattr(RapidOcrEngine, "_read", no_detector)
    band, box = _line_with_a_scrap("服务器断开连接")
    (reading,) = engine.read_batch([band], [(box, (119, 102, 178, 110))])
    assert [line.text for line in reading.lines] == ["服务器断开连接"]



@pytest.mark.parametrize(("confidence", "trusted"), [(0.97, True), (0.95, True), (0.93, False), (0.90, False)])
def test_a_mask_line_read_below_095_goes_to_the_detector(confidence, trusted):
    """A Latin word beside CJK read from the mask's box at 0.90 was wrong (`sic 协议插件` for
    `SILC 协议插件`, a 360p re-upload) where the detector's own, tighter box read it right: by
    default a mask line's reading is trusted from 0.95 up."""
    engine = RapidOcrEngine(load_settings().ocr)
    assert engine.trusted(TextLine(text="SILC 协议插件", confidence=confidence, box=(0, 0, 130, 40))) is trusted


def _translucent_line(seed: int) -> tuple[np.ndarray, str]:
    """A 720p band: a 55 % white line over a bright, blotchy picture (leaves against the sky)."""
    import cv2
    from PIL import Image, ImageDraw, ImageFont

    rng = np.random.default_rng(seed)
    blotches = rng.uniform(150, 255, (218 // 16 + 1, 1280 // 16 + 1)).astype(np.float32)
    picture = cv2.resize(blotches, (1280, 218), interpolation=cv2.INTER_CUBIC)
    text, glyphs = "文件传送会话不存在", Image.new("L", (1280, 218), 0)
    draw = ImageDraw.Draw(glyphs)
    font = ImageFont.truetype(WQY, 40)
    draw.text(((1280 - draw.textlength(text, font=font)) / 2, 130), text, font=font, fill=255)
    alpha = np.asarray(glyphs, np.float32) / 255 * 0.55
    return np.clip(picture * (1 - alpha) + 255 * alpha, 0, 255).astype(np.uint8), text


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_faint_line_the_detector_misses_at_det_side_is_found_at_the_bands_own_scale(seed):
    """Translucent white over bright leaves, a 720p band halved to 640 px: the detector found no
    line and the segment was read as nothing, though the recogniser read it at 0.9999."""
    band, text = _translucent_line(seed)
    settings = load_settings().ocr
    assert settings.det_side < 960 <= settings.fine_det_side
    (without,) = RapidOcrEngine(replace(settings, fine_det_side=0)).read_batch([band])
    assert without.lines == ()
    (reading,) = RapidOcrEngine(settings).read_batch([band])
    assert [line.text for line in reading.lines] == [text]


def _centred_line(text: str, centre: float = 640) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """A 1280x218 band with ``text`` at ``centre``; the box of all but its first glyph."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(WQY, 40)
    band = Image.new("L", (1280, 218), 200)
    draw = ImageDraw.Draw(band)
    width = draw.textlength(text, font=font)
    x = centre - width / 2
    draw.text((x, 130), text, font=font, fill=255, stroke_width=2, stroke_fill=60)
    first = draw.textlength(text[0], font=font)
    return np.asarray(band), (int(x + first + 4), 122, int(x + width + 4), 180)


@pytest.mark.parametrize(("centre", "read"), [(640, "一次性密码支持"), (300, "次性密码支持")])
def test_a_centred_line_whose_box_missed_a_glyph_is_read_from_the_symmetric_box(centre, read):
    """The detector's box of a faint line over a bright sky missed its first glyph ("一"): a
    subtitle is centred, so the box is made symmetric and read again; a line placed off the
    middle is not (its box says nothing of a missed glyph)."""
    band, box = _centred_line("一次性密码支持", centre)
    bgr = np.repeat(band[..., None], 3, axis=2)
    engine = RapidOcrEngine(load_settings().ocr)
    line = engine.recognise_line(bgr, box)
    assert line.text == "次性密码支持"
    assert engine._whole_centred_line(bgr, line).text == read


@pytest.mark.parametrize(("width", "finer"), [(1280, True), (1920, True), (720, False), (640, False)])
def test_the_detector_looks_again_only_where_it_sees_the_band_larger(width, finer):
    """A vertical video's 720 px band is seen at 640 px already: a second look at 720 px cost as
    much as the first and found nothing in its segments of bare picture."""
    engine = RapidOcrEngine(load_settings().ocr)
    assert engine._finer(np.zeros((200, width, 3), np.uint8)) is finer


def test_the_second_look_keeps_only_lines_read_with_trust():
    """At the larger size the detector boxed a steel frame across a 480p band, read as "XK" at
    0.92: a cue of its own where the picture was bare."""
    engine = RapidOcrEngine(load_settings().ocr)
    junk = TextLine("XK", 0.92, (9, 0, 853, 89))
    line = TextLine("文件传送会话不存在", 0.9999, (467, 120, 808, 187))
    assert engine._trusted_only(Reading(lines=(junk, line))).lines == (line,)
