"""The proofreading routes: edit, insert, delete, merge, split and undo a finished job's cues.

Each change is one store transaction checked against the versions the client saw (a stale one
is a 409 naming the cue), answered with what it wrote, and journalled so that ``undo`` can take
it back. A save of several cues (``PATCH /v1/jobs/{id}/cues``) is all or nothing: a save is one
step of the proofreader's work, and storing part of it would leave a state nobody saw whole;
each refused cue comes back with its own reason, so the page marks those rows and keeps the
others pending.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from subextract.serve.cue_edits import CueRefused, inserted, parse_edit, parse_texts, parse_version, seconds
from subextract.serve.limits import JsonError, parse_json
from subextract.serve.store import ORIGINAL, EditsRefused, Job


def _service(request: Request):
    return request.app.state.service


def _error(status: int, message: str) -> HTTPException:
    return HTTPException(status_code=status, detail=message)


def _editable_job(request: Request) -> tuple[Job, str]:
    """The job named in the path (404), finished (409), and the track asked for (404)."""
    service = _service(request)
    job_id = request.path_params["job_id"]
    job = service.store.get(job_id)
    if job is None:
        raise _error(404, f"no job {job_id}")
    if job.status != "done":
        raise _error(409, f"job {job_id} is {job.status}: cues can be changed once it is done")
    if job.expired is not None:
        raise _error(410, f"job {job_id}'s cues were removed by the retention rule (--keep-days)")
    track = request.query_params.get("track", ORIGINAL)
    if track != ORIGINAL and track not in service.store.tracks(job.id):
        raise _error(404, f"job {job.id} has no track {track!r}")
    return job, track


def _flagger(job: Job, track: str):
    """The job's watchlist, so that an edited cue's flags say what its new text matches."""
    watchlist = job.options.get("watchlist")
    if track != ORIGINAL or not watchlist:
        return None
    from subextract.feeds import Watchlist

    return Watchlist.parse(watchlist).matches


async def _json(request: Request, empty: Any = None) -> Any:
    """The body as JSON (standard JSON: no NaN), parsed off the event loop; ``empty`` stands for
    no body where one is optional. The body's size is bounded before this (limits.BodyLimit)."""
    body = await request.body()
    if not body.strip() and empty is not None:
        return empty
    try:
        return await run_in_threadpool(parse_json, body)
    except JsonError as exc:
        raise _error(400, str(exc)) from None


def _refusals_answered(route: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """The cue routes' one way of saying no: a cue refused (bad field, stale version, unknown
    cue) is its status and reason, edits refused all or nothing are each refusal listed."""

    @functools.wraps(route)
    async def answer(request: Request) -> Response:
        try:
            return await route(request)
        except CueRefused as refusal:
            raise _error(refusal.status, refusal.message) from None
        except EditsRefused as exc:
            return _refused(exc)

    return answer


def _refused(exc: EditsRefused) -> Response:
    count = len(exc.refusals)
    message = (exc.refusals[0].message if count == 1 else
               f"{count} cues refused, nothing saved: " + "; ".join(r.message for r in exc.refusals[:3]))
    return JSONResponse({"error": message, "refused": [refusal.record() for refusal in exc.refusals]},
                        status_code=exc.status)


@_refusals_answered
async def edit_cue(request: Request) -> Response:
    """PATCH one cue: only the fields named change; with ``version``, a stale edit is a 409."""
    job, track = _editable_job(request)
    values = await _json(request)
    seq = request.path_params["seq"]
    edit = parse_edit(values, seq)
    change = await run_in_threadpool(_service(request).store.edit_cues, job.id, track, [edit], _flagger(job, track))
    return JSONResponse(change.cues[0].record())


@_refusals_answered
async def edit_cues(request: Request) -> Response:
    """PATCH several cues at once, all or nothing: ``{"edits": [{"seq", "version", ...}, ...]}``."""
    job, track = _editable_job(request)
    values = await _json(request)
    edits = values.get("edits") if isinstance(values, dict) else None
    if not isinstance(edits, list) or not edits or set(values) != {"edits"}:
        raise _error(400, "expected {\"edits\": [{\"seq\": N, \"version\": V, \"text\"/\"start\"/\"end\": ...}, ...]}")
    parsed, refusals = [], []
    for values in edits:
        try:
            parsed.append(parse_edit(values))
        except CueRefused as refusal:
            refusals.append(refusal)
    if refusals:
        raise EditsRefused(refusals)
    change = await run_in_threadpool(_service(request).store.edit_cues, job.id, track, parsed, _flagger(job, track))
    return JSONResponse(change.record())


@_refusals_answered
async def insert_cue(request: Request) -> Response:
    job, track = _editable_job(request)
    values = await _json(request)
    cue = inserted(values)
    change = await run_in_threadpool(_service(request).store.insert_cue, job.id, track, cue, _flagger(job, track))
    return JSONResponse(change.record(), status_code=201)


@_refusals_answered
async def delete_cue(request: Request) -> Response:
    job, track = _editable_job(request)
    seq = request.path_params["seq"]
    version = parse_version(_whole(request.query_params.get("version")), seq)
    change = await run_in_threadpool(_service(request).store.delete_cue, job.id, track, seq, version)
    return JSONResponse(change.record())


@_refusals_answered
async def merge_cues(request: Request) -> Response:
    """``{"cues": [{"seq": N, "version": V}, ...]}``: two or more cues made one."""
    job, track = _editable_job(request)
    values = await _json(request)
    named = values.get("cues") if isinstance(values, dict) else None
    if not isinstance(named, list) or len(named) < 2 or not all(isinstance(item, dict) for item in named):
        raise _error(400, "expected {\"cues\": [{\"seq\": N, \"version\": V}, ...]} naming two cues or more")
    seen = []
    for item in named:
        seq = item.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq < 2 ** 53 or set(item) - {"seq", "version"}:
            raise CueRefused(None, 400, "each cue: {\"seq\": N, \"version\": V}")
        seen.append((seq, parse_version(item.get("version"), seq)))
    change = await run_in_threadpool(_service(request).store.merge_cues, job.id, track, seen, _flagger(job, track))
    return JSONResponse(change.record())


@_refusals_answered
async def split_cue(request: Request) -> Response:
    """``{"at": SECONDS, "version": V, "texts": [before, after]}``: one cue cut in two."""
    job, track = _editable_job(request)
    values = await _json(request)
    seq = request.path_params["seq"]
    if not isinstance(values, dict) or "at" not in values or set(values) - {"at", "version", "texts"}:
        raise _error(400, "expected {\"at\": SECONDS, \"version\": V, \"texts\": [before, after]} (texts optional)")
    at = seconds(values["at"], "at", seq)
    texts = parse_texts(values.get("texts"), seq)
    version = parse_version(values.get("version"), seq)
    change = await run_in_threadpool(_service(request).store.split_cue, job.id, track, seq, version, at, texts,
                                     _flagger(job, track))
    return JSONResponse(change.record())


@_refusals_answered
async def undo(request: Request) -> Response:
    """Take back the job's last change; ``{"change": ID}`` says which one the client means."""
    job, _track = _editable_job(request)
    values = await _json(request, empty={})
    if not isinstance(values, dict) or set(values) - {"change"}:
        raise _error(400, "expected {\"change\": ID} (optional: the change you mean to undo)")
    try:
        expected = parse_version(values.get("change"), None)
    except CueRefused:
        raise _error(400, "change: the id of the change to undo (a whole number)") from None
    change = await run_in_threadpool(_service(request).store.undo, job.id, expected)
    return JSONResponse(change.record())


def _whole(text: str | None) -> int | None:
    if text is None:
        return None
    if not text.isdigit() or len(text) > 15:
        raise CueRefused(None, 400, "version: a whole number")
    return int(text)
