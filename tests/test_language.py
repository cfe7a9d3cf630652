"""Language tags per OCR line, and which lines ``--lang`` keeps."""

from __future__ import annotations

import pytest

from subextract.stages.language import detect_language, matches_language


@pytest.mark.parametrize("text, language", [
    ("今天天气很好", "zh"),
    ("こんにちは、元気ですか", "ja"),
    ("안녕하세요", "ko"),
    ("12:45 — 2024", "und"),
    ("Where are you going tonight?", "en"),
    ("Guten Morgen, wie geht es dir heute?", "de"),
    ("Привет, как у тебя дела сегодня?", "ru"),
])
def test_detect_language(text, language):
    assert detect_language(text) == language


@pytest.mark.parametrize("text", ["Hello world", "Okay", "No.", "Hello from the test"])
def test_short_english_lines_are_kept_by_lang_en(text):
    assert matches_language(text, detect_language(text), "en")


def test_matches_language():
    assert matches_language("你好世界", "zh", "zh") and matches_language("Hello", "en", "all")
    assert matches_language("12:30", "und", "en")
    assert not matches_language("Where are you going tonight?", "en", "zh")
    assert not matches_language("你好世界", "zh", "en")
    assert not matches_language("Guten Morgen, wie geht es dir heute?", "de", "en")
