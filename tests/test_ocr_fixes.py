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


@pytest.mark.parametrize("read, fixed", [
    ("ビデオメモリー出カ", "ビデオメモリー出力"),  # katakana カ beside kanji: the kanji 力
    ("協カを求める", "協力を求める"),
    ("第ニ章", "第二章"),
    ("入ロから", "入口から"),
    ("統ーする", "統一する"),  # a long-vowel mark after a kanji lengthens nothing: 一
    ("メモリ一を", "メモリーを"),  # the kanji 一 after katakana: the long-vowel mark
    ("工ラーが出た", "エラーが出た"),
    ("口グ", "ログ"),
    ("メ二ュー", "メニュー"),
    ("ファイルから取リ込みます", "ファイルから取り込みます"),  # katakana リ between kanji: hiragana り
    ("東京ヘ行く", "東京へ行く"),
    ("アりス", "アリス"),
])
def test_japanese_lookalikes_read_as_their_neighbours_kind(read, fixed):
    assert fix_common_errors(read, "ja") == fixed


@pytest.mark.parametrize("text", [
    "新カメラ", "日本ロボット",  # katakana words after kanji
    "ページ一覧", "テスト二回",  # kanji words after katakana
    "マルチパスレート制御", "テスト結果",  # katakana words before kanji
    "三カ月", "何カ所", "3カ月",  # カ after a number is the counter
    "ー少し前", "一つ", "リスト", "カリフォルニア", "へえ", "ベッド", "カを", "ゲーム", "入口", "電子工学", "夕方", "第一",
])
def test_japanese_lookalikes_left_alone_where_the_neighbours_do_not_tell(text):
    assert fix_common_errors(text, "ja") == text


def test_japanese_lookalike_rule_stays_out_of_chinese():
    assert fix_common_errors("出カ", "zh") == "出カ"


def test_junk_off_background_is_no_line():
    from subextract.stages.ocr_fixes import is_junk

    for junk in (",", ".", "C", "l.", "- 1", ""):
        assert is_junk(junk), junk
    for line in ("是", "嗯？", "ね", "네", "OK", "I am", "12"):
        assert not is_junk(line), line
