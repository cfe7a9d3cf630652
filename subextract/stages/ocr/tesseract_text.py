"""Tesseract's line text as a subtitle writes it, per script: what its models add or misplace
that the script settles (measured on the multi-script benchmark)."""

from __future__ import annotations

import re
import unicodedata

from subextract.stages.language import script_of
from subextract.stages.ocr import TextLine

# In Ukrainian a lone bar is the word "і" (and), which the model takes for a vertical line.
_LONE_BAR = re.compile(r"(?<!\S)\|(?= \w)")
# The Greek model knows polytonic Greek and puts its breathings on monotonic text (εἶναι for
# είναι); modern subtitles are monotonic: breathings go, any accent is the tonos.
_POLYTONIC_DROPPED = dict.fromkeys(map(ord, "\u0313\u0314\u0345"))
_POLYTONIC_ACCENTS = {ord("\u0300"): "\u0301", ord("\u0342"): "\u0301"}
# Arabic short vowels and shadda, Hebrew points: the models guess them (niqqud on unpointed
# Hebrew); subtitles, like most print in these languages, leave them out.
_OPTIONAL_MARKS = re.compile("[\u064B-\u065F\u0670\u0591-\u05BD\u05BF-\u05C7]")
# A lone Latin letter, bar or digit at either end of a line in another script is the edge of
# the crop read as a character; so are several in a row (a box wider than its line, read over
# the picture beside it: "| 3 ..." before the line).
_STRAY_END = re.compile(r"^(?:[A-Za-z|\d]\s+)+|(?:\s+[A-Za-z|\d])+$")
# Neutral characters at the visual left end of a right-to-left line (the end of its sentence),
# which Tesseract gives first: in reading order they end it.
_RTL_LEADING_PUNCTUATION = re.compile(r"^([.,:;!?\u060C\u061B\u061F]+)\s*(.+)$")
# Thai's and Lao's sara am is drawn as a nikhahit over the syllable and a sara aa after it, and
# the models spell what they see: the two signs (a tone mark may sit between them). Written text,
# and so every reference, spells the one letter.
_SARA_AM = {"Thai": (re.compile("\u0e4d([\u0e48-\u0e4b]?)\u0e32"), "\\1\u0e33"),
            "Lao": (re.compile("\u0ecd([\u0ec8-\u0ecb]?)\u0eb2"), "\\1\u0eb3")}


def letters_of(text: str) -> str:
    """The letters, digits and combining marks of ``text``: Thai vowels and tone marks, Devanagari
    matras and Arabic harakat are marks (Unicode M*), not letters, yet they are the text (two
    Thai readings differing only in a vowel above the line, ภาพ and ภําพ, had agreed)."""
    return "".join(c for c in text if c.isalnum() or unicodedata.category(c).startswith("M"))


def _monotonic(word: str) -> str:
    """A Greek word as monotonic Greek: a breathing on a word with no accent was its tonos."""
    decomposed = unicodedata.normalize("NFD", word).translate(_POLYTONIC_ACCENTS)
    if "\u0301" not in decomposed:
        decomposed = re.sub("[\u0313\u0314]", "\u0301", decomposed, count=1)
    return unicodedata.normalize("NFC", decomposed.translate(_POLYTONIC_DROPPED))


def cleaned(line: TextLine, lang: str) -> TextLine:
    """``line`` with its text cleaned; ``lang`` is the --lang of the run ("" when routed)."""
    # Tesseract wraps digits in right-to-left lines in direction marks, which no subtitle has.
    text = " ".join(line.text.replace("\u200e", "").replace("\u200f", "").split())
    if "|" in text and (lang == "uk" or (not lang and "і" in text)):
        text = _LONE_BAR.sub("і", text)
    script = script_of(text)
    if script == "Greek":
        text = text.replace("\u00b5", "\u03bc")  # the micro sign is the letter mu
        text = " ".join(_monotonic(word) for word in text.split(" "))
    elif script in ("Arabic", "Hebrew"):
        text = _RTL_LEADING_PUNCTUATION.sub(r"\2\1", _OPTIONAL_MARKS.sub("", text))
    elif script in _SARA_AM:
        pattern, letter = _SARA_AM[script]
        text = pattern.sub(letter, text)
    if script not in (None, "Latin"):
        text = _STRAY_END.sub("", text)
    return TextLine(text, line.confidence, line.box, language=line.language)
