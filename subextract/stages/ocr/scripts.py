"""Which recogniser reads which language, and where Tesseract's language data is.

PP-OCRv6 (inside the rapidocr wheel) reads Chinese, Japanese, Latin-script languages and Greek;
for the scripts its dictionary lacks (Cyrillic, Hangul, Arabic, Hebrew, Thai, Devanagari …) and
for Latin-script languages whose diacritics it drops (Vietnamese), Tesseract's LSTM models read
the line. The models come from Debian's ``tesseract-ocr-<code>`` packages (Apache-2.0, a few MB
each), so they are installed by the system's package manager, offline afterwards, and found here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
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
    # The Greek script model reads monotonic subtitles better than "ell" (polytonic breathings
    # on every other word, confidences under 0.5 on lines read right; measured here).
    "el": TesseractLanguage("Greek", "Greek"),
    "vi": TesseractLanguage("vie", "Latin"),
}

# Under --lang all a line of a script is read by the installed ones of these models in turn,
# until one reads it confidently: language models first, which read better here than the script
# models (the Cyrillic one mixes in letters of other Cyrillic alphabets, the Hangul, Thai and
# Arabic ones split words into letters or drop marks), except for Greek. Russian's model reads
# Ukrainian's і as 1 or !, so Ukrainian's model comes next.
ROUTE_MODELS: dict[str, tuple[str, ...]] = {
    "Cyrillic": ("rus", "ukr", "bul", "srp", "Cyrillic"),
    "Greek": ("Greek", "ell"),
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

# Where Debian (and other distributions) put the models; $TESSDATA_PREFIX comes first.
_TESSDATA_DIRS = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata",
                  "/usr/share/tessdata", "/usr/local/share/tessdata")


def tessdata_dir() -> Path | None:
    """The folder holding Tesseract's ``*.traineddata``, or None when none is installed."""
    prefix = os.environ.get("TESSDATA_PREFIX")
    candidates = [Path(prefix)] if prefix else [Path(d) for d in _TESSDATA_DIRS]
    return next((d for d in candidates if d.is_dir() and any(d.glob("*.traineddata"))), None)


def installed_models() -> set[str]:
    """Model names installed (``rus``, ``Cyrillic`` …): Debian puts script models beside the
    language ones (upstream's tessdata has them under ``script/``)."""
    folder = tessdata_dir()
    if folder is None:
        return set()
    return {p.stem for p in folder.glob("*.traineddata")}


def uses_tesseract(lang: str) -> bool:
    return lang in TESSERACT_LANGUAGES


def require_language(lang: str) -> TesseractLanguage:
    """The model for ``--lang lang``; a SubextractError naming the package when it is not installed."""
    language = TESSERACT_LANGUAGES[lang]
    if language.model not in installed_models():
        raise SubextractError(f"--lang {lang} needs Tesseract's '{language.model}' model, which is not installed: "
                              f"apt-get install {language.package}")
    return language


def routable_scripts() -> dict[str, tuple[TesseractLanguage, ...]]:
    """Script -> the installed models that read it under --lang all, in order (ROUTE_MODELS)."""
    installed = installed_models()
    chosen: dict[str, tuple[TesseractLanguage, ...]] = {}
    for script, models in ROUTE_MODELS.items():
        found = [TesseractLanguage(m, script, right_to_left=script in ("Arabic", "Hebrew"))
                 for m in models if m in installed][:MODELS_PER_SCRIPT]
        if found:
            chosen[script] = tuple(found)
    return chosen


def language_table() -> list[tuple[str, str, str, bool]]:
    """(code, recogniser, model or package, installed) per language, for --list-languages."""
    installed = installed_models()
    rows = [(code, "rapidocr", "built in", True) for code in ("zh", "ja", "en", "de", "fr", "es", "it", "pt", "nl")]
    rows += [(code, "tesseract", language.model if language.model in installed else language.package,
              language.model in installed) for code, language in TESSERACT_LANGUAGES.items()]
    return rows
