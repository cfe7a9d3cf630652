"""align: OCR jitter merges into one cue with the voted text; different or repeated lines stay apart."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from subextract.config import load_settings
from subextract.schema import Cue, Reading, Segment, TextLine
from subextract.stages.align import align
from subextract.stages.mask import mask_hash

SETTINGS = load_settings().align  # merge_similarity 80, merge_gap 0.09 s, min_duration 0.2 s


def segment(start: float, end: float, band: int = 0) -> Segment:
    """A Segment as the Segmenter makes it; fields added later get neutral values."""
    mask = np.zeros((16, 64), bool)
    mask[4:12, 8:56] = True
    values = dict(band=band, start=start, end=end, frame_count=max(1, round((end - start) * 25)),
                  image=np.zeros((16, 64), np.uint8), mask_hash=mask_hash(mask), mask=mask,
                  before_start=None, last_shown=end - 0.04, settled=True)
    fields = {f.name for f in dataclasses.fields(Segment)}
    return Segment(**{k: v for k, v in values.items() if k in fields})


def reading(*lines: str, confidence: float = 0.95) -> Reading:
    return Reading(lines=tuple(TextLine(text=t, confidence=confidence, box=(0, 20 * i, 100, 20 * i + 18),
                                        language="en") for i, t in enumerate(lines)))


def cues_of(*items: tuple[float, float, Reading], settings=SETTINGS) -> list[Cue]:
    return align([(segment(s, e), r) for s, e, r in items], settings)


def spans(cues: list[Cue]) -> list[tuple[float, float, str]]:
    return [(c.start, c.end, c.text) for c in cues]


def test_single_segment_becomes_a_cue():
    (cue,) = cues_of((1.0, 2.5, reading("Hello world", confidence=0.9)))
    assert (cue.start, cue.end, cue.lines, cue.languages, cue.band) == (1.0, 2.5, ("Hello world",), ("en",), 0)
    assert cue.confidence == pytest.approx(0.9)


def test_jitter_variants_merge_into_one_cue_with_the_voted_text():
    cues = cues_of(
        (1.00, 1.40, reading("Hello w0rld", confidence=0.7)),  # misread while fading in
        (1.40, 2.60, reading("Hello world", confidence=0.95)),
        (2.64, 2.80, reading("Hel1o world", confidence=0.8)),  # one-frame gap, another misread
    )
    assert spans(cues) == [(1.00, 2.80, "Hello world")]


def test_vote_weighs_duration():
    # the longer reading wins even when it comes second
    cues = cues_of((0.0, 0.3, reading("Goodbye, Mr. Smith")), (0.3, 2.0, reading("Goodbye, Mr Smith")))
    assert spans(cues) == [(0.0, 2.0, "Goodbye, Mr Smith")]


def test_different_texts_back_to_back_stay_apart():
    cues = cues_of((1.0, 2.0, reading("Hello world")), (2.0, 3.0, reading("Where are you")))
    assert spans(cues) == [(1.0, 2.0, "Hello world"), (2.0, 3.0, "Where are you")]


def test_similar_texts_are_not_merged_across_a_real_gap():
    cues = cues_of((1.0, 2.0, reading("Hello world")), (2.3, 3.0, reading("Hello world!")))
    assert len(cues) == 2


def test_repeated_identical_line_after_a_gap_is_two_cues():
    cues = cues_of((1.0, 2.0, reading("No.")), (2.32, 3.0, reading("No.")))
    assert spans(cues) == [(1.0, 2.0, "No."), (2.32, 3.0, "No.")]


def test_flicker_shorter_than_min_duration_is_dropped():
    cues = cues_of((1.0, 1.12, reading("@#~")), (2.0, 3.0, reading("Real line")), (3.5, 3.6, reading("x")))
    assert spans(cues) == [(2.0, 3.0, "Real line")]


@pytest.mark.parametrize("start, end", [
    (2.0, 2.2),  # 2.2 - 2.0 == 0.20000000000000018
    (1.0, 1.2),  # 1.2 - 1.0 == 0.19999999999999996
])
def test_cue_of_exactly_min_duration_is_kept(start, end):
    assert SETTINGS.min_duration == 0.2
    assert len(cues_of((start, end, reading("Hi!")))) == 1


def test_flicker_inside_a_cue_does_not_split_it():
    cues = cues_of((1.0, 2.0, reading("Hello world")), (2.0, 2.04, reading("Hcl")),
                   (2.04, 3.0, reading("Hello world")))
    assert spans(cues) == [(1.0, 3.0, "Hello world")]


def test_empty_readings_are_skipped():
    cues = cues_of((0.0, 1.0, Reading(lines=())), (1.0, 2.0, reading("Text")))
    assert spans(cues) == [(1.0, 2.0, "Text")]


def test_multi_line_cue():
    cues = cues_of((1.0, 2.0, reading("First line,", "second line.")),
                   (2.0, 3.0, reading("First line,", "second 1ine.")))
    (cue,) = cues
    assert cue.lines == ("First line,", "second line.") or cue.lines == ("First line,", "second 1ine.")
    assert (cue.start, cue.end) == (1.0, 3.0)
    assert cue.text == "\n".join(cue.lines)
    assert len(cue.languages) == 2


def test_bilingual_cue_keeps_both_lines():
    (cue,) = cues_of((0.5, 2.5, Reading(lines=(TextLine("你好，世界", 0.97, (0, 0, 80, 20), "zh"),
                                                TextLine("Hello, world", 0.93, (0, 24, 90, 44), "en")))))
    assert cue.lines == ("你好，世界", "Hello, world") and cue.languages == ("zh", "en")


def test_merge_gap_and_similarity_come_from_settings():
    loose = dataclasses.replace(SETTINGS, merge_gap=0.5, merge_similarity=50)
    items = ((1.0, 2.0, reading("Hello world")), (2.3, 3.0, reading("Hello there")))
    assert len(cues_of(*items)) == 2
    assert spans(cues_of(*items, settings=loose)) == [(1.0, 3.0, "Hello world")]


def test_cues_keep_their_band():
    cues = align([(segment(1.0, 2.0, band=1), reading("Top sign"))], SETTINGS)
    assert [c.band for c in cues] == [1]
