"""prometheus-client's multiprocess mode: with ``PROMETHEUS_MULTIPROC_DIR`` set, two worker processes write their
metrics to one folder and a scrape (``runs_app.metrics.exposition``) aggregates them: counters and histograms summed,
the recorder's queue depth summed over the processes alive (gone when they stop), the runs by status counted once
from the database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runs_app import metrics
from tests.conftest import make_run
from tests.test_metrics import samples, value

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent
# One worker: the load given on its command line, then its queue depth, then "ready"; it exits when stdin closes.
WORKER = """
import sys
import django

django.setup()
from runs_app import metrics

requests, depth = int(sys.argv[1]), int(sys.argv[2])
for _ in range(requests):
    metrics.observe_request("openai", "POST", "/v1/chat/completions", 200, 0.02, 0.01)
metrics.observe_failure("rate_limit")
metrics.watch_queue(lambda: depth)
metrics.observe_flush(5)
print("ready", flush=True)
sys.stdin.read()
"""


def worker(folder: Path, requests: int, depth: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "PROMETHEUS_MULTIPROC_DIR": str(folder),
        "DJANGO_SETTINGS_MODULE": "harnessweb.settings",
        "HARNESS_METRICS": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(requests), str(depth)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def test_a_scrape_aggregates_the_workers_sharing_the_folder(tmp_path, settings, monkeypatch):
    settings.HARNESS_METRICS = True
    make_run(status="passed")
    first, second = worker(tmp_path, 2, 3), worker(tmp_path, 3, 4)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    route = {"protocol": "openai", "route": "POST /v1/chat/completions"}
    try:
        found = samples(metrics.exposition()[0].decode())
        assert value(found, "harness_requests_total", status="200", **route) == 5
        assert value(found, "harness_request_duration_seconds_count", **route) == 5
        assert value(found, "harness_time_to_first_byte_seconds_bucket", le="0.01", **route) == 5
        assert value(found, "harness_injected_failures_total", kind="rate_limit") == 2
        assert value(found, "harness_recorder_batches_written_total") == 2
        assert value(found, "harness_recorder_events_written_total") == 10
        assert value(found, "harness_recorder_queue_depth") == 7  # 3 + 4, both alive
        assert value(found, "harness_runs", status="passed") == 1  # the database's, once
    finally:
        for process in (first, second):
            process.communicate("", timeout=30)
    assert (first.returncode, second.returncode) == (0, 0)
    after = samples(metrics.exposition()[0].decode())
    assert value(after, "harness_requests_total", status="200", **route) == 5  # counters outlive their workers
    assert value(after, "harness_recorder_queue_depth") == 0  # queues do not


def test_without_the_variable_a_scrape_reads_this_process(settings, monkeypatch):
    settings.HARNESS_METRICS = True
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.delenv("prometheus_multiproc_dir", raising=False)
    before = samples(metrics.exposition()[0].decode())
    metrics.observe_failure("timeout")
    after = samples(metrics.exposition()[0].decode())
    kind = "harness_injected_failures_total"
    assert value(after, kind, kind="timeout") - value(before, kind, kind="timeout") == 1
