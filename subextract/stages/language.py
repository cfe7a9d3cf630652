"""Language tags per text line: script ranges settle CJK and other unique scripts, py3langid
(its model ships inside the wheel) tells the languages that share a script apart."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import py3langid

# Languages seen in subtitles. Letting py3langid choose among all 97 of its languages tags short
# lines with rare ones ("Hello world" → fuv, "Okay" → xh).
CANDIDATES = ("en", "zh", "ja", "ko", "es", "fr", "de", "it", "pt", "ru", "uk", "pl", "nl", "sv", "da",
              "no", "fi", "cs", "sk", "hu", "ro", "tr", "el", "he", "ar", "fa", "hi", "th", "vi", "id",
              "ms", "bg", "hr", "sr", "sl", "lt", "lv", "et", "ca")
# A line shorter than this many letters is too short to tell languages of one script apart.
_SHORT_LINE = 12

_SCRIPT_LANGUAGES = {"Hangul": "ko", "Thai": "th", "Greek": "el", "Hebrew": "he", "Devanagari": "hi"}
_LANGUAGE_SCRIPTS = {"zh": "Han", "ja": "Han", "ko": "Hangul", "ru": "Cyrillic", "uk": "Cyrillic",
                     "bg": "Cyrillic", "sr": "Cyrillic", "el": "Greek", "he": "Hebrew", "ar": "Arabic",
                     "fa": "Arabic", "hi": "Devanagari", "th": "Thai"}
_KANA = re.compile(r"[\u3040-\u30ff]")


def script_of(text: str) -> str | None:
    """The script most letters of ``text`` are written in (Unicode character names), or None."""
    counts: dict[str, int] = {}
    for char in text:
        if not char.isalpha():
            continue
        name = unicodedata.name(char, "")
        script = "Han" if name.startswith(("CJK", "HIRAGANA", "KATAKANA")) else name.split(" ")[0].title()
        counts[script] = counts.get(script, 0) + 1
    return max(counts, key=counts.get) if counts else None


@lru_cache(maxsize=4)
def _identifier(script: str) -> py3langid.langid.LanguageIdentifier:
    """An identifier choosing only among the candidates written in ``script``."""
    identifier = py3langid.langid.LanguageIdentifier.from_model_file(py3langid.langid.MODEL_FILE)
    same_script = [code for code in CANDIDATES if _LANGUAGE_SCRIPTS.get(code, "Latin") == script]
    identifier.set_languages(same_script or list(CANDIDATES))
    return identifier


def detect_language(text: str) -> str:
    """A BCP-47 primary tag (``zh``, ``en``, ``ru``…), or ``und`` when the line has no letters."""
    script = script_of(text)
    if script is None:
        return "und"
    if script == "Han":
        return "ja" if _KANA.search(text) else "zh"
    if script in _SCRIPT_LANGUAGES:
        return _SCRIPT_LANGUAGES[script]
    language, _ = _identifier(script).classify(text)
    return language


def matches_language(line: str, line_language: str, wanted: str) -> bool:
    """Whether a line belongs in the output for ``--lang wanted``: by script first, then by tag,
    except for lines too short to tell same-script languages apart."""
    if wanted in ("all", "auto") or line_language in (wanted, "und"):
        return True
    script = script_of(line)
    if script != _LANGUAGE_SCRIPTS.get(wanted, "Latin"):
        return False
    return sum(ch.isalpha() for ch in line) < _SHORT_LINE
