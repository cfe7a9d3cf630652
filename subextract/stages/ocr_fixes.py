"""Fixes for the confusions OCR engines make on subtitle fonts, applied per line once its
language is known (as SubtitleEdit's "fix common OCR errors" does, with far fewer rules).

Only unambiguous cases are touched: in Latin script, a vertical bar where a capital I belongs
(a bar at the start of a word is never text in a subtitle), and in English the lowercase l read
for the pronoun I ("l'm", a lone "l"), which no English word is.
"""

from __future__ import annotations

import re

# "|" opening a word ("| live", "|t's", "<i>|"), or standing alone: a capital I.
_BAR_AS_I = re.compile(r"(?<![^\s\"'“‘(\[<>¿¡-])\|(?=[A-Za-z'’\s.,!?]|$)")
# English: "l'm", "l've", "l'll", "l'd" and a lone "l" are the pronoun I.
# (Not after a number: "5 l" is litres.)
_L_AS_I = re.compile(r"(?<![\w'’])(?<!\d )l(?=['’](?:m|ve|ll|d)\b|(?![\w'’-]))")


def fix_common_errors(text: str, language: str) -> str:
    if "|" in text:
        text = _BAR_AS_I.sub("I", text)
    if language == "en" and "l" in text:
        text = _L_AS_I.sub("I", text)
    return text
