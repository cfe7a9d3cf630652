"""Which recogniser reads which language, and where Tesseract's language data is.

PP-OCRv6 (inside the rapidocr wheel) reads Chinese, Japanese, Latin-script languages and Greek;
for the scripts its dictionary lacks (Cyrillic, Hangul, Arabic, Hebrew, Thai, Devanagari …) and
for Latin-script languages whose diacritics it drops (Vietnamese), Tesseract's LSTM models read
the line. The models come from Debian's ``tesseract-ocr-<code>`` packages (Apache-2.0, a few MB
each), so they are installed by the system's package manager, offline afterwards, and found here.

Debian's packages hold Tesseract's *fast* models. Where the *best* models (converted to integer)
read better, ``scripts/setup.sh`` fetches them into a folder of the install
(``tesseract_models.py``), and a model found there is preferred to the system's.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from subextract.errors import SubextractError


@dataclass(frozen=True)
class TesseractLanguage:
    model: str  # traineddata name: a language ("rus") or, capitalised, a script ("Cyrillic")
    script: str  # Unicode script name as stages.language.script_of gives it
    right_to_left: bool = False

    @property
    def package(self) -> str:
        """The Debian package that installs the model."""
        if self.model[:1].isupper():
            return "tesseract-ocr-script-" + _SCRIPT_PACKAGES[self.model]
        return f"tesseract-ocr-{self.model}"


_SCRIPT_PACKAGES = {"Cyrillic": "cyrl", "Arabic": "arab", "Hebrew": "hebr", "Thai": "thai",
                    "Devanagari": "deva", "Hangul": "hang", "Greek": "grek", "Vietnamese": "viet",
                    "Bengali": "beng", "Georgian": "geor", "Armenian": "armn", "Tamil": "taml"}

# Languages (BCP-47 primary tags, as --lang takes them) read by Tesseract.
TESSERACT_LANGUAGES: dict[str, TesseractLanguage] = {
    "ru": TesseractLanguage("rus", "Cyrillic"),
    "uk": TesseractLanguage("ukr", "Cyrillic"),
    "bg": TesseractLanguage("bul", "Cyrillic"),
    "sr": TesseractLanguage("srp", "Cyrillic"),
    "mk": TesseractLanguage("mkd", "Cyrillic"),
    "be": TesseractLanguage("bel", "Cyrillic"),
    "kk": TesseractLanguage("kaz", "Cyrillic"),
    "ky": TesseractLanguage("kir", "Cyrillic"),
    "mn": TesseractLanguage("mon", "Cyrillic"),
    "ko": TesseractLanguage("kor", "Hangul"),
    "ar": TesseractLanguage("ara", "Arabic", right_to_left=True),
    "fa": TesseractLanguage("fas", "Arabic", right_to_left=True),
    "ur": TesseractLanguage("urd", "Arabic", right_to_left=True),
    "he": TesseractLanguage("heb", "Hebrew", right_to_left=True),
    "yi": TesseractLanguage("yid", "Hebrew", right_to_left=True),
    "th": TesseractLanguage("tha", "Thai"),
    "hi": TesseractLanguage("hin", "Devanagari"),
    "mr": TesseractLanguage("mar", "Devanagari"),
    "ne": TesseractLanguage("nep", "Devanagari"),
    "bn": TesseractLanguage("ben", "Bengali"),
    "ta": TesseractLanguage("tam", "Tamil"),
    "ka": TesseractLanguage("kat", "Georgian"),
    "hy": TesseractLanguage("hye", "Armenian"),
    # The best "ell" reads Greek subtitles best; of the fast models the "Greek" script model
    # (_FAST_STAND_INS).
    "el": TesseractLanguage("ell", "Greek"),
    "vi": TesseractLanguage("vie", "Latin"),
}

# Under --lang all a line of a script is read by the installed ones of these models in turn,
# until one reads it confidently: language models first, which read better here than the script
# models (the Cyrillic one mixes in letters of other Cyrillic alphabets, the Hangul, Thai and
# Arabic ones split words into letters or drop marks), except for Greek's fast model (a stand-in
# takes its place, see _FAST_STAND_INS). Russian's model reads Ukrainian's і as 1 or !, so
# Ukrainian's model comes next.
ROUTE_MODELS: dict[str, tuple[str, ...]] = {
    "Cyrillic": ("rus", "ukr", "bul", "srp", "Cyrillic"),
    "Greek": ("ell", "Greek"),
    "Arabic": ("ara", "fas", "Arabic"),
    "Hebrew": ("heb", "Hebrew"),
    "Hangul": ("kor", "Hangul"),
    "Thai": ("tha", "Thai"),
    "Devanagari": ("hin", "mar", "nep", "Devanagari"),
    "Bengali": ("ben", "Bengali"),
    "Georgian": ("kat", "Georgian"),
    "Armenian": ("hye", "Armenian"),
    "Tamil": ("tam", "Tamil"),
}

# Models tried per script under --lang all, at most (each costs 10-40 ms a line).
MODELS_PER_SCRIPT = 2

# The best models (tessdata_best converted to integer) that read the benchmark's lines better than
# Debian's fast ones, measured per line crop of the multi-script set (edits over its lines, fast ->
# best): Greek 33 -> 1 (the fast "Greek" script model dropped a whole line; "ell" best reads it),
# Ukrainian 3 -> 2, Hindi 1 -> 0; at 1.05-1.5x the CPU a line. Arabic (2 -> 6), Hebrew (0 -> 2) and
# Korean (4 -> 5) read worse and Thai and Vietnamese the same, slower: those stay Debian's.
# Russian has no package on the registry.
BETTER_MODELS = ("ell", "ukr", "hin")

# A language whose own model reads worse than a script model while only its fast version is
# installed: Debian's fast "ell" puts polytonic breathings on every other word of monotonic
# subtitles and scores lines read right under 0.5; the "Greek" script model reads them better.
_FAST_STAND_INS = {"ell": "Greek"}

# Where Debian (and other distributions) put the models; $TESSDATA_PREFIX comes first.
_TESSDATA_DIRS = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata",
                  "/usr/share/tessdata", "/usr/local/share/tessdata")
# The better models' folder: $SUBEXTRACT_TESSDATA, or this one of the install (the virtualenv's
# share/ for scripts/setup.sh), beside the code that reads them and removed with it.
BETTER_MODELS_ENV = "SUBEXTRACT_TESSDATA"
SOURCES_FILE = "sources.json"  # in that folder: where each model came from (tesseract_models.py)


def install_models_dir() -> Path:
    """Where ``scripts/setup.sh`` puts the better models: the install's share/ folder."""
    return Path(sys.prefix) / "share" / "subextract" / "tessdata"


def better_models_dir() -> Path | None:
    """The folder whose models are preferred to the system's, or None when there is none
    ($SUBEXTRACT_TESSDATA set empty turns it off)."""
    chosen = os.environ.get(BETTER_MODELS_ENV)
    folder = install_models_dir() if chosen is None else Path(chosen) if chosen else None
    return folder if folder is not None and folder.is_dir() else None


def tessdata_dir() -> Path | None:
    """The system's folder holding Tesseract's ``*.traineddata``, or None when none is installed."""
    prefix = os.environ.get("TESSDATA_PREFIX")
    candidates = [Path(prefix)] if prefix else [Path(d) for d in _TESSDATA_DIRS]
    return next((d for d in candidates if d.is_dir() and any(d.glob("*.traineddata"))), None)


def _models_in(folder: Path | None) -> set[str]:
    return {p.stem for p in folder.glob("*.traineddata")} if folder is not None else set()


def model_folder(model: str) -> Path | None:
    """The folder Tesseract loads ``model`` from: the better models' first, then the system's."""
    return next((folder for folder in (better_models_dir(), tessdata_dir()) if model in _models_in(folder)), None)


def installed_models() -> set[str]:
    """Model names installed (``rus``, ``Cyrillic`` …) in either folder: Debian puts script models
    beside the language ones (upstream's tessdata has them under ``script/``)."""
    return _models_in(better_models_dir()) | _models_in(tessdata_dir())


def _reading_model(model: str, better: set[str], installed: set[str]) -> str:
    """The model that reads for ``model``: its stand-in where only its fast version is installed."""
    stand_in = _FAST_STAND_INS.get(model)
    return stand_in if stand_in in installed and model not in better else model


def model_origin(model: str) -> str:
    """Where ``model`` is loaded from, for --list-languages: the registry package it was fetched
    from (the better models' folder records it) or the folder."""
    folder = model_folder(model)
    if folder is None:
        return "not installed"
    if folder == better_models_dir():
        try:
            sources = json.loads((folder / SOURCES_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            sources = None
        source = sources.get(model) if isinstance(sources, dict) else None
        if isinstance(source, dict):
            return f"{source.get('variant')} from {source.get('package')}@{source.get('version')} in {folder}"
    return f"{folder}"


def uses_tesseract(lang: str) -> bool:
    return lang in TESSERACT_LANGUAGES


def resolved_language(lang: str) -> TesseractLanguage:
    """``--lang lang``'s language with the model that reads it here (a stand-in, see _FAST_STAND_INS)."""
    language = TESSERACT_LANGUAGES[lang]
    model = _reading_model(language.model, _models_in(better_models_dir()), installed_models())
    return replace(language, model=model)


def _package_to_install(language: TesseractLanguage) -> str:
    """The Debian package to name when a language's model is missing: its stand-in's where it has
    one (what reads best of what Debian packages)."""
    stand_in = _FAST_STAND_INS.get(language.model)
    return TesseractLanguage(stand_in, language.script).package if stand_in else language.package


def require_language(lang: str) -> TesseractLanguage:
    """The model for ``--lang lang``; a SubextractError naming the package when it is not installed."""
    language = resolved_language(lang)
    if language.model not in installed_models():
        raise SubextractError(f"--lang {lang} needs Tesseract's '{language.model}' model, which is not installed: "
                              f"apt-get install {_package_to_install(language)}")
    return language


def routable_scripts() -> dict[str, tuple[TesseractLanguage, ...]]:
    """Script -> the installed models that read it under --lang all, in order (ROUTE_MODELS; a
    model only fast here gives its place to its stand-in and comes after it)."""
    better, installed = _models_in(better_models_dir()), installed_models()
    chosen: dict[str, tuple[TesseractLanguage, ...]] = {}
    for script, models in ROUTE_MODELS.items():
        reading = [_reading_model(m, better, installed) for m in models]
        ordered = list(dict.fromkeys([*reading, *(m for m, r in zip(models, reading) if m != r)]))
        found = [TesseractLanguage(m, script, right_to_left=script in ("Arabic", "Hebrew"))
                 for m in ordered if m in installed][:MODELS_PER_SCRIPT]
        if found:
            chosen[script] = tuple(found)
    return chosen


def language_table() -> list[tuple[str, str, str, bool, str]]:
    """(code, recogniser, model or package, installed, where the model is loaded from) per
    language, for --list-languages."""
    rows = [(code, "rapidocr", "built in", True, "the rapidocr wheel")
            for code in ("zh", "ja", "en", "de", "fr", "es", "it", "pt", "nl")]
    installed = installed_models()
    for code, language in TESSERACT_LANGUAGES.items():
        model = resolved_language(code).model
        if model in installed:
            rows.append((code, "tesseract", model, True, model_origin(model)))
        else:
            rows.append((code, "tesseract", _package_to_install(language), False, "not installed"))
    return rows
