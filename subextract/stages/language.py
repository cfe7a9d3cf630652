"""Language tags per text line, and which lines ``--lang`` keeps.

Script ranges settle CJK and the other scripts of one language; py3langid (its model ships
inside the wheel) tells the languages that share a script apart.

Lines mix scripts: Chinese, Japanese and Korean lines (and Thai, Arabic … ones) hold Latin
words and numbers (``读取 Android 时出错``, ``IPv4 地址``), but a Latin line does not hold Han
or Hangul. So a line holding letters of a script other than Latin, Cyrillic and Greek (whose
letters look like Latin ones and come out of OCR in Latin lines) is in that script, whatever
share of its letters are Latin. A line of Latin letters alone in a video of another script is a
name or a term shown alone, or another language's line (the translation line of a bilingual
cue, an English track): ``LanguageFilter`` tells these apart by the line and by what its band
has shown.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import py3langid

from subextract.schema import TextLine

# Languages seen in subtitles. Letting py3langid choose among all 97 of its languages tags short
# lines with rare ones ("Hello world" → fuv, "Okay" → xh).
CANDIDATES = ("en", "zh", "ja", "ko", "es", "fr", "de", "it", "pt", "ru", "uk", "pl", "nl", "sv", "da",
              "no", "fi", "cs", "sk", "hu", "ro", "tr", "el", "he", "ar", "fa", "hi", "th", "vi", "id",
              "ms", "bg", "hr", "sr", "sl", "lt", "lv", "et", "ca")
# A line shorter than this many letters is too short to tell languages of one script apart.
_SHORT_LINE = 12
# A longer line py3langid tags with another language of the wanted one's script is still the wanted
# language's where py3langid is unsure (its top language's probability below this) and ranks the
# wanted one among its top few: English lines of three words came out Norwegian (0.19, English
# third at 0.15) or Estonian (0.34, English second); other languages' lines of that length are
# told surely (German 0.995, French 0.62, Norwegian 0.93).
_UNSURE = 0.5
_NEAR_RANKS = 3

_SCRIPT_LANGUAGES = {"Hangul": "ko", "Thai": "th", "Greek": "el", "Hebrew": "he", "Devanagari": "hi"}
_LANGUAGE_SCRIPTS = {"zh": "Han", "ja": "Han", "ko": "Hangul", "ru": "Cyrillic", "uk": "Cyrillic",
                     "bg": "Cyrillic", "sr": "Cyrillic", "el": "Greek", "he": "Hebrew", "ar": "Arabic",
                     "fa": "Arabic", "hi": "Devanagari", "th": "Thai"}
_KANA = re.compile(r"[\u3040-\u30ff]")
# Scripts whose letters look like Latin ones: in a line of mostly Latin letters they are OCR's
# confusions (an о for an o), not words of another language.
_LATIN_LOOKING = {"Latin", "Cyrillic", "Greek"}
# Han characters and the kana mark that OCR reads off a dash, a bar or a box in a Latin line
# ("Hello 一 world"): alone they do not make a line Han.
_HAN_LOOKALIKES = set("一丨丿丶乙口ー")
# A Latin line of this many words, or of two or more ending as a sentence, is a sentence in its
# own language; fewer words are a name or a term ("Android", "Visual Studio Code", "IPv4").
_SENTENCE_WORDS = 4
_SENTENCE_END = re.compile(r"[.!?…]['\"’”)]*$")


def _letter_script(char: str) -> str:
    name = unicodedata.name(char, "")
    return "Han" if name.startswith(("CJK", "HIRAGANA", "KATAKANA")) else name.split(" ")[0].title()


def _script_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for char in text:
        if char.isalpha():
            script = _letter_script(char)
            counts[script] = counts.get(script, 0) + 1
    return counts


def script_of(text: str) -> str | None:
    """The script most letters of ``text`` are written in (Unicode character names), or None."""
    counts = _script_counts(text)
    return max(counts, key=counts.get) if counts else None


def line_script(text: str) -> str | None:
    """The script a line is written in: a script other than the Latin-looking ones when the line
    holds its letters (Latin words inside a Chinese line leave it Chinese), else the script of most
    of its letters; None when it has no letters."""
    counts = _script_counts(text)
    if "Han" in counts and not any(c.isalpha() and c not in _HAN_LOOKALIKES and _letter_script(c) == "Han"
                                   for c in text) and counts["Han"] < 2:
        del counts["Han"]  # one dash-like character read as 一: no Han word
    own = {script: n for script, n in counts.items() if script not in _LATIN_LOOKING}
    chosen = own or counts
    return max(chosen, key=chosen.get) if chosen else None


@lru_cache(maxsize=4)
def _identifier(script: str) -> py3langid.langid.LanguageIdentifier:
    """An identifier choosing only among the candidates written in ``script``."""
    identifier = py3langid.langid.LanguageIdentifier.from_model_file(py3langid.langid.MODEL_FILE, norm_probs=True)
    same_script = [code for code in CANDIDATES if _LANGUAGE_SCRIPTS.get(code, "Latin") == script]
    identifier.set_languages(same_script or list(CANDIDATES))
    return identifier


def detect_language(text: str) -> str:
    """A BCP-47 primary tag (``zh``, ``en``, ``ru``…), or ``und`` when the line has no letters."""
    script = line_script(text)
    if script is None:
        return "und"
    if script == "Han":
        return "ja" if _KANA.search(text) else "zh"
    if script in _SCRIPT_LANGUAGES:
        return _SCRIPT_LANGUAGES[script]
    if script != "Latin":  # Latin words borrowed into the line say nothing of its language
        text = "".join(c for c in text if not (c.isalpha() and _letter_script(c) == "Latin"))
    language, _ = _identifier(script).classify(text)
    return language


def _script_of_language(language: str) -> str:
    return _LANGUAGE_SCRIPTS.get(language, "Latin")


def matches_language(line: str, line_language: str, wanted: str) -> bool:
    """Whether a line, on its own, belongs in the output for ``--lang wanted``: by script first,
    then by tag, except for lines too short to tell same-script languages apart. A Latin line in a
    video of another script is decided by ``LanguageFilter`` with its band's history."""
    if wanted in ("all", "auto") or line_language in (wanted, "und"):
        return True
    script = line_script(line)
    if script != _script_of_language(wanted):
        return False
    if wanted == "ja" and line_language == "zh":
        return True  # kanji without kana: Japanese as much as Chinese, and the video is Japanese
    return sum(ch.isalpha() for ch in line) < _SHORT_LINE or _unsure_but_near(line, script, wanted)


def _unsure_but_near(line: str, script: str, wanted: str) -> bool:
    """Whether py3langid is unsure of the line's language and ranks ``wanted`` near the top."""
    ranked = _identifier(script).rank(line)
    return ranked[0][1] < _UNSURE and wanted in [language for language, _ in ranked[:_NEAR_RANKS]]


def is_sentence(text: str) -> bool:
    """A Latin line that says something in its own language, not a name or a term shown alone."""
    words = text.split()
    return len(words) >= _SENTENCE_WORDS or (len(words) >= 2 and bool(_SENTENCE_END.search(text)))


class LanguageFilter:
    """The lines of one band's readings that ``--lang wanted`` keeps, reading after reading in
    the band's time order (each reading once: a repeat takes its first showing's lines).

    A line is kept when it is in the wanted language (``matches_language``). Where that language
    is not written in Latin, a line of Latin letters alone is kept when it is a name or a term
    shown alone (a product name in a Chinese video), and dropped when it is another language's:
    beside a line of the wanted language in the same reading (the translation line of a
    bilingual cue), a sentence, or in a band whose readings have been another language's at
    least as often as the wanted one's (a bilingual or an English track)."""

    def __init__(self, wanted: str) -> None:
        self.wanted = wanted
        self._script = _script_of_language(wanted)
        self._own = 0  # readings of this band in the wanted language alone
        self._other = 0  # ... with another language's line: a translation line or a Latin sentence

    def keep(self, lines: Sequence[TextLine]) -> tuple[TextLine, ...]:
        """The lines of the band's next reading that are kept, in their order."""
        if self.wanted in ("all", "auto"):
            return tuple(lines)
        latin = [self._script != "Latin" and line.language != "und" and line_script(line.text) == "Latin"
                 for line in lines]
        own = [not alone and matches_language(line.text, line.language, self.wanted)
               for line, alone in zip(lines, latin)]
        wanted_line = any(mine and line.language != "und" for line, mine in zip(lines, own))
        other_track = (wanted_line and any(latin)) or any(
            is_sentence(line.text) for line, alone in zip(lines, latin) if alone)
        keep_latin = not other_track and not (self._other and self._other >= self._own)
        if other_track:
            self._other += 1
        elif wanted_line:
            self._own += 1
        return tuple(line for line, mine, alone in zip(lines, own, latin) if mine or (alone and keep_latin))
