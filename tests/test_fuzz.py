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
from urllib.parse import quote

import pytest

from conftest import run_ffmpeg
from test_batch import manifest_of, run_batch

SAMPLES = Path(__file__).resolve().parent.parent / "sample_videos"
SEED = 20261201
MUTATIONS = 100  # seeded: each kind of damage about twenty times
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
    # bitexact: Matroska's segment and track UIDs are random otherwise, and the mutants with them
    run_ffmpeg("-i", str(originals / "en_two_line.mp4"), "-c", "copy", "-fflags", "+bitexact",
               str(originals / "en_two_line.mkv"))
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


# -- the service --------------------------------------------------------------------------------

SERVICE_REQUESTS = 400  # the fixed budget: ~30 s on two shared cores


def _random_text(rng: random.Random, size: int = 24) -> str:
    """Text with the characters that break parsers and logs: controls, quotes, a lone surrogate."""
    alphabet = "abc019:.-_ /\\%\"'<>{}[]\x00\n\r\t\x1b\u202e\u00e9\u4e2d\ud800"
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, size)))
    return text.encode("utf-8", "replace").decode("utf-8", "replace") if rng.random() < 0.5 else text


def _random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.choice([0, -1, 1, 2**64, -(2**70), 10**30])
    if kind == 1:
        return rng.choice([0.5, -0.0, 1e308, 1e-308, 3.6e5, 99999.0])
    if kind == 2:
        return _random_text(rng)
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return rng.choice(["1e308:0", "inf", "-1", "1:2:3:4", "00:00:01.5", "nan", "9" * 40])
    if kind == 5:
        return rng.choice(["en", "zh", "all", "fast", "bottom", "0,0,10,10", "re:(a|a)*b", "re:(?<=x)", "word"])
    if kind == 6:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == 7:
        return {_random_text(rng, 6): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return rng.choice(["[" * 5000, "{" * 100])


FIELDS = ("file", "lang", "config", "region", "start", "end", "translate", "watchlist", "url", "text", "x")


def _multipart(rng: random.Random) -> tuple[bytes, str]:
    boundary = rng.choice(["XyZ", "b" * rng.randint(60, 400), "a b", "é", "", "--"])
    parts = []
    for _ in range(rng.randint(0, 5)):
        name = rng.choice(FIELDS)
        disposition = f'form-data; name="{name}"' if rng.random() < 0.9 else "form-data"
        if rng.random() < 0.4:
            disposition += f'; filename="{_random_text(rng, 12)}"'
        value = rng.randbytes(rng.randint(0, 3000)) if rng.random() < 0.4 else str(_random_value(rng)).encode(
            "utf-8", "surrogateescape" if rng.random() < 0.5 else "replace")
        parts.append(f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode("utf-8", "replace")
                     + value + b"\r\n")
    body = b"".join(parts) + (f"--{boundary}--\r\n".encode("utf-8", "replace") if rng.random() < 0.8 else b"")
    if rng.random() < 0.2:
        body = body[:rng.randint(0, len(body))]
    content_type = rng.choice([f"multipart/form-data; boundary={boundary}", "Multipart/Form-Data; boundary=XyZ",
                               "multipart/form-data", f'multipart/form-data; boundary="{boundary}"'])
    return body, content_type


def _fuzz_request(rng: random.Random, job_id: str) -> dict:
    kind = rng.choice(["multipart", "json", "patch", "headers", "get"])
    headers = {}
    if kind == "multipart":
        body, headers["Content-Type"] = _multipart(rng)
        return {"method": "POST", "url": "/v1/jobs", "content": body, "headers": headers}
    if kind == "json":
        value = _random_value(rng)
        if isinstance(value, dict) and rng.random() < 0.7:
            value["url"] = rng.choice(["http://10.0.0.1/v.mp4", "http://[::1]/x", "file:///etc/passwd",
                                       "rtmp://127.0.0.1/live", _random_text(rng), 5])
        text = json.dumps(value) if rng.random() < 0.8 else _random_text(rng, 60)
        return {"method": "POST", "url": "/v1/jobs", "content": text.encode("utf-8", "surrogatepass"),
                "headers": {"Content-Type": rng.choice(["application/json", "Application/JSON; charset=utf-8"])}}
    if kind == "patch":
        seq = rng.choice(["0", "1", "99999999999999999999", "-1", "x"])
        body = json.dumps(_random_value(rng)) if rng.random() < 0.9 else "[" * 100_000
        return {"method": "PATCH", "url": f"/v1/jobs/{job_id}/cues/{seq}", "content": body.encode(),
                "headers": {"Content-Type": "application/json"}}
    if kind == "headers":
        for name in rng.sample(["Last-Event-ID", "X-Request-Id", "Origin", "Accept", "Range", "If-None-Match"],
                               rng.randint(1, 3)):
            headers[name] = rng.choice(["99999999999999999999", "-5", "null", "http://evil.example",
                                        "text/event-stream",
                                        "bytes=0-", "x" * 300, "0"])
        path = rng.choice([f"/v1/jobs/{job_id}/cues", f"/v1/jobs/{job_id}", "/v1/jobs?limit=99999999999999999999",
                           f"/v1/jobs/{job_id}/subtitles.srt?track=%00", "/health", "/ready"])
        return {"method": rng.choice(["GET", "GET", "DELETE", "BREW", "OPTIONS"]), "url": path, "headers": headers}
    return {"method": "GET", "url": rng.choice([f"/v1/jobs/{job_id}/cues/{rng.randint(-5, 10**25)}/crop.png",
                                                "/v1/jobs/%00", "/v1/jobs/../../etc/passwd", "/static/../app.py",
                                                f"/v1/jobs/{job_id}/subtitles."
                                                f"{quote(_random_text(rng, 4), safe='', errors='replace')}"])}


@pytest.mark.slow
def test_seeded_requests_never_make_the_service_fail(tmp_path):
    """Multipart bodies, JSON, PATCHes and headers drawn from one seed: every answer is below 500
    (a 500 is a defect the client cannot act on), the server stays alive and its store readable."""
    import httpx

    from serve_fixtures import API_KEY, ZH_SAMPLE, Server, upload, wait_for

    server = Server(tmp_path / "data", "--max-upload-mb", "2").start()
    try:
        with server.client(timeout=20) as client:
            job_id = upload(client, ZH_SAMPLE, end="2").json()["id"]
            assert wait_for(client, job_id)["status"] == "done"
            rng = random.Random(SEED)
            failures = []
            for n in range(SERVICE_REQUESTS):
                request = _fuzz_request(rng, job_id)
                if n % 10 == 0:  # now and then without the key, or with another Host
                    request.setdefault("headers", {})["Authorization"] = rng.choice(
                        ["", f"Bearer {API_KEY} ", "Basic x"])
                request["headers"] = {name: value.encode("utf-8", "replace")  # any bytes a client may send
                                      for name, value in request.get("headers", {}).items()}
                try:
                    response = client.request(**request)
                except httpx.LocalProtocolError:  # httpx itself would not send it
                    continue
                except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
                    continue  # the server closed the connection: a refusal, not a failure
                except httpx.TransportError as exc:  # a time-out: the server stalled
                    failures.append((n, request["method"], request["url"], repr(exc)))
                    continue
                if response.status_code >= 500:
                    failures.append((n, request["method"], request["url"], response.status_code, response.text[:200]))
            assert failures == []
            assert httpx.get(f"{server.url}/health", timeout=5).json() == {"status": "ok"}
            assert client.get("/v1/jobs").status_code == 200
            assert client.get(f"/v1/jobs/{job_id}").status_code in (200, 404)  # a fuzzed DELETE may have removed it
        assert "Traceback" not in server.log_text(1_000_000)
    finally:
        server.stop()
