"""``--keep-days``: a sweep that removes what finished jobs left behind once they are older than
that — the upload, the pictures and the cues (so the subtitles too) — and marks each job's
record expired, which the API then says (410 on its downloads, ``expired`` on the job).
Queued and running jobs are never touched; the record itself stays until a client deletes it.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time

from subextract.serve.service import ServiceConfig
from subextract.serve.store import Store

log = logging.getLogger(__name__)

LONGEST_PAUSE = 3600.0  # seconds between sweeps at most


class RetentionSweep:
    def __init__(self, config: ServiceConfig, store: Store) -> None:
        self.config = config
        self.store = store
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="retention", daemon=True)

    @property
    def keep_seconds(self) -> float:
        return self.config.keep_days * 86400

    def start(self) -> None:
        if self.config.keep_days:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def sweep(self) -> list[str]:
        expired = self.store.expire(time.time() - self.keep_seconds)
        for job_id in expired:
            shutil.rmtree(self.config.job_folder(job_id), ignore_errors=True)
        if expired:
            log.info("retention: removed the files and cues of %d jobs older than %g days", len(expired),
                     self.config.keep_days)
        return expired

    def _run(self) -> None:
        # A few sweeps within the retention time, so nothing outlives it by much.
        pause = min(LONGEST_PAUSE, max(self.keep_seconds / 4, 0.5))
        while not self._stop.is_set():
            try:
                self.sweep()
            except Exception:  # a failed sweep (a locked store, a full disk) is tried again next time
                log.exception("retention sweep failed")
            self._stop.wait(pause)
