"""The OCR confusion fixes: only the unambiguous cases, and English rules only in English."""

import pytest

from subextract.stages.ocr_fixes import fix_common_errors


@pytest.mark.parametrize("read, fixed", [
    ("| think so", "I think so"),
    ("|t's a whale of an island", "It's a whale of an island"),
    ("<i>| live on an island", "<i>I live on an island"),
    ("l'm Sinbad the sailor", "I'm Sinbad the sailor"),
    ("But l've been around, l'll say, and l said", "But I've been around, I'll say, and I said"),
])
def test_fixed_in_english(read, fixed):
    assert fix_common_errors(read, "en") == fixed


@pytest.mark.parametrize("text", ["all well, I'll tell", "a|b or c", "It costs 5 l", "lol", "Paul's l-shaped"])
def test_left_alone_in_english(text):
    assert fix_common_errors(text, "en") == text


def test_english_rules_stay_out_of_other_languages():
    assert fix_common_errors("l'ami de l'homme", "fr") == "l'ami de l'homme"
    assert fix_common_errors("l said", "de") == "l said"
    assert fix_common_errors("| said", "de") == "I said"  # a bar opening a word is never text
    assert fix_common_errors("我说|你", "zh") == "我说|你"


def test_junk_off_background_is_no_line():
    from subextract.stages.ocr_fixes import is_junk

    for junk in (",", ".", "C", "l.", "- 1", ""):
        assert is_junk(junk), junk
    for line in ("是", "嗯？", "ね", "네", "OK", "I am", "12"):
        assert not is_junk(line), line
