"""The numbered-line protocol between the translator and an LLM: building the prompts and
checking the replies.

A batch prompt lists the cues as ``1: text`` lines (a few earlier cues go along as context, not
to be translated); the reply must give exactly one ``N: translation`` line per id. Models wrap
that in all sorts of ways, so parsing forgives the harmless (code fences, a ``<think>`` block,
``1.``/``1)``/``[1]``/``**1.**`` numbering, a preamble, a closing remark after a blank line, a
translation wrapped onto a second line) and reports the rest as problems (missing, repeated,
merged or extra ids, empty or untranslated lines): a reply with any problem is not used.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import langcodes

from subextract.config import TranslateSettings
from subextract.errors import SubextractError

_FENCE = re.compile(r"^\s*```[\w-]*\s*$")
_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL)
# On a stripped line: "1-2: ...", "[1, 2] ...", "1 & 2. ..." (two cues answered as one).
_MERGED_IDS = re.compile(r"^\**\[?(\d{1,4})\s*(?:-|–|,|&|and)\s*(\d{1,4})(?:\]|\**\s*[.:：)）、])")
# "1: text", "1. text", "1) text", "1、text", "[1] text", "**1.** text": group 1 or 2 is the id.
_NUMBERED = re.compile(r"^\**(?:\[(\d{1,4})\]|(\d{1,4})\s*[.:：)）、])\**\s*(.*)$")


@dataclass(frozen=True)
class Glossary:
    """Pinned translations (source term → target term), from a two-column TSV file."""

    terms: tuple[tuple[str, str], ...] = ()

    @classmethod
    def load(cls, path: str | None) -> Glossary:
        if not path:
            return cls()
        from subextract.textfiles import read_text

        text = read_text(path, "glossary", 4 * 1024 * 1024)
        terms = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            columns = [c.strip() for c in line.split("\t")]
            if len(columns) != 2 or not all(columns):
                raise SubextractError(f"glossary {path}, line {number}: expected SOURCE<TAB>TARGET")
            terms.append((columns[0], columns[1]))
        return cls(tuple(terms))

    def used_in(self, texts: Sequence[str]) -> list[tuple[str, str]]:
        """The terms that occur in ``texts`` (case-insensitively): only those go into a prompt."""
        joined = "\n".join(texts).casefold()
        return [(source, target) for source, target in self.terms if source.casefold() in joined]


@dataclass(frozen=True)
class Languages:
    source: str  # BCP-47 tag, or "und" when unknown
    target: str

    @property
    def prompt_language(self) -> str:
        """``zh`` when either side is Chinese (the prompts models like Hunyuan-MT were trained
        on for such pairs), otherwise ``en``."""
        chinese = {"zh", "yue"}
        return "zh" if {_primary(self.source), _primary(self.target)} & chinese else "en"

    def name(self, tag: str) -> str:
        return langcodes.Language.get(tag).display_name(self.prompt_language)


def _primary(tag: str) -> str:
    return tag.split("-")[0].lower()


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str


def batch_prompt(settings: TranslateSettings, languages: Languages, texts: Sequence[str], context: Sequence[str],
                 glossary: Glossary) -> Prompt:
    templates = settings.prompts[languages.prompt_language]
    lines = "\n".join(f"{i}: {text}" for i, text in enumerate(texts, 1))
    user = templates["batch"].format(
        source=languages.name(languages.source) if languages.source != "und" else templates["any_language"],
        target=languages.name(languages.target), count=len(texts), lines=lines,
        context=templates["context"].format(lines="\n".join(context)) if context else "",
        glossary=_glossary_block(templates, glossary.used_in(texts)))
    return Prompt(system=templates["system"], user=user)


def cue_prompt(settings: TranslateSettings, languages: Languages, text: str, context: Sequence[str],
               glossary: Glossary) -> Prompt:
    templates = settings.prompts[languages.prompt_language]
    user = templates["cue"].format(
        target=languages.name(languages.target), text=text,
        context=templates["cue_context"].format(lines="\n".join(context)) if context else "",
        glossary=_glossary_block(templates, glossary.used_in([text])))
    return Prompt(system=templates["system"], user=user)


def _glossary_block(templates: dict[str, str], terms: list[tuple[str, str]]) -> str:
    if not terms:
        return ""
    return templates["glossary"].format(terms="\n".join(templates["term"].format(source=s, target=t)
                                                        for s, t in terms))


@dataclass
class ParsedReply:
    translations: dict[int, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def aligned(self) -> bool:
        return not self.problems


def parse_numbered(reply: str, sources: Sequence[str], languages: Languages) -> ParsedReply:
    """The translations of ids 1..len(sources) in ``reply``, and what is wrong with it."""
    count = len(sources)
    parsed = ParsedReply()
    current: int | None = None
    finished = False  # the last id was seen and a blank line followed: the rest is a closing remark
    for raw in _THINKING.sub("", reply).splitlines():
        if _FENCE.match(raw):
            continue
        line = raw.strip()
        if not line:
            finished = finished or current == count
            continue
        merged = _MERGED_IDS.match(line)
        if merged:
            parsed.problems.append(f"ids {merged[1]} and {merged[2]} merged")
            current = None
            continue
        numbered = _NUMBERED.match(line)
        if numbered and not finished:
            number = int(numbered[1] or numbered[2])
            text = numbered[3].strip()
            if not 1 <= number <= count:
                parsed.problems.append(f"id {number} is not one of 1..{count}")
                current = None
            elif number in parsed.translations:
                parsed.problems.append(f"id {number} given twice")
            else:
                parsed.translations[number] = text
                current = number
        elif current is not None and not finished:
            # A translation wrapped onto the next line belongs to the id above it.
            parsed.translations[current] = f"{parsed.translations[current]} {line}".strip()
    missing = [i for i in range(1, count + 1) if i not in parsed.translations]
    if missing:
        parsed.problems.append(f"missing ids {', '.join(map(str, missing))}")
    for number, text in sorted(parsed.translations.items()):
        problem = translation_problem(sources[number - 1], text, languages)
        if problem:
            parsed.problems.append(f"id {number}: {problem}")
    return parsed


def parse_single(reply: str) -> str:
    """A one-cue reply: the text without code fences, thinking, or a leading ``1:``."""
    lines = [line.strip() for line in _THINKING.sub("", reply).splitlines()
             if line.strip() and not _FENCE.match(line)]
    text = " ".join(lines)
    numbered = _NUMBERED.match(text)
    if numbered and "1" in (numbered[1], numbered[2]):
        text = numbered[3].strip()
    return text


# A refusal says it will not or cannot help, translate, comply...; "I'm sorry." alone is a line.
_REFUSAL = re.compile(
    r"\b(?:can ?not|can'?t|cannot|unable to|won'?t|not able to|not allowed to|must decline)\b.{0,40}?"
    r"\b(?:help|assist|translate|comply|provide|fulfil+|do that|with that|this request|this content)\b"
    r"|\bas an ai\b|\bi(?:'m| am) an ai\b"
    r"|(?:无法|不能|不可以)(?:帮助|协助|翻译|提供|满足|处理)|作为(?:一个)?(?:AI|人工智能)",
    re.IGNORECASE)
# The characters of a script, by the first word of their Unicode names.
_SCRIPT_NAMES = {"Latn": ("LATIN",), "Cyrl": ("CYRILLIC",), "Grek": ("GREEK",), "Arab": ("ARABIC",),
                 "Hebr": ("HEBREW",), "Thai": ("THAI",), "Deva": ("DEVANAGARI",), "Hans": ("CJK",),
                 "Hant": ("CJK",), "Jpan": ("CJK", "HIRAGANA", "KATAKANA"), "Kore": ("HANGUL", "CJK")}


def translation_problem(source: str, translation: str, languages: Languages) -> str | None:
    """Why ``translation`` is not a translation of ``source`` (None when it may be one): empty,
    the source left as it was although the languages differ, a refusal, or no letter of the
    target language's script at all (a reply in another language)."""
    if not translation.strip():
        return "empty"
    same_language = _primary(languages.source) == _primary(languages.target)
    if not same_language and _comparable(translation) == _comparable(source) and any(c.isalpha() for c in source):
        return "not translated"
    if _REFUSAL.search(translation) and not _REFUSAL.search(source):
        return "refused"
    if not same_language and any(c.isalpha() for c in translation) and not _has_script(translation, languages.target):
        return "wrong language"
    return None


def _has_script(text: str, language: str) -> bool:
    """Whether ``text`` has a letter of ``language``'s usual script (True when that is unknown)."""
    prefixes = _SCRIPT_NAMES.get(_script(language))
    if prefixes is None:
        return True
    return any(c.isalpha() and unicodedata.name(c, "").startswith(prefixes) for c in text)


def _script(language: str) -> str:
    try:
        return str(langcodes.Language.get(language).maximize().script or "")
    except (LookupError, ValueError):  # a code langcodes cannot expand: no script check
        return ""


def _comparable(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", "", text).casefold().split())
