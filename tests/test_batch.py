"""subextract batch: input discovery, the manifest and resume rules, and the real CLI on the
bundled samples with broken files mixed in, killed (SIGKILL) and interrupted (SIGINT) part-way
and run again: the outputs must match an uninterrupted run byte for byte."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pysrt
import pytest

from conftest import run_ffmpeg
from subextract import batch
from subextract.batch import Manifest, discover, exclusive, input_identity, reason_to_run
from subextract.config import load_settings
from subextract.errors import SubextractError

SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"
END = "6"  # seconds of each video: enough for a cue or two, short enough for the test budget
GOOD = {"zh_bottom.mp4": "zh_bottom", "course/en_two_line.mp4": "en_two_line",
        "course/misnamed.mkv": "bilingual_top"}  # an MP4 named .mkv: FFmpeg reads the content
OUTPUTS = {"zh_bottom.mp4": "zh_bottom.srt", "course/en_two_line.mp4": "course/en_two_line.srt",
           "course/misnamed.mkv": "course/misnamed.srt"}


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------

def touch(path: Path, data: bytes = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_folders_are_searched_and_mirrored(tmp_path):
    for name in ("a.mp4", "b/c.MKV", "b/d/e.webm", "b/notes.txt", "b/.hidden.mp4", ".cache/f.mp4"):
        touch(tmp_path / "in" / name)
    jobs = discover([str(tmp_path / "in")], tmp_path / "out", "zh", "srt")
    assert [(Path(j.video).relative_to(tmp_path / "in").as_posix(), j.output.relative_to(tmp_path / "out").as_posix())
            for j in jobs] == [("a.mp4", "a.zh.srt"), ("b/c.MKV", "b/c.zh.srt"), ("b/d/e.webm", "b/d/e.zh.srt")]


def test_list_files_urls_and_duplicates(tmp_path):
    video = touch(tmp_path / "clips" / "x.mp4")
    listing = tmp_path / "clips" / "todo.txt"
    listing.write_text("# today\nx.mp4\n\nhttps://cdn.example.com/live/main.m3u8\nmissing.mp4\n"
                       "rtmp://127.0.0.1:1935/app/key\n")
    jobs = discover([str(listing), str(video)], tmp_path / "out", "all", "jsonl")
    assert [(j.video, j.output.name) for j in jobs] == [
        (str(video), "x.jsonl"),  # named twice: done once
        ("https://cdn.example.com/live/main.m3u8", "cdn_example_com_live_main.jsonl"),
        (str(tmp_path / "clips" / "missing.mp4"), "missing.jsonl"),  # fails when its turn comes
        ("rtmp://127.0.0.1:1935/app/key", "127_0_0_1_1935_app_key.jsonl")]


def outputs(jobs, out: Path) -> list[tuple[str, str]]:
    return [(Path(j.video).name, j.output.relative_to(out).as_posix()) for j in jobs]


def test_clashing_names_are_told_apart_deterministically(tmp_path):
    out = tmp_path / "out"
    a, b = touch(tmp_path / "a" / "x.mp4"), touch(tmp_path / "b" / "x.mp4")
    touch(tmp_path / "a" / "y.mp4")
    # two files, or their two folders, with one name: one subfolder per input
    assert outputs(discover([str(a), str(b)], out, "all", "srt"), out) == [("x.mp4", "a/x.srt"), ("x.mp4", "b/x.srt")]
    assert outputs(discover([str(tmp_path / "a"), str(tmp_path / "b")], out, "zh", "srt"), out) == [
        ("x.mp4", "a/x.zh.srt"), ("y.mp4", "a/y.zh.srt"), ("x.mp4", "b/x.zh.srt")]
    # one container beside another: the extension stays in the name, for both
    touch(tmp_path / "a" / "x.mkv")
    assert outputs(discover([str(tmp_path / "a")], out, "all", "srt"), out) == [
        ("x.mkv", "x.mkv.srt"), ("x.mp4", "x.mp4.srt"), ("y.mp4", "y.srt")]
    # folders with the same name: numbered
    c = touch(tmp_path / "c" / "a" / "x.mp4")
    assert outputs(discover([str(a), str(c)], out, "all", "srt"), out) == [("x.mp4", "a/x.srt"), ("x.mp4", "a_2/x.srt")]
    # no clash: names as before
    assert outputs(discover([str(a)], out, "all", "srt"), out) == [("x.mp4", "x.srt")]


# --------------------------------------------------------------------------------------------
# Manifest and resume rules
# --------------------------------------------------------------------------------------------

def test_reasons_to_run(tmp_path):
    output = touch(tmp_path / "x.srt")
    same = {"size": 1, "mtime_ns": 5}
    done = {"status": "done", "input": same, "settings": "k"}
    assert reason_to_run(None, same, "k", output, retry_failed=False) == "new"
    assert reason_to_run(done, same, "k", output, retry_failed=False) is None
    assert reason_to_run(done, {"size": 2, "mtime_ns": 5}, "k", output, retry_failed=False) == "input changed"
    assert reason_to_run(done, same, "other", output, retry_failed=False) == "settings changed"
    assert reason_to_run(done, same, "k", tmp_path / "gone.srt", retry_failed=False) == "output missing"
    for status in ("failed", "partial", "interrupted", "running"):
        assert reason_to_run({**done, "status": status}, same, "k", output, retry_failed=False) == f"{status} before"
    # --retry-failed: failures only, nothing new, changed or interrupted
    assert reason_to_run({**done, "status": "failed"}, same, "k", output, retry_failed=True) == "failed before"
    assert reason_to_run({**done, "status": "interrupted"}, same, "k", output, retry_failed=True) is None
    assert reason_to_run(None, same, "k", output, retry_failed=True) is None


def test_input_identity_by_stat_or_content(tmp_path):
    video = touch(tmp_path / "x.mp4", b"frames")
    by_stat, by_hash = input_identity(str(video), False), input_identity(str(video), True)
    os.utime(video, ns=(1, 1))
    assert input_identity(str(video), False) != by_stat
    assert input_identity(str(video), True) == by_hash


def test_manifest_survives_a_cut_last_line_and_compacts(tmp_path):
    path = tmp_path / "manifest.jsonl"
    path.write_text('{"video": "a.mp4", "status": "running"}\n{"video": "a.mp4", "status": "done"}\n'
                    '{"video": "b.mp4", "status": "running"}\n{"video": "b.mp4", "sta')
    manifest = Manifest(path)
    manifest.load()
    assert {v: r["status"] for v, r in manifest.records.items()} == {"a.mp4": "done", "b.mp4": "running"}
    manifest.append({"video": "b.mp4", "status": "failed", "error": "file is empty"})
    manifest.compact()
    assert [json.loads(line)["status"] for line in path.read_text().splitlines()] == ["done", "failed"]


def test_one_batch_per_output_folder(tmp_path):
    with exclusive(tmp_path):
        with pytest.raises(SubextractError, match="another subextract batch"):
            with exclusive(tmp_path):
                pass


def test_engine_sharing(monkeypatch):
    """rapidocr: one engine per job thread (RapidOCR calls are not thread-safe); vllm: one engine
    for all jobs, one batch at a time; openai: one engine used concurrently."""
    made = []

    def create_engine(settings):
        made.append(settings.engine)
        return type("Engine", (), {"name": settings.engine, "read_batch": lambda self, images: ["r"] * len(images)})()

    monkeypatch.setattr("subextract.stages.ocr.create_engine", create_engine)
    ocr = load_settings().ocr
    for engine, per_thread in (("rapidocr", True), ("vllm", False), ("openai", False)):
        pool = batch.EnginePool(dataclasses.replace(ocr, engine=engine))
        got = []
        threads = [threading.Thread(target=lambda: got.append(pool.get())) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len({id(e) for e in got}) == (3 if per_thread else 1), engine
        assert got[0].read_batch([1, 2]) == ["r", "r"]
    assert made == ["rapidocr"] * 3 + ["vllm", "openai"]


# --------------------------------------------------------------------------------------------
# The real CLI on the samples, with broken files mixed in
# --------------------------------------------------------------------------------------------

def _privilege_drop() -> list[str] | None:
    """Root reads any file: run the batch bound by file modes so an unreadable file is unreadable. None
    when that is not possible: the no-permission case is then not checked."""
    if os.geteuid() != 0:
        return []
    # Still uid 0 (so it may run an interpreter under /root, as the virtualenv's is), but without the
    # capabilities that let root ignore file modes.
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if shutil.which("setpriv") else None


def batch_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "subextract", "batch", *args, "--end", END]


def run_batch(*args: str, prefix: list[str] | None = None, home: Path | None = None) -> subprocess.CompletedProcess:
    """The batch CLI; ``prefix`` runs it as another user, whose ``home`` must be writable."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **({"HOME": str(home)} if home else {})}
    return subprocess.run([*(prefix or []), *batch_command(*args)], capture_output=True, text=True, timeout=600,
                          env=env)


def good_tree(root: Path) -> Path:
    for name, sample in GOOD.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLES / f"{sample}.mp4", root / name)
    return root


@pytest.fixture(scope="module")
def broken_run() -> Iterator[tuple[Path, subprocess.CompletedProcess, list[str] | None]]:
    """Good videos and broken files in one tree, run once: (folder, result, command prefix to run
    unprivileged, None when the unreadable file cannot be checked)."""
    base = Path(tempfile.mkdtemp(prefix="subextract-batch-"))
    os.chmod(base, 0o777)  # the unprivileged run writes its output folder (and HOME) here
    prefix = _privilege_drop()
    videos = good_tree(base / "videos")
    broken = videos / "broken"
    broken.mkdir()
    (broken / "zero.mp4").write_bytes(b"")
    (broken / "notes.mp4").write_text("a shopping list, not a video\n")
    run_ffmpeg("-f", "lavfi", "-i", "anullsrc=r=44100:cl=stereo", "-t", "1", "-c:a", "aac", str(broken / "audio_only.mp4"))
    run_ffmpeg("-i", str(SAMPLES / "zh_bottom.mp4"), "-t", "3", "-c", "copy", str(broken / "moov_at_end.mp4"))
    cut = (broken / "moov_at_end.mp4").read_bytes()
    (broken / "no_index.mp4").write_bytes(cut[: len(cut) // 2])  # the index (at the end) is gone
    (broken / "moov_at_end.mp4").unlink()
    whole = (SAMPLES / "en_two_line.mp4").read_bytes()  # faststart: decodable up to the cut
    (broken / "cut_short.mp4").write_bytes(whole[: len(whole) * 2 // 10])
    damaged = bytearray(whole)  # 8 % of the bytes overwritten at 12 %: decode errors at ~2.3-4.2 s
    begin, length = len(whole) * 12 // 100, len(whole) * 8 // 100
    damaged[begin:begin + length] = random.Random(5).randbytes(length)
    (broken / "damaged.mp4").write_bytes(bytes(damaged))
    shutil.copy(SAMPLES / "zh_bottom.mp4", broken / "locked.mp4")
    for path in videos.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    os.chmod(broken / "locked.mp4", 0)
    result = run_batch(str(videos), "--out", str(base / "out"), "--jobs", "2", prefix=prefix, home=base)
    yield base, result, prefix
    shutil.rmtree(base)


def manifest_of(out: Path) -> dict[str, dict]:
    return {Path(r["video"]).name: r for r in map(json.loads, (out / "manifest.jsonl").read_text().splitlines())}


def test_broken_files_do_not_stop_the_batch(broken_run):
    base, result, prefix = broken_run
    out = base / "out"
    assert result.returncode == 1, result.stderr  # some failed
    assert "Traceback" not in result.stderr
    records = manifest_of(out)
    assert len(records) == 10  # every video, good or bad, has its line
    for name, output in OUTPUTS.items():
        record = records[Path(name).name]
        assert record["status"] == "done" and record["outputs"] == [output], record
        first = pysrt.open(str(out / output))[0]
        assert first.text == pysrt.open(str(SAMPLES / f"{GOOD[name]}.srt"))[0].text
    expected_errors = {"zero.mp4": "file is empty", "notes.mp4": "not a video file",
                       "audio_only.mp4": "no video stream", "no_index.mp4": "not a video file"}
    if prefix is not None:
        expected_errors["locked.mp4"] = "permission denied"
    for name, fragment in expected_errors.items():
        assert records[name]["status"] == "failed" and fragment in records[name]["error"], records[name]
    assert records["cut_short.mp4"]["status"] == "partial"  # cues before the damage written, with a warning
    assert "truncated" in records["cut_short.mp4"]["warnings"][0]
    assert (out / "broken" / "cut_short.srt").is_file()
    damaged = records["damaged.mp4"]  # FFmpeg concealed its errors and exited 0: still partial
    assert damaged["status"] == "partial" and "damaged at" in damaged["warnings"][0], damaged
    assert damaged["damaged"] and damaged["damaged"][0]["errors"] > 0
    assert not list(out.rglob("*.part"))
    summary = result.stderr[result.stderr.index("subextract batch: summary"):]
    assert "failed" in summary and "videos/hour" in summary and "real time" in summary


def test_a_rerun_skips_what_is_done_and_redoes_failures(broken_run):
    base, _, prefix = broken_run
    out, videos, feed = base / "out", base / "videos", base / "feed.jsonl"
    outputs_before = {name: (out / path).stat().st_mtime_ns for name, path in OUTPUTS.items()}
    failed = sum(1 for r in manifest_of(out).values() if r["status"] in ("failed", "partial"))
    os.utime(videos / "zh_bottom.mp4")  # a changed input is redone
    result = run_batch(str(videos), "--out", str(out), "--jobs", "2", "--feed", str(feed), prefix=prefix, home=base)
    assert result.returncode == 1
    assert f"10 videos, {failed + 1} to do, {9 - failed} skipped" in result.stderr
    assert (out / "zh_bottom.srt").stat().st_mtime_ns != outputs_before["zh_bottom.mp4"]
    assert all((out / OUTPUTS[name]).stat().st_mtime_ns == outputs_before[name]
               for name in OUTPUTS if name != "zh_bottom.mp4")
    # the feed carries the cues of the videos this run processed, each line naming its video
    streamed = [json.loads(line) for line in feed.read_text().splitlines()]
    assert {Path(r["video"]).name for r in streamed} <= {"zh_bottom.mp4", "cut_short.mp4", "damaged.mp4"}
    first = next(r for r in streamed if r["video"].endswith("zh_bottom.mp4"))
    assert first["text"] == pysrt.open(str(SAMPLES / "zh_bottom.srt"))[0].text

    # --retry-failed: the failures only (here with another output format)
    retry = run_batch(str(videos), "--out", str(out), "--retry-failed", "--quiet", "--format", "jsonl",
                      prefix=prefix, home=base)
    assert retry.returncode == 1 and retry.stderr == ""
    records = manifest_of(out)
    assert len(records) == 10
    assert records["cut_short.mp4"]["outputs"] == ["broken/cut_short.jsonl"]
    assert records["damaged.mp4"]["outputs"] == ["broken/damaged.jsonl"]  # partial: redone too
    assert records["zh_bottom.mp4"]["outputs"] == ["zh_bottom.srt"]  # done: not redone in the new format
    for line in (out / "broken" / "cut_short.jsonl").read_text().splitlines():
        assert json.loads(line)["video"].endswith("cut_short.mp4")


def wait_for_done(out: Path, process: subprocess.Popen, timeout: float = 300, status: str = "done") -> None:
    """Until the manifest records a finished video (or one of ``status``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        manifest = out / "manifest.jsonl"
        if manifest.exists() and f'"status": "{status}"' in manifest.read_text():
            return
        assert process.poll() is None, process.stderr.read()
        time.sleep(0.1)
    raise AssertionError("no video finished in time")


def assert_same_outputs(out: Path, reference: Path) -> None:
    for output in OUTPUTS.values():
        assert (out / output).read_bytes() == (reference / output).read_bytes(), output


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_killed_or_interrupted_then_rerun_gives_the_same_outputs(sig, broken_run, tmp_path):
    reference = broken_run[0] / "out"
    videos, out = good_tree(tmp_path / "videos"), tmp_path / "out"
    # One job: after the first video is done the next takes seconds, so the signal always lands
    # mid-run (with two, both could finish in the poll's 0.1 s on a loaded machine).
    # SIGINT back to its default in the child: a test run started in the background (`cmd &`)
    # inherits it ignored, and Python then never turns Ctrl-C into KeyboardInterrupt.
    process = subprocess.Popen(batch_command(str(videos), "--out", str(out), "--jobs", "1"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_for_done(out, process)
    if sig == signal.SIGINT:
        os.killpg(process.pid, sig)  # as Ctrl-C on a terminal: to the whole process group
    else:
        process.send_signal(sig)
    code = process.wait(timeout=120)
    stderr = process.stderr.read()
    records = manifest_of(out)
    finished = [name for name, r in records.items() if r["status"] == "done"]
    assert finished
    if sig == signal.SIGINT:
        assert code == 130, stderr
        assert "interrupted" in stderr and "Traceback" not in stderr
        # compacted at the stop: one line per started video, the unfinished ones marked
        assert len((out / "manifest.jsonl").read_text().splitlines()) == len(records)
        assert {r["status"] for r in records.values()} <= {"done", "interrupted"}
    else:
        assert code == -signal.SIGKILL
    # nothing half-written: a video's output exists exactly when it finished
    assert {p.relative_to(out).as_posix() for p in out.rglob("*.srt")} == \
        {OUTPUTS[next(n for n in OUTPUTS if Path(n).name == name)] for name in finished}
    assert not list(out.rglob("*.part"))

    rerun = run_batch(str(videos), "--out", str(out), "--jobs", "2")
    assert rerun.returncode == 0, rerun.stderr
    assert f"3 videos, {3 - len(finished)} to do, {len(finished)} skipped" in rerun.stderr
    assert {r["status"] for r in manifest_of(out).values()} == {"done"}
    assert_same_outputs(out, reference)


def test_ctrl_c_stops_videos_running_in_child_processes_and_leaves_no_process(tmp_path):
    """--jobs 2 runs each video in a child process of its thread; Ctrl-C reaches them all, the
    batch records what was cut short as interrupted, and nothing of the process group lives on."""
    videos, out = good_tree(tmp_path / "videos"), tmp_path / "out"
    process = subprocess.Popen(batch_command(str(videos), "--out", str(out), "--jobs", "2"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_for_done(out, process, status="running")
    time.sleep(1.0)  # the children started and decoding (were Ctrl-C theirs, each said KeyboardInterrupt)
    os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C on a terminal: to the whole process group
    code = process.wait(timeout=120)
    stderr = process.stderr.read()
    assert code == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert {r["status"] for r in manifest_of(out).values()} <= {"done", "interrupted"}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("a process of the batch's group outlived it")


# --------------------------------------------------------------------------------------------
# Outputs edited since they were written are never overwritten
# --------------------------------------------------------------------------------------------

def test_an_edited_output_is_kept_and_the_new_result_goes_beside_it(tmp_path):
    videos, out = tmp_path / "videos", tmp_path / "out"
    videos.mkdir()
    shutil.copy(SAMPLES / "zh_bottom.mp4", videos / "v1.mp4")
    common = (str(videos), "--out", str(out), "--end", "3", "--region", "bottom")
    first = run_batch(*common)
    assert first.returncode == 0, first.stderr
    srt = out / "v1.srt"
    written = srt.read_text(encoding="utf-8")
    record = manifest_of(out)["v1.mp4"]
    assert record["digests"] == {"v1.srt": hashlib.sha256(written.encode()).hexdigest()}
    with open(srt, "a", encoding="utf-8") as handle:
        handle.write("EDIT\n")  # proofread by hand

    # the same command: the output changed, so the video is redone, beside it
    again = run_batch(*common)
    assert again.returncode == 0, again.stderr
    assert srt.read_text(encoding="utf-8") == written + "EDIT\n"
    assert (out / "v1.new.srt").read_text(encoding="utf-8") == written
    record = manifest_of(out)["v1.mp4"]
    assert record["outputs"] == ["v1.new.srt"] and list(record["edited"]) == ["v1.srt"]
    assert "changed since written, kept" in again.stderr and "v1.new.srt" in again.stderr

    # nothing changed since: skipped; other settings: still not overwritten
    assert "0 to do" in run_batch(*common).stderr
    other = run_batch(*common, "--config", "fast")
    assert other.returncode == 0 and srt.read_text(encoding="utf-8") == written + "EDIT\n"

    # unless asked to
    forced = run_batch(*common, "--overwrite-edited")
    assert forced.returncode == 0 and srt.read_text(encoding="utf-8") == written


def test_shared_local_engine_loads_beside_the_jobs(monkeypatch):
    """The one in-process engine of a batch (vllm, transformers) is set up on a thread of its own:
    a job gets it at once and goes on probing and decoding; only its first read waits for it."""
    import subextract.stages.ocr as ocr

    loading = threading.Event()
    loaded = threading.Event()

    class Loaded:
        name = "vllm"

        def read_batch(self, images, line_boxes=None):
            return [f"read {len(images)}"]

    def slow_engine(settings):
        loading.set()
        assert loaded.wait(10)
        return Loaded()

    monkeypatch.setattr(ocr, "create_engine", slow_engine)
    settings = dataclasses.replace(load_settings().ocr, engine="vllm", model="m")
    pool = batch.EnginePool(settings)
    began = time.monotonic()
    engine = pool.get()
    assert time.monotonic() - began < 1 and loading.wait(5)  # handed over while still loading
    assert pool.get() is engine                               # one engine for every job
    result: list = []
    reader = threading.Thread(target=lambda: result.append(engine.read_batch(["crop"])))
    reader.start()
    reader.join(0.3)
    assert reader.is_alive()                                  # the read waits for the engine ...
    loaded.set()
    reader.join(5)
    assert result == [["read 1"]]                             # ... and then reads
