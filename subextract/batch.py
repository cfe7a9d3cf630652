"""The batch runner (library; ``subextract batch`` is ``cli/batch.py``): many videos into a
mirrored output tree, resumable and failure-isolated, each video run by ``subextract.job``.

Each video's outcome is appended to ``OUT/manifest.jsonl`` the moment it is known (one line per
event, so a killed run loses nothing but the videos it was running); the run ends by rewriting
the manifest with one line per video. A re-run skips videos done with the same input and the
same settings, and redoes failed, interrupted, changed and new ones. Outputs are written to a
temporary name and renamed, so an output file is always whole.
"""

from __future__ import annotations

import dataclasses
import errno
import glob
import hashlib
import itertools
import json
import logging
import os
import queue
import re
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from subextract import __version__
from subextract.config import Settings
from subextract.errors import SubextractError, one_line
from subextract.feeds import FeedSink, Watchlist
from subextract.job import JobEvents, JobOptions, JobResult, extract_in_child, output_name, outputs_in_tree, run_job
from subextract.pipeline.child import ChildPerThread
from subextract.pipeline.run import ExtractionResult
from subextract.stages.ocr import EnginePool, one_per_process
from subextract.stages.source import is_url
from subextract.stages.write import check_replaceable, temporary_prefix, write_text

logger = logging.getLogger(__name__)

VIDEO_EXTENSIONS = frozenset({".mp4", ".m4v", ".mkv", ".webm", ".mov", ".avi", ".wmv", ".flv", ".ts", ".m2ts",
                              ".mts", ".mpg", ".mpeg", ".3gp", ".ogv"})
LIST_EXTENSIONS = (".txt", ".list", ".lst")
MANIFEST = "manifest.jsonl"
FAILED = ("failed", "partial")  # what --retry-failed redoes; "partial": cues written, the file broke part-way
EXIT_OK, EXIT_FAILED, EXIT_EMPTY, EXIT_INTERRUPTED = 0, 1, 3, 130


# ----------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    video: str  # the path as found, or the URL: the manifest key and the feed's video id
    output: Path


def _url_name(url: str) -> str:
    """A file name for a stream's output: host and path with anything but [A-Za-z0-9_-] as ``_``,
    then the path's extension (which the output name replaces, as a video file's)."""
    parts = urlsplit(url)
    extension = PurePosixPath(parts.path).suffix
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", f"{parts.netloc}{parts.path.removesuffix(extension)}").strip("_")
    return (stem or "stream") + extension


def _list_entries(path: Path) -> Iterator[str]:
    """A list file: one path or URL a line; ``#`` comments; relative paths are from the list's folder."""
    from subextract.textfiles import read_text

    for line in read_text(path, "list", 64 * 1024 * 1024).splitlines():
        entry = line.strip()
        if entry and not entry.startswith("#"):
            yield entry if is_url(entry) or os.path.isabs(entry) else str(path.parent / entry)


def _walk_videos(folder: Path) -> Iterator[Path]:
    """Video files under ``folder`` by extension, in name order; hidden files and folders skipped.
    A linked folder is followed like any other (it was skipped without a word), each real folder
    once, so a link back up the tree ends instead of looping."""
    seen = {os.path.realpath(folder)}
    for root, dirs, files in os.walk(folder, followlinks=True):
        kept = []
        for name in sorted(d for d in dirs if not d.startswith(".")):
            real = os.path.realpath(os.path.join(root, name))
            if real not in seen:
                seen.add(real)
                kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            if not name.startswith(".") and Path(name).suffix.lower() in VIDEO_EXTENSIONS:
                yield Path(root) / name


def discover(inputs: Sequence[str], out_dir: Path, lang: str, fmt: str) -> list[Job]:
    """Jobs for files, folders (searched recursively), list files and URLs; a folder's tree is
    mirrored under ``out_dir``, other inputs land at its top.

    Names that would clash are told apart deterministically (the same command line gives the same
    names): videos of different inputs that meet at one name get one subfolder per input (the
    folder's name, or the file's folder's), and videos that differ only by their container
    (``movie.mp4``, ``movie.mkv``) keep it in the name (``movie.mp4.srt``)."""
    found: list[tuple[str, str, str]] = []  # (video, its path relative to its root, the root: folder or host)
    for item in inputs:
        path = Path(item)
        if is_url(item):
            found.append((item, _url_name(item), _root(item)))
        elif path.is_dir():
            found.extend((str(video), str(video.relative_to(path)), os.path.realpath(path))
                         for video in _walk_videos(path))
        elif path.suffix.lower() in LIST_EXTENSIONS and path.is_file():
            found.extend((entry, _url_name(entry) if is_url(entry) else Path(entry).name, _root(entry))
                         for entry in _list_entries(path))
        else:  # checked when its turn comes: a bad file fails alone
            found.append((item, path.name, _root(item)))
    unique: dict[str, tuple[str, str, str]] = {}
    for video, relative, root in found:
        key = video if is_url(video) else os.path.realpath(video)
        unique.setdefault(key, (video, relative, root))  # named twice (a file inside a folder also given): once
    entries = list(unique.values())
    names = [output_name(relative, lang, fmt) for _, relative, _ in entries]
    if _clashes(names, [root for _, _, root in entries]):
        folders = _root_folders([root for _, _, root in entries])
        entries = [(video, f"{folders[root]}/{relative}", root) for video, relative, root in entries]
        names = [output_name(relative, lang, fmt) for _, relative, _ in entries]
    clashing = _clashes(names, range(len(names))) | {name for name in names if _is_reserved(name)}
    names = [_keeping_extension(relative, lang, fmt) if name in clashing else name
             for (_, relative, _), name in zip(entries, names)]
    jobs, by_output = [], {}
    for (video, _, _), name in zip(entries, names):
        output = out_dir / name
        if output in by_output:  # only the same file under two spellings could get here
            raise SubextractError(f"{by_output[output]} and {video} would both be written to {output}")
        by_output[output] = video
        jobs.append(Job(video, output))
    return jobs


def _is_reserved(name: str) -> bool:
    """An output name the batch's own files have at the top of DIR (``manifest.mp4`` with
    ``--format jsonl`` would be written over the manifest)."""
    return name == MANIFEST or re.fullmatch(r"manifest\.shard-\d+-of-\d+\.jsonl", name) is not None


def _root(video: str) -> str:
    """The root of a video given by itself: its folder, or a URL's host."""
    return f"{urlsplit(video).hostname or 'stream'}" if is_url(video) else os.path.dirname(os.path.realpath(video))


def _clashes(names: Sequence[str], owners: Sequence[object]) -> set[str]:
    """Names given to videos of more than one owner (an input root, or each video by itself)."""
    seen: dict[str, set[object]] = {}
    for name, owner in zip(names, owners):
        seen.setdefault(name, set()).add(owner)
    return {name for name, who in seen.items() if len(who) > 1}


def _root_folders(roots: Sequence[str]) -> dict[str, str]:
    """Each root's subfolder: its last path component (a host as is), with ``_2``, ``_3``… where
    two roots share one, in the order given."""
    folders: dict[str, str] = {}
    for root in roots:
        if root not in folders:
            label = re.sub(r"[^\w.-]+", "_", os.path.basename(root.rstrip("/")) or "root")
            candidate, n = label, 1
            while candidate in folders.values():
                n += 1
                candidate = f"{label}_{n}"
            folders[root] = candidate
    return folders


def _keeping_extension(relative: str, lang: str, fmt: str) -> str:
    """``dir/movie.mp4`` → ``dir/movie.mp4.zh.srt``: the output name of a video that shares its stem."""
    return output_name(f"{relative}.video", lang, fmt)


@dataclass(frozen=True)
class Shard:
    """``--shard I/N``: the videos this process does out of everyone's (Kubernetes Indexed Jobs,
    Slurm arrays). A video's shard follows from a digest of its name alone, not from its place in
    the sorted list: a library that grows keeps every video in its shard, so a re-run of each shard
    skips what that shard did before (a split by position would move videos between shards, whose
    manifests do not know them). Each shard has its own manifest and lock in the output folder."""

    index: int  # 0 ≤ index < count (Kubernetes' JOB_COMPLETION_INDEX counts from 0)
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if match is None or not 0 <= int(match[1]) < int(match[2]):
            raise ValueError(f"{text!r} is not I/N with 0 <= I < N (e.g. 0/4)")
        return cls(int(match[1]), int(match[2]))

    def takes(self, video: str) -> bool:
        digest = hashlib.sha256(video.encode("utf-8", "surrogateescape")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index

    def select(self, jobs: Sequence["Job"]) -> list["Job"]:
        """This shard's jobs, in the order given (discover's: sorted within each input)."""
        return [job for job in jobs if self.takes(job.video)]

    @property
    def manifest(self) -> str:
        return f"manifest.shard-{self.index}-of-{self.count}.jsonl"

    @property
    def lock(self) -> str:
        return f".batch.shard-{self.index}-of-{self.count}.lock"


def input_identity(video: str, use_hash: bool) -> dict[str, Any]:
    """What makes a re-run treat an input as unchanged: size and mtime, or the content's SHA-256."""
    if is_url(video):
        return {"url": video}
    status = os.stat(video)
    if not stat.S_ISREG(status.st_mode):  # a FIFO would block the hash (and FFmpeg) forever
        raise OSError(errno.EINVAL, "not a regular file (a pipe or device is not read in a batch)")
    if not use_hash:
        return {"size": status.st_size, "mtime_ns": status.st_mtime_ns}
    digest = hashlib.sha256()
    with open(video, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"sha256": digest.hexdigest()}


def settings_key(settings: Settings, options: dict[str, Any]) -> str:
    """A digest of everything that shapes the outputs (the package version included)."""
    text = json.dumps({"settings": dataclasses.asdict(settings), "options": options, "version": __version__},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------------------------
# Manifest
# ----------------------------------------------------------------------------------------------

class Manifest:
    """``OUT/manifest.jsonl``: the latest record of each video wins; appends are single writes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._fd: int | None = None

    def load(self) -> list[int]:
        """Read the records; the numbers of the lines that are not one (a run killed in the
        middle of a write, a damaged disk) are returned and those lines skipped."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise SubextractError(f"{self.path}: cannot read the manifest ({exc.strerror})") from None
        skipped = []
        for number, line in enumerate(data.splitlines(), 1):
            try:
                record = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                skipped.append(number)
                continue
            if _valid_record(record):
                self.records[record["video"]] = record
            else:
                skipped.append(number)
        return skipped

    def append(self, record: dict[str, Any]) -> None:
        line = _json_line(record).encode()
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            os.write(self._fd, line)  # O_APPEND: one write, never interleaved with another thread's
            self.records[record["video"]] = record

    def compact(self) -> None:
        """Rewrite as one line per video (atomically), dropping the run's intermediate records."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            write_text(str(self.path), "".join(map(_json_line, self.records.values())))


def _json_line(record: dict[str, Any]) -> str:
    """One manifest line; a name that is not UTF-8 (bytes kept by Python as lone surrogates)
    cannot be written as UTF-8, so that record is written in ASCII with ``\\u`` escapes, which
    read back as the same name."""
    line = json.dumps(record, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(record)
    return line + "\n"


# The fields the batch reads back, and their types: a record with another type in one of them
# (a hand-edited or damaged manifest) is skipped like an unreadable line, never trusted.
_RECORD_FIELDS = {"video": str, "status": str, "input": dict, "settings": str, "digests": dict, "replacing": dict,
                  "edited": dict, "beside": dict, "outputs": list}
_OUTPUT_MAPS = ("digests", "replacing", "edited", "beside")  # output relative to DIR -> digest (beside: its side name)


def _valid_record(record: Any) -> bool:
    if not isinstance(record, dict) or not isinstance(record.get("video"), str):
        return False
    if any(record.get(name) is not None and not isinstance(record[name], kind)
           for name, kind in _RECORD_FIELDS.items()):
        return False
    return all(inside_folder(relative) and isinstance(value, str) and (name != "beside" or inside_folder(value))
               for name in _OUTPUT_MAPS for relative, value in (record.get(name) or {}).items())


def inside_folder(relative: Any) -> bool:
    """A path the manifest may name: relative, inside DIR (the manifest's ``digests`` are read
    back, and a ``../`` or absolute one would read files outside it)."""
    if not isinstance(relative, str) or not relative or "\0" in relative:
        return False
    path = PurePosixPath(relative)
    return not path.is_absolute() and ".." not in path.parts and "\\" not in relative


@contextmanager
def exclusive(out_dir: Path, name: str = ".batch.lock") -> Iterator[None]:
    """One batch at a time per output folder (per shard: ``name``): two would redo each other's
    videos. filelock locks the same way on POSIX (flock) and Windows (msvcrt)."""
    from filelock import FileLock, Timeout

    lock = FileLock(out_dir / name, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise SubextractError(f"{out_dir}: another subextract batch is writing there") from None
    except OSError as exc:
        raise SubextractError(f"{out_dir}: cannot write to the output folder ({exc.strerror})") from None
    try:
        yield
    finally:
        lock.release()


def file_digest(path: Path) -> str | None:
    """SHA-256 of a file's content; None when there is no such file."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def recorded_digests(record: dict[str, Any] | None) -> dict[str, set[str]]:
    """Output (relative to DIR) → the digests this tool wrote there: the record's, and the
    previous ones of a run killed while replacing them."""
    digests: dict[str, set[str]] = {}
    for field_name in ("digests", "replacing"):
        for relative, digest in ((record or {}).get(field_name) or {}).items():
            digests.setdefault(relative, set()).add(digest)
    return digests


def reason_to_run(previous: dict[str, Any] | None, identity: dict[str, Any], key: str, output: Path,
                  retry_failed: bool, out_dir: Path | None = None) -> str | None:
    """Why a video needs (re)doing, or None to skip it. With ``out_dir``, an output whose content
    is no longer what was recorded (edited, replaced) counts as changed."""
    status = previous.get("status") if previous else None
    if retry_failed:
        return f"{status} before" if status in FAILED else None
    if previous is None:
        return "new"
    if status != "done":
        return f"{status} before"  # failed, partial, interrupted, or running when the batch was killed
    if previous.get("input") != identity:
        return "input changed"
    if previous.get("settings") != key:
        return "settings changed"
    if not output.is_file():
        return "output missing"
    if out_dir is not None:
        known = {**{k: {v} for k, v in (previous.get("edited") or {}).items()}, **recorded_digests(previous)}
        if any(file_digest(out_dir / relative) not in digests for relative, digests in known.items()):
            return "output changed"
    return None


# ----------------------------------------------------------------------------------------------
# Running
# ----------------------------------------------------------------------------------------------

class _Cancelled(Exception):
    """Raised inside a job (from its progress callback) when the batch is stopping."""


@dataclass
class Options:
    out_dir: Path
    settings: Settings
    lang: str
    fmt: str
    start: float
    end: float | None
    jobs: int
    use_hash: bool
    retry_failed: bool
    watchlist: Watchlist | None
    only_flagged: bool
    feed: FeedSink | None
    quiet: bool
    translate: str | None = None  # target language of a translation written beside each output
    bilingual: bool = False
    translator: Any = None  # subextract.translate's Translator, shared by the jobs
    overwrite_edited: bool = False  # replace outputs changed since they were written (else NAME.new.EXT beside them)
    say: Callable[[str], None] | None = None  # where the batch's lines go (the command line: stderr); else logging
    on_finished: Callable[[dict[str, Any]], None] | None = None  # each video's final record (a progress bar)
    on_planned: Callable[[int], None] | None = None  # how many videos this run does, once known
    shard: Shard | None = None  # --shard I/N: the jobs given are this shard's; its own manifest and lock
    fail_on_empty: bool = False  # exit EXIT_EMPTY when a video done gave no cue
    # Outputs relative to DIR that belong to the batch's videos (planned now or recorded before):
    # never a side name for another's edited file. run_batch fills it.
    taken: frozenset[str] = frozenset()

    @property
    def manifest_path(self) -> Path:
        return self.out_dir / (self.shard.manifest if self.shard is not None else MANIFEST)

    def settings_key(self) -> str:
        return settings_key(self.settings, {
            "lang": self.lang, "format": self.fmt, "start": self.start, "end": self.end,
            "watchlist": [term.label for term in self.watchlist.terms] if self.watchlist else None,
            "only_flagged": self.only_flagged, "translate": self.translate, "bilingual": self.bilingual})

    @property
    def job(self) -> JobOptions:
        return JobOptions(lang=self.lang, fmt=self.fmt, start=self.start, end=self.end, watchlist=self.watchlist,
                          only_flagged=self.only_flagged, translate=self.translate, bilingual=self.bilingual)


@dataclass(frozen=True)
class Task:
    """A job to run now: why, and what the input looked like when planned (or why it is unreadable)."""

    job: Job
    reason: str
    identity: dict[str, Any]
    error: str | None = None
    previous: dict[str, Any] | None = None  # the video's last record before this run


def plan(jobs: Sequence[Job], manifest: Manifest, key: str, options: Options) -> list[Task]:
    """The jobs to run now, each with the reason."""
    tasks = []
    for job in jobs:
        identity, error = {}, None
        try:
            identity = input_identity(job.video, options.use_hash)
        except OSError as exc:  # missing, or unreadable with --hash: this video's failure, when it runs
            error = f"{job.video}: {(exc.strerror or str(exc)).lower()}"
        if not _is_utf8(job.video):
            error = (f"{job.video.encode('utf-8', 'surrogateescape')!r}: the name is not UTF-8 text, which the "
                     "manifest, the feeds and the outputs' metadata cannot hold; rename the file")
        previous = manifest.records.get(job.video)
        reason = reason_to_run(previous, identity, key, job.output, options.retry_failed, options.out_dir)
        if reason is not None:
            tasks.append(Task(job, reason, identity, error, previous))
    return tasks


def _is_utf8(name: str) -> bool:
    """False for a name with bytes that are not UTF-8 (Python keeps them as lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _sweep_temporaries(output: Path) -> None:
    """Temporary files a killed run left for this output (``write_text`` starts them with ``temporary_prefix``)."""
    for leftover in glob.glob(str(output.parent / f"{glob.escape(temporary_prefix(output.name))}*.part")):
        os.unlink(leftover)


class BatchRunner:
    """Runs tasks on ``options.jobs`` threads; each outcome goes to the manifest as it happens."""

    def __init__(self, tasks: Sequence[Task], options: Options, manifest: Manifest, key: str) -> None:
        self.tasks = tasks
        self.options = options
        self.manifest = manifest
        self.key = key
        self.engines = EnginePool(options.settings.ocr)
        # Videos at once run in child processes, one per thread, where each may have its own engine:
        # their Python work holds the GIL (16 threads of one process: 15.5x real time on a 16-core
        # machine where 16 processes read 29.5x; docs/gpu.md, eleventh round).
        self.in_children = options.jobs > 1 and one_per_process(options.settings.ocr)
        self._children = ChildPerThread()
        self.stop = threading.Event()
        self.results: dict[str, dict[str, Any]] = {}  # video → its final manifest record, this run
        self._print_lock = threading.Lock()
        self._queue: queue.Queue[Task] = queue.Queue()

    def run(self) -> None:
        for task in self.tasks:
            self._queue.put(task)
        # Workers say they are done through events, not join(): a join cut short by Ctrl-C can
        # leave the thread looking finished while it still runs.
        finished = [threading.Event() for _ in range(min(self.options.jobs, len(self.tasks)))]
        for i, event in enumerate(finished):
            threading.Thread(target=self._work, args=(event,), name=f"job-{i}", daemon=True).start()
        try:
            with _sigterm_as_interrupt():
                for event in finished:
                    while not event.wait(timeout=0.2):  # short waits: a signal is handled between them
                        pass
        except KeyboardInterrupt:
            self.stop.set()
            self._say("subextract batch: interrupted; stopping the running videos (again to quit at once)")
            for event in finished:
                event.wait()

    def _work(self, finished: threading.Event) -> None:
        try:
            while not self.stop.is_set():
                try:
                    task = self._queue.get_nowait()
                except queue.Empty:
                    return
                self.finished(self._run_guarded(task))
        finally:
            self._children.stop()
            finished.set()

    def _extractor(self, extraction: Callable[[], ExtractionResult] | None) -> dict[str, Any]:
        """How this thread's job extracts: given (Ray's split), in the thread's child process, or here."""
        if extraction is not None:
            return {"extraction": extraction()}
        if self.in_children:
            return {"extract_with": extract_in_child(self._children.get(), lambda: self._check_stop(0.0, None, 0))}
        return {"engine": self.engines.get(self.options.lang)}

    def _run_guarded(self, task: Task) -> dict[str, Any]:
        """``run_task``, and when it fails past its own handling (a defect: the manifest could not
        take a record) the video's failure, so that the thread goes on to the next video; an
        exception here had ended the thread with every video left "not started" and exit 0."""
        try:
            return self.run_task(task)
        except Exception as exc:  # noqa: BLE001 - one video's defect, recorded, never the batch's
            logger.exception("%s: failed", task.job.video)
            record = {"video": task.job.video, "status": "failed", "error": f"internal error: {type(exc).__name__}: "
                      f"{exc}", "bug": type(exc).__name__, "finished": _now()}
            try:
                self.manifest.append(record)
            except Exception:  # noqa: BLE001 - the manifest itself is what failed: the summary still says it
                logger.exception("%s: the manifest could not record the failure", task.job.video)
            return record

    def run_task(self, task: Task, extraction: Callable[[], ExtractionResult] | None = None) -> dict[str, Any]:
        """Run one task, its records in the manifest; its final record. ``extraction`` gives the
        video's cues extracted elsewhere (Ray's split level), else the job extracts them."""
        base = self.begin(task)
        outputs = _Outputs(task, self.options, lambda fields: self.manifest.append({**base, **fields}))
        fields = self._extract(task.job, outputs, extraction) if task.error is None \
            else {"status": "failed", "error": task.error}
        record = {**base, **fields, "finished": _now()}
        self.manifest.append(record)
        return record

    def begin(self, task: Task, **fields: Any) -> dict[str, Any]:
        """Record that the video is running (with ``fields``); the fields every record of it carries."""
        base = {"video": task.job.video, "input": task.identity, "settings": self.key}
        # What this tool wrote before stays known while the video runs: a killed run must not make
        # the next one take its own outputs for edited ones.
        kept = {name: task.previous[name] for name in ("digests", "replacing", "edited")
                if task.previous and task.previous.get(name)}
        self.manifest.append({**base, **kept, "status": "running", "reason": task.reason, "started": _now(),
                              **fields})
        return base

    def finished(self, record: dict[str, Any]) -> None:
        """A video's final record is in: counted, reported, passed on."""
        self.results[record["video"]] = record
        self._report(record)
        if self.options.on_finished is not None:
            self.options.on_finished(record)

    def _extract(self, job: Job, outputs: "_Outputs",
                 extraction: Callable[[], ExtractionResult] | None = None) -> dict[str, Any]:
        """Run one video; its outcome as manifest fields. Never raises: one video never stops the batch."""
        began = time.perf_counter()
        options = self.options.job
        try:
            done = run_job(job.video, self.options.settings, options, outputs_in_tree(job.output, options),
                           **self._extractor(extraction), translator=self.options.translator,
                           place=lambda path, text: str(outputs.place(Path(path), text)),
                           events=JobEvents(progress=self._check_stop,
                                            feeds=[self.options.feed] if self.options.feed else []))
            if self.stop.is_set() and not done.extraction.complete:
                raise _Cancelled  # Ctrl-C on a terminal stops FFmpeg too: the video only looks cut short
        except Exception as exc:  # noqa: BLE001 - any failure is this video's, recorded, never the batch's
            if self.options.feed is not None and self.options.feed.error is not None:
                self.stop.set()  # the feed is the batch's: stop, the videos left are redone next time
            if self.stop.is_set():
                return {"status": "interrupted"}
            fields = {"status": "failed", "error": str(exc), "wall_seconds": round(time.perf_counter() - began, 3)}
            if not isinstance(exc, SubextractError):  # not a failure explained to the user: a defect to report
                fields.update(error=f"{type(exc).__name__}: {exc}", bug=type(exc).__name__)
            return fields
        return self._fields(done, outputs)

    def _fields(self, done: JobResult, outputs: "_Outputs") -> dict[str, Any]:
        result, stats = done.extraction, done.extraction.stats
        fields: dict[str, Any] = {
            "status": "done" if result.complete else "partial", "outputs": list(outputs.written),
            "cues": len(done.cues), "duration": round(result.info.duration, 3),
            "video_seconds": round(stats.video_seconds, 3), "wall_seconds": round(stats.wall_seconds, 3),
            "realtime_factor": round(stats.realtime_factor, 2), "warnings": result.warnings,
            "languages_seen": stats.languages_seen}
        if result.damaged:  # decode errors: the cues there may be wrong (a warning says which)
            fields["damaged"] = [dataclasses.asdict(span) for span in result.damaged]
        if result.error is not None:  # the OCR engine failed part-way: the cues before that were written
            fields["error"] = result.error
        if done.translation_error is not None:  # the extracted cues are written, no translation
            fields.update(status="partial", error=done.translation_error)
        elif done.translation is not None:
            summary = done.translation.summary
            fields["translation"] = summary
            if summary["kept_original"]:  # written, but some cues are no translation
                fields["status"] = "partial"
                fields["warnings"] = [*fields["warnings"], f"{summary['kept_original']} cues left untranslated"]
        fields["digests"] = outputs.written
        if outputs.edited:
            fields["edited"] = outputs.edited
            fields["beside"] = outputs.beside
        if self.options.watchlist is not None:
            fields["flagged"] = done.flagged
        return fields

    def _check_stop(self, _done: float, _total: float | None, _segments: int) -> None:
        if self.stop.is_set():
            raise _Cancelled

    def _relative(self, path: Path) -> str:
        return path.relative_to(self.options.out_dir).as_posix()

    def _report(self, record: dict[str, Any]) -> None:
        if self.options.quiet or record["status"] == "interrupted":
            return
        if record["status"] in ("done", "partial"):
            cues = f"{record['cues']} cue{'' if record['cues'] == 1 else 's'}"
            detail = f"{cues}, {record['wall_seconds']:.1f} s ({record['realtime_factor']:.1f}x)"
            detail += f"; {_problem(record)}" if record["status"] == "partial" or record.get("warnings") else ""
            if record.get("edited"):
                detail += f"; {', '.join(record['edited'])} changed since written: kept, new result beside it"
        else:
            detail = _problem(record)
        self._say(one_line(f"subextract batch: [{len(self.results)}/{len(self.tasks)}] {record['status']:<8}"
                           f"{record['video']}  {detail}"))

    def _say(self, text: str) -> None:
        with self._print_lock:
            say(self.options, text)


def side_names(output: Path) -> Iterator[Path]:
    """Where a new result may go when ``output`` was changed since it was written: ``NAME.new.EXT``,
    then ``NAME.new-2.EXT``, ``NAME.new-3.EXT``…"""
    yield output.with_name(f"{output.stem}.new{output.suffix}")
    for n in itertools.count(2):
        yield output.with_name(f"{output.stem}.new-{n}{output.suffix}")


def taken_outputs(jobs: Sequence[Job], options: Options, manifest: Manifest) -> frozenset[str]:
    """Every output of the videos given (cues and translation) and every output the manifest
    records, relative to DIR: ``a.new.srt`` is the output of ``a.new.mp4``, never ``a.mp4``'s side name."""
    planned = set()
    for job in jobs:
        outputs = outputs_in_tree(job.output, options.job)
        planned.update(path for path in (outputs.cues, outputs.translation) if path is not None)
    relative = {Path(path).relative_to(options.out_dir).as_posix() for path in planned}
    return frozenset(relative | {name for record in manifest.records.values()
                                 for field_name in ("digests", "outputs") for name in record.get(field_name) or ()
                                 if inside_folder(name)})


class _Outputs:
    """One video's outputs: written where they belong, unless the file there changed since this
    tool wrote it (proofread, replaced): then it is kept and the result goes beside it as
    ``NAME.new.EXT`` (``--overwrite-edited`` replaces it). Each write is recorded in the manifest
    with its digest just before the rename, so a killed run still knows its own files."""

    def __init__(self, task: Task, options: Options, record: Callable[[dict[str, Any]], None]) -> None:
        self._video = task.job.video
        self._options = options
        self._known = recorded_digests(task.previous)
        self._record = record
        self._mine = {self._relative(task.job.output)} | set(self._known)
        self.written: dict[str, str] = {}  # output relative to DIR → SHA-256 of what was written
        self.edited: dict[str, str] = {}  # output kept because it changed → SHA-256 of its content now
        self.beside: dict[str, str] = {}  # output kept → where the new result went

    def place(self, output: Path, text: str) -> Path:
        relative = self._relative(output)
        current = file_digest(output)
        target = output
        if current is not None and not self._options.overwrite_edited and current not in self._known.get(relative, ()):
            self.edited[relative] = current
            target = self._side_name(output)
            self.beside[relative] = self._relative(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        check_replaceable(str(target), [self._video])
        _sweep_temporaries(target)
        data = text.encode("utf-8")
        self.written[self._relative(target)] = hashlib.sha256(data).hexdigest()
        previous = file_digest(target)
        self._record({"status": "writing", "digests": dict(self.written), "edited": dict(self.edited),
                      "replacing": {self._relative(target): previous} if previous else {}})
        write_text(str(target), text)
        return target

    def _side_name(self, output: Path) -> Path:
        """The first side name that is no other video's output and holds no file but one this
        video wrote there and nobody changed since (the previous run's new result, replaced)."""
        for candidate in side_names(output):
            relative = self._relative(candidate)
            if relative in self._options.taken and relative not in self._mine:
                continue
            current = file_digest(candidate)
            if (current is None and not candidate.exists()) or current in self._known.get(relative, ()):
                return candidate
        raise AssertionError("unreachable: side_names never ends")

    def _relative(self, path: Path) -> str:
        return path.relative_to(self._options.out_dir).as_posix()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a service manager, ``timeout``) stops the batch as cleanly as Ctrl-C."""
    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# ----------------------------------------------------------------------------------------------
# Summary
# ----------------------------------------------------------------------------------------------

STATUS_ORDER = ("done", "partial", "failed", "interrupted", "not started", "skipped")


def statuses(jobs: Sequence[Job], tasks: Sequence[Task], results: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each video's status in this run: its outcome, "not started" (stopped first) or "skipped" (done before)."""
    planned = {task.job.video for task in tasks}
    return {job.video: results[job.video]["status"] if job.video in results
            else "not started" if job.video in planned else "skipped" for job in jobs}


def summary_table(jobs: Sequence[Job], tasks: Sequence[Task], results: dict[str, dict[str, Any]],
                  wall: float) -> str:
    status_of = statuses(jobs, tasks, results)
    rows = [f"  {'status':<12}{'videos':>7}{'video time':>12}"]
    for status in STATUS_ORDER:
        videos = [video for video, s in status_of.items() if s == status]
        if videos:
            seconds = sum(results[video].get("video_seconds", 0.0) for video in videos if video in results)
            rows.append(f"  {status:<12}{len(videos):>7}{_duration(seconds) if seconds else '':>12}".rstrip())
    processed = [results[video] for video, s in status_of.items() if s in ("done", "partial")]
    video_seconds = sum(record["video_seconds"] for record in processed)
    speed = (f"{video_seconds / wall:.1f}x real time, {len(processed) / wall * 3600:.0f} videos/hour"
             if processed and wall > 0 else "no video processed")
    rows.append(f"  {video_seconds / 3600:.3f} h of video in {_duration(wall)} wall: {speed}")
    failures = [f"  {video}: {_problem(results[video])}" for video, s in status_of.items() if s in FAILED]
    edited = [f"  {name} (new result: {(record.get('beside') or {}).get(name, '?')})"
              for record in results.values() for name in record.get("edited") or {}]
    return "\n".join(["subextract batch: summary", *rows, *(["failed or partial:", *failures] if failures else []),
                      *(["changed since written, kept (--overwrite-edited replaces them):", *edited] if edited else [])])


def _problem(record: dict[str, Any]) -> str:
    """Why a video failed or is partial, without its name in front (shown beside it already)."""
    message = record.get("error") or next(iter(record.get("warnings") or []), record["status"])
    return message.removeprefix(f"{record['video']}: ")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def exit_code(results: dict[str, dict[str, Any]], interrupted: bool, fail_on_empty: bool = False) -> int:
    if interrupted:
        return EXIT_INTERRUPTED
    if any(record["status"] in FAILED for record in results.values()):
        return EXIT_FAILED
    empty = fail_on_empty and any(record.get("cues") == 0 for record in results.values())
    return EXIT_EMPTY if empty else EXIT_OK


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------

def say(options: Options, text: str) -> None:
    if options.say is not None:
        options.say(text)
    else:
        logger.info("%s", text)


# (tasks, options, manifest, settings key) → what runs them: BatchRunner's threads, or Ray (subextract.scale)
RunnerFactory = Callable[[Sequence[Task], Options, Manifest, str], BatchRunner]


def run_batch(jobs: Sequence[Job], options: Options, runner_factory: RunnerFactory = BatchRunner) -> int:
    began = time.perf_counter()
    key = options.settings_key()
    with exclusive(options.out_dir, options.shard.lock if options.shard is not None else ".batch.lock"):
        manifest = Manifest(options.manifest_path)
        skipped = manifest.load()
        options.taken = taken_outputs(jobs, options, manifest)
        if skipped:
            say(options, f"subextract batch: warning: {manifest.path}: line{'s' if len(skipped) > 1 else ''} "
                         f"{', '.join(map(str, skipped[:10]))} not readable (cut short or damaged), skipped; the "
                         "videos they were about are redone")
        tasks = plan(jobs, manifest, key, options)
        if not options.quiet:
            say(options, f"subextract batch: {len(jobs)} video{'' if len(jobs) == 1 else 's'}, {len(tasks)} to do, "
                         f"{len(jobs) - len(tasks)} skipped "
                         f"({'not failed before' if options.retry_failed else 'done before'})")
        if options.on_planned is not None:
            options.on_planned(len(tasks))
        runner = runner_factory(tasks, options, manifest, key)
        try:
            runner.run()
        finally:
            manifest.compact()
            if options.feed is not None:
                options.feed.close()
    if options.feed is not None and options.feed.error is not None:
        raise SubextractError(f"--feed {options.feed.error}; stopped (the videos done are kept, a re-run does "
                              "the rest)")
    if not options.quiet:
        say(options, summary_table(jobs, tasks, runner.results, time.perf_counter() - began))
    return exit_code(runner.results, runner.stop.is_set(), options.fail_on_empty)
