"""Translation stage: cues in, the same cues (same times, same count) in another language out,
translated by an LLM (``models``) through an alignment-safe numbered-line protocol
(``protocol``, ``translator``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
import dataclasses
from dataclasses import dataclass

from subextract.config import TranslateSettings
from subextract.errors import SubextractError
from subextract.schema import Cue
from subextract.stages.write import main_language
from subextract.translate.models import ChatModel, create_chat_model
from subextract.translate.protocol import Glossary, Languages
from subextract.translate.translator import Progress, TranslationResult, TranslationStats, Translator

__all__ = ["CueTranslation", "Glossary", "TranslationStats", "open_translator",
           "source_language", "translate_cues"]

_PLACEHOLDERS = {"source": "", "target": "", "count": 0, "lines": "", "context": "", "glossary": "", "text": "",
                 "terms": ""}


@dataclass(frozen=True)
class CueTranslation:
    source: str
    target: str
    translated: list[Cue]  # the translation alone, one cue per original cue, same times
    bilingual: list[Cue]   # the original lines followed by the translation
    result: TranslationResult

    def cues(self, bilingual: bool) -> list[Cue]:
        return self.bilingual if bilingual else self.translated

    @property
    def summary(self) -> dict:
        """What JSON output and the batch manifest say about the translation."""
        return {"from": self.source, "to": self.target, **dataclasses.asdict(self.result.stats)}


def open_translator(settings: TranslateSettings, glossary_path: str | None = None,
                    needed_by: str = "--translate") -> Translator:
    """The translator, its model started (or its server checked) now: a wrong setting fails
    before the video is processed, not after. ``needed_by`` names what asked for it in the
    message given when no translator is configured."""
    _check_prompts(settings)
    glossary = Glossary.load(glossary_path)
    model: ChatModel = create_chat_model(settings, needed_by)
    return Translator(settings, model, glossary)


def source_language(cues: Sequence[Cue], given: str = "all") -> str:
    """``given`` when it names a language; otherwise the main language of most cues (``und``
    when none is known)."""
    if given not in ("all", "auto"):
        return given
    votes = Counter(main_language(cue) for cue in cues)
    votes.pop("und", None)
    return votes.most_common(1)[0][0] if votes else "und"


def translate_cues(translator: Translator, cues: Sequence[Cue], source: str, target: str,
                   progress: Progress | None = None) -> CueTranslation:
    # A cue's lines are one sentence wrapped for the screen: translated as one line.
    texts = [" ".join(line.strip() for line in cue.lines) for cue in cues]
    result = translator.translate(texts, Languages(source=source, target=target), progress)
    translated, bilingual = [], []
    for cue, text in zip(cues, result.texts):
        translated.append(Cue(cue.start, cue.end, (text,), (target,), cue.confidence, cue.band))
        bilingual.append(Cue(cue.start, cue.end, (*cue.lines, text), (*cue.languages, target), cue.confidence,
                             cue.band))
    return CueTranslation(source=source, target=target, translated=translated, bilingual=bilingual, result=result)


def _check_prompts(settings: TranslateSettings) -> None:
    for language in ("en", "zh"):
        templates = settings.prompts.get(language) or {}
        for key in ("system", "batch", "context", "cue", "cue_context", "glossary", "term", "any_language"):
            if key not in templates:
                raise SubextractError(f"translate.prompts.{language}.{key}: missing from the config")
            try:
                templates[key].format(**_PLACEHOLDERS)
            except (KeyError, IndexError, ValueError) as exc:
                raise SubextractError(f"translate.prompts.{language}.{key}: bad placeholder ({exc}); "
                                      f"use {{{'}, {'.join(_PLACEHOLDERS)}}}") from None
