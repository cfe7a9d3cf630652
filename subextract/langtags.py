"""Language arguments as people type them: BCP 47 and ISO 639 tags in any case (``en-US``, ``EN``,
``eng``, ``zh_CN``, ``zh-Hant``, ``cmn``, ``chi``) or English names (``English``, ``chinese``).
Every entry point (the command line, batch, the service's job options, the Python API,
``translate --to/--from``) goes through here, so they all accept the same forms and refuse the
same ones with the same line.

``reading_language`` gives the code the pipeline filters and names files by: the primary language
subtag of a language whose lines subextract can tell apart (a script or region subtag never
changes what is read). ``translation_language`` keeps the whole tag (``pt-BR``, ``zh-Hant``):
a translator writes in any language, and the variant matters to it. Parsing is langcodes' (its
name data comes with ``langcodes[data]``, offline)."""

from __future__ import annotations

from functools import lru_cache

import langcodes
from langcodes.tag_parser import LanguageTagError

from subextract.errors import SubextractError

EVERY_LANGUAGE = ("all", "auto")  # --lang values that keep every line
LIST_HINT = "subextract --list-languages lists the languages it reads"
# A variety this close (langcodes' tag distance) to a language subextract tells apart is read as
# that language: nb/nn as no, sh as sr, bs as hr, mo as ro, gsw and lb as de.
_SAME_LANGUAGE_DISTANCE = 10
# Tags that parse but name no language.
_NOT_LANGUAGES = ("und", "mul", "zxx", "mis")


def language_tag(value: str, option: str = "--lang") -> langcodes.Language:
    """``value`` as a language: a tag (any case, ``_`` or ``-``, ISO 639-1/2/3, macrolanguages
    folded: ``cmn`` is ``zh``) or a language's name. A SubextractError naming the closest codes
    otherwise."""
    text = value.strip()
    language = None
    try:
        language = langcodes.Language.get(langcodes.standardize_tag(text, macro=True))
    except (ValueError, LanguageTagError):
        pass
    if language is None or not language.is_valid() or language.language in (None, *_NOT_LANGUAGES):
        # A name ("English", "chinese", "Deutsch", "Portuguese (Brazil)"): letters, spaces, hyphens,
        # parentheses only; langcodes.find itself would read "english!" as English.
        if not text or not all(char.isalpha() or char in " '()-" for char in text):
            raise SubextractError(_unknown(value, option))
        try:
            language = langcodes.find(text)
        except LookupError:
            raise SubextractError(_unknown(value, option)) from None
    return language


def reading_language(value: str, option: str = "--lang") -> str:
    """The code ``--lang value`` keeps lines of and names outputs by (``zh`` for ``zh-Hant``,
    ``zh-TW``, ``cmn`` or ``Chinese``), ``all``/``auto`` as they are; a SubextractError when
    subextract cannot tell that language's lines apart (the run would keep none)."""
    if value.strip().lower() in EVERY_LANGUAGE:
        return value.strip().lower()
    language = language_tag(value, option)
    code = _known_variant(language)
    if code is None:
        raise SubextractError(f"{option} {value}: {language.display_name()} is not among the languages whose lines "
                              f"subextract tells apart ({_closest_text(value, language)}); --lang all keeps every "
                              f"line; {LIST_HINT}")
    return code


def translation_language(value: str, option: str = "--translate") -> str:
    """A translation's language as a standard tag, variant kept (``pt-BR``, ``zh-Hant``; ``eng``
    → ``en``, ``English`` → ``en``)."""
    return str(language_tag(value, option))


def chinese_script(value: str) -> str | None:
    """``Hans`` or ``Hant`` when ``value`` names Chinese with a script or a region that chooses one
    (``zh-Hant``, ``zh-TW``, ``zh-HK``, ``zh-CN``); None otherwise (plain ``zh``, other languages)."""
    if value.strip().lower() in EVERY_LANGUAGE:
        return None
    language = language_tag(value)
    if _known_variant(language) != "zh" or not (language.script or language.territory):
        return None
    return language.maximize().script


@lru_cache(maxsize=1)
def readable_languages() -> dict[str, str]:
    """Code → English name of every language whose lines subextract tells apart: those its
    language tagger chooses among and those a Tesseract model reads."""
    from subextract.stages.language import CANDIDATES
    from subextract.stages.ocr.scripts import TESSERACT_LANGUAGES

    codes = dict.fromkeys([*CANDIDATES, *TESSERACT_LANGUAGES])
    return {code: langcodes.Language.get(code).display_name() for code in codes}


def _known_variant(language: langcodes.Language) -> str | None:
    known = readable_languages()
    if language.language in known:
        return language.language
    if language.maximize().script in ("Hans", "Hant"):
        return "zh"  # Cantonese, Hakka, Min…: written in Han characters, which are tagged as Chinese
    match, distance = langcodes.closest_match(language.language, list(known), max_distance=_SAME_LANGUAGE_DISTANCE)
    return match if distance <= _SAME_LANGUAGE_DISTANCE and match in known else None


def _unknown(value: str, option: str) -> str:
    return f"{option} {value}: not a language tag or name ({_closest_text(value)}); {LIST_HINT}"


def _closest_text(value: str, language: langcodes.Language | None = None) -> str:
    return "closest: " + ", ".join(f"{code} ({name})" for code, name in _closest(value, language))


def _closest(value: str, language: langcodes.Language | None, limit: int = 3) -> list[tuple[str, str]]:
    """The known languages nearest ``value``: by langcodes' distance when it is a language, else
    by spelling against the codes and the names."""
    from rapidfuzz import fuzz, process

    known = readable_languages()
    if language is not None:
        ranked = sorted(known, key=lambda code: langcodes.tag_distance(language.language, code))
        return [(code, known[code]) for code in ranked[:limit]]
    text = value.strip().lower()
    choices = {code: f"{code} {name.lower()}" for code, name in known.items()}
    found = process.extract(text, choices, scorer=fuzz.WRatio, limit=limit)
    return [(code, known[code]) for _, _, code in found]
