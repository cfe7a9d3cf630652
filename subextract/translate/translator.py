"""Cue texts in, one translation per cue out, whatever the model replies.

Cues go in batches of numbered lines with a few earlier cues as context. A reply that is not
exactly one translation per id (``protocol.parse_numbered``) is asked again at a higher
temperature, then the batch is halved, down to single cues, which are asked with the plain
one-segment prompt. So the output always has one translation per cue; a cue whose every reply
came back empty keeps its original text and is counted.

All batches are independent (their context is source text), so each round sends every pending
request in one call: an OpenAI-compatible server gets them ``concurrency`` at a time, in-process
vLLM batches them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from subextract.config import TranslateSettings
from subextract.translate.models import ChatModel
from subextract.translate.protocol import (Glossary, Languages, Prompt, batch_prompt, cue_prompt, parse_numbered,
                                           parse_single, translation_problem)

# progress(cues translated, cues in all)
Progress = Callable[[int, int], None]


@dataclass
class TranslationStats:
    cues: int = 0
    requests: int = 0
    retries: int = 0        # requests asked again after a misaligned or empty reply
    splits: int = 0         # batches halved after their retries
    single: int = 0         # cues that ended up translated in a request of their own
    kept_original: int = 0  # cues left untranslated (kept their original text), for any of the reasons below
    empty: int = 0          # ... every reply for them was empty
    refused: int = 0        # ... the translator refused
    copied: int = 0         # ... it gave the source back
    wrong_language: int = 0  # ... it replied in another language
    identical: int = 0      # ... it gave one reply for every distinct line
    seconds: float = 0.0

    def untranslated_reasons(self) -> str:
        """``2 refused, 1 copied``: why cues kept their original text."""
        counts = [(self.empty, "empty"), (self.refused, "refused"), (self.copied, "copied"),
                  (self.wrong_language, "in another language"), (self.identical, "one reply for every line")]
        return ", ".join(f"{n} {why}" for n, why in counts if n)


@dataclass
class TranslationResult:
    texts: list[str]
    stats: TranslationStats
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Job:
    """Cues ``start``..``stop``-1 in one request; ``attempt`` 0 is the first try."""

    start: int
    stop: int
    attempt: int = 0

    @property
    def single(self) -> bool:
        return self.stop - self.start == 1


class Translator:
    def __init__(self, settings: TranslateSettings, model: ChatModel, glossary: Glossary | None = None) -> None:
        self.settings = settings
        self.model = model
        self.glossary = glossary or Glossary()

    def translate(self, texts: Sequence[str], languages: Languages, progress: Progress | None = None
                  ) -> TranslationResult:
        started = time.monotonic()
        run = _Run(self, list(texts), languages, progress)
        size = max(1, self.settings.batch_size)
        pending = [_Job(i, min(i + size, len(texts))) for i in range(0, len(texts), size)]
        while pending:
            prompts = [run.prompt(job) for job in pending]
            temperatures = [self.settings.temperature if job.attempt == 0 else self.settings.retry_temperature
                            for job in pending]
            replies = self.model.complete(prompts, temperatures)
            run.stats.requests += len(pending)
            pending = [follow_up for job, reply in zip(pending, replies) for follow_up in run.settle(job, reply)]
        run.reject_identical()
        run.stats.seconds = time.monotonic() - started
        if run.stats.kept_original:
            run.warnings.append(f"{run.stats.kept_original} cues kept their original text: the translator's replies "
                                f"for them were no translation ({run.stats.untranslated_reasons()})")
        return TranslationResult(texts=[t if t is not None else "" for t in run.translations], stats=run.stats,
                                 warnings=run.warnings)


class _Run:
    """One translation's state: what is translated so far and the counts."""

    def __init__(self, translator: Translator, texts: list[str], languages: Languages,
                 progress: Progress | None) -> None:
        self.settings = translator.settings
        self.glossary = translator.glossary
        self.texts = texts
        self.languages = languages
        self.progress = progress
        self.translations: list[str | None] = [None] * len(texts)
        self.stats = TranslationStats(cues=len(texts))
        self.warnings: list[str] = []
        self._done = 0

    def prompt(self, job: _Job) -> Prompt:
        context = self.texts[max(0, job.start - self.settings.context_cues):job.start]
        if job.single:
            return cue_prompt(self.settings, self.languages, self.texts[job.start], context, self.glossary)
        return batch_prompt(self.settings, self.languages, self.texts[job.start:job.stop], context, self.glossary)

    def settle(self, job: _Job, reply: str) -> list[_Job]:
        """Take what the reply gives; the requests still needed for the job's cues."""
        if job.single:
            return self._settle_single(job, reply)
        parsed = parse_numbered(reply, self.texts[job.start:job.stop], self.languages)
        if parsed.aligned:
            for number, text in parsed.translations.items():
                self._accept(job.start + number - 1, text)
            return []
        if job.attempt < self.settings.retries:
            self.stats.retries += 1
            return [_Job(job.start, job.stop, job.attempt + 1)]
        self.stats.splits += 1
        middle = (job.start + job.stop) // 2
        return [_Job(job.start, middle), _Job(middle, job.stop)]

    def _settle_single(self, job: _Job, reply: str) -> list[_Job]:
        source = self.texts[job.start]
        text = parse_single(reply)
        problem = translation_problem(source, text, self.languages)
        if problem and job.attempt < self.settings.retries:
            self.stats.retries += 1
            return [_Job(job.start, job.stop, job.attempt + 1)]
        self.stats.single += 1
        if problem:
            # No translation came: the cue keeps its text (rather than going blank or carrying a
            # refusal) and is counted, so the run can say it is incomplete.
            self._count_untranslated(problem)
            text = source
        self._accept(job.start, text)
        return []

    def _count_untranslated(self, problem: str) -> None:
        self.stats.kept_original += 1
        field_name = {"empty": "empty", "not translated": "copied", "refused": "refused",
                      "wrong language": "wrong_language"}[problem]
        setattr(self.stats, field_name, getattr(self.stats, field_name) + 1)

    def reject_identical(self) -> None:
        """One reply for every distinct line (three or more) is the model repeating itself, not a
        translation: every cue keeps its text."""
        distinct = {text for text in self.texts if text.strip()}
        replies = {t for t, source in zip(self.translations, self.texts) if source.strip() and t != source}
        if len(distinct) >= 3 and len(replies) == 1:
            for index, source in enumerate(self.texts):
                if source.strip() and self.translations[index] != source:
                    self.translations[index] = source
                    self.stats.kept_original += 1
                    self.stats.identical += 1

    def _accept(self, index: int, text: str) -> None:
        self.translations[index] = text
        self._done += 1
        if self.progress is not None:
            self.progress(self._done, len(self.texts))
