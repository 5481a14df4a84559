"""Prometheus metrics of the fake endpoints (``prometheus-client``, the ``server`` extra), served at ``/metrics`` when
``HARNESS_METRICS`` is on: requests by protocol, route and status with their latency and time to first byte,
injected failures by kind, runs by status (read from the database on each scrape), the recorder's queue, the batches
it wrote and the events it dropped.

The endpoint's consumer calls :func:`observe_request` once per request and :func:`observe_failure` for an injected
failure; the recorder gives :func:`watch_queue` its queue and calls :func:`observe_flush`. Each does nothing while
the setting is off.

Each server process keeps its own registry: under several workers (``harness serve --workers N``) a scrape reads the
worker that answers it, unless ``PROMETHEUS_MULTIPROC_DIR`` (prometheus-client's own variable) names a folder, empty at
start and shared by the workers of one host: then each process writes its values there and a scrape aggregates them
all (``MultiProcessCollector``: counters and histograms summed, the queue depth summed over live processes). The runs
by status come from the shared database and are the same from every worker, counted once per scrape.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Iterator

from django.conf import settings
from django.db.models import Count
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from harnessweb.engine import routes

REGISTRY = CollectorRegistry(auto_describe=True)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

REQUESTS = Counter(
    "harness_requests",
    "Requests to the fake provider endpoints, by protocol, route and status.",
    ("protocol", "route", "status"),
    registry=REGISTRY,
)
LATENCY = Histogram(
    "harness_request_duration_seconds",
    "Time from a request's arrival to its response's last byte.",
    ("protocol", "route"),
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
FIRST_BYTE = Histogram(
    "harness_time_to_first_byte_seconds",
    "Time from a request's arrival to its response's first body byte.",
    ("protocol", "route"),
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
FAILURES = Counter(
    "harness_injected_failures", "Failures the scenarios and scripts injected, by kind.", ("kind",), registry=REGISTRY
)
BATCHES = Counter("harness_recorder_batches_written", "Batches of run rows and events committed.", registry=REGISTRY)
EVENTS_WRITTEN = Counter("harness_recorder_events_written", "Run events committed.", registry=REGISTRY)
DROPPED = Counter(
    "harness_recorder_events_dropped",
    "Run events dropped (the database unreachable past the buffer).",
    registry=REGISTRY,
)
# livesum: in multiprocess mode the depths of the processes alive, summed (a dead worker's queue is gone with it).
QUEUE = Gauge(
    "harness_recorder_queue_depth",
    "Run events queued, not yet written.",
    registry=REGISTRY,
    multiprocess_mode="livesum",
)
MULTIPROC_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
_queue_depth: list[Callable[[], int]] = []  # the recorder's, once it has started


def multiprocess_dir() -> str | None:
    """The folder the processes share their values in (prometheus-client reads the variable when it is imported, so
    it must be set before the server starts), or None: each process its own registry."""
    return os.environ.get(MULTIPROC_VARIABLE) or None


def enabled() -> bool:
    return bool(settings.HARNESS_METRICS)


def observe_request(
    protocol: str, method: str, path: str, status: int, seconds: float, first_byte_seconds: float | None
) -> None:
    """One request answered: its protocol, its route (the served pattern, never the raw path), its status, how
    long it took and when its first byte went (None: it sent none)."""
    if not enabled():
        return
    route = routes.template(method, path)
    REQUESTS.labels(protocol, route, str(status)).inc()
    LATENCY.labels(protocol, route).observe(seconds)
    if first_byte_seconds is not None:
        FIRST_BYTE.labels(protocol, route).observe(first_byte_seconds)


def observe_failure(kind: str) -> None:
    """A failure injected (``rate_limit``, ``timeout``, ``network_error``, ...)."""
    if enabled():
        FAILURES.labels(kind).inc()


def observe_flush(events_written: int, dropped: int = 0) -> None:
    """A recorder batch committed with ``events_written`` events, or ``dropped`` events given up."""
    if not enabled():
        return
    if events_written:
        BATCHES.inc()
        EVENTS_WRITTEN.inc(events_written)
    if dropped:
        DROPPED.inc(dropped)
    _refresh_queue()


class RunsCollector(Collector):
    """Runs by status, counted in the database at scrape time (every status, 0 where there are none)."""

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The family without its values: registering reads this, not the database."""
        yield GaugeMetricFamily("harness_runs", "Runs recorded, by status.", labels=("status",))

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from runs_app.models import Run

        family = GaugeMetricFamily("harness_runs", "Runs recorded, by status.", labels=("status",))
        counts = dict(Run.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
        for status in Run.Status.values:
            family.add_metric((status,), counts.get(status, 0))
        yield family


REGISTRY.register(RunsCollector())


def watch_queue(depth: Callable[[], int]) -> None:
    """Read the recorder's queue depth from ``depth`` on each scrape (the recorder gives it when it starts); in
    multiprocess mode a scrape reads the files, so each process writes its depth at each flush (and the answering one
    at the scrape)."""
    if multiprocess_dir() is None:
        QUEUE.set_function(lambda: float(depth()))
        return
    _queue_depth[:] = [depth]
    # A worker that stops takes its live values with it (the files of the processes that remain are summed).
    atexit.register(multiprocess.mark_process_dead, os.getpid())


def _refresh_queue() -> None:
    if _queue_depth:
        QUEUE.set(_queue_depth[0]())


def exposition() -> tuple[bytes, str]:
    """The metrics in Prometheus's text format, and its content type: this process's registry, or with
    ``PROMETHEUS_MULTIPROC_DIR`` every process's values in that folder, aggregated, and the runs by status."""
    folder = multiprocess_dir()
    if folder is None:
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    _refresh_queue()
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=folder)
    registry.register(RunsCollector())
    return generate_latest(registry), CONTENT_TYPE_LATEST
