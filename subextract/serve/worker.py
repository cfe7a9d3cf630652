"""Worker threads that take queued jobs from the store and run them, one job per thread.

Each thread extracts its jobs' cues in a child process of its own (``pipeline/child.py``) where the
engine allows one per process (RapidOCR, an OpenAI-compatible server): the pipeline's Python work
holds the GIL, and threads of one interpreter shared one core between 16 workers on the H200 machine.
An engine that holds a model here (vLLM, PyTorch) is shared by the threads, which then extract
themselves. Either way the store, the cue stream, the translation and the metrics stay in this process.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from subextract.errors import SubextractError
from subextract.pipeline.child import ChildPerThread
from subextract.serve.options import JobOptions
from subextract.serve.service import ServiceConfig
from subextract.serve.store import ORIGINAL, Job, StoredCue, Store, is_disk_full
from subextract.schema import Cue

log = logging.getLogger(__name__)

_PROGRESS_INTERVAL = 0.5  # seconds between progress writes to the store
# Seconds a job past --job-timeout gets to stop by itself (at its next frame) before the watchdog
# fails it in the store and hands its worker's place to a new thread: a job blocked where it
# never reports progress (FFmpeg waiting on a trickling stream) would otherwise hold a worker forever.
WATCHDOG_GRACE = 5.0


class _Stopping(Exception):
    """The pool is shutting down while a worker waits for its child's engine."""


class JobInterrupted(Exception):
    """Raised inside a running job (from its progress callback) to stop it: ``reason`` is
    cancelled, timeout or shutdown."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class JobOutcome:
    cues: list[Cue]
    metadata: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    translation: tuple[str, list[Cue]] | None = None  # (language, cues)
    ocr_calls: int = 0
    video_seconds: float = 0.0
    wall_seconds: float = 0.0


CROPS = "crops"  # the job folder's sub-folder of OCR pictures (``--save-crops``), shown beside each cue


def run_job(job: Job, options: JobOptions, config: ServiceConfig, engine, *,
            on_cue: Callable[[dict], None], progress: Callable[[float, float | None, int], None],
            on_stage: Callable[[str], None], extract_with: Callable[..., Any] | None = None) -> JobOutcome:
    """One video's job through ``subextract.job`` (as the CLI and the batch runner run it): cues
    streamed to ``on_cue`` as feed records the moment they are final, no file written but the OCR
    pictures; the cues, the metadata and the translation come back to be stored. ``extract_with``:
    the extraction elsewhere (a worker's child process; ``engine`` is then None)."""
    from subextract import job as jobs
    from subextract.feeds import Watchlist

    settings = config.job_settings(options.config, options.region)
    translator = None
    if options.translate:
        from subextract.translate import open_translator

        translator = open_translator(settings.translate)
    try:
        result = jobs.run_job(
            job.input, settings,
            jobs.JobOptions(lang=options.lang, start=options.start, end=options.end, translate=options.translate,
                            watchlist=Watchlist.parse(options.watchlist) if options.watchlist else None,
                            save_crops=str(config.job_folder(job.id) / CROPS)),
            jobs.JobOutputs(cues=None), engine=engine, translator=translator,
            events=jobs.JobEvents(progress=progress, stage=on_stage, cue=on_cue),
            **({"extract_with": extract_with} if extract_with is not None else {}))
    finally:
        if translator is not None:
            translator.model.close()
    extraction = result.extraction
    metadata = {**result.metadata, "video": job.name, "cue_count": len(result.cues)}
    outcome = JobOutcome(cues=result.cues, metadata=metadata, warnings=list(extraction.warnings),
                         error=extraction.error, ocr_calls=extraction.stats.ocr_calls,
                         video_seconds=extraction.stats.video_seconds, wall_seconds=extraction.stats.wall_seconds)
    if result.translation_error is not None:
        outcome.warnings.append(result.translation_error)
    elif result.translation is not None:
        outcome.translation = (options.translate, result.translation.translated)
        outcome.metadata["translation"] = result.translation.summary
        outcome.warnings.extend(result.translation.result.warnings)
    return outcome


def jobs_in_children(config: ServiceConfig) -> bool:
    """Whether the workers run their jobs in child processes: an engine each process can have its own of."""
    from subextract.stages.ocr import one_per_process

    return one_per_process(config.base_settings().ocr)


class WorkerPool:
    """``config.workers`` threads running jobs; ``cancel`` stops one, ``shutdown`` all."""

    def __init__(self, config: ServiceConfig, store: Store, metrics) -> None:
        from subextract.stages.ocr import EnginePool

        self.config = config
        self.store = store
        self.metrics = metrics
        self.engines = EnginePool(config.base_settings().ocr)
        self.in_children = jobs_in_children(config)
        self._children = ChildPerThread()
        self.engines_ready = threading.Event()
        self.engine_error: str | None = None
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._interrupts: dict[str, str] = {}  # running job → why it must stop
        self._running: dict[str, tuple[float, threading.Thread]] = {}  # running job → (began, its thread)
        self._abandoned: set[threading.Thread] = set()  # threads whose job the watchdog gave up on
        self._unrecorded: dict[str, str] = {}  # failed job → its error, which the store could not take yet
        self._lock = threading.Lock()
        self._threads = [self._thread(i) for i in range(config.workers)]
        self._watchdog = threading.Thread(target=self._watch, name="job-watchdog", daemon=True)

    def _thread(self, number: int) -> threading.Thread:
        return threading.Thread(target=self._work, name=f"job-worker-{number}", daemon=True)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()
        self._watchdog.start()

    def dead_threads(self) -> list[str]:
        """Worker threads that ended while the pool runs (liveness: a pool without them takes no job).
        Threads that ended because the engine failed to start are readiness's to report: a restart
        would not bring the engine up."""
        if self._stopping.is_set() or self.engine_error:
            return []
        with self._lock:
            threads = [*self._threads, self._watchdog]
        return [thread.name for thread in threads if thread.ident is not None and not thread.is_alive()]

    def wake(self) -> None:
        self._wake.set()

    def cancel(self, job_id: str, wait: float = 0.0) -> bool:
        """Ask a running job to stop and wait up to ``wait`` seconds for its worker to let go of
        it (it stops at its next frame or stage); whether it is no longer running. A job still
        writing into its folder would bring back what the caller removes next."""
        with self._lock:
            if job_id in self._running:
                self._interrupts[job_id] = "cancelled"
        deadline = time.monotonic() + wait
        while True:
            with self._lock:
                if job_id not in self._running:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def running(self) -> int:
        with self._lock:
            return len(self._running)

    def shutdown(self, grace: float) -> None:
        """No new job starts; running ones get ``grace`` seconds to finish, then go back to the queue."""
        self._stopping.set()
        self._wake.set()
        deadline = time.monotonic() + grace
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        with self._lock:
            for job_id in self._running:
                self._interrupts[job_id] = "shutdown"
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=10)

    def _work(self) -> None:
        try:
            # The engine of --lang all up front: /ready waits for it.
            if self.in_children:
                self._children.get().call("subextract.job:engine_in_child", (self.config.base_settings().ocr, None),
                                   lambda *_: None, self._check_stopping)
            else:
                self.engines.get()
        except SubextractError as exc:
            self.engine_error = str(exc)
            log.error("the OCR engine could not be started: %s", exc)
            return
        except _Stopping:
            return
        self.engines_ready.set()
        me = threading.current_thread()
        try:
            self._take_jobs(me)
        finally:
            self._children.stop()

    def _check_stopping(self) -> None:
        if self._stopping.is_set():
            raise _Stopping()

    def _take_jobs(self, me: threading.Thread) -> None:
        while not self._stopping.is_set() and me not in self._abandoned:
            try:
                job = self.store.claim()
            except Exception:  # the store failed (disk full, I/O error): this worker waits, it does not end
                log.exception("could not take a job from the store")
                self._stopping.wait(timeout=1.0)
                continue
            if job is None:
                self._wake.wait(timeout=1.0)
                self._wake.clear()
                continue
            with self._lock:
                self._running[job.id] = (time.monotonic(), me)
            try:
                self._run(job)
            except Exception as exc:  # recording the outcome failed (the store's disk is full)
                log.exception("job %s: its outcome could not be recorded", job.id)
                self._failed(job, _failure(exc))
            finally:
                with self._lock:
                    if self._running.get(job.id, (0, None))[1] is me:
                        del self._running[job.id]
                        self._interrupts.pop(job.id, None)

    def _watch(self) -> None:
        """Fail jobs that outlived --job-timeout without stopping, and replace their threads;
        record the failures the store could not take when they happened (a full disk)."""
        while not self._stopping.wait(timeout=1.0):
            with self._lock:
                unrecorded = dict(self._unrecorded)
            for job_id, error in unrecorded.items():
                try:
                    self.store.finish(job_id, "failed", error=error)
                except Exception:  # still full: the next look tries again
                    continue
                with self._lock:
                    self._unrecorded.pop(job_id, None)
                log.info("job %s failed: %s (recorded late)", job_id, error)
            now = time.monotonic()
            with self._lock:
                overdue = [(job_id, thread) for job_id, (began, thread) in self._running.items()
                           if now - began > self.config.job_timeout + WATCHDOG_GRACE]
            for job_id, thread in overdue:
                error = f"timed out after {self.config.job_timeout:g} s"
                try:
                    stopped = self.store.finish(job_id, "failed", error=error)
                except Exception:  # the store is failing too: try again at the next look
                    log.exception("job %s: could not record its timeout", job_id)
                    continue
                replacement = self._thread(len(self._threads))
                with self._lock:
                    self._running.pop(job_id, None)
                    self._interrupts.pop(job_id, None)
                    self._abandoned.add(thread)
                    self._threads = [t for t in self._threads if t is not thread] + [replacement]
                replacement.start()
                log.error("job %s did not stop %g s after its timeout%s; its worker is replaced", job_id,
                          WATCHDOG_GRACE, "" if stopped else " (it had ended meanwhile)")

    def _run(self, job: Job) -> None:
        from subextract.feeds import Watchlist

        options = JobOptions.from_stored(job.options)
        watchlist = Watchlist.parse(options.watchlist) if options.watchlist else None
        began = time.monotonic()
        streamed = 0
        state = {"stage": "", "written": 0.0}

        def flags(cue: Cue) -> list[str] | None:
            return watchlist.matches(cue.text) if watchlist is not None else None

        def check() -> None:
            reason = self._interrupts.get(job.id)
            if reason is None and time.monotonic() - began > self.config.job_timeout:
                reason = "timeout"
            if reason is not None:
                raise JobInterrupted(reason)

        def on_cue(record: dict) -> None:
            nonlocal streamed
            cue = Cue(record["start"], record["end"], tuple(record["lines"]), tuple(record["languages"]),
                      record["confidence"], record["band"])
            if self.store.add_cue(job.id, StoredCue(streamed, cue, record.get("flags"))):
                streamed += 1

        def on_stage(name: str) -> None:
            check()
            state["stage"] = name
            if not self.store.set_progress(job.id, 0.0, name):
                raise JobInterrupted("cancelled")

        def progress(done: float, total: float | None, _segments: int) -> None:
            check()
            now = time.monotonic()
            if now - state["written"] >= _PROGRESS_INTERVAL:
                state["written"] = now
                if not self.store.set_progress(job.id, min(done / total, 0.999) if total else 0.0, state["stage"]):
                    raise JobInterrupted("cancelled")

        log.info("job %s started (attempt %d): %s", job.id, job.attempts, job.name)
        try:
            if self.in_children:
                from subextract.job import extract_in_child

                outcome = run_job(job, options, self.config, None, on_cue=on_cue, progress=progress,
                                  on_stage=on_stage, extract_with=extract_in_child(self._children.get(), check))
            else:
                outcome = run_job(job, options, self.config, self.engines.get(options.lang), on_cue=on_cue,
                                  progress=progress, on_stage=on_stage)
        except JobInterrupted as stop:
            self._stopped(job, stop.reason)
            return
        except SubextractError as exc:
            self._failed(job, _private(str(exc), job, self.config))
            return
        except Exception as exc:  # a defect, or the disk: the job fails with one line, the log keeps the traceback
            log.exception("job %s failed", job.id)
            self._failed(job, _private(_failure(exc), job, self.config))
            return
        tracks = {ORIGINAL: [StoredCue(i, cue, flags(cue)) for i, cue in enumerate(outcome.cues)]}
        if outcome.translation is not None:
            language, cues = outcome.translation
            tracks[language] = [StoredCue(i, cue, track=language) for i, cue in enumerate(cues)]
        error = _private(outcome.error, job, self.config) if outcome.error else None
        if not self.store.finish(job.id, "done", error=error,
                                 warnings=[_private(w, job, self.config) for w in outcome.warnings],
                                 metadata=outcome.metadata, tracks=tracks):
            self._remove_files(job)  # cancelled while it finished
            return
        self.metrics.job_finished(outcome.ocr_calls, outcome.wall_seconds, outcome.video_seconds)
        log.info("job %s done: %d cues, %d OCR calls, %.1f s", job.id, len(outcome.cues), outcome.ocr_calls,
                 outcome.wall_seconds)

    def _stopped(self, job: Job, reason: str) -> None:
        if reason == "shutdown":
            self.store.requeue(job.id)
            log.info("job %s re-queued at shutdown", job.id)
        elif reason == "timeout":
            self._failed(job, f"timed out after {self.config.job_timeout:g} s")
        else:
            self._remove_files(job)
            log.info("job %s cancelled", job.id)

    def _failed(self, job: Job, error: str) -> None:
        try:
            finished = self.store.finish(job.id, "failed", error=error)
        except Exception:  # the store cannot take it now (disk full): the watchdog records it when it can
            log.exception("job %s failed (%s), and the store could not record it yet", job.id, error)
            with self._lock:
                self._unrecorded[job.id] = error
            return
        if finished:
            log.info("job %s failed: %s", job.id, error)
        else:
            self._remove_files(job)

    def _remove_files(self, job: Job) -> None:
        shutil.rmtree(self.config.job_folder(job.id), ignore_errors=True)


def _private(message: str, job: Job, config: ServiceConfig) -> str:
    """A message for the client: the upload's path on the server named as the client named it,
    and no other path under the server's data folder (a failed picture write named it whole)."""
    if job.source == "upload":
        message = message.replace(job.input, job.name)
    return message.replace(str(config.job_folder(job.id)), "(the job's folder)").replace(str(config.data), "(data)")


def _failure(exc: Exception) -> str:
    """One line for a failure nobody explained: the disk's own words when it is full."""
    if is_disk_full(exc):
        return "no space left on the server's disk"
    return f"internal error ({type(exc).__name__})"
