"""Fixes for the confusions OCR engines make on subtitle fonts, applied per line once its
language is known (as SubtitleEdit's "fix common OCR errors" does, with far fewer rules).

Only unambiguous cases are touched: in Latin script, a vertical bar where a capital I belongs
(a bar at the start of a word is never text in a subtitle), and in English the lowercase l read
for the pronoun I ("l'm", a lone "l"), which no English word is. A line of at most one letter or
digit outside the scripts whose single characters are words (Han, kana, Hangul) is what an
engine reads off background (",", ".", "C"): no subtitle line.

In Japanese, katakana and kanji that are drawn alike (カ 力, ロ 口, エ 工, ー 一, ニ 二 …) are told apart by
their neighbours, as a reader does: beside kanji with no katakana beside it, such a sign is the
kanji (出カ → 出力, 第ニ → 第二); beside katakana with no kanji beside it, the katakana (メモリ一 → メモリー, 工ラー →
エラー). ー is made 一 by the sign before it alone: the mark lengthens that sign. A neighbour itself of
such a pair leaves a sign as read (the ー of レート制御 ends a katakana word before kanji). Likewise
katakana drawn as hiragana are (リ り, ヘ へ, ベ べ, ペ ぺ): beside kanji or hiragana and no katakana,
hiragana (取リ込み → 取り込み, 東京ヘ → 東京へ); beside katakana alone, katakana. Between two kinds, or alone, a
sign is left as read; so is カ after a number, where it is the counter (三カ月).
"""

from __future__ import annotations

import re
import unicodedata

# "|" opening a word ("| live", "|t's", "<i>|"), or standing alone: a capital I.
_BAR_AS_I = re.compile(r"(?<![^\s\"'“‘(\[<>¿¡-])\|(?=[A-Za-z'’\s.,!?]|$)")
# English: "l'm", "l've", "l'll", "l'd" and a lone "l" are the pronoun I.
# (Not after a number: "5 l" is litres.)
_L_AS_I = re.compile(r"(?<![\w'’])(?<!\d )l(?=['’](?:m|ve|ll|d)\b|(?![\w'’-]))")


# A single character is a word in these scripts (是, 嗯, ね, 네).
_WORD_CHARACTER = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


# Japanese signs drawn alike, each way: katakana and kanji; katakana and hiragana.
_KANJI_PAIRS = dict(zip("カロエタニハトー力口工夕二八卜一", "力口工夕二八卜一カロエタニハトー"))
_KANA_PAIRS = dict(zip("リヘベペりへべぺ", "りへべぺリヘベペ"))
_NUMERAL = set("0123456789０１２３４５６７８９一二三四五六七八九十百千万何数")


def _kind(sign: str) -> str:
    """kanji, katakana (ー too) or hiragana by the sign's Unicode name, as language.py tells scripts."""
    name = unicodedata.name(sign, "")
    return next((kind for prefix, kind in (("CJK", "kanji"), ("KATAKANA", "katakana"), ("HIRAGANA", "hiragana"))
                 if name.startswith(prefix)), "")


def _japanese_lookalikes(text: str) -> str:
    """Each sign of a look-alike pair read as the kind its neighbours are (the module's docstring)."""
    signs = list(text)
    for i, sign in enumerate(text):
        pairs = _KANJI_PAIRS if sign in _KANJI_PAIRS else _KANA_PAIRS if sign in _KANA_PAIRS else None
        if pairs is None:
            continue
        # Neighbours as read: a fix never feeds the next one's decision. The long-vowel mark
        # lengthens the sign before it, so only that one makes ー the kanji (a line's leading ー is
        # a dash); 一 before kanji stays (ページ一覧).
        after = text[i + 1] if i + 1 < len(text) and sign != "ー" else ""
        neighbours = [c for c in (text[i - 1] if i else "", after) if c]
        if pairs is _KANJI_PAIRS and any(c in pairs for c in neighbours):
            continue  # a neighbour of the same doubt: the ー of レート制御 tells a katakana word ending
        kinds = {_kind(c) for c in neighbours if c not in pairs}  # a kana of the same doubt tells nothing
        if pairs is _KANA_PAIRS:  # hiragana is what follows and joins kanji (取り込み)
            kinds = {"hiragana" if kind == "kanji" else kind for kind in kinds}
        counter = sign == "カ" and i and text[i - 1] in _NUMERAL
        if _kind(pairs[sign]) in kinds and _kind(sign) not in kinds and not counter:
            signs[i] = pairs[sign]
    return "".join(signs)


def is_junk(text: str) -> bool:
    return sum(c.isalnum() for c in text) <= 1 and _WORD_CHARACTER.search(text) is None


def fix_common_errors(text: str, language: str) -> str:
    if "|" in text:
        text = _BAR_AS_I.sub("I", text)
    if language == "en" and "l" in text:
        text = _L_AS_I.sub("I", text)
    if language == "ja":
        text = _japanese_lookalikes(text)
    return text
