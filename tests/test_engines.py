"""The engine table: every engine declares its traits, one contract holds for all of them, and
the pool shares an instance exactly as the traits say (PySceneDetect's ALL_DETECTORS pattern).

The embedded engine runs here for real; the vision-language engines run the same contract in
the vLLM virtualenv (test_vllm_engine.py, test_openai_engine.py, test_transformers_engine.py)."""

from __future__ import annotations

import importlib.util
import threading
import time
from concurrent.futures import Future
from dataclasses import replace

import cv2
import numpy as np
import pytest

from subextract.config import load_settings
from subextract.errors import SubextractError
from subextract.schema import Reading, TextLine
from subextract.stages.ocr import (ENGINES, DeferredEngine, EnginePool, OcrFailure, SerializedEngine, create_engine,
                                  engine_traits, replicated, sharing)


def test_every_engine_declares_its_traits_and_a_module_that_exists():
    assert set(ENGINES) == {"rapidocr", "vllm", "openai", "transformers"}
    for name, traits in ENGINES.items():
        assert traits.name == name and traits.summary
        assert traits.sharing in ("per_thread", "serialized", "concurrent")
        module, _, cls = traits.factory.partition(":")
        assert cls and importlib.util.find_spec(module) is not None, traits.factory


def test_the_settings_accept_exactly_the_engines_of_the_table():
    for name in ENGINES:
        assert load_settings(None, {"ocr": {"engine": name}}).ocr.engine == name
    with pytest.raises(SubextractError):
        load_settings(None, {"ocr": {"engine": "tesseract-9"}})
    with pytest.raises(SubextractError, match="unknown OCR engine 'nope'"):
        engine_traits("nope")


def subtitle_picture(text: str) -> np.ndarray:
    picture = np.full((72, 480), 30, np.uint8)
    cv2.putText(picture, text, (20, 50), cv2.FONT_HERSHEY_SIMPLEX, 1.3, 255, 3, cv2.LINE_AA)
    return picture


@pytest.fixture(scope="module")
def rapid():
    return create_engine(load_settings().ocr)


def test_the_reading_contract_one_reading_per_picture_in_order(rapid):
    pictures = [subtitle_picture("HELLO WORLD"), np.full((72, 480), 30, np.uint8), subtitle_picture("GOOD NIGHT")]
    readings = rapid.read_batch(pictures)
    assert len(readings) == 3 and all(isinstance(r, Reading) for r in readings)
    assert readings[0].text.replace(" ", "") == "HELLOWORLD" and readings[1].lines == ()
    assert readings[2].text.replace(" ", "") == "GOODNIGHT"
    assert 0.5 < readings[0].confidence <= 1.0
    line = readings[0].lines[0]
    assert 0 <= line.box[0] < line.box[2] <= 480 and 0 <= line.box[1] < line.box[3] <= 72


def test_an_engine_with_a_text_detector_lends_it_to_the_region_prescan(rapid):
    assert ENGINES["rapidocr"].text_detector
    boxes = rapid.text_detector()(subtitle_picture("HELLO WORLD"))
    assert len(boxes) == 1 and boxes[0][2] - boxes[0][0] > 150


def test_a_per_thread_engine_gets_one_instance_per_thread():
    pool = EnginePool(load_settings().ocr)
    first = pool.get()
    assert pool.get() is first
    seen = []
    thread = threading.Thread(target=lambda: seen.append(pool.get()))
    thread.start()
    thread.join()
    assert seen[0] is not first and type(seen[0]) is type(first)


def test_replicas_are_shared_by_every_thread_at_once_and_other_engines_ignore_them():
    """--ocr-replicas N: an engine that runs a model here is N processes serving every thread at
    once (no lock between jobs); the embedded engine (one per thread) and openai (--server per
    replica) ignore the setting."""
    base = load_settings().ocr
    vllm = replace(base, engine="vllm", model="/nonexistent", replicas=2)
    assert sharing(vllm) == "concurrent" and sharing(replace(vllm, replicas=1)) == "serialized"
    assert sharing(replace(vllm, engine="transformers")) == "concurrent"
    assert sharing(replace(base, replicas=3)) == "per_thread" and not replicated(replace(base, replicas=3))
    assert sharing(replace(base, engine="openai", replicas=3)) == "concurrent"
    pool = EnginePool(vllm)  # set up in the background: the failure waits for the first read
    engine = pool.get()
    assert isinstance(engine, DeferredEngine) and not isinstance(engine, SerializedEngine)
    with pytest.raises(SubextractError):
        engine.read_batch([])


def test_an_engine_whose_models_depend_on_the_language_gets_one_per_job_language():
    """A service or batch job with --lang ru reads with the Russian model even when the pool was
    made for --lang all; an engine that reads every script alike is shared across languages."""
    pool = EnginePool(load_settings().ocr)
    russian, every = pool.get("ru"), pool.get("all")
    assert pool.get("ru") is russian and pool.get() is every and russian is not every
    assert russian.fixed is not None and russian.fixed.model == "rus" and russian.settings.lang == "ru"
    assert getattr(every, "fixed", None) is None
    assert [name for name, traits in ENGINES.items() if traits.reads_by_language] == ["rapidocr"]
    shared = EnginePool(replace(load_settings().ocr, engine="vllm", model="/nonexistent"))  # set up in background
    assert shared.get("ru") is shared.get("all")


def test_shared_engines_are_created_once_serialized_unless_concurrent(monkeypatch):
    made = []

    class Counting:
        name = "counting"

        def __init__(self, settings):
            made.append(self)

        def read_batch(self, images, line_boxes=None):
            return [Reading(lines=()) for _ in images]

    monkeypatch.setattr("subextract.stages.ocr.create_engine", Counting)
    for name, wrapped in (("vllm", True), ("openai", False)):
        made.clear()
        pool = EnginePool(replace(load_settings().ocr, engine=name))
        engines = []
        threads = [threading.Thread(target=lambda: engines.append(pool.get())) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(made) == 1 and all(engine is engines[0] for engine in engines)
        assert isinstance(engines[0], SerializedEngine) == wrapped
        assert engines[0].read_batch([np.zeros((4, 4), np.uint8)]) == [Reading(lines=())]


def test_each_vllm_replica_keeps_the_room_one_engine_leaves():
    """One engine at 0.9 leaves a tenth of the device for what vLLM does not count (the CUDA
    context, the vision tower run beside it); four replicas at 0.225 each left none and ran out of
    memory on the H200, at 0.15 each they ran."""
    from subextract.stages.ocr.vllm_engine import replica_memory_share

    assert replica_memory_share(0.9, 4) == pytest.approx(0.15)
    assert replica_memory_share(0.9, 2) == pytest.approx(0.4)
    assert replica_memory_share(0.5, 1) == pytest.approx(0.5)
    for share, replicas in ((0.9, 4), (0.8, 3), (0.6, 2)):
        taken = replicas * replica_memory_share(share, replicas)
        assert taken + replicas * (1 - share) == pytest.approx(1.0)
    with pytest.raises(SubextractError, match="12 OCR replicas do not fit on one device"):
        replica_memory_share(0.9, 12)


def test_a_serialized_engine_reads_the_batches_handed_over_meanwhile_in_one_call():
    """While one job's batch is read, the batches other jobs hand over wait and are then read
    together in one call (a GPU model reads one call of many crops faster than many small ones);
    each job gets its own readings back, its line boxes passed in its crops' places, and its own
    share of a failure."""
    calls: list[tuple[list[int], list]] = []
    first_call_may_end = threading.Event()

    class Recording:
        name = "recording"
        fail_at: int | None = None

        def read_batch(self, images, line_boxes=None):
            calls.append(([int(image[0, 0]) for image in images], line_boxes))
            if len(calls) == 1:
                first_call_may_end.wait(10)
            readings = [Reading(lines=(TextLine(text=str(int(image[0, 0])), confidence=1.0, box=(0, 0, 4, 4)),))
                        for image in images]
            if self.fail_at is not None:
                raise OcrFailure("engine died", readings[:self.fail_at] + [None] * (len(images) - self.fail_at))
            return readings

    inner = Recording()
    ready: Future = Future()
    ready.set_result(inner)
    engine = SerializedEngine(ready)

    def crops(*values):
        return [np.full((4, 4), value, np.uint8) for value in values]

    results: dict[str, object] = {}

    def job(name, images, boxes=None):
        try:
            results[name] = [r.lines[0].text for r in engine.read_batch(images, line_boxes=boxes)]
        except OcrFailure as failure:
            results[name] = failure.readings

    def first_then_two_waiting(first_job, *waiting_jobs):
        """The first job's call runs until the two others have handed their batches over."""
        first = threading.Thread(target=job, args=first_job)
        first.start()
        while not calls:
            time.sleep(0.01)
        waiting = [threading.Thread(target=job, args=args) for args in waiting_jobs]
        for thread in waiting:
            thread.start()
        while len(engine._handed) < 2:
            time.sleep(0.01)
        first_call_may_end.set()
        for thread in (first, *waiting):
            thread.join(10)

    first_then_two_waiting(("a", crops(1, 2)), ("b", crops(3), [[(0, 0, 4, 2)]]), ("c", crops(4, 5)))
    assert [values for values, _ in calls] == [[1, 2], [3, 4, 5]]
    assert calls[0][1] is None and calls[1][1] == [[(0, 0, 4, 2)], (), ()]
    assert results == {"a": ["1", "2"], "b": ["3"], "c": ["4", "5"]}

    calls.clear()
    inner.fail_at = 1
    first_call_may_end.clear()
    first_then_two_waiting(("a", crops(1)), ("b", crops(2, 3)), ("c", crops(4)))
    assert [values for values, _ in calls] == [[1], [2, 3, 4]]
    assert [r.lines[0].text for r in results["b"][:1]] == ["2"] and results["b"][1] is None
    assert results["c"] == [None]
