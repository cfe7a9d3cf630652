"""A repeated subtitle reuses its earlier reading; a near-repeat (one character changed) must not.

Units: the pipeline's reading cache on segment masks drawn here. End to end: a clip burned with
libass where a line really repeats, with a near-repeat between the two showings."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import burn_subtitles, write_ass, _font_dir, GRADIENT
from test_segment import SETTINGS, background, with_text

from subextract.pipeline.run import _ReadingCache
from subextract.schema import Segment
from subextract.scoring import TimedText
from subextract.stages.mask import analysis_view, mask_hash, text_mask


def segment_showing(text: str, frame: int = 0, band: int = 0, kind: str = "flat") -> Segment:
    mask = text_mask(analysis_view(with_text(background(frame, kind), text), SETTINGS.analysis_width), SETTINGS)
    return Segment(band=band, start=float(frame), end=frame + 1.0, frame_count=25, settled=True, before_start=None,
                   last_shown=frame + 0.96, image=np.zeros((1, 1), np.uint8), mask_hash=mask_hash(mask), mask=mask)


def cache_with(*segments: Segment) -> _ReadingCache:
    cache = _ReadingCache(SETTINGS)
    for key, segment in enumerate(segments):
        cache.remember(segment, key)
    return cache


def test_the_same_line_again_reuses_the_earlier_reading():
    first = segment_showing("We meet at ten", frame=0)
    again = segment_showing("We meet at ten", frame=3)  # other grain, same strokes
    assert cache_with(first).lookup(again) == 0


def test_the_reading_reused_is_the_matching_one():
    cache = cache_with(segment_showing("Where are you going?"), segment_showing("We meet at ten"))
    assert cache.lookup(segment_showing("We meet at ten", frame=2)) == 1


def test_a_different_line_is_read_anew():
    assert cache_with(segment_showing("We meet at ten")).lookup(segment_showing("Where are you going?")) is None


def test_the_same_line_in_another_band_is_read_anew():
    first = segment_showing("We meet at ten", band=0)
    assert cache_with(first).lookup(segment_showing("We meet at ten", band=1)) is None


def test_a_near_repeat_is_read_anew():
    """'ten' and 'tea' on a flat band differ by 1.3 % of their strokes: only the changed glyph's
    own window tells them apart."""
    assert cache_with(segment_showing("We meet at ten")).lookup(segment_showing("We meet at tea", frame=1)) is None


def test_a_near_repeat_with_another_hash_is_read_anew():
    assert cache_with(segment_showing("Call me at 5")).lookup(segment_showing("Call me at 6", frame=1)) is None


# --------------------------------------------------------------------------------------------
# End to end
# --------------------------------------------------------------------------------------------

REPEAT = "妾拟将身嫁与，一生休"
NEAR = "妾拟将身嫁与，一生修"  # one character changed
# Short showings so that no prescan keyframe sees the line in most frames (it would be a logo).
ZH_REPEAT_CUES = [(0.40, 1.20, REPEAT), (2.40, 3.20, NEAR), (4.40, 5.20, REPEAT)]


LETTERBOX = "color=c=0x101010"  # a film's black bar: the subtitle's strokes are the same in every frame


@pytest.fixture(scope="module", params=["letterbox", "gradient"])
def zh_repeat_clip(request, media, tmp_path_factory, cjk_font):
    ass = write_ass(media / "zh_repeat.ass", ZH_REPEAT_CUES, cjk_font.family)
    source = LETTERBOX if request.param == "letterbox" else GRADIENT
    return request.param, burn_subtitles(media / f"zh_repeat_{request.param}.mp4", ass,
                                         _font_dir(tmp_path_factory, cjk_font), source)


def test_a_repeated_line_is_read_once_and_the_near_repeat_on_its_own(zh_repeat_clip):
    from subextract import extract

    _, clip = zh_repeat_clip
    result = extract(str(clip))
    assert [(c.start, c.end, c.text) for c in result.cues] == ZH_REPEAT_CUES
    assert result.stats.segments == 3
    assert (result.stats.ocr_calls, result.stats.reused_readings) == (2, 1)


EN_REPEAT_CUES = [(0.40, 1.20, "We will meet again at ten"), (2.40, 3.20, "Somewhere else entirely"),
                  (4.40, 5.20, "We will meet again at ten")]


@pytest.fixture(scope="module")
def en_repeat_clip(media, tmp_path_factory, latin_font):
    ass = write_ass(media / "en_repeat.ass", EN_REPEAT_CUES, latin_font.family)
    return burn_subtitles(media / "en_repeat.mp4", ass, _font_dir(tmp_path_factory, latin_font), GRADIENT)


def test_a_repeated_latin_line_over_a_moving_picture_is_read_once(en_repeat_clip):
    from subextract import extract

    result = extract(str(en_repeat_clip))
    assert [TimedText(c.start, c.end, c.text) for c in result.cues] == [TimedText(*c) for c in EN_REPEAT_CUES]
    assert result.stats.reused_readings == 1
