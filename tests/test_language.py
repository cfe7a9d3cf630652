"""Language tags per OCR line, and which lines ``--lang`` keeps."""

from __future__ import annotations

import pytest

from subextract.pipeline.run import language_filter
from subextract.schema import Reading, TextLine
from subextract.stages.language import LanguageFilter, detect_language, matches_language


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


@pytest.mark.parametrize("text", ["Bad default setting!", "Invalid argument"])
def test_english_lines_langid_is_unsure_of_are_kept_by_lang_en(text):
    """Tagged Norwegian and Estonian, unsurely, with English among the top three: English."""
    assert detect_language(text) != "en" and matches_language(text, detect_language(text), "en")


@pytest.mark.parametrize("text", ["Jeg vet ikke hva du mener", "Je ne sais pas ce que tu veux", "Ik weet het niet"])
def test_other_languages_lines_are_dropped_by_lang_en(text):
    assert not matches_language(text, detect_language(text), "en")


def test_matches_language():
    assert matches_language("你好世界", "zh", "zh") and matches_language("Hello", "en", "all")
    assert matches_language("12:30", "und", "en")
    assert not matches_language("Where are you going tonight?", "en", "zh")
    assert not matches_language("你好世界", "zh", "en")
    assert not matches_language("Guten Morgen, wie geht es dir heute?", "de", "en")


def _lines(*texts: str) -> list[TextLine]:
    return [TextLine(text, 0.95, (0, 20 * i, 400, 20 * i + 18), detect_language(text)) for i, text in enumerate(texts)]


@pytest.mark.parametrize("text, language", [
    ("读取 Android 时出错", "zh"),
    ("IPv4 地址", "zh"),
    ("公钥服务器 URL", "zh"),
    ("Android 14 を使う", "ja"),
    ("Android 설정을 여는 중", "ko"),
    ("Hello 一 world, how are you?", "en"),  # a dash read as 一 makes no Chinese line
])
def test_a_line_holding_cjk_is_in_its_language_whatever_its_latin_share(text, language):
    assert detect_language(text) == language


# (--lang, the band's earlier readings, the reading, the lines kept)
CODE_SWITCHED = [
    # Lines holding the language's script are kept whole, with their Latin words and numbers.
    ("zh", [], ["读取 Android 时出错"], ["读取 Android 时出错"]),
    ("zh", [], ["IPv4 地址", "公钥服务器 URL"], ["IPv4 地址", "公钥服务器 URL"]),
    ("ja", [], ["Android 14 を使う"], ["Android 14 を使う"]),
    ("ja", [], ["東京都新宿区西新宿二丁目八番一号"], ["東京都新宿区西新宿二丁目八番一号"]),  # kanji alone
    ("ko", [], ["Android 설정을 여는 중 오류"], ["Android 설정을 여는 중 오류"]),
    # A name shown alone: kept with no history, and in a band of the language's lines.
    ("zh", [], ["Android"], ["Android"]),
    ("zh", [["你好世界"], ["读取 Android 时出错"]], ["GitHub"], ["GitHub"]),
    ("ja", [["今日はいい天気ですね"]], ["YouTube"], ["YouTube"]),
    ("ko", [["안녕하세요"]], ["Samsung Galaxy S24"], ["Samsung Galaxy S24"]),
    ("zh", [["你好"], ["谢谢"], ["再见"], ["Hello, world!"]], ["Python 3"], ["Python 3"]),  # one English quote
    # A bilingual cue's translation line is dropped, and so is a name alone in a bilingual band.
    ("zh", [], ["忙处事为，常向闲中先检点", "You will be run over by a bus."], ["忙处事为，常向闲中先检点"]),
    ("zh", [], ["今日不悟", "Go!"], ["今日不悟"]),
    ("zh", [["对人则面目可憎", "Do what comes naturally."]], ["Android"], []),
    ("ja", [], ["今日はいい天気ですね", "Nice weather today."], ["今日はいい天気ですね"]),
    ("ko", [], ["안녕하세요", "Hello, how are you?"], ["안녕하세요"]),
    ("ko", [["안녕하세요", "Hello there."]], ["Seoul"], []),
    # A sentence in another language, and a name in a band of another language's sentences.
    ("zh", [], ["Where are you going tonight?"], []),
    ("zh", [["Where are you going tonight?"]], ["Paris"], []),
    ("ja", [], ["Thank you."], []),
    ("ko", [["I will see you tomorrow at noon"]], ["Busan"], []),
    # Another script of the same family is still another language.
    ("zh", [], ["今日はとても良い天気ですね、散歩に行きましょう"], []),
    ("ko", [], ["读取 Android 时出错"], []),
    # Numbers alone are kept, and a Chinese line is not English.
    ("zh", [["你好"]], ["12:30"], ["12:30"]),
    ("en", [], ["读取 Android 时出错"], []),
    ("en", [], ["Hello 一 world, how are you?"], ["Hello 一 world, how are you?"]),
]


@pytest.mark.parametrize("lang, history, reading, kept", CODE_SWITCHED)
def test_code_switched_lines(lang, history, reading, kept):
    language_filter = LanguageFilter(lang)
    for earlier in history:
        language_filter.keep(_lines(*earlier))
    assert [line.text for line in language_filter.keep(_lines(*reading))] == kept


def test_each_band_has_its_own_history():
    """English notes at the top do not make the Chinese band's names another language's."""
    prepare = language_filter("zh", band_count=2)
    assert prepare(1, Reading(tuple(_lines("The old town, rebuilt in 1820 after the fire")))).lines == ()
    assert prepare(0, Reading(tuple(_lines("你好世界")))).text == "你好世界"
    assert prepare(1, Reading(tuple(_lines("Paris")))).lines == ()
    assert prepare(0, Reading(tuple(_lines("Android")))).text == "Android"
