"""A job's work in a child process of its own, its events streamed back to the caller's thread.

Why: the pipeline's own Python work per frame (segmenting, hashing, the recall guard) holds the
GIL, so jobs run as threads of one interpreter share about one core. On the H200 machine (16
cores, one ``vllm serve``) 16 service workers as threads read 7.1x real time where 16 batch
processes read 28.1x (docs/gpu.md, 2026-12-05). A job in a process of its own has a core of its
own. Engines that hold a model in this process (vLLM, PyTorch: ``sharing == "serialized"``) stay
on threads: one model, loaded once, shared.

A ``ChildProcess`` is started once (spawn: the caller has threads, which fork does not copy)
and runs one call at a time, so its imports and its engine are paid once, not per job. What the
process-wide state holds (the network policy, the local input format, whether the API key may go
upstream, the log handlers) is copied into the child before its first call: a job there refuses
what it would refuse here. Cancelling a call, or a callback that raises, kills the child (a job
blocked in FFmpeg stops too); the next call starts a fresh one.
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from subextract.errors import SubextractError

logger = logging.getLogger(__name__)

# Seconds between the caller's ``check``s while the child says nothing (a job's cancel or timeout
# is seen within this).
CHECK_INTERVAL = 0.2

# A call's events: (kind, payload) → None; raising stops the call (and the child).
EventHandler = Callable[[str, Any], None]


class ChildFailed(RuntimeError):
    """The child process ended without an answer (killed, out of memory), or raised an exception
    that could not be sent back; the message says which."""


@dataclass(frozen=True)
class ProcessState:
    """What this process set for every job that a spawned child would not inherit."""

    network_policy: Any
    input_format: str | None
    send_api_key: bool
    log_level: int
    log_formats: tuple[logging.Formatter | None, ...]  # the stream handlers' (a handler holds a lock: not sent)

    @classmethod
    def capture(cls) -> "ProcessState":
        from subextract.clients import openai_api
        from subextract.stages import netguard, source

        root = logging.getLogger()
        formats = tuple(_sendable_formatter(h.formatter) for h in root.handlers
                        if isinstance(h, logging.StreamHandler))
        return cls(netguard.policy(), source.input_format(), openai_api.sends_api_key(), root.level, formats)

    def apply(self) -> None:
        from subextract.clients import openai_api
        from subextract.stages import netguard, source

        netguard.set_policy(self.network_policy)
        source.set_input_format(self.input_format)
        if not self.send_api_key:
            openai_api.keep_api_key_private()
        handlers = []
        for formatter in self.log_formats:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(formatter)
            handlers.append(handler)
        logging.basicConfig(level=self.log_level, handlers=handlers or None, force=True)


def _sendable_formatter(formatter: logging.Formatter | None) -> logging.Formatter | None:
    """The formatter, or one of its format string where it holds what pickle refuses (a terminal)."""
    import pickle

    try:
        pickle.dumps(formatter)
        return formatter
    except Exception:  # noqa: BLE001 - any formatter class may refuse pickling
        return logging.Formatter(formatter._fmt if formatter is not None else None)


class ChildProcess:
    """One child process that runs ``module:function`` calls one at a time, started on first use."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._process: multiprocessing.process.BaseProcess | None = None
        self._connection = None

    def call(self, target: str, args: tuple, on_event: EventHandler, check: Callable[[], None]) -> Any:
        """``target(*args, emit=...)`` in the child: each ``emit(kind, payload)`` there is
        ``on_event(kind, payload)`` here, ``check()`` runs between events at least every
        ``CHECK_INTERVAL``, and the function's return value is returned here (its exception raised).
        An exception from ``on_event`` or ``check`` kills the child and goes on up."""
        connection = self._started()
        connection.send((target, args))
        while True:
            try:
                if not connection.poll(CHECK_INTERVAL):
                    check()
                    if not self._process.is_alive():
                        raise ChildFailed(f"{self.name} ended (exit code {self._process.exitcode})")
                    continue
                kind, payload = connection.recv()
            except EOFError:
                self.stop()
                raise ChildFailed(f"{self.name} ended in the middle of a call") from None
            except BaseException:
                self.stop()
                raise
            if kind == "result":
                return payload
            if kind == "error":
                error, text = payload
                logger.debug("%s raised:\n%s", self.name, text)
                raise error
            try:
                on_event(kind, payload)
            except BaseException:
                self.stop()
                raise

    def stop(self) -> None:
        """Ends the child now (it holds no state worth a grace period); the next call starts another."""
        process, self._process = self._process, None
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if process is not None and process.is_alive():
            process.kill()
        if process is not None:
            process.join(timeout=10)

    def _started(self):
        if self._process is not None and self._process.is_alive():
            return self._connection
        self.stop()
        context = multiprocessing.get_context("spawn")
        here, there = context.Pipe()
        process = context.Process(target=_serve, args=(there, ProcessState.capture()), name=self.name, daemon=True)
        process.start()
        there.close()
        self._process, self._connection = process, here
        return here


class ChildPerThread:
    """A ``ChildProcess`` for each thread that asks (a pool's worker threads), made on first use."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self) -> ChildProcess:
        child = getattr(self._local, "child", None)
        if child is None:
            child = self._local.child = ChildProcess(f"{threading.current_thread().name}-process")
        return child

    def stop(self) -> None:
        """Ends the calling thread's child, if it has one."""
        child = getattr(self._local, "child", None)
        if child is not None:
            child.stop()


def _serve(connection, state: ProcessState) -> None:
    """The child's loop: one call at a time until the caller closes its end."""
    # Ctrl-C on a terminal reaches the whole process group: the caller decides what stops (a batch
    # records the video as interrupted), and FFmpeg, which gets it too, ends the decode.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    state.apply()

    def emit(kind: str, payload: Any) -> None:
        connection.send((kind, payload))

    while True:
        try:
            target, args = connection.recv()
        except (EOFError, OSError):
            return
        module, _, name = target.partition(":")
        try:
            result = getattr(importlib.import_module(module), name)(*args, emit=emit)
        except BaseException as exc:  # every failure goes back to the caller, which decides
            connection.send(("error", (_sendable(exc), traceback.format_exc())))
        else:
            connection.send(("result", result))


def _sendable(exc: BaseException) -> BaseException:
    """The exception itself where pickle takes it back as the same (an OSError keeps its errno:
    a full disk is said as such); else its words in a SubextractError or ChildFailed."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any exception class may refuse pickling
        kind = SubextractError if isinstance(exc, SubextractError) else ChildFailed
        return kind(str(exc) or type(exc).__name__)
