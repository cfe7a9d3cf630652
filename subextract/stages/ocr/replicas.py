"""Several copies of one model's engine, each in a process of its own, on the same GPU
(``ocr.replicas``, ``--ocr-replicas N``).

Why processes: an in-process vLLM engine runs its scheduler, each request's prompt handling,
sampling and detokenisation on one Python thread, and on the H200 that thread, not the GPU, was
the limit (HunyuanOCR's shape: the GPU busy ~35 % of the time at 107 crops/s; PaddleOCR-VL's: one
engine 118 crops/s, four on the one GPU 446: docs/gpu.md). Threads would share one interpreter
lock; processes each bring their own, and the GPU takes the work of all of them.

A batch is cut into contiguous chunks of at least ``MIN_CHUNK`` pictures, at most one per
replica, each chunk goes to the replica with the fewest pictures still queued, and the readings
come back in the batch's order. Callers on several threads (the batch runner's jobs, the
service's workers) are served at once: each replica reads one chunk at a time, the others
meanwhile take the next callers' chunks.

Replicas start one after another: each engine sizes its memory from what is free on the device
when it starts (vLLM profiles its own peak), so two starting at once would count each other's
allocations as their own. The engine knows it is one of N (``settings.replicas``) and sizes its
share of the device so that each replica keeps the room one engine alone leaves for what vLLM
does not count (vllm_engine.replica_memory_share).
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from subextract.clients.vllm_runtime import one_line
from subextract.config import OcrSettings
from subextract.errors import SubextractError
from subextract.schema import LineBox, Reading

log = logging.getLogger(__name__)


def _serve(settings: OcrSettings, connection: Any, log_level: int) -> None:
    """A replica's process: start the engine, then read each chunk sent until the pipe closes."""
    logging.basicConfig(level=log_level, format=f"%(levelname)s replica {settings.engine}: %(message)s")
    # Ctrl-C reaches the whole process group: the parent stops the run and closes the pipe, and the
    # replica ends on that, without a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The host's cores shared between the replicas (set before torch is imported here): each would
    # otherwise start a thread per core for its CPU-side tensor work, and N of them oversubscribe.
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // settings.replicas)))
    from subextract.stages.ocr import construct_engine

    try:
        engine = construct_engine(settings)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent in one line, whatever it was
        connection.send(("failed", one_line(exc)))
        return
    connection.send(("ready", None))
    while True:
        try:
            request = connection.recv()
        except EOFError:  # the parent is gone or closed the pipe
            return
        if request is None:
            return
        args, kwargs = request
        try:
            connection.send(("read", engine.read_batch(*args, **kwargs)))
        except BaseException as exc:  # noqa: BLE001 - the parent raises it with the readings obtained
            connection.send(("failed", one_line(exc), getattr(exc, "readings", None)))


# The fewest pictures a replica is handed at once: one engine reads more crops a second the more it
# reads together (HunyuanOCR's shape on the H200: 11, 42, 95, 118 and 135 crops/s with 1, 4, 16, 64
# and 256 in one call), so a batch of 16 cut four ways read slower on four replicas (63 crops/s) than
# whole on one (81). Smaller batches go whole to the least busy replica; other callers' batches
# keep the rest busy.
MIN_CHUNK = 64


class _Replica:
    """One engine process and the pipe to it; one chunk at a time."""

    def __init__(self, settings: OcrSettings, index: int) -> None:
        self.index = index
        context = multiprocessing.get_context("spawn")  # CUDA cannot be re-initialised in a forked child
        self._connection, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(settings, child, logging.getLogger().level),
                                        name=f"ocr-replica-{index}")
        self._process.start()
        child.close()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"ocr-replica-{index}")
        self.queued = 0  # pictures sent or waiting to be sent, for choosing the least busy replica
        self.read = 0  # pictures read, for the log at the end

    def wait_ready(self) -> None:
        try:
            reply = self._connection.recv()
        except EOFError:
            raise SubextractError(f"OCR replica {self.index + 1} stopped while starting "
                                  f"(exit status {self._process.join(5) or self._process.exitcode})") from None
        if reply[0] != "ready":
            raise SubextractError(reply[1])

    def submit(self, args: tuple, kwargs: dict[str, Any], pictures: int) -> "Future[list[Reading]]":
        self.queued += pictures
        future = self._worker.submit(self._read, args, kwargs)
        future.add_done_callback(lambda _: self._done(pictures))
        return future

    def _done(self, pictures: int) -> None:
        self.queued -= pictures

    def _read(self, args: tuple, kwargs: dict[str, Any]) -> list[Reading]:
        try:
            self._connection.send((args, kwargs))
            reply = self._connection.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            raise SubextractError(f"OCR replica {self.index + 1} stopped (exit status {self._process.exitcode})") \
                from None
        if reply[0] == "read":
            self.read += len(reply[1])
            return reply[1]
        raise _ChunkFailure(reply[1], reply[2])

    def close(self) -> None:
        self._worker.shutdown(wait=True)
        try:
            self._connection.send(None)
        except (BrokenPipeError, OSError):
            pass
        self._connection.close()
        self._process.join(30)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()


class _ChunkFailure(SubextractError):
    def __init__(self, message: str, readings: Sequence[Reading | None] | None) -> None:
        super().__init__(message)
        self.readings = readings


class ReplicatedEngine:
    """``settings.replicas`` copies of the engine ``settings.engine`` names, behind one
    ``read_batch`` that any number of threads may call at once."""

    def __init__(self, settings: OcrSettings) -> None:
        self.name = settings.engine
        self._lock = threading.Lock()
        self._replicas: list[_Replica] = []
        began = time.perf_counter()
        try:
            for index in range(settings.replicas):
                replica = _Replica(settings, index)
                self._replicas.append(replica)
                replica.wait_ready()
                log.info("OCR replica %d of %d ready after %.1f s", index + 1, settings.replicas,
                         time.perf_counter() - began)
        except BaseException:
            self.close()
            raise
        atexit.register(self.close)

    def read_batch(self, images: Sequence[np.ndarray], line_boxes: Sequence[Sequence[LineBox]] | None = None,
                   **kwargs: Any) -> list[Reading]:
        """The batch cut into contiguous chunks (each picture's line boxes and per-picture
        keywords cut alike), the readings in the batch's order."""
        count = len(images)
        if not count:
            return []
        pieces = max(1, min(len(self._replicas), count // MIN_CHUNK))
        bounds = [round(i * count / pieces) for i in range(pieces + 1)]
        futures = []
        with self._lock:  # the choice and the count it changes, together
            for start, end in zip(bounds, bounds[1:]):
                replica = min(self._replicas, key=lambda r: (r.queued, r.index))
                args = (list(images[start:end]), None if line_boxes is None else list(line_boxes[start:end]))
                chunk_kwargs = {key: list(value[start:end]) for key, value in kwargs.items()}
                futures.append((start, end, replica.submit(args, chunk_kwargs, end - start)))
        readings: list[Reading | None] = [None] * count
        failure: str | None = None
        for start, end, future in futures:
            try:
                readings[start:end] = future.result()
            except _ChunkFailure as exc:
                failure = failure or str(exc)
                if exc.readings is not None:
                    readings[start:end] = exc.readings
            except SubextractError as exc:
                failure = failure or str(exc)
        if failure is not None:
            from subextract.stages.ocr import OcrFailure

            raise OcrFailure(failure, readings)
        return readings  # type: ignore[return-value] - every chunk filled its place

    def close(self) -> None:
        """Stop every replica (each finishes the chunk it reads)."""
        with self._lock:
            replicas, self._replicas = self._replicas, []
        if replicas:
            log.info("OCR replicas read %s pictures", " + ".join(str(replica.read) for replica in replicas))
        for replica in replicas:
            replica.close()
