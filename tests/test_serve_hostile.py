"""The second hostile review of ``subextract serve`` (issue 24): a client's regex, a stalled
connection, a made-up method, an absurd number or body, a job that never reports progress. Each
test is the review's reproduction against a real server process on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from serve_fixtures import API_KEY, EN_SAMPLE, ZH_SAMPLE, Server, client, module_server, upload, wait_for  # noqa: F401


server = module_server("hostile", "--header-timeout", "2", "--body-timeout", "2", "--allow-private-network")


def test_a_catastrophic_regex_never_stops_the_server(server, client):
    """The review's reproduction: on Python's re this pattern held the GIL for good from the
    first cue on (/health, the API and DELETE stopped answering); on RE2 it is linear."""
    response = upload(client, EN_SAMPLE, watchlist="re:(.|.|.)*QQQ")
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        began = time.monotonic()
        health = httpx.get(f"{server.url}/health", timeout=5)
        assert health.status_code == 200 and time.monotonic() - began < 2, health.text
        if client.get(f"/v1/jobs/{job_id}", timeout=5).json()["status"] not in ("queued", "running"):
            break
        time.sleep(0.3)
    job = client.get(f"/v1/jobs/{job_id}").json()
    assert job["status"] == "done", job
    assert all(cue["flags"] == [] for cue in map(json.loads, client.get(f"/v1/jobs/{job_id}/cues").text.splitlines()))
    assert client.delete(f"/v1/jobs/{job_id}", timeout=5).json()["status"] == "deleted"


def test_what_re2_cannot_run_is_refused_with_one_line(client):
    for pattern, words in (("re:(a)\\1", "back-references"), ("re:(?<=a)b", "look-arounds"),
                           ("re:x\\by", "word boundary"), ("re:a{5000}", "repetition")):
        response = upload(client, EN_SAMPLE, watchlist=pattern)
        assert response.status_code == 400, (pattern[:20], response.text)
        error = response.json()["error"]
        assert words in error and "\n" not in error and len(error) < 400, error
    deep = upload(client, EN_SAMPLE, watchlist="re:" + "(" * 2000 + "a" + ")" * 2000, end="1")  # Python's re: a 500
    assert deep.status_code == 202, deep.text
    assert wait_for(client, deep.json()["id"])["status"] == "done"


class _Trickle(http.server.BaseHTTPRequestHandler):
    """A video server that sends a byte every second and never finishes: FFmpeg's read timeout
    never fires, and the job never reports progress."""

    def do_GET(self):  # noqa: N802 - the handler's name
        self.send_response(200)
        self.send_header("Content-Type", "video/mp4")
        self.send_header("Content-Length", "100000000")
        self.end_headers()
        try:
            for _ in range(120):
                self.wfile.write(b"\0")
                self.wfile.flush()
                time.sleep(1)
        except OSError:
            pass

    def log_message(self, *args):
        pass


def test_a_job_that_never_reports_progress_fails_at_its_timeout_and_its_worker_is_replaced(tmp_path):
    trickle = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    threading.Thread(target=trickle.serve_forever, daemon=True).start()
    server = Server(tmp_path / "data", "--job-timeout", "4", "--allow-private-network").start()
    try:
        client = server.client()
        began = time.monotonic()
        stuck = client.post("/v1/jobs", json={"url": f"http://127.0.0.1:{trickle.server_address[1]}/v.mp4"})
        assert stuck.status_code == 202, stuck.text
        job = wait_for(client, stuck.json()["id"], timeout=30)
        assert job["status"] == "failed" and job["error"] == "timed out after 4 s", job
        assert time.monotonic() - began < 20
        after = upload(client, ZH_SAMPLE, end="1")  # the one worker's place was handed to a new thread
        assert wait_for(client, after.json()["id"], timeout=60)["status"] == "done"
        assert client.get("/health").json() == {"status": "ok"}
    finally:
        server.stop()
        trickle.shutdown()


def test_non_finite_and_absurd_times_are_400_and_never_stored(client):
    before = client.get("/v1/jobs").json()["jobs"]
    for fields in ({"start": "1e308:0"}, {"end": "inf"}, {"start": "nan"}, {"end": "999999999"}):
        response = upload(client, EN_SAMPLE, **fields)
        assert response.status_code == 400, (fields, response.text)
    for value in (b'"end": 1e999', b'"start": 1e300', b'"end": Infinity', b'"end": NaN'):
        raw = b'{"url": "http://example.com/v.mp4", ' + value + b"}"
        assert client.post("/v1/jobs", content=raw, headers={"Content-Type": "application/json"}).status_code == 400
    listing = client.get("/v1/jobs")
    assert listing.status_code == 200 and listing.json()["jobs"] == before


def test_made_up_methods_do_not_grow_the_metrics(server):
    def series() -> int:
        return len(httpx.get(f"{server.url}/metrics").text.splitlines())

    for n in range(3):
        httpx.request(f"BREW{n}", f"{server.url}/health")
    series()
    before = series()
    for n in range(3, 40):
        httpx.request(f"BREW{n}", f"{server.url}/health")
    assert series() == before  # the same "other" series: only its counts change
    text = httpx.get(f"{server.url}/metrics").text
    assert 'method="other"' in text and "BREW" not in text


def _stalled(server: Server, data: bytes) -> float:
    """Seconds until the server closes a connection that sent ``data`` and then nothing."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    try:
        sock.sendall(data)
        began = time.monotonic()
        while sock.recv(65536):
            pass
        return time.monotonic() - began
    finally:
        sock.close()


def test_stalled_connections_are_closed(server):
    # The server's timeouts are 2 s; without them the connection stays open past the client's 30 s
    # (socket.timeout). 15 s leaves room for a machine busy with other tests.
    assert _stalled(server, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ") < 15  # --header-timeout 2
    head = (f"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {API_KEY}\r\n"
            "Content-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: 100000\r\n\r\n"
            '--XyZ\r\nContent-Disposition: form-data; name="file"; filename="v.mp4"\r\n\r\n').encode()
    assert _stalled(server, head + b"\0" * 1000) < 15  # --body-timeout 2
    # The abandoned upload's folder is removed once the server has given up on it (a moment later
    # on a busy machine).
    deadline = time.monotonic() + 15
    while (empty := _empty_job_folders(server.data / "jobs")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not empty


def _empty_job_folders(jobs: Path) -> list[Path]:
    """Job folders with nothing in them; one removed while they are listed is not among them."""
    empty = []
    for folder in jobs.iterdir():
        try:
            if not any(folder.iterdir()):
                empty.append(folder)
        except FileNotFoundError:
            pass
    return empty


def test_a_large_body_is_413_before_it_is_read(client):
    started = time.monotonic()
    response = client.patch("/v1/jobs/x/cues/1", content=b"[" * 6_000_000, headers={"Content-Type": "application/json"})
    assert response.status_code == 413 and time.monotonic() - started < 5, response.text


@pytest.fixture(scope="module")
def done_job(client) -> str:
    job_id = upload(client, ZH_SAMPLE, end="2").json()["id"]
    assert wait_for(client, job_id)["status"] == "done"
    return job_id


def test_absurd_numbers_and_nesting_are_4xx(client, done_job):
    huge = "99999999999999999999"  # past SQLite's integers: OverflowError, a 500
    assert client.get(f"/v1/jobs/{done_job}/cues/{huge}/crop.png").status_code == 404
    assert client.patch(f"/v1/jobs/{done_job}/cues/{huge}", json={"text": "x"}).status_code == 404
    nested = client.post("/v1/jobs", content=b"[" * 100_000, headers={"Content-Type": "application/json"})
    assert nested.status_code == 400 and "nests too deep" in nested.json()["error"]


def test_a_resume_point_past_every_cue_is_no_error(client, done_job):
    response = client.get(f"/v1/jobs/{done_job}/cues", params={"follow": "false"},
                          headers={"Last-Event-ID": "99999999999999999999"})
    assert response.status_code == 200 and response.text == ""


def test_malformed_uploads_are_400_naming_the_fault(client):
    long_boundary = "b" * 300
    response = client.post("/v1/jobs", content=f"--{long_boundary}\r\n".encode(),
                           headers={"Content-Type": f"multipart/form-data; boundary={long_boundary}"})
    assert response.status_code == 400 and "boundary" in response.json()["error"]
    with open(EN_SAMPLE, "rb") as handle:  # the video under another field name: 400 naming 'file', not 413
        wrong = client.post("/v1/jobs", files={"video": ("en.mp4", handle, "video/mp4")})
    assert wrong.status_code == 400 and "'file'" in wrong.json()["error"], wrong.text
    with open(EN_SAMPLE, "rb") as handle:  # the media type's case does not matter
        content = handle.read()
    body = (b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="en.mp4"\r\n\r\n' + content
            + b"\r\n--XyZ\r\nContent-Disposition: form-data; name=\"end\"\r\n\r\n1\r\n--XyZ--\r\n")
    cased = client.post("/v1/jobs", content=body, headers={"Content-Type": "Multipart/Form-Data; boundary=XyZ"})
    assert cased.status_code == 202, cased.text
    assert wait_for(client, cased.json()["id"])["status"] == "done"


def test_a_url_with_a_nul_or_a_line_break_is_400_and_logs_one_line(server, client):
    for url in ("http://example.com/a\u0000b.mp4", "http://example.com/a\nb.mp4"):
        response = client.post("/v1/jobs", json={"url": url})
        assert response.status_code == 400, (url, response.text)
    httpx.get(f"{server.url}/nothing%0a2026-01-01 00:00:00 INFO forged: line")
    time.sleep(0.2)
    assert not any(line.startswith("2026-01-01 00:00:00 INFO forged") for line in server.log_text(200_000).splitlines())
    assert server.logged("/nothing\\n2026-01-01")


@pytest.fixture()
def small_disk(tmp_path):
    """A 24 MiB tmpfs of its own (we are root in CI and here); skipped where it cannot be mounted."""
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(folder, leave: int = 0) -> None:
    """Write a filler file until the disk has only ``leave`` bytes free (or none)."""
    import os
    import shutil

    with open(folder / "filler", "ab") as handle:
        while shutil.disk_usage(folder).free > leave:
            try:
                handle.write(b"\0" * max(4096, min(1 << 20, shutil.disk_usage(folder).free - leave)))
                handle.flush()
                os.fsync(handle.fileno())
            except OSError:
                break


def test_a_full_data_disk_fails_the_job_keeps_the_worker_and_refuses_uploads_with_507(small_disk):
    server = Server(small_disk / "data", "--min-free-mb", "1").start()
    try:
        client = server.client()
        running = upload(client, ZH_SAMPLE)
        assert running.status_code == 202, running.text
        _fill(small_disk)  # the disk fills while the job writes its pictures and cues
        ready = httpx.get(f"{server.url}/ready")
        assert ready.status_code == 503 and any("no space left" in r for r in ready.json()["reasons"]), ready.text
        refused = upload(client, EN_SAMPLE)
        assert refused.status_code == 507 and "no space left" in refused.json()["error"], refused.text
        assert httpx.get(f"{server.url}/health").status_code == 200  # full, but alive
        (small_disk / "filler").unlink()
        job = wait_for(client, running.json()["id"], timeout=120)
        assert job["status"] == "failed" and "no space left" in job["error"].lower(), job
        assert str(server.data) not in job["error"]

        _fill(small_disk, leave=int(1.3 * 1024 * 1024))  # above --min-free-mb, below the upload's 1.6 MB
        cut = upload(client, ZH_SAMPLE)
        assert cut.status_code == 507 and "no space left" in cut.json()["error"], cut.text
        (small_disk / "filler").unlink()
        assert httpx.get(f"{server.url}/ready").status_code == 200
        after = upload(client, ZH_SAMPLE, end="2")  # the worker lives on
        assert wait_for(client, after.json()["id"])["status"] == "done"
        assert [folder.name for folder in (server.data / "jobs").iterdir()] == \
            [job["id"] for job in client.get("/v1/jobs").json()["jobs"] if (server.data / "jobs" / job["id"]).exists()]
    finally:
        server.stop()


def _serve(*args: str, env_key: str | None = None) -> "subprocess.CompletedProcess":
    import os
    import subprocess
    import sys

    from serve_fixtures import REPO

    env = {k: v for k, v in os.environ.items() if k != "SUBEXTRACT_API_KEY"}
    if env_key is not None:
        env["SUBEXTRACT_API_KEY"] = env_key
    return subprocess.run([sys.executable, "-m", "subextract", "serve", *args], capture_output=True, text=True,
                          timeout=60, cwd=REPO, env=env)


def test_serve_refuses_what_it_cannot_use_in_one_line(tmp_path):
    garbage, folder = tmp_path / "garbage", tmp_path / "folder"
    garbage.mkdir()
    (garbage / "jobs.sqlite3").write_bytes(b"not a database, " * 400)
    (folder / "jobs.sqlite3").mkdir(parents=True)
    for args, words in ((["--data", str(garbage), "--port", "0"], "cannot be used as the job database"),
                        (["--data", str(folder), "--port", "0"], "is a folder"),
                        (["--port", "70000"], "not a port"),
                        (["--host", "999.1.1.1", "--allow-no-key", "--data", str(tmp_path / "d")], "no such address")):
        run = _serve(*args)
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
        assert words in run.stderr.strip().splitlines()[-1], run.stderr


def test_orphaned_upload_folders_are_swept_and_a_spaced_key_is_warned_about(tmp_path):
    orphan = tmp_path / "data" / "jobs" / "0123456789abcdef"
    orphan.mkdir(parents=True)
    (orphan / "input").write_bytes(b"half an upload")
    server = Server(tmp_path / "data", api_key=API_KEY + " \n")
    try:
        server.start()
        assert not orphan.exists()
        assert server.logged("SUBEXTRACT_SERVICE_KEY has spaces or line breaks around it")
        given = httpx.get(f"{server.url}/v1/jobs", headers={"Authorization": f"Bearer {API_KEY}"})
        assert given.status_code == 200  # the key as a client can send it
    finally:
        server.stop()
