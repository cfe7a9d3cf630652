"""The HTTP API and the proofreading page, as a Starlette application served by uvicorn.

Starlette rather than FastAPI: the two endpoints that matter most work below what FastAPI adds.
An upload must be counted and refused (413) while it streams, which FastAPI's ``UploadFile``
(Starlette's form parser, spooling the whole body first) cannot do, and the cue stream is a
plain streaming response. What FastAPI would bring on top (pydantic models, OpenAPI pages) is
not worth the extra dependency for a dozen routes; the API is documented in the README.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import hmac
import json
import logging
import mimetypes
import re
import shutil
import time
import uuid
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from subextract.errors import SubextractError
from subextract.serve import editing
from subextract.serve.links import MediaLinks
from subextract.serve.limits import MAX_BODY, BodyLimit, BodyTooLarge, JsonError, method_label, parse_json
from subextract.serve.metrics import CONTENT_TYPE, Metrics
from subextract.serve.options import parse_options
from subextract.serve.retention import RetentionSweep
from subextract.serve.webhooks import Webhooks, check_webhook
from subextract.serve.service import ServiceConfig
from subextract.serve.store import ACTIVE, ORIGINAL, Store, is_disk_full
from subextract.serve.upload import UploadError, receive_upload
from subextract.serve.worker import WorkerPool
from subextract.schema import Cue

log = logging.getLogger(__name__)
access_log = logging.getLogger("subextract.serve.access")

MAX_JSON = 1024 * 1024  # bytes of a URL job's body
RETRY_AFTER = 10  # seconds a client told "queue full" should wait
_STREAM_POLL = 0.25  # seconds between looks at the store for new cues
_KEEPALIVE = 15.0  # seconds of silence after which an SSE comment keeps proxies from closing the stream
_CANCEL_WAIT_S = 5.0  # how long a DELETE waits for a running job to stop before removing its files
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
FORMATS = {"srt": "application/x-subrip", "vtt": "text/vtt", "ass": "text/x-ssa", "json": "application/json"}


class Service:
    """What the routes share: the configuration, the store, the workers and the metrics."""

    def __init__(self, config: ServiceConfig) -> None:
        from subextract.config import preset_names

        self.config = config
        try:
            (config.data / "jobs").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SubextractError(f"--data {config.data}: cannot create its jobs folder ({exc.strerror})") from None
        self.store = Store(config.database)
        self.metrics = Metrics(self.store)
        self.pool = WorkerPool(config, self.store, self.metrics)
        self.media = MediaLinks(config.api_key)
        self.retention = RetentionSweep(config, self.store)
        self.webhooks = Webhooks(self.store)
        self.presets = preset_names()
        self.can_translate = config.can_translate()

    def start(self) -> None:
        requeued, given_up = self.store.requeue_interrupted(self.config.max_attempts)
        if requeued or given_up:
            log.info("restart: %d interrupted jobs queued again, %d given up", requeued, given_up)
        _sweep_orphans(self.config.data / "jobs", self.store.ids())
        self.pool.start()
        self.retention.start()
        self.webhooks.start()

    def stop(self) -> None:
        self.retention.stop()
        self.webhooks.stop()
        self.pool.shutdown(self.config.shutdown_grace)


def _sweep_orphans(jobs: Path, known: set[str]) -> None:
    """Job folders the store does not know: uploads a killed process was receiving (the folder is
    made before the job is stored). Only at start, when no upload is in flight."""
    orphans = [folder for folder in jobs.iterdir() if folder.is_dir() and folder.name not in known]
    for folder in orphans:
        shutil.rmtree(folder, ignore_errors=True)
    if orphans:
        log.info("removed %d job folders no job owns (uploads cut short by a stop)", len(orphans))


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> HTTPException:
    return HTTPException(status_code=status, detail=message, headers=headers)


async def _http_error(_request: Request, exc: HTTPException) -> Response:
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code, headers=exc.headers)


class Gate:
    """Outermost layer: request id, API key, one log line and the latency metric per request,
    and a one-line 500 (the traceback goes to the log only) when a route fails."""

    def __init__(self, app, service: Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        given = headers.get("x-request-id", "")
        request_id = given if _REQUEST_ID.match(given) else uuid.uuid4().hex[:12]
        began = time.perf_counter()
        outcome = {"status": 0}

        async def send_with_id(message) -> None:
            if message["type"] == "http.response.start":
                outcome["status"] = message["status"]
                message = {**message, "headers": [*message.get("headers", []),
                                                   (b"x-request-id", request_id.encode())]}
                route = scope.get("route")
                self.service.metrics.request_latency.labels(
                    method_label(scope["method"]), getattr(route, "path", "unmatched"), str(message["status"])
                ).observe(time.perf_counter() - began)
            await send(message)

        try:
            if self._refused(scope["path"], headers.get("authorization", "")):
                response = JSONResponse({"error": "missing or wrong API key (Authorization: Bearer KEY)"},
                                        status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send_with_id)
            else:
                await self.app(scope, receive, send_with_id)
        except Exception as exc:
            answer = _known_failure(exc)
            if answer is None:
                log.exception("request %s failed", request_id)
                answer = 500, f"internal error (request {request_id})"
            if not outcome["status"]:
                await JSONResponse({"error": answer[1]}, status_code=answer[0])(scope, receive, send_with_id)
        finally:
            client = scope.get("client")
            fields = {"id": request_id, "client": f"{client[0]}:{client[1]}" if client else "-",
                      "method": scope["method"], "path": scope["path"], "status": outcome["status"] or "aborted",
                      "duration_ms": round((time.perf_counter() - began) * 1000, 1)}
            access_log.info("request %s", " ".join(f"{k}={v}" for k, v in fields.items()),
                            extra={"request": fields})

    def _refused(self, path: str, authorization: str) -> bool:
        key = self.service.config.api_key
        if not key or not path.startswith("/v1/"):
            return False
        scheme, _, token = authorization.partition(" ")
        return scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), key.encode())


def _known_failure(exc: Exception) -> tuple[int, str] | None:
    """The answer to a failure below the routes that is the client's or the disk's, not a defect."""
    if isinstance(exc, BodyTooLarge):
        return 413, f"request body larger than {MAX_BODY} bytes"
    if is_disk_full(exc):
        log.error("the data folder's disk is full: %s", exc)
        return 507, "no space left on the server's disk"
    return None


def create_app(config: ServiceConfig) -> Starlette:
    service = Service(config)

    @asynccontextmanager
    async def lifespan(_app):
        service.start()
        try:
            yield
        finally:
            await run_in_threadpool(service.stop)

    routes = [
        Route("/", _page),
        Mount("/static", StaticFiles(packages=[("subextract.serve", "web")]), name="static"),
        Route("/openapi.json", _openapi),
        Route("/docs", _api_docs),
        Route("/health", _health),
        Route("/ready", _ready),
        Route("/metrics", _metrics),
        Route("/v1/jobs", _create_job, methods=["POST"]),
        Route("/v1/jobs", _list_jobs, methods=["GET"]),
        Route("/v1/jobs/{job_id}", _get_job, methods=["GET"]),
        Route("/v1/jobs/{job_id}", _delete_job, methods=["DELETE"]),
        Route("/v1/jobs/{job_id}/subtitles.{fmt}", _subtitles, methods=["GET"]),
        Route("/v1/jobs/{job_id}/cues", _cues, methods=["GET"]),
        Route("/v1/jobs/{job_id}/cues", editing.insert_cue, methods=["POST"]),
        Route("/v1/jobs/{job_id}/cues", editing.edit_cues, methods=["PATCH"]),
        Route("/v1/jobs/{job_id}/cues/merge", editing.merge_cues, methods=["POST"]),
        Route("/v1/jobs/{job_id}/cues/{seq:int}", editing.edit_cue, methods=["PATCH"]),
        Route("/v1/jobs/{job_id}/cues/{seq:int}", editing.delete_cue, methods=["DELETE"]),
        Route("/v1/jobs/{job_id}/cues/{seq:int}/split", editing.split_cue, methods=["POST"]),
        Route("/v1/jobs/{job_id}/cues/{seq:int}/crop.png", _crop, methods=["GET"]),
        Route("/v1/jobs/{job_id}/cues/{seq:int}/lines.png", _lines_picture, methods=["GET"]),
        Route("/v1/jobs/{job_id}/undo", editing.undo, methods=["POST"]),
        Route("/v1/jobs/{job_id}/video", _video, methods=["GET"]),
        Route("/media/{job_id}/video", _signed_video, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: _http_error})
    app.state.service = service
    _add_protections(app, config)
    app.add_middleware(Gate, service=service)
    return app


def _add_protections(app: Starlette, config: ServiceConfig) -> None:
    """Below the Gate (which logs and counts every answer): the browser guard, opt-in CORS, the body limit."""
    from starlette.middleware.cors import CORSMiddleware

    from subextract.serve.guard import BrowserGuard, cors_options

    app.add_middleware(BodyLimit)
    if config.origins.cors_origins:
        app.add_middleware(CORSMiddleware, **cors_options(config.origins))
    app.add_middleware(BrowserGuard, origins=config.origins)


def _service(request: Request) -> Service:
    return request.app.state.service


# -- the page and the probes -----------------------------------------------------------------

def _page(_request: Request) -> Response:
    page = resources.files("subextract.serve").joinpath("web/index.html").read_text(encoding="utf-8")
    return Response(page, media_type="text/html; charset=utf-8")


def _openapi(_request: Request) -> Response:
    from subextract.serve.apidocs import document_json

    return Response(document_json(), media_type="application/json")


def _api_docs(_request: Request) -> Response:
    from subextract.serve.apidocs import page

    return Response(page(), media_type="text/html; charset=utf-8")


def _health(request: Request) -> Response:
    """Liveness: answers from the event loop alone (no store read, no thread), so it answers
    while jobs run; 503 when a worker thread has died or the data folder takes no write."""
    service = _service(request)
    problems = [f"worker thread {name} has stopped" for name in service.pool.dead_threads()]
    unwritable = _unwritable(service.config.data)
    if unwritable:
        problems.append(unwritable)
    if problems:
        return JSONResponse({"status": "failing", "problems": problems}, status_code=503)
    return JSONResponse({"status": "ok"})


def _unwritable(data: Path) -> str | None:
    """Why nothing can be written in the data folder (a file made and removed there), or None;
    a full disk is readiness's business, not liveness's."""
    probe = data / f".health-{uuid.uuid4().hex[:8]}"
    try:
        probe.touch()
        probe.unlink()
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return None
        return f"the data folder takes no write ({exc.strerror})"
    return None


def _ready(request: Request) -> Response:
    service = _service(request)
    queued = service.store.queued()
    reasons = []
    if service.pool.engine_error:
        reasons.append(f"the OCR engine failed to start: {service.pool.engine_error}")
    elif not service.pool.engines_ready.is_set():
        reasons.append("the OCR engine is starting")
    if queued >= service.config.max_queue:
        reasons.append("the queue is full")
    disk = service.config.limits.disk_short(service.config.data)
    if disk:
        reasons.append(disk)
    body = {"ready": not reasons, "queued": queued, "running": service.pool.running(),
            "workers": service.config.workers, "reasons": reasons}
    return JSONResponse(body, status_code=503 if reasons else 200)


def _metrics(request: Request) -> Response:
    return Response(_service(request).metrics.render(), media_type=CONTENT_TYPE)


# -- jobs ------------------------------------------------------------------------------------

def _check_disk(service: Service) -> None:
    """507 before an upload is received when the data folder's disk is short of space."""
    short = service.config.limits.disk_short(service.config.data)
    if short:
        raise _error(507, short)


def _check_queue(service: Service) -> None:
    if service.store.queued() >= service.config.max_queue:
        raise _error(429, f"the queue is full ({service.config.max_queue} jobs waiting); try again later",
                     {"Retry-After": str(RETRY_AFTER)})


async def _create_job(request: Request) -> Response:
    service = _service(request)
    _check_queue(service)
    key = _idempotency_key(request)
    content_type = request.headers.get("content-type", "")
    media_type = content_type.partition(";")[0].strip().lower()  # Multipart/Form-Data is the same type
    if media_type == "multipart/form-data":
        job, new = await _upload_job(request, service, content_type, key)
    elif media_type == "application/json":
        job, new = await _url_job(request, service, key)
    else:
        raise _error(415, "send the video as multipart/form-data (field 'file') or JSON {\"url\": ...}")
    service.pool.wake()
    # A retried request with the same Idempotency-Key gets the job its first try made.
    return JSONResponse({"id": job.id, "status": job.status}, status_code=202 if new else 200,
                        headers={"Location": f"/v1/jobs/{job.id}", **({} if new else {"Idempotent-Replayed": "true"})})


_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")


def _idempotency_key(request: Request) -> str | None:
    key = request.headers.get("idempotency-key")
    if key is None:
        return None
    if not _IDEMPOTENCY_KEY.match(key):
        raise _error(400, "Idempotency-Key: 1 to 255 visible ASCII characters")
    return key


def _queue(service: Service, job_id: str, source: str, input_: str, name: str, options: dict[str, Any],
           key: str | None, fingerprint: str) -> tuple[Any, bool]:
    from subextract.serve.store import IdempotencyMismatch

    try:
        return service.store.add_once(job_id, source, input_, name, options,
                                      (key, fingerprint) if key is not None else None)
    except IdempotencyMismatch:
        raise _error(422, "Idempotency-Key already used for a different request (another video or other "
                          "options): use a new key for a new job") from None


def _file_digest(path, head: bytes) -> str:
    digest = hashlib.sha256(head)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()


async def _upload_job(request: Request, service: Service, content_type: str, key: str | None = None):
    from subextract.stages.probe import probe

    config = service.config
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > config.max_upload_bytes:
        raise _error(413, f"upload larger than the limit ({config.max_upload_mb:g} MiB)")
    _check_disk(service)
    job_id = service.store.new_id(config.replica)
    folder = config.job_folder(job_id)
    folder.mkdir(parents=True)
    target = folder / "input"
    try:
        try:
            upload = await receive_upload(content_type, request.stream(), target, config.max_upload_bytes)
        except UploadError as exc:
            raise _error(exc.status, str(exc)) from None
        except ClientDisconnect:
            raise _error(400, "the client went away during the upload") from None
        options = _options(service, {name: values for name, values in upload.fields.items()})
        await _vet_webhook(options)
        try:
            # The content decides, never the name: FFmpeg opens it with real container demuxers only,
            # so a playlist or a concat list named .mp4 is refused here, as are pictures and text.
            await run_in_threadpool(probe, str(target))
        except SubextractError as exc:
            raise _error(415, f"{upload.filename}: {str(exc).removeprefix(f'{target}: ')}") from None
        _check_queue(service)
        stored = options.stored()
        fingerprint = await run_in_threadpool(
            _file_digest, target, json.dumps([upload.filename, stored], sort_keys=True).encode()) if key else ""
        job, new = _queue(service, job_id, "upload", str(target), upload.filename, stored, key, fingerprint)
        if not new:
            shutil.rmtree(folder, ignore_errors=True)  # the first request's upload is the one kept
        return job, new
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


async def _url_job(request: Request, service: Service, key: str | None = None):
    from subextract.stages.source import check_url

    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_JSON:
            raise _error(413, f"JSON body larger than {MAX_JSON} bytes")
    try:
        values = parse_json(bytes(body))
    except JsonError as exc:
        raise _error(400, str(exc)) from None
    if not isinstance(values, dict) or not isinstance(values.get("url"), str):
        raise _error(400, "expected a JSON object with \"url\" (and options)")
    url = values.pop("url").strip()
    options = _options(service, values)
    await _vet_webhook(options)
    try:
        await run_in_threadpool(check_url, url)  # resolves the host: off the event loop
    except SubextractError as exc:
        raise _error(400, str(exc)) from None
    stored = options.stored()
    fingerprint = hashlib.sha256(json.dumps([url, stored], sort_keys=True).encode()).hexdigest()
    return _queue(service, service.store.new_id(service.config.replica), "url", url, url, stored, key, fingerprint)


async def _vet_webhook(options) -> None:
    if options.webhook is None:
        return
    try:
        await run_in_threadpool(check_webhook, options.webhook)  # resolves the host: off the event loop
    except SubextractError as exc:
        raise _error(400, str(exc)) from None


def _options(service: Service, values: dict[str, Any]):
    try:
        return parse_options(values, service.presets, service.can_translate)
    except SubextractError as exc:
        raise _error(400, str(exc)) from None


def _job_or_404(service: Service, job_id: str):
    job = service.store.get(job_id)
    if job is None:
        raise _error(404, f"no job {job_id}")
    return job


def _list_jobs(request: Request) -> Response:
    service = _service(request)
    status = request.query_params.get("status")
    try:
        limit = min(max(int(request.query_params.get("limit", "100")), 1), 1000)
    except ValueError:
        raise _error(400, "limit: expected a whole number") from None
    return JSONResponse({"jobs": [job.public() for job in service.store.jobs(limit, status)]})


def _get_job(request: Request) -> Response:
    """The job, with what the page shows beside it: its tracks, the spans the decoder found
    damaged, the change an undo would take back and a link a video player can open."""
    service = _service(request)
    job = _job_or_404(service, request.path_params["job_id"])
    last = service.store.last_change(job.id)
    return JSONResponse({**job.public(), "tracks": service.store.tracks(job.id),
                         "damaged": (job.metadata or {}).get("damaged", []),
                         "last_change": {"change": last[0], "kind": last[1]} if last else None,
                         "video": service.media.link(job.id) if _uploaded_video(service, job) else None})


def _delete_job(request: Request) -> Response:
    service = _service(request)
    job_id = request.path_params["job_id"]
    before = service.store.cancel(job_id)
    if before is None:
        raise _error(404, f"no job {job_id}")
    if before in ACTIVE and not service.pool.cancel(job_id, wait=_CANCEL_WAIT_S):
        log.warning("job %s did not stop within %g s of its cancel; its worker removes its files when it does",
                    job_id, _CANCEL_WAIT_S)
    shutil.rmtree(service.config.job_folder(job_id), ignore_errors=True)
    if before in ACTIVE:
        return JSONResponse({"id": job_id, "status": "cancelled"})
    service.store.delete(job_id)
    return JSONResponse({"id": job_id, "status": "deleted"})


def _finished_job(service: Service, job_id: str):
    job = _job_or_404(service, job_id)
    if job.status != "done":
        raise _error(409, f"job {job_id} is {job.status}" + (f": {job.error}" if job.error else ""))
    gone_if_expired(job)
    return job


def gone_if_expired(job) -> None:
    if job.expired is not None:
        raise _error(410, f"job {job.id}'s video, pictures and cues were removed by the retention rule "
                          f"(--keep-days) on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(job.expired))}")


def _subtitles(request: Request) -> Response:
    from subextract.stages.write import render

    service = _service(request)
    fmt = request.path_params["fmt"]
    if fmt not in FORMATS:
        raise _error(404, f"no format {fmt!r} (formats: {', '.join(FORMATS)})")
    job = _finished_job(service, request.path_params["job_id"])
    track = request.query_params.get("track", ORIGINAL)
    if track != ORIGINAL and track not in service.store.tracks(job.id):
        raise _error(404, f"job {job.id} has no track {track!r}")
    # In time order: a cue inserted or split off while proofreading has the next free number.
    cues = sorted((stored.cue for stored in service.store.cues(job.id, track)), key=lambda cue: (cue.start, cue.end))
    text = render(cues, fmt, job.metadata)
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", job.name.rsplit("/", 1)[-1]) or job.id
    name = f"{stem}.{track}.{fmt}" if track else f"{stem}.{fmt}"
    fallback = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    disposition = f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name)}"
    return Response(text, media_type=f"{FORMATS[fmt]}; charset=utf-8", headers={"Content-Disposition": disposition})


async def _cues(request: Request) -> Response:
    """The job's cues as they become final: SSE (``Accept: text/event-stream`` or
    ``?format=sse``) or JSONL; ``?follow=false`` ends with the cues known now instead of at the
    job's end; ``?after=SEQ`` or ``Last-Event-ID`` resumes after a cue already seen."""
    service = _service(request)
    job = _job_or_404(service, request.path_params["job_id"])
    params = request.query_params
    sse = params.get("format") == "sse" or (
        "text/event-stream" in request.headers.get("accept", "") and params.get("format") != "jsonl")
    follow = params.get("follow", "true").lower() not in ("false", "0", "no")
    track = params.get("track", ORIGINAL)
    try:
        after = int(params.get("after") or request.headers.get("last-event-id") or -1)
    except ValueError:
        raise _error(400, "after: expected a cue number") from None

    async def stream():
        seen, quiet_since = after, time.monotonic()
        while True:
            current = service.store.get(job.id)
            for stored in service.store.cues(job.id, track, seen):
                seen = stored.seq
                quiet_since = time.monotonic()
                record = json.dumps(stored.record(), ensure_ascii=False)
                yield f"id: {stored.seq}\nevent: cue\ndata: {record}\n\n" if sse else record + "\n"
            if current is None or current.status not in ACTIVE or not follow:
                if sse:
                    end = {"status": current.status if current else "deleted",
                           "error": current.error if current else None}
                    yield f"event: end\ndata: {json.dumps(end)}\n\n"
                return
            if sse and time.monotonic() - quiet_since > _KEEPALIVE:
                quiet_since = time.monotonic()
                yield ": keep-alive\n\n"
            await asyncio.sleep(_STREAM_POLL)

    media = "text/event-stream" if sse else "application/x-ndjson"
    return StreamingResponse(stream(), media_type=f"{media}; charset=utf-8",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _picture_of(request: Request):
    """The job's cue named in the path and the folder of its OCR pictures; while the job runs
    too, as its cues stream in."""
    from subextract.serve.worker import CROPS

    service = _service(request)
    job = _job_or_404(service, request.path_params["job_id"])
    seq = request.path_params["seq"]
    stored = service.store.cue(job.id, ORIGINAL, seq)
    if stored is None:
        raise _error(404, f"job {job.id} has no cue {seq}")
    return job, stored, service.config.job_folder(job.id) / CROPS


_PICTURE_HEADERS = {"Cache-Control": "private, max-age=3600"}


def _crop(request: Request) -> Response:
    """The band picture the cue's text was read from."""
    from subextract.serve.crops import cue_picture

    job, stored, folder = _picture_of(request)
    picture = cue_picture(folder, stored.cue)
    if picture is None:
        raise _error(404, f"job {job.id} kept no picture for cue {stored.seq}")
    return FileResponse(picture, media_type="image/png", headers=_PICTURE_HEADERS)


async def _lines_picture(request: Request) -> Response:
    """The cue's text lines cut from its band picture (padded), at the video's own pixel size."""
    from subextract.serve.crops import lines_picture

    job, stored, folder = _picture_of(request)
    picture = await run_in_threadpool(lines_picture, folder, stored.cue)
    if picture is None:
        raise _error(404, f"job {job.id} kept no picture for cue {stored.seq}")
    return Response(picture, media_type="image/png", headers=_PICTURE_HEADERS)


# -- the uploaded video, for the page's player --------------------------------------------------

def _uploaded_video(service: Service, job) -> bool:
    return job.source == "upload" and (service.config.job_folder(job.id) / "input").is_file()


def _video_response(service: Service, job) -> Response:
    if not _uploaded_video(service, job):
        raise _error(404, f"job {job.id} has no uploaded video" + (" (a URL job plays from its URL)"
                                                                   if job.source == "url" else ""))
    # FileResponse answers Range requests (206, multipart ranges, 416), which players seek with.
    media_type = mimetypes.guess_type(job.name)[0] or ""
    return FileResponse(service.config.job_folder(job.id) / "input",
                        media_type=media_type if media_type.startswith("video/") else "video/mp4",
                        headers={"Cache-Control": "private, no-transform"})


def _video(request: Request) -> Response:
    service = _service(request)
    return _video_response(service, _job_or_404(service, request.path_params["job_id"]))


def _signed_video(request: Request) -> Response:
    """The same file for a ``<video>`` element, which cannot send the API key: the link the job
    record gives is signed with the server's secret and expires."""
    service = _service(request)
    job_id = request.path_params["job_id"]
    if not service.media.valid(job_id, request.query_params.get("expires", ""),
                               request.query_params.get("signature", "")):
        raise _error(403, "the video link is not valid or has expired: take a new one from the job")
    return _video_response(service, _job_or_404(service, job_id))
