"""A bounded loopback load test: 20 clients submit a short job each and poll it to the end at
once. No job may be lost, the API must stay responsive (p95 latency) and the server's memory
bounded. Stops by itself (a deadline per client); the figures are printed (``-s``) for docs/service.md.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path

import pytest

from serve_fixtures import EN_SAMPLE, Server, upload

CLIENTS = 20
DEADLINE = 240.0  # seconds the whole test may take
MAX_RSS_MB = 1500


def _rss_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


@pytest.mark.slow
def test_twenty_clients_submit_and_poll_at_once(tmp_path):
    server = Server(tmp_path / "data", "--workers", "2", "--max-queue", str(CLIENTS + 4)).start()
    latencies: dict[str, list[float]] = {"submit": [], "poll": [], "list": []}
    outcomes: dict[int, dict] = {}
    lock = threading.Lock()
    stop_at = time.monotonic() + DEADLINE
    peak = {"rss": 0.0}

    def timed(kind: str, call):
        began = time.perf_counter()
        response = call()
        with lock:
            latencies[kind].append(time.perf_counter() - began)
        return response

    def client_run(n: int) -> None:
        with server.client(timeout=30) as client:
            response = timed("submit", lambda: upload(client, EN_SAMPLE, start="1.5", end="3"))
            if response.status_code != 202:
                outcomes[n] = {"status": f"refused {response.status_code}: {response.text}"}
                return
            job_id = response.json()["id"]
            while time.monotonic() < stop_at:
                job = timed("poll", lambda: client.get(f"/v1/jobs/{job_id}")).json()
                if n % 4 == 0:
                    timed("list", lambda: client.get("/v1/jobs", params={"limit": 50}))
                if job["status"] not in ("queued", "running"):
                    break
                time.sleep(0.2)
            outcomes[n] = {**job, "cues": client.get(f"/v1/jobs/{job_id}/cues").text.count("\n")}

    def watch_memory() -> None:
        while any(thread.is_alive() for thread in threads):
            peak["rss"] = max(peak["rss"], _rss_mb(server.process.pid, "VmRSS"))
            time.sleep(0.2)

    began = time.monotonic()
    try:
        threads = [threading.Thread(target=client_run, args=(n,)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        watcher = threading.Thread(target=watch_memory)
        watcher.start()
        for thread in threads:
            thread.join(timeout=max(1.0, stop_at - time.monotonic() + 30))
        watcher.join(timeout=5)
        high_water = _rss_mb(server.process.pid, "VmHWM")
    finally:
        server.stop()
    wall = time.monotonic() - began
    statuses = [outcomes.get(n, {}).get("status", "lost") for n in range(CLIENTS)]
    figures = {"clients": CLIENTS, "wall_s": round(wall, 1),
               **{f"p95_{kind}_ms": round(_p95(values) * 1000, 1) for kind, values in latencies.items() if values},
               **{f"median_{kind}_ms": round(statistics.median(values) * 1000, 1)
                  for kind, values in latencies.items() if values},
               "requests": sum(len(values) for values in latencies.values()),
               "server_rss_peak_mb": round(max(peak["rss"], high_water), 1)}
    print("\nload test:", json.dumps(figures))
    assert statuses == ["done"] * CLIENTS, statuses  # no job lost or failed
    assert all(outcomes[n]["cues"] >= 1 for n in range(CLIENTS))
    assert figures["p95_poll_ms"] < 1000 and figures["p95_submit_ms"] < 5000, figures
    assert figures["server_rss_peak_mb"] < MAX_RSS_MB, figures
