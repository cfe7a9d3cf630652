"""One video's job: extract → keep the feed's cues → write → translate → write.

The command line, the batch runner, the HTTP service and Ray all run a video through
``run_job``; each says where the files go (``JobOutputs``), how a file is put there (``place``:
the batch runner keeps edited files, the service writes under its data folder) and what to tell
the user on the way (``JobEvents``). The job prints nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from subextract.config import Settings
from subextract.errors import SubextractError
from subextract.feeds import CueFeed, FeedSink, Watchlist
from subextract.pipeline.run import ExtractionResult, extract
from subextract.schema import Cue
from subextract.stages.write import render, write_text

logger = logging.getLogger(__name__)

# (path, text) → the path the text was written to (a batch keeps a file edited since it wrote it
# and writes beside it).
Place = Callable[[str, str], str]


@dataclass(frozen=True)
class JobOptions:
    """What the user asked of every video."""

    lang: str = "all"
    fmt: str = "srt"
    start: float = 0.0
    end: float | None = None
    watchlist: Watchlist | None = None
    only_flagged: bool = False
    translate: str | None = None  # the target language of a translation
    bilingual: bool = False  # the translation's file holds the original lines and the translation below them
    save_crops: str | None = None  # a folder for one PNG per segment (the OCR picture) and crops.json


@dataclass(frozen=True)
class JobOutputs:
    """Where one video's files go; ``-`` is stdout."""

    cues: str | None  # the extracted cues; None when only the bilingual file is wanted
    translation: str | None = None
    fallback: str | None = None  # where the extracted cues go when the translator fails and ``cues`` is None
    streamed: bool = False  # jsonl: the cues file is written cue by cue while the video runs


def output_name(video: str, lang: str, fmt: str) -> str:
    """``VIDEO.LANG.FORMAT`` next to the video (``VIDEO.FORMAT`` for every language)."""
    suffix = f".{lang}.{fmt}" if lang not in ("all", "auto") else f".{fmt}"
    return str(Path(video).with_suffix("")) + suffix


def language_output(path: str, language: str, new_tag: str) -> str:
    """``path`` with its language tag (``movie.zh.srt``) replaced by ``new_tag``, or ``new_tag``
    added before the extension when it has none."""
    target = Path(path)
    stem, suffix = target.stem, target.suffix
    if language and stem.endswith(f".{language}"):
        stem = stem[: -len(language) - 1]
    return str(target.with_name(f"{stem}.{new_tag}{suffix}"))


def translation_tag(lang: str, target: str, bilingual: bool) -> str:
    """The language tag of a translation's file name: ``en``, or ``zh+en`` for a bilingual one."""
    return f"{lang if lang not in ('all', 'auto') else 'orig'}+{target}" if bilingual else target


def outputs_beside_video(video: str, options: JobOptions, output: str | None = None) -> JobOutputs:
    """The command line's naming: the cues at ``output`` (default ``VIDEO.LANG.FORMAT``), the
    translation beside them; with ``bilingual`` only the bilingual file."""
    cues = output or output_name(video, options.lang, options.fmt)
    streamed = options.fmt == "jsonl"
    if not options.translate:
        return JobOutputs(cues=cues, streamed=streamed)
    if options.bilingual:
        tag = translation_tag(options.lang, options.translate, bilingual=True)
        return JobOutputs(cues=None, translation=output or output_name(video, tag, options.fmt),
                          fallback=output_name(video, options.lang, options.fmt))
    return JobOutputs(cues=cues, translation=language_output(cues, options.lang, options.translate))


def outputs_in_tree(output: Path, options: JobOptions) -> JobOutputs:
    """The batch runner's naming: the cues at ``output`` always, a translation (or bilingual
    file) beside them."""
    if not options.translate:
        return JobOutputs(cues=str(output))
    tag = translation_tag(options.lang, options.translate, options.bilingual)
    return JobOutputs(cues=str(output), translation=language_output(str(output), options.lang, tag))


@dataclass
class JobEvents:
    """What the caller hears while the job runs (every callback optional)."""

    progress: Callable[[float, float | None, int], None] | None = None  # seconds done, total, segments
    stage: Callable[[str], None] | None = None
    cue: Callable[[dict], None] | None = None  # each kept cue's feed record, as soon as it is final
    feeds: Sequence[FeedSink] = ()  # JSONL feeds that get each kept cue as soon as it is final
    translation_progress: Callable[[int, int], None] | None = None


@dataclass
class JobResult:
    extraction: ExtractionResult
    cues: list[Cue]  # the cues the feed keeps (all of them without --only-flagged)
    metadata: dict
    written: list[str] = field(default_factory=list)  # the paths written, in order
    translation: Any = None  # subextract.translate's Translation
    translation_error: str | None = None  # why the translator failed (the extracted cues were written)
    translation_source: str = ""  # the language translated from (detected when ``lang`` names none)
    fallback_refusal: str | None = None  # why the extracted cues could not go to the fallback file
    flagged: int = 0  # cues matching the watchlist

    @property
    def complete(self) -> bool:
        """Every cue read and, when asked, translated."""
        untranslated = self.translation is not None and self.translation.result.stats.kept_original
        return self.extraction.complete and self.translation_error is None and not untranslated


def run_job(video: str, settings: Settings, options: JobOptions, outputs: JobOutputs, *,
            engine: Any = None, translator: Any = None, place: Place | None = None,
            events: JobEvents | None = None, extraction: ExtractionResult | None = None,
            extract_with: Callable[..., ExtractionResult] = extract) -> JobResult:
    """Run one video. Failures of the video itself raise (``SubextractError`` for the ones
    explained to the user); a translator failure does not: the extracted cues are written and
    ``translation_error`` says why. ``extraction``: the video's cues, extracted elsewhere (the
    split level of ``subextract.scale``); the job writes them (cue listeners are not called).
    ``extract_with``: ``extract`` or one that runs it elsewhere with the same callbacks
    (``extract_in_child``)."""
    place = place or _write
    events = events or JobEvents()
    feed = CueFeed(video, options.watchlist, options.only_flagged)
    stream = FeedSink(outputs.cues) if outputs.streamed and outputs.cues is not None else None
    listeners = [*events.feeds, *([stream] if stream is not None else [])]
    on_cue = feed.streaming_to(listeners, events.cue) if listeners or events.cue else None
    try:
        result = extraction if extraction is not None else extract_with(
            video, settings, lang=options.lang, start=options.start, end=options.end, engine=engine,
            progress=events.progress, on_cue=on_cue, on_stage=events.stage, save_crops=options.save_crops)
    finally:
        if stream is not None:
            stream.close()
    cues = feed.kept(result.cues)
    metadata = result.metadata(video)
    job = JobResult(extraction=result, cues=cues, metadata=metadata, flagged=feed.flagged(result.cues))
    if outputs.cues is not None:
        if stream is None:
            job.written.append(place(outputs.cues, _render(feed, cues, result.cues, options.fmt, metadata)))
        elif not stream.lines:
            job.written.append(place(outputs.cues, ""))  # nothing streamed: still an (empty) file, as an SRT would be
        else:
            job.written.append(outputs.cues)
    if translator is not None and options.translate:
        _translate(job, translator, options, outputs, place, events)
    return job


def extract_in_child(child: Any, check: Callable[[], None]) -> Callable[..., ExtractionResult]:
    """An ``extract_with`` for ``run_job`` that extracts in ``child`` (a pipeline.child.ChildProcess,
    with an engine of its own) and calls the callbacks here; ``check`` runs between its events
    and stops it by raising. The Python work per frame holds the GIL: jobs on threads share one core."""

    def extract_there(video: str, settings: Settings, *, lang: str, start: float, end: float | None, engine: Any,
                      progress: Callable | None, on_cue: Callable | None, on_stage: Callable | None,
                      save_crops: str | None) -> ExtractionResult:
        def on_event(kind: str, payload: Any) -> None:
            if kind == "cue":
                if on_cue is not None:
                    on_cue(payload)
            elif kind == "stage":
                if on_stage is not None:
                    on_stage(payload)
            elif progress is not None:
                progress(*payload)

        return child.call(f"{__name__}:extraction_in_child", (video, settings, lang, start, end, save_crops,
                                                               on_cue is not None), on_event, check)

    return extract_there


_child_engines: list[tuple[Any, Any]] = []  # a child process's (OCR settings, EnginePool): its last


def _engine_here(ocr: Any, lang: str | None) -> Any:
    from subextract.stages.ocr import EnginePool

    if not _child_engines or _child_engines[0][0] != ocr:
        _child_engines[:] = [(ocr, EnginePool(ocr))]
    return _child_engines[0][1].get(lang)


def engine_in_child(ocr: Any, lang: str | None, *, emit: Callable[[str, Any], None]) -> None:
    """In a child process: its engine for ``ocr`` and ``lang`` made now (a service's worker asks up
    front: readiness waits for the engine; a failure to start is raised here)."""
    _engine_here(ocr, lang)


def extraction_in_child(video: str, settings: Settings, lang: str, start: float, end: float | None,
                        save_crops: str | None, cues: bool, *, emit: Callable[[str, Any], None]) -> ExtractionResult:
    """In a child process: ``extract`` with this process's engine, its callbacks sent as events
    (progress at most every ``CHECK_INTERVAL``: the caller checks for a stop between)."""
    import time

    from subextract.pipeline.child import CHECK_INTERVAL

    sent = {"progress": 0.0}

    def progress(done: float, total: float | None, segments: int) -> None:
        now = time.monotonic()
        if now - sent["progress"] >= CHECK_INTERVAL:
            sent["progress"] = now
            emit("progress", (done, total, segments))

    return extract(video, settings, lang=lang, start=start, end=end, engine=_engine_here(settings.ocr, lang),
                   progress=progress,
                   on_cue=(lambda cue: emit("cue", cue)) if cues else None,
                   on_stage=lambda name: emit("stage", name), save_crops=save_crops)


def _render(feed: CueFeed, kept: list[Cue], every: list[Cue], fmt: str, metadata: dict) -> str:
    # A JSONL file carries the feed's records (flags included), as the stream would have.
    return feed.render(every) if fmt == "jsonl" else render(kept, fmt, metadata)


def _translate(job: JobResult, translator: Any, options: JobOptions, outputs: JobOutputs, place: Place,
               events: JobEvents) -> None:
    from subextract.translate import source_language, translate_cues

    source = job.translation_source = source_language(job.cues, options.lang)
    try:
        translation = translate_cues(translator, job.cues, source, options.translate, events.translation_progress)
    except SubextractError as exc:
        job.translation_error = f"translation failed: {exc}"
        logger.warning("%s: %s", job.metadata["video"], job.translation_error)
        if outputs.cues is None and outputs.fallback is not None:
            try:
                job.written.append(place(outputs.fallback, render(job.cues, options.fmt, job.metadata)))
            except SubextractError as refusal:
                job.fallback_refusal = str(refusal)
        return
    job.translation = translation
    if outputs.translation is not None:
        text = render(translation.cues(options.bilingual), options.fmt,
                      {**job.metadata, "translation": translation.summary})
        job.written.append(place(outputs.translation, text))


def _write(path: str, text: str) -> str:
    write_text(path, text)
    return path
