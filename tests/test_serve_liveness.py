"""Liveness (/health) sees a worker thread that has died: a pool without it takes no job, and
only a restart brings it back, so the orchestrator must be told (readiness stays about the engine)."""

from __future__ import annotations

import ctypes
import time

import pytest
from starlette.testclient import TestClient

from subextract.serve.app import create_app
from subextract.serve.service import ServiceConfig


def _end_thread(thread) -> None:
    """Raise SystemExit inside ``thread``, as an error no handler catches would end it."""
    assert ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(SystemExit)) == 1


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the SystemExit raised here
def test_a_dead_worker_thread_fails_liveness_by_name(tmp_path):
    with TestClient(create_app(ServiceConfig(data=tmp_path / "data")), base_url="http://127.0.0.1") as client:
        assert client.get("/health").json() == {"status": "ok"}
        pool = client.app.state.service.pool
        worker = pool._threads[0]
        _end_thread(worker)
        worker.join(timeout=60)
        assert not worker.is_alive()
        deadline = time.monotonic() + 10
        while (answer := client.get("/health")).status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert answer.status_code == 503
        assert answer.json() == {"status": "failing", "problems": [f"worker thread {worker.name} has stopped"]}
