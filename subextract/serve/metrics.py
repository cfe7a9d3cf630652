"""Prometheus metrics of one service process (prometheus_client, its own registry)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from subextract.serve.store import STATES, Store

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _JobCollector:
    """Jobs by state and the queue's depth, read from the store at each scrape (the store, not
    a counter in memory, knows the jobs a previous process accepted)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def collect(self):
        counts = self._store.counts()
        jobs = GaugeMetricFamily("subextract_jobs", "Jobs by state", labels=["state"])
        for state in STATES:
            jobs.add_metric([state], counts[state])
        yield jobs
        yield GaugeMetricFamily("subextract_queue_depth", "Jobs waiting for a worker", value=counts["queued"])


class Metrics:
    def __init__(self, store: Store) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_JobCollector(store))
        self.ocr_calls = Counter("subextract_ocr_calls", "OCR engine calls made by finished jobs",
                                 registry=self.registry)
        self.seconds_per_video_second = Histogram(
            "subextract_seconds_per_video_second", "Wall seconds a job took per second of video",
            buckets=(0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10), registry=self.registry)
        self.request_latency = Histogram(
            "subextract_http_request_duration_seconds", "HTTP request latency (until the response starts)",
            ["method", "route", "status"], registry=self.registry)

    def job_finished(self, ocr_calls: int, wall_seconds: float, video_seconds: float) -> None:
        self.ocr_calls.inc(ocr_calls)
        if video_seconds > 0:
            self.seconds_per_video_second.observe(wall_seconds / video_seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
