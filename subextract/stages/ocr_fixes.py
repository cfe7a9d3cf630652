"""Fixes for the confusions OCR engines make on subtitle fonts, applied per line once its
language is known (as SubtitleEdit's "fix common OCR errors" does, with far fewer rules).

Only unambiguous cases are touched: in Latin script, a vertical bar where a capital I belongs
(a bar at the start of a word is never text in a subtitle), and in English the lowercase l read
for the pronoun I ("l'm", a lone "l"), which no English word is. A line of at most one letter or
digit outside the scripts whose single characters are words (Han, kana, Hangul) is what an
engine reads off background (",", ".", "C"): no subtitle line.
"""

from __future__ import annotations

import re

# "|" opening a word ("| live", "|t's", "<i>|"), or standing alone: a capital I.
_BAR_AS_I = re.compile(r"(?<![^\s\"'“‘(\[<>¿¡-])\|(?=[A-Za-z'’\s.,!?]|$)")
# English: "l'm", "l've", "l'll", "l'd" and a lone "l" are the pronoun I.
# (Not after a number: "5 l" is litres.)
_L_AS_I = re.compile(r"(?<![\w'’])(?<!\d )l(?=['’](?:m|ve|ll|d)\b|(?![\w'’-]))")


# A single character is a word in these scripts (是, 嗯, ね, 네).
_WORD_CHARACTER = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def is_junk(text: str) -> bool:
    return sum(c.isalnum() for c in text) <= 1 and _WORD_CHARACTER.search(text) is None


def fix_common_errors(text: str, language: str) -> str:
    if "|" in text:
        text = _BAR_AS_I.sub("I", text)
    if language == "en" and "l" in text:
        text = _L_AS_I.sub("I", text)
    return text
