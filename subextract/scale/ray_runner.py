"""``subextract batch --ray``: the batch's tasks on a Ray cluster through Ray Data.

Two levels, one manifest. Per video (the default): ``map_batches`` over one row per video with
an actor class (``VideoWorker``) that owns one OCR engine and runs the whole job, exactly as one
of the batch runner's threads does. Split (``--ray-split``): stage A (``SegmentVideos``, CPU)
probes, finds the band, decodes and segments each video and emits one row per subtitle that
needs a read (a repeated one is resolved to its first showing there) plus one row with the
video's segments; stage B (``ReadCrops``, an actor pool, a GPU each when asked) reads batches of
crops from every video at once; stage C (``WriteVideos``) groups the rows by video, aligns,
writes and records the outcome. The pipeline functions are the ones ``extract`` runs
(``scan_video``, ``segment_video``, ``cues_from_segments``), so the outputs are byte for byte
those of a plain batch.

Workers append their records to the manifest themselves, the moment they are known (O_APPEND
writes, as the batch runner's threads do: the output folder is a shared filesystem on a cluster);
the driver reports each final record and compacts the manifest at the end. A worker that dies
is restarted by Ray and its video run again: the retry reads the video's latest records first, so
the outputs the dead attempt wrote are known as its own, and a video whose worker died
``MAX_ATTEMPTS`` times is recorded as failed instead of being retried for ever.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import pickle
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from subextract.batch import BatchRunner, Manifest, Options, Task, _sigterm_as_interrupt
from subextract.errors import SubextractError
from subextract.pipeline.run import (ExtractionResult, SegmentedVideo, Stats, cues_from_segments, scan_video,
                                     segment_video, tag_reading)
from subextract.schema import LineBox, Reading
from subextract.stages.ocr import OcrFailure, create_engine
from subextract.stages.region import prescan_detector_side

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # runs of one video whose worker died before it is recorded as failed
SEGMENTING = "segments"  # the stage field of stage A's running record (stage C's has none)
_NO_PICTURE = np.zeros((0, 0), np.uint8)  # a segment's picture once its crop row carries it


@dataclass(frozen=True)
class RayOptions:
    address: str | None = None  # a running cluster ("auto", "ray://HOST:10001"); None starts a local one
    split: bool = False  # the split level (stages A, B, C) instead of one job per video
    workers: int | None = None  # video workers (split: stage A's); default: the cluster's CPUs less the readers'
    readers: int = 1  # split: stage B's actors, each with one engine
    gpus_per_reader: float = 0.0  # split: num_gpus of each stage B actor (1 on a GPU cluster)
    read_batch: int = 64  # split: crops per stage B batch


def connect(address: str | None) -> bool:
    """Join the cluster at ``address`` (or start a local one); True when this call started Ray."""
    import ray
    from ray.data import DataContext

    # Ray Data's progress lines would drown the batch's own (one line per video, the summary).
    DataContext.get_current().enable_progress_bars = False
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().getEffectiveLevel()))
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # its warning that they are off
    if ray.is_initialized():
        return False
    ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING)
    return True


def _worker_options(options: Options) -> Options:
    """What travels to the workers: the driver's callbacks and open files stay behind."""
    return dataclasses.replace(options, say=None, on_finished=None, on_planned=None, feed=None, translator=None,
                               quiet=True)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def history(manifest: Path, video: str, since: str) -> tuple[dict[str, Any] | None, dict[str | None, int]]:
    """The video's latest record in the manifest file and its runs started since ``since`` (ISO
    time), counted by stage. Lines are filtered by the video's JSON spelling before parsing:
    the manifest of a big library is read once per video run."""
    needle = json.dumps(video, ensure_ascii=False).encode()
    latest, attempts = None, {}
    try:
        data = manifest.read_bytes()
    except FileNotFoundError:
        return None, {}
    for line in data.splitlines():
        if needle not in line:
            continue
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if not isinstance(record, dict) or record.get("video") != video:
            continue
        latest = record
        if record.get("status") == "running" and record.get("started", "") >= since:
            attempts[record.get("stage")] = attempts.get(record.get("stage"), 0) + 1
    return latest, attempts


def _resumed(task: Task, manifest: Path, since: str, stage: str | None) -> tuple[Task, int]:
    """The task with the video's latest record as its previous one (a dead attempt's outputs are
    this tool's), and how many attempts of this stage died before."""
    latest, attempts = history(manifest, task.job.video, since)
    if latest is not None:
        task = dataclasses.replace(task, previous=latest)
    return task, attempts.get(stage, 0)


def _died(task: Task, attempts: int) -> Task:
    return dataclasses.replace(task, error=f"{task.job.video}: the worker running it died {attempts} times "
                                           "(out of memory, or a crash in a native library); not retried")


def _column(values: Sequence[Any]) -> np.ndarray:
    column = np.empty(len(values), dtype=object)
    column[:] = list(values)
    return column


class _ManifestActor:
    """A Ray actor that runs batch tasks: the batch runner's task code over the shared manifest
    (``since``: the run's start, for the records a dead attempt left)."""

    def __init__(self, options: Options, key: str, since: str) -> None:
        self._options = options
        self._since = since
        self._runner = BatchRunner([], options, Manifest(options.manifest_path), key)


class VideoWorker(_ManifestActor):
    """Level 1: one engine per actor (``EnginePool``), the whole job of each video given."""

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"record": _column([json.dumps(self.run(pickle.loads(blob))) for blob in batch["task"]])}

    def run(self, task: Task) -> dict[str, Any]:
        task, attempts = _resumed(task, self._options.manifest_path, self._since, None)
        if attempts >= MAX_ATTEMPTS:
            task = _died(task, attempts)
        return self._runner.run_task(task)


@dataclass
class _VideoPart:
    """Stage A's row for a video: its task, its segments (pictures dropped) or why it failed."""

    task: Task
    segmented: SegmentedVideo | None
    failure: tuple[str, str, bool] | None  # (exception type, message, explained to the user)
    seconds: float


@dataclass
class _Crop:
    key: int
    image: np.ndarray
    lines: Sequence[LineBox]


@dataclass
class _Read:
    key: int
    reading: Reading | None
    error: tuple[str, str, bool] | None  # as _VideoPart.failure
    seconds: float


def _failure(exc: BaseException) -> tuple[str, str, bool]:
    return type(exc).__name__, str(exc), isinstance(exc, SubextractError)


def _raise(failure: tuple[str, str, bool]) -> None:
    """A failure from another stage, raised again under its own name for the manifest."""
    name, message, explained = failure
    raise (SubextractError if explained else type(name, (Exception,), {}))(message)


@cache
def _detector(det_side: int, threads: int):
    """The region pre-scan's text detector, loaded once per worker process."""
    from subextract.stages.ocr.rapid import RapidTextDetector

    return RapidTextDetector.standalone(det_side, threads)


class SegmentVideos(_ManifestActor):
    """Stage A: each video's segments, and a crop row for each segment that needs a read."""

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows: list[tuple[str, str, int, bytes]] = []
        for blob in batch["task"]:
            rows.extend(self.segment(pickle.loads(blob)))
        return {name: _column(values) for name, values in zip(("video", "kind", "key", "payload"), zip(*rows))}

    def segment(self, task: Task) -> Iterator[tuple[str, str, int, bytes]]:
        began = time.perf_counter()
        task, attempts = _resumed(task, self._options.manifest_path, self._since, SEGMENTING)
        if attempts >= MAX_ATTEMPTS:
            task = _died(task, attempts)
        segmented, failure, crops = None, None, []
        if task.error is None:
            self._runner.begin(task, stage=SEGMENTING)
            settings, options = self._options.settings, self._options
            try:
                scan = scan_video(task.job.video, settings, options.start, options.end, detector=lambda: _detector(
                    prescan_detector_side(settings.region), settings.ocr.threads))
                segmented = segment_video(
                    scan, settings,
                    on_segment=lambda segment, key, first: crops.append(_Crop(key, segment.image, segment.lines))
                    if first else None, detector=lambda: _detector(settings.region.prescan_det_side, settings.ocr.threads))
            except Exception as exc:  # noqa: BLE001 - this video's failure, recorded by stage C
                failure = _failure(exc)
        if segmented is not None:
            for segment, _ in segmented.segments:
                segment.image, segment.frames = _NO_PICTURE, ()
        video = task.job.video
        part = _VideoPart(task, segmented, failure, time.perf_counter() - began)
        yield video, "video", -1, pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
        for crop in crops:
            yield video, "crop", crop.key, pickle.dumps(crop, protocol=pickle.HIGHEST_PROTOCOL)


class ReadCrops:
    """Stage B: one engine per actor reads the crops of a batch, whichever videos they are from."""

    def __init__(self, options: Options) -> None:
        self._engine = create_engine(dataclasses.replace(options.settings.ocr, lang=options.lang))  # scripts routed by --lang

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        kinds, payloads = list(batch["kind"]), list(batch["payload"])
        at = [i for i, kind in enumerate(kinds) if kind == "crop"]
        if not at:
            return batch
        crops: list[_Crop] = [pickle.loads(payloads[i]) for i in at]
        began = time.perf_counter()
        error = None
        try:
            readings: list[Reading | None] = list(self._engine.read_batch([c.image for c in crops],
                                                                          [c.lines for c in crops]))
        except OcrFailure as exc:  # read part of the batch before failing
            readings, error = list(exc.readings), _failure(exc)
        except Exception as exc:  # noqa: BLE001 - the videos of these crops fail, not the batch
            readings, error = [None] * len(crops), _failure(exc)
        share = (time.perf_counter() - began) / len(crops)
        for i, crop, reading in zip(at, crops, readings):
            kinds[i] = "reading"
            result = _Read(crop.key, tag_reading(reading) if reading is not None else None,
                           error if reading is None else None, share)
            payloads[i] = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        return {**batch, "kind": _column(kinds), "payload": _column(payloads)}


class WriteVideos(_ManifestActor):
    """Stage C: one video's rows → cues → its outputs and final manifest record."""

    def __call__(self, group: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        part: _VideoPart | None = None
        reads: list[_Read] = []
        for kind, payload in zip(group["kind"], group["payload"]):
            if kind == "video":
                part = pickle.loads(payload)
            else:
                reads.append(pickle.loads(payload))
        assert part is not None, "stage A emits one video row for every video"
        return {"record": _column([json.dumps(self.write(part, reads))])}

    def write(self, part: _VideoPart, reads: list[_Read]) -> dict[str, Any]:
        began = time.perf_counter()
        task, attempts = _resumed(part.task, self._options.manifest_path, self._since, None)
        if attempts >= MAX_ATTEMPTS:
            task = _died(task, attempts)

        def extraction() -> ExtractionResult:
            if part.failure is not None:
                _raise(part.failure)
            errors = [read.error for read in reads if read.error is not None]
            unexplained = next((error for error in errors if not error[2]), None)
            if unexplained is not None:  # an engine defect fails the video, as in extract
                _raise(unexplained)
            readings = {read.key: read.reading for read in reads if read.reading is not None}
            segmented = part.segmented
            stats = Stats(ocr_calls=len(readings), ocr_seconds=sum(read.seconds for read in reads),
                          reused_readings=len(segmented.segments) - len(segmented.first_showings()))
            result = cues_from_segments(segmented, readings, self._options.settings, self._options.lang,
                                        engine_error=errors[0][1] if errors else None, stats=stats)
            # The video's own work: segmenting, its share of the reads, aligning (not the time it queued).
            stats.wall_seconds = part.seconds + stats.ocr_seconds + time.perf_counter() - began
            return result

        return self._runner.run_task(task, extraction)


class RayRunner(BatchRunner):
    """The batch runner's interface (``run``, ``results``, ``stop``) on a Ray cluster."""

    def __init__(self, tasks: Sequence[Task], options: Options, manifest: Manifest, key: str,
                 ray_options: RayOptions, video_worker: type = VideoWorker) -> None:
        super().__init__(tasks, options, manifest, key)
        self.ray_options = ray_options
        self._video_worker = video_worker

    def run(self) -> None:
        if not self.tasks:
            return
        import ray

        started = connect(self.ray_options.address)
        since = _now()
        try:
            with _sigterm_as_interrupt():
                for batch in self._dataset(since).iter_batches(batch_size=1, batch_format="numpy"):
                    for record in batch["record"]:
                        self.finished(json.loads(record))
        except KeyboardInterrupt:
            self.stop.set()
            self._say("subextract batch: interrupted; the videos running are redone next time")
        finally:
            if started:
                ray.shutdown()  # a local cluster's workers stop with it: nothing appends any more
            self.manifest.load()  # what the workers recorded: the latest record of each video wins

    def _dataset(self, since: str):
        import ray
        from ray.data import ActorPoolStrategy

        options, ray_options = _worker_options(self.options), self.ray_options
        cpus = int(ray.cluster_resources().get("CPU", 1))
        rows = [{"task": pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)} for task in self.tasks]
        # One block per video: a block is what one worker takes, so long videos do not queue behind each other.
        videos = ray.data.from_items(rows, override_num_blocks=len(rows))
        constructor = {"options": options, "key": self.key, "since": since}
        if not ray_options.split:
            workers = min(len(rows), ray_options.workers or cpus)
            return videos.map_batches(self._video_worker, batch_size=1, fn_constructor_kwargs=constructor,
                                      compute=ActorPoolStrategy(size=workers), num_cpus=1)
        reader_cpus = 0 if ray_options.gpus_per_reader else ray_options.readers
        workers = min(len(rows), ray_options.workers or max(1, cpus - reader_cpus))
        segments = videos.map_batches(SegmentVideos, batch_size=1, fn_constructor_kwargs=constructor,
                                      compute=ActorPoolStrategy(size=workers), num_cpus=1)
        reads = segments.map_batches(ReadCrops, batch_size=ray_options.read_batch,
                                     fn_constructor_kwargs={"options": options},
                                     compute=ActorPoolStrategy(size=ray_options.readers),
                                     num_cpus=0 if ray_options.gpus_per_reader else 1,
                                     num_gpus=ray_options.gpus_per_reader or None)
        return reads.groupby("video").map_groups(WriteVideos, fn_constructor_kwargs=constructor,
                                                 compute=ActorPoolStrategy(size=workers), num_cpus=1)


def ray_runner(ray_options: RayOptions, video_worker: type = VideoWorker):
    """``run_batch``'s runner factory for these options."""
    def factory(tasks: Sequence[Task], options: Options, manifest: Manifest, key: str) -> RayRunner:
        return RayRunner(tasks, options, manifest, key, ray_options, video_worker)
    return factory
