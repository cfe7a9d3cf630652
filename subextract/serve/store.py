"""Jobs and their cues in SQLite (WAL) under the service's data folder.

SQLite is the embedded default because the service is one process on one machine: WAL lets the
request handlers read while a worker writes cues, a committed row survives ``kill -9``, and there
is no server to run. Each thread gets its own connection (sqlite3 connections are not to be shared
between threads); writers wait up to ``busy_timeout`` for the single write lock.
"""

from __future__ import annotations

import errno
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from subextract.errors import SubextractError
from subextract.schema import Cue
from subextract.serve.cue_edits import CueEdit, CueRefused, edited, merged, split

STATES = ("queued", "running", "done", "failed", "cancelled")
ACTIVE = ("queued", "running")
ORIGINAL = ""  # the track of the extracted cues; a translation's track is its language
Flagger = Callable[[str], "list[str] | None"] | None  # the watchlist terms a text matches (None: no watchlist)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,               -- submission order: the queue is first in, first out
    status TEXT NOT NULL,
    source TEXT NOT NULL,               -- "upload" or "url"
    input TEXT NOT NULL,                -- the stored upload's path, or the URL
    name TEXT NOT NULL,                 -- what the client called it (file name or URL)
    options TEXT NOT NULL,              -- JSON: lang, config, region, start, end, translate, watchlist
    progress REAL NOT NULL DEFAULT 0,
    stage TEXT NOT NULL DEFAULT '',
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    warnings TEXT NOT NULL DEFAULT '[]',
    metadata TEXT,                      -- JSON: what the json format says beside the cues
    created REAL NOT NULL,
    started REAL,
    finished REAL
);
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (status, seq);
CREATE TABLE IF NOT EXISTS cues (
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    track TEXT NOT NULL,
    seq INTEGER NOT NULL,
    start REAL NOT NULL,
    end REAL NOT NULL,
    lines TEXT NOT NULL,
    languages TEXT NOT NULL,
    confidence REAL NOT NULL,
    band INTEGER NOT NULL,
    flags TEXT,                         -- JSON list of watchlist terms, or NULL without a watchlist
    edited INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 0, -- the change that last wrote the cue (0: as extracted)
    PRIMARY KEY (job_id, track, seq)
);
-- Proofreading changes, newest last: what each replaced, so that it can be undone. The id is
-- also the version of the cues it wrote (AUTOINCREMENT: never handed out twice).
CREATE TABLE IF NOT EXISTS changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    track TEXT NOT NULL,
    kind TEXT NOT NULL,                 -- edit, delete, insert, merge, split; undo (not undoable itself)
    before TEXT NOT NULL,               -- JSON: the cues it replaced or removed
    written TEXT NOT NULL,              -- JSON: the numbers of the cues it wrote
    undone INTEGER NOT NULL DEFAULT 0,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS changes_job ON changes (job_id, id);
"""


# Columns added after the first release, with what an older store's rows get.
_ADDED_COLUMNS = (
    ("cues", "version", "INTEGER NOT NULL DEFAULT 0"),
    ("jobs", "expired", "REAL"),  # when retention removed the job's files and cues
    ("jobs", "idempotency_key", "TEXT"),  # the client's Idempotency-Key, unique
    ("jobs", "fingerprint", "TEXT"),  # a digest of the request that key came with
    ("jobs", "webhook_state", "TEXT"),  # how telling the job's webhook went; NULL while due
)


class IdempotencyMismatch(Exception):
    """An Idempotency-Key already used for a different request."""


@dataclass
class Job:
    id: str
    status: str
    source: str
    input: str
    name: str
    options: dict[str, Any]
    progress: float
    stage: str
    attempts: int
    error: str | None
    warnings: list[str]
    metadata: dict[str, Any] | None
    created: float
    started: float | None
    finished: float | None
    expired: float | None = None
    webhook_state: str | None = None

    def public(self) -> dict[str, Any]:
        """What the API says about the job (never the server's paths)."""
        return {"id": self.id, "status": self.status, "progress": round(self.progress, 4), "stage": self.stage,
                "name": self.name, "source": self.source, "options": self.options, "attempts": self.attempts,
                "error": self.error, "warnings": self.warnings,
                "complete": self.metadata.get("complete") if self.metadata else None,
                # an empty result is marked: how many cues, and the languages of the lines read
                "cues": (self.metadata or {}).get("cue_count"),
                "languages_seen": (self.metadata or {}).get("languages_seen"),
                "created": self.created, "started": self.started,
                "finished": self.finished, "expired": self.expired, "webhook_state": self.webhook_state}


@dataclass
class StoredCue:
    seq: int
    cue: Cue
    flags: list[str] | None = None
    edited: bool = False
    track: str = ORIGINAL
    version: int = 0

    def record(self) -> dict[str, Any]:
        from subextract.stages.write import cue_record, main_language

        record = {"seq": self.seq, **cue_record(self.cue), "language": main_language(self.cue),
                  "edited": self.edited, "version": self.version}
        if self.flags is not None:
            record["flags"] = self.flags
        return record


@dataclass(frozen=True)
class Change:
    """A stored proofreading change: its id (the version of the cues it wrote), what it was,
    the cues it wrote and the numbers of those it removed."""

    id: int
    kind: str
    cues: list[StoredCue]
    removed: list[int]

    def record(self) -> dict[str, Any]:
        return {"change": self.id, "kind": self.kind, "cues": [cue.record() for cue in self.cues],
                "removed": self.removed}


class EditsRefused(Exception):
    """Changes refused as a whole (nothing stored): each refused cue with its status and reason."""

    def __init__(self, refusals: Sequence[CueRefused]) -> None:
        super().__init__("; ".join(refusal.message for refusal in refusals))
        self.refusals = list(refusals)

    @property
    def status(self) -> int:
        """409 when any cue was changed by someone else meanwhile (reload), else the first refusal's."""
        return 409 if any(r.status == 409 for r in self.refusals) else self.refusals[0].status


_SQL_INT = (-(2 ** 63), 2 ** 63 - 1)  # SQLite's integers: a larger one from a URL or header raised OverflowError (500)


def sql_int(number: int) -> int:
    """``number`` within SQLite's integer range (a cue number of 20 digits finds no cue instead of failing)."""
    return min(max(number, _SQL_INT[0]), _SQL_INT[1])


def is_disk_full(exc: BaseException) -> bool:
    """A write refused because the disk (or the user's quota) is full: OSError ENOSPC/EDQUOT, or
    SQLite's "database or disk is full"."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return isinstance(exc, sqlite3.OperationalError) and "disk is full" in str(exc)


@dataclass
class Store:
    path: Path
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def __post_init__(self) -> None:
        """Opens (or creates) the database; SubextractError, one line, when it is not one (a
        garbage file, a folder) or cannot be written."""
        if self.path.is_dir():
            raise SubextractError(f"{self.path}: is a folder, not the job database")
        try:
            with self._connection() as db:
                db.executescript(_SCHEMA)
                db.execute("SELECT COUNT(*) FROM jobs").fetchone()
                for table, column, declaration in _ADDED_COLUMNS:  # a store made before these existed
                    if column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
                        db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
                db.execute("CREATE UNIQUE INDEX IF NOT EXISTS jobs_idempotency ON jobs (idempotency_key) "
                           "WHERE idempotency_key IS NOT NULL")
        except sqlite3.DatabaseError as exc:
            self._local.db = None
            raise SubextractError(f"{self.path}: cannot be used as the job database ({exc})") from None

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a committed job survives a process crash
            db.execute("PRAGMA foreign_keys=ON")
            self._local.db = db
        return db

    def _transaction(self):
        return _Transaction(self._connection())

    # -- jobs --------------------------------------------------------------------------------

    def new_id(self, replica: str = "") -> str:
        """A new job id, led by the replica's name where the service has one (``--replica``), so
        that a router can send each job's requests to the replica that owns it."""
        return f"{replica}-{uuid.uuid4().hex[:16]}" if replica else uuid.uuid4().hex[:16]

    def add(self, job_id: str, source: str, input_: str, name: str, options: dict[str, Any]) -> Job:
        return self.add_once(job_id, source, input_, name, options)[0]

    def add_once(self, job_id: str, source: str, input_: str, name: str, options: dict[str, Any],
                 idempotency: tuple[str, str] | None = None) -> tuple[Job, bool]:
        """Queue a job; (the job, True) — or, for an Idempotency-Key seen before with the same
        request fingerprint, (that earlier job, False). A key seen with another request:
        IdempotencyMismatch. The check and the insert are one transaction, so two requests with
        one key at once make one job."""
        now = time.time()
        key, fingerprint = idempotency or (None, None)
        with self._transaction() as db:
            if key is not None:
                row = db.execute("SELECT id, fingerprint FROM jobs WHERE idempotency_key = ?", (key,)).fetchone()
                if row is not None:
                    if row["fingerprint"] != fingerprint:
                        raise IdempotencyMismatch(key)
                    return self.get(row["id"]), False
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM jobs").fetchone()[0]
            db.execute("INSERT INTO jobs (id, seq, status, source, input, name, options, created, idempotency_key, "
                       "fingerprint) VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?)",
                       (job_id, seq, source, input_, name, json.dumps(options), now, key, fingerprint))
        return self.get(job_id), True

    def get(self, job_id: str) -> Job | None:
        row = self._connection().execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return _job(row) if row is not None else None

    def jobs(self, limit: int = 100, status: str | None = None) -> list[Job]:
        query, args = "SELECT * FROM jobs", []
        if status is not None:
            query, args = query + " WHERE status = ?", [status]
        rows = self._connection().execute(query + " ORDER BY seq DESC LIMIT ?", (*args, limit)).fetchall()
        return [_job(row) for row in rows]

    def counts(self) -> dict[str, int]:
        rows = self._connection().execute("SELECT status, COUNT(*) FROM jobs GROUP BY status").fetchall()
        found = {status: count for status, count in rows}
        return {state: found.get(state, 0) for state in STATES}

    def queued(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM jobs WHERE status = 'queued'").fetchone()[0]

    def claim(self) -> Job | None:
        """The oldest queued job, now running; None when the queue is empty."""
        with self._transaction() as db:
            row = db.execute("SELECT id FROM jobs WHERE status = 'queued' ORDER BY seq LIMIT 1").fetchone()
            if row is None:
                return None
            db.execute("UPDATE jobs SET status = 'running', started = ?, attempts = attempts + 1, progress = 0, "
                       "stage = '', error = NULL WHERE id = ?", (time.time(), row[0]))
            db.execute("DELETE FROM cues WHERE job_id = ?", (row[0],))  # an interrupted run's cues
        return self.get(row[0])

    def requeue_interrupted(self, max_attempts: int) -> tuple[int, int]:
        """After a restart: jobs left running by the last process run again, unless they have
        already been tried ``max_attempts`` times (a video that brings the server down must not
        do it forever). Returns (requeued, given up)."""
        with self._transaction() as db:
            given_up = db.execute(
                "UPDATE jobs SET status = 'failed', finished = ?, error = ? WHERE status = 'running' AND attempts >= ?",
                (time.time(), f"interrupted {max_attempts} times (the server stopped while it ran)",
                 max_attempts)).rowcount
            requeued = db.execute("UPDATE jobs SET status = 'queued', progress = 0, stage = '' "
                                  "WHERE status = 'running'").rowcount
        return requeued, given_up

    def requeue(self, job_id: str) -> None:
        """A running job handed back at shutdown: it runs again after the restart."""
        with self._transaction() as db:
            db.execute("UPDATE jobs SET status = 'queued', progress = 0, stage = '' "
                       "WHERE id = ? AND status = 'running'", (job_id,))
            db.execute("DELETE FROM cues WHERE job_id = ?", (job_id,))

    def set_progress(self, job_id: str, progress: float, stage: str) -> bool:
        """False when the job is no longer running (cancelled, perhaps by another process)."""
        return bool(self._connection().execute(
            "UPDATE jobs SET progress = ?, stage = ? WHERE id = ? AND status = 'running'",
            (progress, stage, job_id)).rowcount)

    def finish(self, job_id: str, status: str, *, error: str | None = None, warnings: Sequence[str] = (),
               metadata: dict[str, Any] | None = None, tracks: dict[str, list[StoredCue]] | None = None) -> bool:
        """Record a run's outcome (and its final cues, replacing the streamed ones); False when
        the job was cancelled meanwhile, which then keeps nothing."""
        with self._transaction() as db:
            changed = db.execute(
                "UPDATE jobs SET status = ?, error = ?, warnings = ?, metadata = ?, finished = ?, "
                "progress = CASE WHEN ? = 'done' THEN 1 ELSE progress END WHERE id = ? AND status = 'running'",
                (status, error, json.dumps(list(warnings)), json.dumps(metadata) if metadata is not None else None,
                 time.time(), status, job_id)).rowcount
            if changed and tracks is not None:
                db.execute("DELETE FROM cues WHERE job_id = ?", (job_id,))
                for cues in tracks.values():
                    _insert(db, job_id, cues)
        return bool(changed)

    def cancel(self, job_id: str) -> str | None:
        """Mark a queued or running job cancelled and drop its cues; the status it had, or None
        when there is no such job."""
        with self._transaction() as db:
            row = db.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                return None
            if row[0] in ACTIVE:
                db.execute("UPDATE jobs SET status = 'cancelled', finished = ? WHERE id = ?", (time.time(), job_id))
                db.execute("DELETE FROM cues WHERE job_id = ?", (job_id,))
            return row[0]

    def expire(self, finished_before: float) -> list[str]:
        """Jobs that ended before ``finished_before`` lose their cues and changes (retention); the
        record stays, marked expired. Returns their ids, for their files to be removed too."""
        with self._transaction() as db:
            ids = [row[0] for row in db.execute(
                "SELECT id FROM jobs WHERE status IN ('done', 'failed', 'cancelled') AND expired IS NULL "
                "AND COALESCE(finished, created) < ?", (finished_before,))]
            now = time.time()
            for job_id in ids:
                db.execute("DELETE FROM cues WHERE job_id = ?", (job_id,))
                db.execute("DELETE FROM changes WHERE job_id = ?", (job_id,))
                db.execute("UPDATE jobs SET expired = ? WHERE id = ?", (now, job_id))
        return ids

    def webhooks_due(self) -> list[str]:
        """Ended jobs with a webhook not yet told, oldest first."""
        rows = self._connection().execute(
            "SELECT id FROM jobs WHERE status IN ('done', 'failed', 'cancelled') AND webhook_state IS NULL "
            "AND json_extract(options, '$.webhook') IS NOT NULL ORDER BY seq").fetchall()
        return [row[0] for row in rows]

    def webhook_done(self, job_id: str, state: str) -> None:
        self._connection().execute("UPDATE jobs SET webhook_state = ? WHERE id = ?", (state, job_id))

    def ids(self) -> set[str]:
        return {row[0] for row in self._connection().execute("SELECT id FROM jobs")}

    def delete(self, job_id: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM cues WHERE job_id = ?", (job_id,))
            db.execute("DELETE FROM changes WHERE job_id = ?", (job_id,))
            db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))

    # -- cues --------------------------------------------------------------------------------

    def add_cue(self, job_id: str, cue: StoredCue) -> bool:
        """A cue streamed while the job runs; False when the job is no longer running."""
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM jobs WHERE id = ? AND status = 'running'", (job_id,)).fetchone() is None:
                return False
            _insert(db, job_id, [cue])
        return True

    def cues(self, job_id: str, track: str = ORIGINAL, after: int = -1) -> list[StoredCue]:
        rows = self._connection().execute(
            "SELECT * FROM cues WHERE job_id = ? AND track = ? AND seq > ? ORDER BY seq",
            (job_id, track, sql_int(after))).fetchall()
        return [_cue(row) for row in rows]

    def tracks(self, job_id: str) -> list[str]:
        rows = self._connection().execute("SELECT DISTINCT track FROM cues WHERE job_id = ?", (job_id,)).fetchall()
        return sorted(row[0] for row in rows)

    def cue(self, job_id: str, track: str, seq: int) -> StoredCue | None:
        row = self._connection().execute("SELECT * FROM cues WHERE job_id = ? AND track = ? AND seq = ?",
                                          (job_id, track, sql_int(seq))).fetchone()
        return _cue(row) if row is not None else None

    # -- proofreading: each change is one transaction, checked against the versions the client saw

    def edit_cues(self, job_id: str, track: str, edits: Sequence[CueEdit], flag: Flagger = None) -> Change:
        """Each edit's named fields, all or nothing: one refused edit (no such cue, a stale
        version, times out of order) stores none, and every refusal is named."""
        with self._transaction() as db:
            current, refusals = _found(db, job_id, track, [(edit.seq, edit.version) for edit in edits])
            written = []
            for edit in edits:
                if edit.seq not in current:
                    continue
                try:
                    old = current[edit.seq]
                    cue = edited(old.cue, edit)
                except CueRefused as refusal:
                    refusals.append(refusal)
                    continue
                written.append(_edited_row(old, cue, flag))
            if refusals:
                raise EditsRefused(sorted(refusals, key=lambda refusal: refusal.seq))
            return _record_change(db, job_id, track, "edit", list(current.values()), written, [])

    def delete_cue(self, job_id: str, track: str, seq: int, version: int | None) -> Change:
        with self._transaction() as db:
            old = _current(db, job_id, track, [(seq, version)])[seq]
            return _record_change(db, job_id, track, "delete", [old], [], [seq])

    def insert_cue(self, job_id: str, track: str, cue: Cue, flag: Flagger = None) -> Change:
        with self._transaction() as db:
            seq = db.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM cues WHERE job_id = ? AND track = ?",
                             (job_id, track)).fetchone()[0]
            row = StoredCue(seq, cue, flag(cue.text) if flag else None, edited=True, track=track)
            return _record_change(db, job_id, track, "insert", [], [row], [])

    def merge_cues(self, job_id: str, track: str, seen: Sequence[tuple[int, int | None]],
                   flag: Flagger = None) -> Change:
        """The cues named (with the versions seen) made one, kept under the earliest one's number."""
        with self._transaction() as db:
            current = _current(db, job_id, track, seen)
            ordered = sorted(current.values(), key=lambda c: (c.cue.start, c.cue.end, c.seq))
            first = ordered[0]
            row = _edited_row(first, merged([c.cue for c in ordered]), flag)
            return _record_change(db, job_id, track, "merge", ordered, [row], [c.seq for c in ordered[1:]])

    def split_cue(self, job_id: str, track: str, seq: int, version: int | None, at: float,
                  texts: Sequence[str] | None, flag: Flagger = None) -> Change:
        """The cue cut in two at ``at``: the first part keeps its number, the second gets a new one."""
        with self._transaction() as db:
            old = _current(db, job_id, track, [(seq, version)])[seq]
            first, second = split(old.cue, seq, at, texts)
            new_seq = db.execute("SELECT MAX(seq) + 1 FROM cues WHERE job_id = ? AND track = ?",
                                 (job_id, track)).fetchone()[0]
            rows = [_edited_row(old, first, flag),
                    StoredCue(new_seq, second, flag(second.text) if flag else old.flags, edited=True, track=track)]
            return _record_change(db, job_id, track, "split", [old], rows, [])

    def last_change(self, job_id: str) -> tuple[int, str] | None:
        """The change an undo would take back: (id, kind), or None."""
        row = self._connection().execute(
            "SELECT id, kind FROM changes WHERE job_id = ? AND kind != 'undo' AND undone = 0 ORDER BY id DESC "
            "LIMIT 1", (job_id,)).fetchone()
        return (row[0], row[1]) if row is not None else None

    def undo(self, job_id: str, expected: int | None = None) -> Change:
        """Take back the job's last change (of any track): the cues it replaced come back (with
        a new version), those it added go. ``expected``: the change the client means, refused
        with 409 when another one has been made since."""
        with self._transaction() as db:
            row = db.execute("SELECT * FROM changes WHERE job_id = ? AND kind != 'undo' AND undone = 0 "
                             "ORDER BY id DESC LIMIT 1", (job_id,)).fetchone()
            if row is None:
                raise CueRefused(None, 404, "nothing to undo")
            if expected is not None and row["id"] != expected:
                raise CueRefused(None, 409, f"the last change is now {row['id']} ({row['kind']}), made since")
            track = row["track"]
            before = [_stored(record, track) for record in json.loads(row["before"])]
            written = json.loads(row["written"])
            db.execute("UPDATE changes SET undone = 1 WHERE id = ?", (row["id"],))
            restored = {cue.seq for cue in before}
            change = _record_change(db, job_id, track, "undo", [], before,
                                    [seq for seq in written if seq not in restored], replace=written)
            return Change(change.id, row["kind"], change.cues, change.removed)


def _current(db: sqlite3.Connection, job_id: str, track: str,
             seen: Sequence[tuple[int, int | None]]) -> dict[int, StoredCue]:
    """The cues named, each checked against the version the client saw (None: not checked)."""
    rows, refusals = _found(db, job_id, track, seen)
    if refusals:
        raise EditsRefused(refusals)
    return rows


def _found(db: sqlite3.Connection, job_id: str, track: str,
           seen: Sequence[tuple[int, int | None]]) -> tuple[dict[int, StoredCue], list[CueRefused]]:
    """The cues named that are there as the client saw them, and a refusal for each other one."""
    rows: dict[int, StoredCue] = {}
    refusals = []
    for seq, version in seen:
        row = db.execute("SELECT * FROM cues WHERE job_id = ? AND track = ? AND seq = ?",
                         (job_id, track, sql_int(seq))).fetchone()
        if row is None:
            refusals.append(CueRefused(seq, 404, f"cue {seq}: no such cue (deleted or merged since?)"))
        elif seq in rows:
            refusals.append(CueRefused(seq, 400, f"cue {seq}: named twice"))
        elif version is not None and row["version"] != version:
            refusals.append(CueRefused(seq, 409, f"cue {seq}: changed since you loaded it (version {version}, "
                                                 f"now {row['version']}): reload it"))
        else:
            rows[seq] = _cue(row)
    return rows, refusals


def _edited_row(old: StoredCue, cue: Cue, flag) -> StoredCue:
    flags = flag(cue.text) if flag is not None and cue.text != old.cue.text else old.flags
    return StoredCue(old.seq, cue, flags, edited=True, track=old.track, version=old.version)


def _record_change(db: sqlite3.Connection, job_id: str, track: str, kind: str, before: Sequence[StoredCue],
                   written: Sequence[StoredCue], removed: Sequence[int],
                   replace: Sequence[int] = ()) -> Change:
    """Journal the change, write its cues with its id as their version and remove the others.
    ``replace``: numbers whose rows go before the written ones come in (an undo's)."""
    change_id = db.execute(
        "INSERT INTO changes (job_id, track, kind, before, written, at) VALUES (?, ?, ?, ?, ?, ?)",
        (job_id, track, kind, json.dumps([_row_record(cue) for cue in before], ensure_ascii=False),
         json.dumps([cue.seq for cue in written]), time.time())).lastrowid
    gone = sorted({*removed, *replace})
    db.executemany("DELETE FROM cues WHERE job_id = ? AND track = ? AND seq = ?",
                   [(job_id, track, seq) for seq in gone])
    stored = [StoredCue(cue.seq, cue.cue, cue.flags, cue.edited, track, change_id) for cue in written]
    _insert(db, job_id, stored)
    return Change(change_id, kind, stored, sorted(removed))


def _row_record(cue: StoredCue) -> dict[str, Any]:
    return {"seq": cue.seq, "start": cue.cue.start, "end": cue.cue.end, "lines": list(cue.cue.lines),
            "languages": list(cue.cue.languages), "confidence": cue.cue.confidence, "band": cue.cue.band,
            "flags": cue.flags, "edited": cue.edited}


def _stored(record: dict[str, Any], track: str) -> StoredCue:
    cue = Cue(record["start"], record["end"], tuple(record["lines"]), tuple(record["languages"]),
              record["confidence"], record["band"])
    return StoredCue(record["seq"], cue, record["flags"], record["edited"], track)


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT``: takes the write lock up front, so a read-then-write (the
    queue's claim) is never interleaved with another writer's."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        self._db.execute("BEGIN IMMEDIATE")
        return self._db

    def __exit__(self, kind, value, traceback) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


def _insert(db: sqlite3.Connection, job_id: str, cues: Sequence[StoredCue]) -> None:
    db.executemany(
        "INSERT OR REPLACE INTO cues (job_id, track, seq, start, end, lines, languages, confidence, band, flags, "
        "edited, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(job_id, c.track, c.seq, c.cue.start, c.cue.end, json.dumps(list(c.cue.lines), ensure_ascii=False),
          json.dumps(list(c.cue.languages)), c.cue.confidence, c.cue.band,
          json.dumps(c.flags, ensure_ascii=False) if c.flags is not None else None, int(c.edited), c.version)
         for c in cues])


def _job(row: sqlite3.Row) -> Job:
    return Job(id=row["id"], status=row["status"], source=row["source"], input=row["input"], name=row["name"],
               options=json.loads(row["options"]), progress=row["progress"], stage=row["stage"],
               attempts=row["attempts"], error=row["error"], warnings=json.loads(row["warnings"]),
               metadata=json.loads(row["metadata"]) if row["metadata"] else None, created=row["created"],
               started=row["started"], finished=row["finished"], expired=row["expired"],
               webhook_state=row["webhook_state"])


def _cue(row: sqlite3.Row) -> StoredCue:
    cue = Cue(row["start"], row["end"], tuple(json.loads(row["lines"])), tuple(json.loads(row["languages"])),
              row["confidence"], row["band"])
    return StoredCue(seq=row["seq"], cue=cue, flags=json.loads(row["flags"]) if row["flags"] is not None else None,
                     edited=bool(row["edited"]), track=row["track"], version=row["version"])
