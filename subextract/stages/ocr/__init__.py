"""OCR engines behind one interface: a batch of band pictures in, one Reading per picture out.

Every engine declares its traits in ``ENGINES`` (PySceneDetect's ``AVAILABLE_BACKENDS``, pysubs2's
format table): how one instance may be shared between threads, whether its set-up runs beside
probing and decoding, whether it reads the segmenter's line boxes, whether its models hold the
text detector the region pre-scan uses. The pipeline, the batch runner, the service and Ray read
the traits, never an engine's name; adding an engine is one row here and its module.
"""

from __future__ import annotations

import importlib
import threading
from concurrent.futures import Future
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import numpy as np

from subextract.config import OcrSettings
from subextract.errors import SubextractError
from subextract.schema import LineBox, Reading, TextLine

__all__ = ["ENGINES", "DeferredEngine", "EnginePool", "EngineTraits", "OcrEngine", "OcrFailure", "Reading",
           "SerializedEngine", "TextLine", "construct_engine", "create_engine", "engine_traits", "one_per_process",
           "replicated", "set_up", "sharing"]


class OcrFailure(SubextractError):
    """An engine failed part-way through a batch: ``readings`` holds, for each picture, the
    Reading obtained before the failure, or None."""

    def __init__(self, message: str, readings: Sequence[Reading | None]) -> None:
        super().__init__(message)
        self.readings = list(readings)


class OcrEngine(Protocol):
    name: str

    def read_batch(self, images: Sequence[np.ndarray],
                   line_boxes: Sequence[Sequence[LineBox]] | None = None) -> list[Reading]:
        """One Reading per band picture (grey, or BGR for coloured subtitles), in order.
        ``line_boxes`` are the text lines the segmenter found in each picture; an engine may use
        them (rapidocr skips its detector) or read the whole picture (a vision-language model)."""
        ...


# per_thread: one instance per thread (cheap to load, not safe to share);
# serialized: one instance for every thread, one batch at a time (a model loaded once);
# concurrent: one instance serves every thread at once (an HTTP client with its own pool).
Sharing = Literal["per_thread", "serialized", "concurrent"]


@dataclass(frozen=True)
class EngineTraits:
    name: str
    factory: str  # "module:Class", imported only when the engine is chosen
    sharing: Sharing
    set_up_in_background: bool  # its set-up (imports, a model's load) runs beside probing and decoding
    reads_line_boxes: bool  # recognises the segmenter's line boxes instead of finding lines itself
    text_detector: bool  # ``engine.text_detector()`` gives the detector the region pre-scan uses
    summary: str  # for --help
    # Its models depend on ``OcrSettings.lang`` (--lang ru reads every line with the Russian model):
    # jobs of different languages need engines of their own.
    reads_by_language: bool = False
    # ``read_batch`` takes ``frames``, a few single frames per picture, and reads a line again
    # from them where the picture reads it without confidence.
    second_look: bool = False
    # Runs a model in this process: ``ocr.replicas`` > 1 runs that many copies, each in a process of
    # its own on the same device (stages/ocr/replicas.py).
    replicable: bool = False


ENGINES: dict[str, EngineTraits] = {traits.name: traits for traits in (
    # RapidOCR's __call__ stores per-call options on the shared object (update_params), so two
    # threads in one instance race; its models are small and load in about a second.
    # RapidOCR (PP-OCRv6) alone, or routed per line to Tesseract's models for the scripts
    # PP-OCRv6 lacks (stages/ocr/routed.py), as --lang needs.
    EngineTraits("rapidocr", "subextract.stages.ocr.routed:embedded_engine", "per_thread", True, True, True,
                 "embedded, CPU (PP-OCRv6; Tesseract for the scripts it lacks)", reads_by_language=True,
                 second_look=True),
    # vLLM's LLM is not thread-safe; a GPU model is loaded once, 17-82 s on the H200.
    EngineTraits("vllm", "subextract.stages.ocr.vllm_engine:VllmEngine", "serialized", True, False, False,
                 "a vision-language model run in this process by vLLM", replicable=True),
    EngineTraits("openai", "subextract.stages.ocr.openai_engine:OpenAiEngine", "concurrent", False, False, False,
                 "any OpenAI-compatible server such as `vllm serve`"),
    EngineTraits("transformers", "subextract.stages.ocr.transformers_engine:TransformersEngine", "serialized", True,
                 False, False, "the same model through PyTorch generate (debugging, baselines)", replicable=True),
)}


def engine_traits(name: str) -> EngineTraits:
    try:
        return ENGINES[name]
    except KeyError:
        raise SubextractError(f"unknown OCR engine {name!r} (available: {', '.join(ENGINES)})") from None


def replicated(settings: OcrSettings) -> bool:
    """Whether the engine runs as ``settings.replicas`` processes (engines that run no model here,
    such as openai with a --server per replica, ignore the setting)."""
    return settings.replicas > 1 and engine_traits(settings.engine).replicable


def one_per_process(settings: OcrSettings) -> bool:
    """Whether every process may make its own instance of the engine (RapidOCR, an HTTP client), so
    that jobs can run in child processes (pipeline/child.py); not a model loaded once and shared
    by this process's threads, nor this process's replicas."""
    return engine_traits(settings.engine).sharing != "serialized" and not replicated(settings)


def sharing(settings: OcrSettings) -> Sharing:
    """How one instance of the engine may be shared between threads: replicas serve many at once."""
    return "concurrent" if replicated(settings) else engine_traits(settings.engine).sharing


def create_engine(settings: OcrSettings) -> OcrEngine:
    if replicated(settings):
        from subextract.stages.ocr.replicas import ReplicatedEngine

        return ReplicatedEngine(settings)
    return construct_engine(settings)


def construct_engine(settings: OcrSettings) -> OcrEngine:
    """One instance of the engine, in this process, whatever ``settings.replicas`` says."""
    module, _, cls = engine_traits(settings.engine).factory.partition(":")
    return getattr(importlib.import_module(module), cls)(settings)


def set_up(settings: OcrSettings) -> "Future[OcrEngine]":
    """The engine, being created: on a daemon thread of its own when its traits say its set-up
    runs beside probing and decoding (a run that fails early does not wait for it), else now."""
    future: Future = Future()
    if not engine_traits(settings.engine).set_up_in_background:
        future.set_result(create_engine(settings))
        return future

    def run() -> None:
        try:
            future.set_result(create_engine(settings))
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=run, name="engine-setup", daemon=True).start()
    return future


class DeferredEngine:
    """One engine instance for several threads at once, handed out while it is still being set
    up: the jobs probe and decode meanwhile, only their first read waits for it."""

    def __init__(self, engine: "Future[OcrEngine]") -> None:
        self._engine = engine

    def read_batch(self, *args: Any, **kwargs: Any) -> list[Reading]:
        return self._engine.result().read_batch(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine.result(), name)


@dataclass
class _HandedBatch:
    """One caller's batch waiting for a SerializedEngine, and what came of it."""

    images: Sequence[np.ndarray]
    line_boxes: Sequence[Sequence[LineBox]] | None
    readings: list[Reading] = field(default_factory=list)
    error: BaseException | None = None
    read: bool = False


class SerializedEngine(DeferredEngine):
    """A DeferredEngine read one call at a time. The batches that other jobs hand over while it
    reads are read together in its next call, one call for all of them: one vLLM call of 64 crops
    reads faster than four of 16 (docs/gpu.md), and each job's OCR worker can only gather its own
    job's queue."""

    def __init__(self, engine: "Future[OcrEngine]") -> None:
        super().__init__(engine)
        # One condition for the hand-over and the engine's turn: a job whose batch another call
        # read is woken the moment that call ends, not after the next call it would queue behind.
        self._turn = threading.Condition()
        self._busy = False
        self._handed: list[_HandedBatch] = []

    def read_batch(self, images: Sequence[np.ndarray],
                   line_boxes: Sequence[Sequence[LineBox]] | None = None) -> list[Reading]:
        engine = self._engine.result()
        mine = _HandedBatch(images, line_boxes)
        with self._turn:
            self._handed.append(mine)
            while self._busy and not mine.read:
                self._turn.wait()
            reads = not mine.read  # no call before this one took it along: this job reads for all waiting
            if reads:
                self._busy = True
                together, self._handed = self._handed, []
        if reads:
            try:
                _read_together(engine, together)
            finally:
                with self._turn:
                    self._busy = False
                    self._turn.notify_all()
        if mine.error is not None:
            raise mine.error
        return mine.readings


def _read_together(engine: OcrEngine, batches: list[_HandedBatch]) -> None:
    """Read every batch in one call and hand each its own readings, or its share of the failure."""
    images = [image for batch in batches for image in batch.images]
    boxes = None
    if any(batch.line_boxes is not None for batch in batches):
        boxes = [box for batch in batches
                 for box in (batch.line_boxes if batch.line_boxes is not None else [()] * len(batch.images))]
    try:
        readings: Sequence[Reading | None] = (engine.read_batch(images) if boxes is None
                                              else engine.read_batch(images, line_boxes=boxes))
        failure: BaseException | None = None
    except OcrFailure as exc:  # each batch keeps what was read of it before the failure
        readings, failure = exc.readings, exc
    except BaseException as exc:
        readings, failure = [], exc
    start = 0
    for batch in batches:
        own = list(readings[start:start + len(batch.images)])
        start += len(batch.images)
        if isinstance(failure, OcrFailure):
            batch.error = OcrFailure(str(failure), own)
        elif failure is not None:
            batch.error = failure
        else:
            batch.readings = own
        batch.read = True


class EnginePool:
    """The OCR engine each thread's job gets, as the engine's ``sharing`` trait allows: its own
    instance, or one shared instance (serialized, or used concurrently); one per job language
    where the engine's models depend on it (``reads_by_language``)."""

    def __init__(self, settings: OcrSettings) -> None:
        self._settings = settings
        self._traits = engine_traits(settings.engine)
        self._sharing = sharing(settings)
        self._local = threading.local()
        self._shared: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, lang: str | None = None) -> OcrEngine:
        """The engine for a job of ``lang`` (its --lang; None: the pool's settings' own)."""
        lang = lang if lang is not None and self._traits.reads_by_language else self._settings.lang
        settings = self._settings if lang == self._settings.lang else replace(self._settings, lang=lang)
        if self._sharing == "per_thread":
            engines = self._local.__dict__.setdefault("engines", {})
            if lang not in engines:
                engines[lang] = create_engine(settings)
            return engines[lang]
        with self._lock:
            if lang not in self._shared:
                shared = SerializedEngine if self._sharing == "serialized" else DeferredEngine
                self._shared[lang] = shared(set_up(settings))
            return self._shared[lang]
