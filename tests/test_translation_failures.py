"""A translator that refuses, copies, answers in another language or gives one reply for every
line has not translated: those cues keep their text, are counted, and the run exits 3."""

from __future__ import annotations

import socketserver
import threading

import pytest

from json_endpoint import JsonHandler
from subextract.config import load_settings
from subextract.translate.protocol import Languages
from subextract.translate.translator import Translator
from test_cli import run_cli

ZH_EN = Languages("zh", "en")
EN_ZH = Languages("en", "zh")
SOURCES = ["今天天气很好", "我们去公园散步吧", "明天见", "对不起"]
REFUSAL = "I'm sorry, but I can't help with that request."


class Always:
    """A model giving ``reply(source line)`` for every line of every prompt, numbered as asked."""

    name = "always"

    def __init__(self, reply) -> None:
        self.reply = reply

    def complete(self, prompts, temperatures):
        replies = []
        for prompt in prompts:
            numbered = [line.split(": ", 1) for line in prompt.user.splitlines()
                        if line[:1].isdigit() and ": " in line]
            if numbered:
                replies.append("\n".join(f"{n}: {self.reply(text)}" for n, text in numbered))
            else:
                replies.append(self.reply(prompt.user.rsplit("\n\n", 1)[-1]))
        return replies

    def close(self) -> None:
        pass


def translate(reply, languages=ZH_EN, sources=SOURCES):
    settings = load_settings(overrides={"translate": {"batch_size": 4, "retries": 1}}).translate
    return Translator(settings, Always(reply)).translate(sources, languages)


@pytest.mark.parametrize("reply, counter", [
    (lambda text: REFUSAL, "refused"),
    (lambda text: "作为一个AI，我无法翻译这段内容。", "refused"),
    (lambda text: text, "copied"),
    (lambda text: "这是一句翻译" + text[-1], "wrong_language"),  # Chinese back for zh→en
    (lambda text: "The weather is nice", "identical"),
])
def test_non_translations_keep_the_source_and_are_counted(reply, counter):
    result = translate(reply)
    assert result.texts == SOURCES
    assert result.stats.kept_original == len(SOURCES)
    assert getattr(result.stats, counter) == len(SOURCES)
    assert "no translation" in result.warnings[0]


def test_real_translations_pass_including_an_apology_and_a_repeated_word():
    english = {"今天天气很好": "The weather is nice today", "我们去公园散步吧": "Let's walk in the park",
               "明天见": "See you tomorrow", "对不起": "I'm sorry."}
    result = translate(english.get)
    assert result.texts == list(english.values()) and result.stats.kept_original == 0
    # two distinct lines that mean the same are no sign of a broken model
    same = translate(lambda text: "Yes.", sources=["是的", "对"])
    assert same.stats.kept_original == 0
    # a Latin-script target: no Latin letter at all is another language
    assert translate(lambda text: "Привет", languages=Languages("zh", "fr")).stats.wrong_language == len(SOURCES)
    chinese = {"Hello": "你好", "Bye": "再见", "Yes": "是"}
    assert translate(chinese.get, languages=EN_ZH, sources=list(chinese)).stats.kept_original == 0


class _RefusingServer(JsonHandler):
    """An OpenAI-compatible endpoint whose model refuses everything."""

    def do_GET(self) -> None:
        self.send_json({"object": "list", "data": [{"id": "refuser", "object": "model"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_json({"id": "x", "object": "chat.completion", "model": "refuser",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": REFUSAL}}]})


def test_subextract_translate_exits_3_when_cues_are_left_untranslated(tmp_path):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _RefusingServer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        subtitles = tmp_path / "a.zh.srt"
        subtitles.write_text("".join(f"{i}\n00:00:0{i},000 --> 00:00:0{i},500\n{text}\n\n"
                                     for i, text in enumerate(SOURCES, 1)), encoding="utf-8")
        code, _, err = run_cli("translate", subtitles, "--to", "en", "--translator-server",
                               f"http://127.0.0.1:{server.server_address[1]}/v1", "-q")
    finally:
        server.shutdown()
        server.server_close()
    assert code == 3, err
    assert "4 cues kept their original text" in err and "4 refused" in err and "Traceback" not in err
    written = (tmp_path / "a.en.srt").read_text(encoding="utf-8")
    assert REFUSAL not in written and "今天天气很好" in written
