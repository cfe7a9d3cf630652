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

# "|" opening a word ("| live", "|t's", "<i>|"), or standing alone: a capital I.
_BAR_AS_I = re.compile(r"(?<![^\s\"'“‘(\[<>¿¡-])\|(?=[A-Za-z'’\s.,!?]|$)")
# English: "l'm", "l've", "l'll", "l'd" and a lone "l" are the pronoun I.
# (Not after a number: "5 l" is litres.)
_L_AS_I = re.compile(r"(?<![\w'’])(?<!\d )l(?=['’](?:m|ve|ll|d)\b|(?![\w'’-]))")


# A single character is a word in these scripts (是, 嗯, ね, 네).
_WORD_CHARACTER = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


# Japanese signs drawn alike: katakana -> kanji, and katakana -> hiragana.
_KANA_KANJI = dict(zip("カロエタニハトー", "力口工夕二八卜一"))
_KANJI_KANA = {kanji: kana for kana, kanji in _KANA_KANJI.items()}
_KATAKANA_HIRAGANA = dict(zip("リヘベペ", "りへべぺ"))
_HIRAGANA_KATAKANA = {hiragana: katakana for katakana, hiragana in _KATAKANA_HIRAGANA.items()}
_KANJI_DOUBT = _KANA_KANJI.keys() | _KANJI_KANA.keys()
_KANA_DOUBT = _KATAKANA_HIRAGANA.keys() | _HIRAGANA_KATAKANA.keys()
_NUMERAL = set("0123456789０１２３４５６７８９一二三四五六七八九十百千万何数")


def _is_kanji(c: str) -> bool:
    return "\u3400" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff"


def _is_katakana(c: str) -> bool:
    return "\u30a1" <= c <= "\u30ff"


def _is_hiragana(c: str) -> bool:
    return "\u3041" <= c <= "\u309f"


def _japanese_lookalikes(text: str) -> str:
    """Each sign of a look-alike pair read as the kind its neighbours are (the module's docstring)."""
    signs = list(text)
    for i, sign in enumerate(text):
        if sign not in _KANJI_DOUBT and sign not in _KANA_DOUBT:
            continue
        # Neighbours as read: a fix never feeds the next one's decision. The long-vowel mark
        # lengthens the sign before it, so only that one makes ー the kanji (a line's leading ー is
        # a dash); 一 before kanji stays (ページ一覧).
        after = text[i + 1] if i + 1 < len(text) and sign != "ー" else ""
        neighbours = [c for c in (text[i - 1] if i else "", after) if c]
        if sign in _KANA_DOUBT:
            # A neighbour of the same doubt says nothing of this sign's kind.
            told = [c for c in neighbours if c not in _KANA_DOUBT]
            katakana = any(_is_katakana(c) for c in told)
            other = any(_is_kanji(c) or _is_hiragana(c) for c in told)
            if sign in _KATAKANA_HIRAGANA and other and not katakana:
                signs[i] = _KATAKANA_HIRAGANA[sign]
            elif sign in _HIRAGANA_KATAKANA and katakana and not other:
                signs[i] = _HIRAGANA_KATAKANA[sign]
            continue
        if any(c in _KANJI_DOUBT for c in neighbours):
            continue  # a neighbour of the same doubt: the ー of レート制御 tells a katakana word ending
        kanji = any(_is_kanji(c) for c in neighbours)
        katakana = any(_is_katakana(c) for c in neighbours)
        if sign in _KANA_KANJI and kanji and not katakana and not (sign == "カ" and i and text[i - 1] in _NUMERAL):
            signs[i] = _KANA_KANJI[sign]
        elif sign in _KANJI_KANA and katakana and not kanji:
            signs[i] = _KANJI_KANA[sign]
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
