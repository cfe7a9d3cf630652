"""Seeded fuzzing: byte-level mutations (overwrite, zero, cut, duplicate, truncate) of small copies
of the samples in MP4, Matroska and MPEG-TS. Every run must end as done (exit 0), partial (exit 3:
a warning says where) or failed (exit 2: one line), never with a traceback. A run that claims to
be whole is checked against the undamaged copy's cues (only the cue a shorter file cuts off may
differ) and against FFmpeg itself: it must not have reported any error for that file. A
difference is allowed only where the damage is invisible to FFmpeg (bytes inside a slice that
still decode without complaint: the codecs carry no checksum), and such cases must stay rare.
The mutations run through one batch (one OCR engine, a minute on two cores); a sample of them
also through the single-video command, whose exit codes must agree."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_ffmpeg
from test_batch import manifest_of, run_batch

SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"
SEED = 20261201
MUTATIONS = 200
FRAME = 0.04
KINDS = ("overwrite", "zero", "cut", "duplicate", "truncate")
EXIT_OF_STATUS = {"done": 0, "partial": 3, "failed": 2}


def mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(KINDS)
    size = 1 + int(len(data) * rng.choice([0.0001, 0.001, 0.01, 0.05, 0.2]) * rng.random())
    at = rng.randrange(len(data))
    mutated = bytearray(data)
    if kind == "overwrite":
        mutated[at:at + size] = rng.randbytes(len(mutated[at:at + size]))
    elif kind == "zero":
        mutated[at:at + size] = bytes(len(mutated[at:at + size]))
    elif kind == "cut":
        del mutated[at:at + size]
    elif kind == "duplicate":
        mutated[at:at] = data[rng.randrange(len(data)):][:size]
    else:
        del mutated[at:]
    return kind, bytes(mutated)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    """3 s, 240p copies of two samples (keyframe every second) in three containers, and the mutations."""
    folder = tmp_path_factory.mktemp("fuzz")
    originals = folder / "originals"
    originals.mkdir()
    sources = {}
    for name in ("en_two_line", "zh_bottom"):
        mp4 = originals / f"{name}.mp4"
        run_ffmpeg("-ss", "1.5", "-i", str(SAMPLES / f"{name}.mp4"), "-t", "3", "-vf", "scale=-2:240", "-an",
                   "-c:v", "libx264", "-preset", "veryfast", "-crf", "28", "-g", "25", "-movflags", "+faststart",
                   str(mp4))
        sources[f"{name}_mp4"] = mp4
    run_ffmpeg("-i", str(originals / "en_two_line.mp4"), "-c", "copy", str(originals / "en_two_line.mkv"))
    run_ffmpeg("-i", str(originals / "zh_bottom.mp4"), "-c", "copy", "-f", "mpegts", str(originals / "zh_bottom.ts"))
    sources["en_two_line_mkv"] = originals / "en_two_line.mkv"
    sources["zh_bottom_ts"] = originals / "zh_bottom.ts"
    mutants = folder / "mutants"
    mutants.mkdir()
    rng = random.Random(SEED)
    names = sorted(sources)
    for i in range(MUTATIONS):
        source = sources[names[i % len(names)]]
        kind, data = mutate(source.read_bytes(), rng)
        (mutants / f"{i:03d}_{kind}_{names[i % len(names)]}{source.suffix}").write_bytes(data)
    return folder, sources


def cues_of(path: Path) -> tuple[float, list[tuple[float, float, str]]]:
    document = json.loads(path.read_text(encoding="utf-8"))
    return document["duration"], [(c["start"], c["end"], c["text"]) for c in document["cues"]]


def ffmpeg_errors(path: Path) -> str:
    """What FFmpeg itself says at its error level while decoding the whole file, checked apart from
    subextract's own reading of its log."""
    from subextract.stages.probe import ffmpeg_exe

    run = subprocess.run([ffmpeg_exe(), "-hide_banner", "-nostdin", "-v", "error", "-i", str(path), "-f", "null", "-"],
                         capture_output=True, text=True, errors="replace", timeout=60)
    return run.stderr.strip()


def same_cue(a, b) -> bool:
    return a[2] == b[2] and abs(a[0] - b[0]) <= FRAME + 1e-3 and abs(a[1] - b[1]) <= FRAME + 1e-3


def whole_result_is_right(got: list, clean: list, duration: float) -> bool:
    """The undamaged copy's cues, as far as the (maybe shorter) file reaches: a cue running past its
    end is cut there and read from fewer frames, so only the last one may differ."""
    kept = [cue for cue in clean if cue[1] <= duration + FRAME]
    if len(got) < len(kept) or not all(same_cue(g, c) for g, c in zip(got, kept)):
        return False
    rest = got[len(kept):]
    return len(rest) <= 1 and all(cue[1] >= duration - 2 * FRAME for cue in rest)


@pytest.mark.slow
def test_mutated_videos_end_cleanly_and_a_whole_result_is_right(corpus):
    folder, sources = corpus
    clean_out, out = folder / "clean_out", folder / "out"
    assert run_batch(str(folder / "originals"), "--out", str(clean_out), "--region", "bottom", "--format", "json",
                     "-q").returncode == 0
    # The same stems in two containers: the batch keeps the extension in their output names.
    clean = {key: cues_of(clean_out / f"{path.name}.json")[1] for key, path in sources.items()}
    result = run_batch(str(folder / "mutants"), "--out", str(out), "--region", "bottom", "--format", "json",
                       "--jobs", "2", "-q")
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    records = manifest_of(out)
    assert len(records) == MUTATIONS
    silently_wrong = []
    for name, record in records.items():
        assert record["status"] in EXIT_OF_STATUS, record
        assert "bug" not in record, record  # an exception no message explains: a traceback in a single run
        if record["status"] == "failed":
            assert record["error"] and "\n" not in record["error"]
        if record["status"] == "partial":
            assert record.get("warnings") or record.get("error"), record
        if record["status"] == "done":
            key = name.split("_", 2)[2].rsplit(".", 1)[0]
            duration, got = cues_of(out / record["outputs"][0])
            if not whole_result_is_right(got, clean[key], duration):
                silently_wrong.append((name, got, clean[key]))
    # Whatever FFmpeg can tell is damaged was flagged: for every "done", it reports no error at all.
    for name, record in records.items():
        if record["status"] == "done":
            assert ffmpeg_errors(folder / "mutants" / name) == "", name
    # What differs then is damage no decoder sees; it must stay rare.
    assert len(silently_wrong) <= MUTATIONS // 40, silently_wrong
    statuses = {status: sum(1 for r in records.values() if r["status"] == status) for status in EXIT_OF_STATUS}
    print(f"fuzz: {MUTATIONS} mutations: {statuses}; whole but different (damage FFmpeg does not see): "
          f"{len(silently_wrong)} {[name for name, _, _ in silently_wrong]}")

    # The single-video command on a sample of them: the same outcome as its exit code, one line on error.
    for name in sorted(records)[::17]:
        run = subprocess.run([sys.executable, "-m", "subextract", str(folder / "mutants" / name), "-o", "-",
                              "--format", "json", "--region", "bottom", "-q"], capture_output=True, text=True,
                             timeout=120)
        assert "Traceback" not in run.stderr
        assert run.returncode == EXIT_OF_STATUS[records[name]["status"]], (name, run.returncode, run.stderr)
        if run.returncode == 2:
            assert len(run.stderr.splitlines()) == 1 and run.stdout == ""
