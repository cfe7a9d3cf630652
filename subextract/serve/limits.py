"""What one client may cost the service, bounded below the routes: how long a request head or a
body may stall, how large a body other than an upload may be, and which values a metric label
may take (a made-up method per request grew ``/metrics`` by 2 KB each).

The stall deadlines live in uvicorn's HTTP protocol, the only place that sees a request whose head
never completes (the application is called only once it has); the body limit is ASGI middleware,
so every route reading a body (a cue's PATCH included) gets it without doing anything.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_BODY = 1024 * 1024  # bytes of any request body but an upload (a JSON job, a cue's edit)
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


@dataclass(frozen=True)
class Limits:
    header_timeout: float = 10.0  # seconds a request's head may take from its first byte
    body_timeout: float = 60.0  # seconds a request body may go without a byte
    min_free_mb: float = 64.0  # free space --data needs to be ready and take uploads (else 507)

    def free_mb(self, data: Path) -> float:
        return shutil.disk_usage(data).free / (1024 * 1024)

    def disk_short(self, data: Path) -> str | None:
        """Why the data folder's disk cannot take more, or None."""
        try:
            free = self.free_mb(data)
        except OSError as exc:
            return f"the data folder cannot be read ({exc.strerror})"
        if free < self.min_free_mb:
            return f"no space left on the server's disk ({free:.1f} MiB free, {self.min_free_mb:g} MiB needed)"
        return None


def method_label(method: str) -> str:
    """A request's method as a metric label: one of the methods HTTP defines, else ``other``."""
    return method if method in HTTP_METHODS else "other"


def timed_protocol(header_timeout: float, body_timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol with two deadlines: a request's head must be complete within
    ``header_timeout`` seconds of its first byte (or of the connection), and a body may go
    ``body_timeout`` seconds without a byte; past either the connection is closed. Time while
    the server itself stopped reading (a slow consumer, flow control) does not count."""

    class TimedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _arm(self) -> None:
            self._disarm()
            state = self.conn.their_state
            if state is h11.IDLE:
                timeout = header_timeout
            elif state is h11.SEND_BODY:
                timeout = body_timeout
            else:  # the request is read: what follows is the application's time
                return
            self._deadline = self.loop.call_later(timeout, self._expired)

        def _expired(self) -> None:
            self._deadline = None
            if self.flow.read_paused:  # we stopped reading, not the client
                self._arm()
                return
            if not self.transport.is_closing():
                self.logger.info("closing a connection from %s: its request stalled",
                                 "%s:%d" % self.client if self.client else "-")
                self.transport.close()

    return TimedH11Protocol


class BodyTooLarge(Exception):
    """A request body past MAX_BODY (or a declared one): answered 413."""


class BodyLimit:
    """Counts every body but an upload's (``POST /v1/jobs``, which counts its own against
    ``--max-upload-mb``): a declared length past the limit is refused before a byte is read, a
    streamed one as soon as it passes."""

    def __init__(self, app, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or (scope["method"] == "POST" and scope["path"] == "/v1/jobs"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            raise BodyTooLarge()
        received = 0

        async def counted():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge()
            return message

        await self.app(scope, counted, send)


class JsonError(ValueError):
    """A body that is not JSON (standard JSON: no NaN or Infinity), or nests too deep to parse."""


def _no_constant(name: str) -> Any:
    raise JsonError(f"{name} is not JSON")


def parse_json(body: bytes) -> Any:
    """A request body as JSON; JsonError (a 400) for what is not JSON, names NaN or Infinity
    (Python's extension), or nests so deep that the parser runs out of stack (100,000 arrays
    raised RecursionError: a 500)."""
    try:
        return json.loads(body, parse_constant=_no_constant)
    except JsonError:
        raise
    except (ValueError, UnicodeDecodeError):
        raise JsonError("the body is not JSON") from None
    except RecursionError:
        raise JsonError("the JSON nests too deep") from None
