"""The translator without a GPU: the numbered-reply parser on realistic well-formed and broken
replies, the prompts, glossary and language options, the retry → split → cue-by-cue ladder, and
the CLI's fail-fast checks. The real-vLLM runs are in test_translate_vllm.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from subextract.cli import main
from subextract.job import language_output
from subextract.config import load_settings
from subextract.errors import SubextractError
from subextract.langtags import translation_language
from subextract.translate import open_translator, source_language
from subextract.translate.protocol import (Glossary, Languages, Prompt, batch_prompt, cue_prompt, parse_numbered,
                                           parse_single)
from subextract.translate.translator import Translator

REPO = Path(__file__).resolve().parents[1]
ZH_EN = Languages("zh", "en")
SOURCES = ["今天天气很好", "我们去公园散步吧", "明天见"]


# -- replies ------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply", [
    "1: The weather is nice today\n2: Let's take a walk in the park\n3: See you tomorrow",
    "1. The weather is nice today\n2. Let's take a walk in the park\n3. See you tomorrow\n",
    "[1] The weather is nice today\n[2] Let's take a walk in the park\n[3] See you tomorrow",
    "**1.** The weather is nice today\n**2.** Let's take a walk in the park\n**3.** See you tomorrow",
    "1）The weather is nice today\n2）Let's take a walk in the park\n3）See you tomorrow",
    "Here are the translations:\n```text\n1: The weather is nice today\n2: Let's take a walk in the park\n"
    "3: See you tomorrow\n```\n\nLet me know if you need anything else!",
    "<think>The user wants three lines.\n1: draft</think>\n1: The weather is nice today\n"
    "2: Let's take a walk\nin the park\n3: See you tomorrow",
])
def test_well_formed_replies(reply):
    parsed = parse_numbered(reply, SOURCES, ZH_EN)
    assert parsed.aligned, parsed.problems
    assert parsed.translations[1] == "The weather is nice today"
    assert parsed.translations[2] in ("Let's take a walk in the park",)
    assert parsed.translations[3] == "See you tomorrow"


@pytest.mark.parametrize("reply, problem", [
    ("1: The weather is nice today\n2: See you tomorrow", "missing ids 3"),
    ("1-2: The weather is nice, let's walk in the park\n3: See you tomorrow", "ids 1 and 2 merged"),
    ("1: The weather is nice today\n2: Let's walk\n3: See you\n4: Bye", "id 4 is not one of 1..3"),
    ("1: A\n1: B\n2: C\n3: D", "id 1 given twice"),
    ("1: The weather is nice today\n2:\n3: See you tomorrow", "id 2: empty"),
    ("1: The weather is nice today\n2: 我们去公园散步吧\n3: See you tomorrow", "id 2: not translated"),
    ("The weather is nice today. Let's take a walk in the park. See you tomorrow.", "missing ids 1, 2, 3"),
    ("", "missing ids 1, 2, 3"),
])
def test_malformed_replies_are_not_used(reply, problem):
    parsed = parse_numbered(reply, SOURCES, ZH_EN)
    assert not parsed.aligned
    assert problem in parsed.problems


def test_same_language_may_keep_the_text():
    parsed = parse_numbered("1: OK\n2: Paris", ["OK", "Paris"], Languages("en", "en-GB"))
    assert parsed.aligned


def test_closing_remark_after_the_last_id_is_ignored_but_a_wrapped_line_is_kept():
    parsed = parse_numbered("1: A\n2: B\n3: C\n\nNote: 3 is idiomatic.", ["x", "y", "z"], ZH_EN)
    assert parsed.aligned and parsed.translations[3] == "C"
    parsed = parse_numbered("1: A\n2: B\n3: C and\nmore", ["x", "y", "z"], ZH_EN)
    assert parsed.translations[3] == "C and more"


@pytest.mark.parametrize("reply, text", [
    ("See you tomorrow", "See you tomorrow"),
    ("1: See you tomorrow", "See you tomorrow"),
    ("```\nSee you\ntomorrow\n```", "See you tomorrow"),
    ("<think>short</think>See you tomorrow", "See you tomorrow"),
    ("   ", ""),
])
def test_single_replies(reply, text):
    assert parse_single(reply) == text


# -- prompts, glossary, languages ----------------------------------------------------------------

def test_prompt_language_follows_the_pair():
    assert Languages("zh", "en").prompt_language == "zh"
    assert Languages("fr", "zh-Hant").prompt_language == "zh"
    assert Languages("de", "en").prompt_language == "en"
    assert Languages("zh", "en").name("en") == "英语"
    assert Languages("de", "en").name("pt-BR") == "Portuguese (Brazil)"


def test_batch_prompt_numbers_the_lines_and_carries_context_and_only_the_terms_used():
    settings = load_settings().translate
    glossary = Glossary((("公园", "Central Park"), ("小明", "Xiao Ming")))
    prompt = batch_prompt(settings, ZH_EN, SOURCES[1:], ["今天天气很好"], glossary)
    assert isinstance(prompt, Prompt) and prompt.system
    assert "1: 我们去公园散步吧\n2: 明天见" in prompt.user
    assert "今天天气很好" in prompt.user and "不要翻译" in prompt.user
    assert "公园 翻译成 Central Park" in prompt.user and "小明" not in prompt.user
    english = batch_prompt(settings, Languages("de", "en"), ["Guten Morgen", "Bis bald"], [], Glossary())
    assert "from German into English" in english.user and "exactly 2 lines" in english.user
    assert "context" not in english.user


def test_hunyuan_preset_uses_its_published_prompt_and_no_system_prompt():
    settings = load_settings("hunyuan-mt").translate
    prompt = cue_prompt(settings, ZH_EN, "明天见", ["今天天气很好"], Glossary())
    assert prompt.system == ""
    assert prompt.user == "今天天气很好\n参考上面的信息，把下面的文本翻译成英语，不要额外解释。\n\n明天见"
    english = cue_prompt(settings, Languages("de", "fr"), "Bis bald", [], Glossary())
    assert english.user == "Translate the following segment into French, without additional explanation.\n\nBis bald"
    assert (settings.temperature, settings.top_k, settings.top_p, settings.repetition_penalty) == (0.7, 20, 0.6, 1.05)


def test_glossary_file(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_text("# names\n小明\tXiao Ming\n\nNetflix\tNetflix\n", encoding="utf-8")
    glossary = Glossary.load(str(path))
    assert glossary.terms == (("小明", "Xiao Ming"), ("Netflix", "Netflix"))
    assert glossary.used_in(["watch NETFLIX tonight"]) == [("Netflix", "Netflix")]
    path.write_text("小明 Xiao Ming\n", encoding="utf-8")
    with pytest.raises(SubextractError, match=r"line 1: expected SOURCE<TAB>TARGET"):
        Glossary.load(str(path))
    with pytest.raises(SubextractError, match="No such file"):
        Glossary.load(str(tmp_path / "missing.tsv"))


def test_language_codes():
    assert translation_language("eng") == "en"
    assert translation_language("zh-Hant") == "zh-Hant"
    for bad in ("xx", "english!", ""):
        with pytest.raises(SubextractError, match="not a language tag or name"):
            translation_language(bad)


def test_bad_prompt_placeholder_is_one_line(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("translate:\n  engine: openai\n  server: http://127.0.0.1:9/v1\n"
                      "  prompts:\n    en:\n      cue: 'Translate {txt}'\n")
    with pytest.raises(SubextractError, match=r"translate.prompts.en.cue: bad placeholder"):
        open_translator(load_settings(str(config)).translate)


# -- the ladder ---------------------------------------------------------------------------------

class RuleTranslator:
    """A deterministic stand-in for an LLM whose behaviour the test sets: it "translates" a cue by
    prefixing "EN ", answers numbered batches of at most ``max_lines`` correctly and merges two
    ids in bigger ones, and answers nothing for the texts in ``silent``. The point is to see
    every translation land on its own cue, which random-weight models cannot show."""

    name = "rules"

    def __init__(self, max_lines: int, silent: frozenset[str] = frozenset()) -> None:
        self.max_lines = max_lines
        self.silent = silent
        self.calls: list[list[float]] = []

    def complete(self, prompts, temperatures):
        self.calls.append(list(temperatures))
        return [self._reply(p.user) for p in prompts]

    def _reply(self, prompt: str) -> str:
        numbered = re.findall(r"^(\d+): (.*)$", prompt, re.MULTILINE)
        if not numbered:
            text = prompt.rsplit("\n\n", 1)[-1]
            return "" if text in self.silent else f"EN {text}"
        if len(numbered) > self.max_lines:
            return "\n".join(["1-2: merged", *(f"{n}: EN {t}" for n, t in numbered[2:])])
        return "\n".join(f"{n}: EN {t}" for n, t in numbered)

    def close(self) -> None:
        pass


def test_every_translation_lands_on_its_cue_through_retry_and_split():
    texts = [f"第{i}句话" for i in range(11)]
    settings = load_settings(overrides={"translate": {"batch_size": 8, "retries": 1}}).translate
    model = RuleTranslator(max_lines=2)
    result = Translator(settings, model).translate(texts, ZH_EN)
    assert result.texts == [f"EN {t}" for t in texts]
    s = result.stats
    # 8 → retried, split into 4+4 → each retried and split into 2+2: answered; 3 → retried, split 1+2.
    assert (s.retries, s.splits, s.single) == (4, 4, 1)
    assert s.requests == sum(len(call) for call in model.calls)
    assert model.calls[0] == [0.0, 0.0] and 0.7 in model.calls[1]
    assert s.kept_original == 0 and not result.warnings


def test_a_cue_without_any_reply_keeps_its_text_and_is_counted():
    settings = load_settings(overrides={"translate": {"batch_size": 1, "retries": 2}}).translate
    model = RuleTranslator(max_lines=8, silent=frozenset({"明天见"}))
    result = Translator(settings, model).translate(SOURCES, ZH_EN)
    assert result.texts == ["EN 今天天气很好", "EN 我们去公园散步吧", "明天见"]
    assert result.stats.kept_original == 1 and result.stats.retries == 2
    assert "1 cues kept their original text" in result.warnings[0]


def test_no_cues_no_requests():
    model = RuleTranslator(max_lines=8)
    result = Translator(load_settings().translate, model).translate([], ZH_EN)
    assert result.texts == [] and model.calls == []


def test_source_language_of_a_cue_list():
    from subextract.schema import Cue

    cues = [Cue(0, 1, ("今天天气很好", "The weather is nice"), ("zh", "en"), 1.0),
            Cue(1, 2, ("我们去公园散步吧",), ("zh",), 1.0), Cue(2, 3, ("明天见",), ("zh",), 1.0),
            Cue(3, 4, ("♪",), ("und",), 1.0)]
    assert source_language(cues) == "zh"
    assert source_language([]) == "und"


# -- command line ----------------------------------------------------------------------------------

def test_output_names():
    assert language_output("movie.zh.srt", "zh", "en") == "movie.en.srt"
    assert language_output("movie.srt", "all", "en") == "movie.en.srt"
    assert language_output("/x/movie.zh.srt", "zh", "zh+en") == "/x/movie.zh+en.srt"


@pytest.mark.parametrize("extra, message", [
    (["--translate", "en"], "--translate needs a translator: --translator-server"),
    (["--bilingual"], "--bilingual needs --translate LANG"),
    (["--translate", "zh", "--translator-server", "http://127.0.0.1:9/v1"], "already in that language"),
    (["--translate", "en", "--format", "jsonl", "--translator-server", "http://127.0.0.1:9/v1"],
     "--translate works on the whole cue list"),
    (["--translate", "en", "--translator-server", "http://127.0.0.1:9/v1"],
     "translation server http://127.0.0.1:9/v1 is unreachable"),
])
def test_translation_fails_fast_and_writes_nothing(tmp_path, capsys, extra, message):
    video = tmp_path / "clip.mp4"
    video.write_bytes((REPO / "sample_videos" / "zh_bottom.mp4").read_bytes())
    code = main([str(video), "--lang", "zh", *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4"]


def test_batch_translation_fails_before_any_work(tmp_path, capsys):
    out = tmp_path / "subs"
    code = main(["batch", str(REPO / "sample_videos" / "zh_bottom.mp4"), "--out", str(out), "--lang", "zh",
                 "--translate", "en", "--translator-server", "http://127.0.0.1:9/v1"])
    assert code == 2 and "translation server http://127.0.0.1:9/v1 is unreachable" in capsys.readouterr().err
    assert not out.exists()


def test_translate_command_errors(tmp_path, capsys):
    broken = tmp_path / "broken.srt"
    broken.write_text("1\nnot a time line\nhello\n\n")
    assert main(["translate", str(broken), "--to", "en", "--translator-server", "http://127.0.0.1:9/v1"]) == 2
    assert "invalid SRT" in capsys.readouterr().err
    assert main(["translate", str(REPO / "sample_videos" / "zh_bottom.srt"), "--to", "en", "-o",
                 str(tmp_path / "out.srt")]) == 2
    assert "needs a translator" in capsys.readouterr().err
    assert not (tmp_path / "out.srt").exists()
    assert main(["translate", str(broken), "--to", "klingon!"]) == 2
    assert "--to klingon!: not a language tag or name" in capsys.readouterr().err
