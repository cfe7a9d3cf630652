"""Language tags per text line: script ranges settle CJK, py3langid (model inside its wheel) the rest."""

from __future__ import annotations

import re

import py3langid

_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
_HAN = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff]")
_LETTERS = re.compile(r"[^\W\d_]")


def detect_language(text: str) -> str:
    """A BCP-47 primary tag (``zh``, ``en``, ``ru``…), or ``und`` when the line has no letters."""
    if _KANA.search(text):
        return "ja"
    if _HANGUL.search(text):
        return "ko"
    if _HAN.search(text):
        return "zh"
    if not _LETTERS.search(text):
        return "und"
    language, _ = py3langid.classify(text)
    return language


def matches_language(line_language: str, wanted: str) -> bool:
    """Whether a line tagged ``line_language`` belongs in the output for ``--lang wanted``."""
    return wanted in ("all", "auto") or line_language == wanted or line_language == "und"
