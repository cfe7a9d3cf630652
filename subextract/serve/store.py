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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from subextract.errors import SubextractError
from subextract.schema import Cue

STATES = ("queued", "running", "done", "failed", "cancelled")
ACTIVE = ("queued", "running")
ORIGINAL = ""  # the track of the extracted cues; a translation's track is its language

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
    PRIMARY KEY (job_id, track, seq)
);
"""


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
                "finished": self.finished}


@dataclass
class StoredCue:
    seq: int
    cue: Cue
    flags: list[str] | None = None
    edited: bool = False
    track: str = ORIGINAL

    def record(self) -> dict[str, Any]:
        from subextract.stages.write import cue_record, main_language

        record = {"seq": self.seq, **cue_record(self.cue), "language": main_language(self.cue),
                  "edited": self.edited}
        if self.flags is not None:
            record["flags"] = self.flags
        return record


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

    def new_id(self) -> str:
        return uuid.uuid4().hex[:16]

    def add(self, job_id: str, source: str, input_: str, name: str, options: dict[str, Any]) -> Job:
        now = time.time()
        with self._transaction() as db:
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM jobs").fetchone()[0]
            db.execute("INSERT INTO jobs (id, seq, status, source, input, name, options, created) "
                       "VALUES (?, ?, 'queued', ?, ?, ?, ?, ?)",
                       (job_id, seq, source, input_, name, json.dumps(options), now))
        return self.get(job_id)

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

    def ids(self) -> set[str]:
        return {row[0] for row in self._connection().execute("SELECT id FROM jobs")}

    def delete(self, job_id: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM cues WHERE job_id = ?", (job_id,))
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

    def edit_cue(self, job_id: str, track: str, seq: int, cue: Cue) -> bool:
        with self._transaction() as db:
            return bool(db.execute(
                "UPDATE cues SET start = ?, end = ?, lines = ?, languages = ?, edited = 1 "
                "WHERE job_id = ? AND track = ? AND seq = ?",
                (cue.start, cue.end, json.dumps(list(cue.lines), ensure_ascii=False), json.dumps(list(cue.languages)),
                 job_id, track, sql_int(seq))).rowcount)


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
        "edited) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(job_id, c.track, c.seq, c.cue.start, c.cue.end, json.dumps(list(c.cue.lines), ensure_ascii=False),
          json.dumps(list(c.cue.languages)), c.cue.confidence, c.cue.band,
          json.dumps(c.flags, ensure_ascii=False) if c.flags is not None else None, int(c.edited)) for c in cues])


def _job(row: sqlite3.Row) -> Job:
    return Job(id=row["id"], status=row["status"], source=row["source"], input=row["input"], name=row["name"],
               options=json.loads(row["options"]), progress=row["progress"], stage=row["stage"],
               attempts=row["attempts"], error=row["error"], warnings=json.loads(row["warnings"]),
               metadata=json.loads(row["metadata"]) if row["metadata"] else None, created=row["created"],
               started=row["started"], finished=row["finished"])


def _cue(row: sqlite3.Row) -> StoredCue:
    cue = Cue(row["start"], row["end"], tuple(json.loads(row["lines"])), tuple(json.loads(row["languages"])),
              row["confidence"], row["band"])
    return StoredCue(seq=row["seq"], cue=cue, flags=json.loads(row["flags"]) if row["flags"] is not None else None,
                     edited=bool(row["edited"]), track=row["track"])
