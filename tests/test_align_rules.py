"""align's decisions at their limits: merge gap and similarity just inside and outside, the vote by
duration x confidence**n, flicker dropped and bridged. Every limit is read from the settings."""

from __future__ import annotations

import dataclasses

import pytest
from rapidfuzz import fuzz

from test_align import SETTINGS, cues_of, reading, segment, spans

from subextract.stages.align import VoteHistory, align

GAP = SETTINGS.merge_gap
SIMILARITY = SETTINGS.merge_similarity
MIN_DURATION = SETTINGS.min_duration


# The cue before ends at 0.0 so that ``start - end`` is exactly the gap given (no float noise).
@pytest.mark.parametrize("gap, merged", [
    (0.0, True),
    (GAP, True),  # the limit itself merges
    (GAP + 0.001, False),
    (GAP * 1.5, False),
    (GAP * 3, False),
])
def test_merge_gap_limit(gap, merged):
    cues = cues_of((-1.0, 0.0, reading("Hello world")), (gap, 1.0, reading("Hello w0rld", confidence=0.5)))
    assert len(cues) == (1 if merged else 2)
    if merged:
        assert spans(cues) == [(-1.0, 1.0, "Hello world")]


def _pair_at(ratio_wanted: float, below: bool) -> tuple[str, str]:
    """Two texts whose comparable forms are exactly at (or just below) ``ratio_wanted`` similar."""
    base = "abcdefghijklmnopqrst"
    for changed in range(len(base) + 1):
        for extra in ("", "z"):
            other = base[:len(base) - changed] + "x" * changed + extra
            ratio = fuzz.ratio(base, other)
            if (ratio < ratio_wanted and ratio >= ratio_wanted - 5) if below else ratio == ratio_wanted:
                return base, other
    raise AssertionError(f"no text pair at similarity {ratio_wanted}")


def test_similarity_at_the_limit_merges():
    first, second = _pair_at(SIMILARITY, below=False)
    assert fuzz.ratio(first, second) == SIMILARITY
    assert len(cues_of((0.0, 1.0, reading(first)), (1.0, 2.0, reading(second)))) == 1


def test_similarity_just_below_the_limit_stays_apart():
    """A frame apart (back to back, the segmenter's view of the text decides: below)."""
    first, second = _pair_at(SIMILARITY, below=True)
    assert fuzz.ratio(first, second) < SIMILARITY
    assert len(cues_of((0.0, 1.0, reading(first)), (1.04, 2.0, reading(second)))) == 2


UNCHANGED = SETTINGS.merge_similarity_unchanged


def _back_to_back(first: str, second: str, text_changed: bool = False, gap: float = 0.0):
    """Two segments split at one frame (or ``gap`` apart), the second read less surely."""
    pairs = [(segment(0.0, 1.0), reading(first, confidence=0.9)),
             (dataclasses.replace(segment(1.0 + gap, 3.0), text_changed=text_changed), reading(second, confidence=0.7))]
    return align(pairs, SETTINGS)


def test_back_to_back_readings_of_unchanged_text_merge_at_the_lower_similarity():
    """A cut behind the line split it; over the second picture the recogniser misread it."""
    first, second = _pair_at(UNCHANGED, below=False)
    assert UNCHANGED < SIMILARITY and len(first) == len(second)
    assert spans(_back_to_back(first, second)) == [(0.0, 3.0, first)]  # the surer reading wins the vote


@pytest.mark.parametrize("length, merged", [(16, True), (15, False)])
def test_back_to_back_readings_must_be_about_as_long(length, merged):
    """The shorter reading at least 0.8 of the longer (16 of 20 letters), both alike enough."""
    first = "abcdefghijklmnopqrst"
    second = first[:length - 2] + "xx"
    assert UNCHANGED <= fuzz.ratio(first, second) < SIMILARITY
    assert len(_back_to_back(first, second)) == (1 if merged else 2)


@pytest.mark.parametrize("case", ["below", "text changed", "a frame apart", "grown"])
def test_back_to_back_readings_stay_apart_where_the_text_may_have_changed(case):
    first, second = _pair_at(UNCHANGED, below=case == "below")
    if case == "grown":  # a word added: the segmenter splits there without calling the text changed
        first = first[:int(0.7 * len(first))]
        assert UNCHANGED <= fuzz.ratio(first, second) < SIMILARITY
    cues = _back_to_back(first, second, text_changed=case == "text changed", gap=0.04 if case == "a frame apart" else 0.0)
    assert len(cues) == 2


def _changed_three(first: str, between: str, after: str, gaps: tuple[float, float] = (0.0, 0.0)):
    """Three segments, the segmenter calling the text changed at both splits (as over a panning
    picture it did every few frames), read as surely. The first ends at 0.0 and the middle one at
    2.0 so that the gaps are the ones given (no float noise)."""
    pairs = [(segment(-1.0, 0.0), reading(first, confidence=0.8)),
             (dataclasses.replace(segment(0.0 + gaps[0], 2.0), text_changed=True), reading(between, confidence=0.8)),
             (dataclasses.replace(segment(2.0 + gaps[1], 5.0), text_changed=True), reading(after, confidence=0.8))]
    return align(pairs, SETTINGS)


def test_a_reading_between_two_that_read_alike_is_their_misreading():
    """The text "changed" twice and came back letter for letter: it never changed."""
    first, between = _pair_at(SIMILARITY, below=False)
    assert [(c.start, c.end, c.text.rstrip(".")) for c in _changed_three(first, between, first + ".")] == \
        [(-1.0, 5.0, first)]
    assert spans(_changed_three(first, between, first, gaps=(GAP, GAP))) == [(-1.0, 5.0, first)]


@pytest.mark.parametrize("case", ["no return", "not alike", "a gap before", "a gap after"])
def test_a_changed_text_that_does_not_come_back_stays_apart(case):
    """A counter that goes on (11, 12, 13), a different text between, or readings not adjacent."""
    first, between = _pair_at(SIMILARITY, below=case == "not alike")
    after = between[:-1] + "y" if case == "no return" else first
    gaps = {"a gap before": (GAP + 0.001, 0.0), "a gap after": (0.0, GAP + 0.001)}.get(case, (0.0, 0.0))
    assert len(_changed_three(first, between, after, gaps)) == 3


def test_similarity_ignores_case_spacing_and_punctuation():
    cues = cues_of((0.0, 1.0, reading("HELLO, WORLD!")), (1.0, 2.0, reading("hello world", confidence=0.5)))
    assert spans(cues) == [(0.0, 2.0, "HELLO, WORLD!")]


# "Hello world" and "Hello w0rld" have n = 10 characters (spaces aside): a vote is duration x confidence**10.

def test_vote_is_duration_times_confidence_not_confidence_alone():
    # 1.0 s x 0.9**10 = 0.35 beats 0.5 s x 0.95**10 = 0.30, though the second is read more confidently
    cues = cues_of((0.0, 1.0, reading("Hello world", confidence=0.9)),
                   (1.0, 1.5, reading("Hello w0rld", confidence=0.95)))
    assert spans(cues) == [(0.0, 1.5, "Hello world")]


def test_vote_is_duration_times_confidence_not_duration_alone():
    # 1.0 s x 0.3**10 loses to 0.6 s x 0.95**10 = 0.36, though the first shows longer
    cues = cues_of((0.0, 1.0, reading("Hello w0rld", confidence=0.3)),
                   (1.0, 1.6, reading("Hello world", confidence=0.95)))
    assert spans(cues) == [(0.0, 1.6, "Hello world")]


def test_vote_is_the_joint_confidence_of_the_characters_not_their_mean():
    # Tesseract's means lie close for right and garbled readings: by duration x mean confidence the
    # longer-shown garbled reading won (1.0 x 0.7 = 0.7 against 0.6 x 0.9 = 0.54); by the joint
    # confidence of its 10 characters it loses (1.0 x 0.7**10 = 0.028 against 0.6 x 0.9**10 = 0.21).
    cues = cues_of((0.0, 1.0, reading("Hello w0rld", confidence=0.7)),
                   (1.0, 1.6, reading("Hello world", confidence=0.9)))
    assert spans(cues) == [(0.0, 1.6, "Hello world")]


def test_n_is_the_longest_reading_of_the_group_for_every_reading():
    # "Hello world!!" has 12 characters, so both readings are raised to the 12th power:
    # 0.65 s x 0.9**12 = 0.18 beats 1.0 s x 0.85**12 = 0.14. Each by its own length the shorter
    # one would win (1.0 x 0.85**10 = 0.20 against 0.65 x 0.9**12 = 0.18).
    cues = cues_of((0.0, 1.0, reading("Hello world", confidence=0.85)),
                   (1.0, 1.65, reading("Hello world!!", confidence=0.9)))
    assert spans(cues) == [(0.0, 1.65, "Hello world!!")]


def test_votes_of_one_text_add_up_across_its_segments():
    # "Hello world" twice (2 x 0.5 x 0.9**10 = 0.35) beats "Hello w0rld" once (0.4 x 0.95**10 = 0.24),
    # which beats either "Hello world" alone (0.5 x 0.9**10 = 0.17)
    cues = cues_of((0.0, 0.5, reading("Hello world", confidence=0.9)),
                   (0.5, 0.9, reading("Hello w0rld", confidence=0.95)),
                   (0.9, 1.4, reading("Hello world", confidence=0.9)))
    assert spans(cues) == [(0.0, 1.4, "Hello world")]


@pytest.mark.parametrize("repeat", [1, 30])  # 30: 300 characters, 1e-3**300 is no float
def test_zero_confidence_readings_still_vote_by_duration(repeat):
    cues = cues_of((0.0, 0.3, reading("Hello w0rld" * repeat, confidence=0.0)),
                   (0.3, 1.3, reading("Hello world" * repeat, confidence=0.0)))
    assert spans(cues) == [(0.0, 1.3, "Hello world" * repeat)]


def test_the_winner_keeps_its_own_lines_languages_and_confidence():
    (cue,) = cues_of((0.0, 0.3, reading("Hello w0rld", confidence=0.1)),
                     (0.3, 2.0, reading("Hello world", confidence=0.123456)))
    assert cue.lines == ("Hello world",) and cue.languages == ("en",)
    assert cue.confidence == round(0.123456, 4)


@pytest.mark.parametrize("duration, kept", [
    (MIN_DURATION, True),
    (MIN_DURATION + 0.04, True),
    (MIN_DURATION - 0.001, False),
    (MIN_DURATION / 2, False),
])
def test_flicker_limit(duration, kept):
    cues = cues_of((0.0, duration, reading("Short line")))
    assert len(cues) == (1 if kept else 0)


def test_a_merged_cue_is_long_enough_though_its_pieces_are_not():
    half = MIN_DURATION * 0.6
    cues = cues_of((0.0, half, reading("Hello world")), (half, 2 * half, reading("Hello w0rld")))
    assert len(cues) == 1


def test_flicker_between_two_readings_bridges_a_gap_wider_than_the_merge_gap():
    flicker = MIN_DURATION / 2
    cues = cues_of((-1.0, 0.0, reading("Hello world")), (0.0, flicker, reading("@#~")),
                   (flicker, 1.0, reading("Hello world")))
    assert flicker > GAP
    assert spans(cues) == [(-1.0, 1.0, "Hello world")]


def test_flicker_starting_at_the_merge_gap_after_the_cue_still_bridges():
    flicker = MIN_DURATION / 2
    cues = cues_of((-1.0, 0.0, reading("Hello world")), (GAP, GAP + flicker, reading("@#~")),
                   (GAP + flicker, 1.0, reading("Hello world")))
    assert spans(cues) == [(-1.0, 1.0, "Hello world")]


def test_flicker_ending_at_the_merge_gap_before_the_next_reading_still_bridges():
    flicker = MIN_DURATION / 2
    cues = cues_of((-2.0, -GAP - flicker, reading("Hello world")), (-GAP - flicker, -GAP, reading("@#~")),
                   (0.0, 1.0, reading("Hello world")))
    assert spans(cues) == [(-2.0, 1.0, "Hello world")]


@pytest.mark.parametrize("where", ["before", "after"])
def test_flicker_elsewhere_does_not_bridge(where):
    flicker = (5.0, 5.1) if where == "after" else (-5.1, -5.0)
    items = [(0.0, 1.0, reading("Hello world")), (1.5, 2.5, reading("Hello world")), (*flicker, reading("@#~"))]
    cues = cues_of(*sorted(items, key=lambda item: item[0]))
    assert [(c.start, c.end) for c in cues] == [(0.0, 1.0), (1.5, 2.5)]


def test_flicker_more_than_the_merge_gap_away_does_not_bridge():
    flicker = MIN_DURATION / 2
    early = cues_of((-1.0, 0.0, reading("Hello world")), (2 * GAP, 2 * GAP + flicker, reading("@#~")),
                    (2 * GAP + flicker, 1.0, reading("Hello world")))
    late = cues_of((-2.0, -3 * GAP - flicker, reading("Hello world")), (-3 * GAP - flicker, -3 * GAP, reading("@#~")),
                   (0.0, 1.0, reading("Hello world")))
    assert len(early) == 2 and len(late) == 2


def test_the_end_of_a_merged_cue_is_its_latest_segment():
    cues = align([(segment(0.0, 2.0), reading("Hello world")), (segment(1.0, 1.5), reading("Hello w0rld"))],
                 SETTINGS)
    assert [(c.start, c.end) for c in cues] == [(0.0, 2.0)]


# --------------------------------------------------------------------------------------------
# Earlier cues vote too (VoteHistory): only earlier ones, so a streamed cue never changes
# --------------------------------------------------------------------------------------------

def test_a_reading_outvoted_in_one_cue_is_corrected_where_it_stands_alone_later():
    # A repeat reuses the reading of its first showing's short, worse segment.
    cues = cues_of((0.0, 0.4, reading("Emotcon", confidence=0.77)), (0.4, 3.0, reading("Emoticon", confidence=0.93)),
                   (5.0, 8.0, reading("Emotcon", confidence=0.77)))
    assert [c.text for c in cues] == ["Emoticon", "Emoticon"]


def test_a_cue_vote_counts_what_its_texts_gathered_in_earlier_cues():
    first = (0.0, 1.76, reading("Azimuth angle", confidence=0.94))
    later = [(3.0, 5.12, reading("Azlmuth angle", confidence=0.89)), (5.12, 5.4, reading("Azimuth angle", confidence=0.94))]
    assert [c.text for c in cues_of(*later)] == ["Azlmuth angle"]  # alone, the longer misreading wins
    assert [c.text for c in cues_of(first, *later)] == ["Azimuth angle", "Azimuth angle"]


def test_an_earlier_cue_is_never_changed_by_what_comes_after_it():
    cues = cues_of((0.0, 3.0, reading("Emotcon", confidence=0.77)),
                   (5.0, 5.4, reading("Emotcon", confidence=0.77)), (5.4, 8.0, reading("Emoticon", confidence=0.93)))
    assert [c.text for c in cues] == ["Emotcon", "Emoticon"]


def test_a_text_never_read_alike_with_another_keeps_its_own_votes():
    cues = cues_of((0.0, 3.0, reading("Emoticon", confidence=0.99)), (5.0, 8.0, reading("Emotcon", confidence=0.60)))
    assert [c.text for c in cues] == ["Emoticon", "Emotcon"]


def test_the_history_carries_over_between_calls_as_the_stream_aligns_in_pieces():
    history = VoteHistory()
    first = align([(segment(0.0, 0.4), reading("Emotcon", confidence=0.77)),
                   (segment(0.4, 3.0), reading("Emoticon", confidence=0.93))], SETTINGS, history)
    later = align([(segment(5.0, 8.0), reading("Emotcon", confidence=0.77))], SETTINGS, history)
    assert [c.text for c in first + later] == ["Emoticon", "Emoticon"]
    assert [c.text for c in align([(segment(5.0, 8.0), reading("Emotcon", confidence=0.77))], SETTINGS)] == ["Emotcon"]


def test_the_votes_of_every_earlier_cue_add_up():
    right = [(0.0, 1.0, reading("Azimuth angle", confidence=0.94)), (2.0, 3.0, reading("Azimuth angle", confidence=0.94))]
    later = [(5.0, 8.0, reading("Azlmuth angle", confidence=0.89)), (8.0, 8.28, reading("Azimuth angle", confidence=0.94))]
    assert [c.text for c in cues_of(right[1], *later)][-1] == "Azlmuth angle"  # one earlier cue is not enough
    assert [c.text for c in cues_of(*right, *later)] == ["Azimuth angle"] * 3


def test_a_reading_remembers_every_text_it_was_read_alike_with():
    cues = cues_of((0.0, 0.4, reading("Emotcon", confidence=0.77)), (0.4, 3.0, reading("Emoticon", confidence=0.93)),
                   (5.0, 5.4, reading("Emotcon", confidence=0.77)), (5.4, 5.7, reading("Emoticn", confidence=0.80)),
                   (8.0, 11.0, reading("Emotcon", confidence=0.77)))
    assert [c.text for c in cues] == ["Emoticon"] * 3


@pytest.mark.parametrize("before, after", [("密钥长度为256-bit", "密钥长度为 256-bit"), ("密钥长度为 256-bit", "密钥长度为256-bit"),
                                           ("Accepting Liability 256.", "Accepting Liability 256"),
                                           ("密钥长度为256，", "密钥长度为256")])
def test_a_text_change_read_alike_but_for_spacing_or_punctuation_is_one_cue(before, after):
    first, second = segment(0.0, 1.0), dataclasses.replace(segment(1.0, 2.0), text_changed=True)
    assert [(c.start, c.end) for c in align([(first, reading(before)), (second, reading(after))], SETTINGS)] == [(0.0, 2.0)]
    changed = align([(first, reading(before)), (second, reading(after.replace("256", "266")))], SETTINGS)
    assert len(changed) == 2
