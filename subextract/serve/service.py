"""What the service was started with: limits, folders, the OCR engine and translator all jobs share."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from subextract.config import Settings, load_settings
from subextract.serve.guard import Origins
from subextract.serve.limits import Limits


@dataclass(frozen=True)
class ServiceConfig:
    data: Path
    workers: int = 1
    max_queue: int = 16  # queued jobs; one more is refused with 429
    max_upload_mb: float = 2048.0
    job_timeout: float = 3600.0  # seconds one job may run
    shutdown_grace: float = 30.0  # seconds SIGTERM waits for running jobs before re-queuing them
    max_attempts: int = 3  # runs a job gets when the server keeps stopping under it
    api_key: str | None = None
    configs: tuple[str, ...] = ()  # the server's own presets or files, under every job's presets
    ocr_overrides: dict = field(default_factory=dict)  # --engine, --server, ... given to serve
    translator_server: str | None = None
    translator_model: str | None = None
    replica: str = ""  # --replica: leads every job id, so a router can send a job's requests to its owner
    keep_days: float | None = None  # --keep-days: a finished job's files and cues are removed after this
    origins: Origins = field(default_factory=Origins)  # which Host and Origin a request may name (serve/guard.py)
    limits: Limits = field(default_factory=Limits)  # stalls, free space (serve/limits.py)

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    @property
    def database(self) -> Path:
        return self.data / "jobs.sqlite3"

    def job_folder(self, job_id: str) -> Path:
        return self.data / "jobs" / job_id

    def _overrides(self, region: str | None = None) -> dict:
        server = self.translator_server
        return {"region": {"mode": region}, "ocr": self.ocr_overrides,
                "translate": {"engine": "openai" if server else None, "server": server,
                              "model": self.translator_model}}

    def base_settings(self) -> Settings:
        return load_settings(list(self.configs), self._overrides())

    def job_settings(self, configs: tuple[str, ...], region: str | None) -> Settings:
        """The server's settings with the job's presets and region on top. The OCR and translate
        sections stay the server's: every worker's engine was made from them, and a client's
        preset must not make the server load another model."""
        base = self.base_settings()
        settings = load_settings([*self.configs, *configs], self._overrides(region))
        return dataclasses.replace(settings, ocr=base.ocr, translate=base.translate)

    def can_translate(self) -> bool:
        return bool(self.base_settings().translate.engine)
