"""Prometheus metrics: the module called directly (a request by its route template, an injected failure, a recorder
flush, runs by status from the database), /metrics off by default, behind a read token or public, parsed with
``prometheus_client``'s own parser; and a live server scraped after a known load (that one needs the endpoint's
``observe_request`` / ``observe_failure`` calls in runs_app/endpoint/consumer.py and recorder.py)."""

from __future__ import annotations

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from runs_app import metrics
from tests.conftest import make_run, make_scenario, make_token, running_server

pytestmark = pytest.mark.django_db


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition by (name, sorted labels)."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def on(settings):
    settings.HARNESS_METRICS = True
    return settings


def scraped() -> dict:
    return samples(metrics.exposition()[0].decode())


def test_a_request_counts_under_its_route_template_with_its_timings(on):
    labels = {"protocol": "openai", "route": "GET /v1/models/{id}", "status": "200"}
    before = scraped()
    metrics.observe_request("openai", "GET", "/v1/models/gpt-4o", 200, 0.02, 0.01)
    metrics.observe_request("openai", "GET", "/v1/models/gpt-4o-mini", 200, 0.3, None)
    after = scraped()
    assert value(after, "harness_requests_total", **labels) - value(before, "harness_requests_total", **labels) == 2
    timing = {"protocol": "openai", "route": "GET /v1/models/{id}"}
    count = "harness_request_duration_seconds_count"
    assert value(after, count, **timing) - value(before, count, **timing) == 2
    first = "harness_time_to_first_byte_seconds_count"
    assert value(after, first, **timing) - value(before, first, **timing) == 1  # the second sent no first byte
    bucket = value(after, "harness_request_duration_seconds_bucket", le="0.025", **timing)
    assert bucket - value(before, "harness_request_duration_seconds_bucket", le="0.025", **timing) == 1


def test_nothing_is_counted_while_the_setting_is_off(settings):
    settings.HARNESS_METRICS = False
    before = scraped()
    metrics.observe_request("openai", "POST", "/v1/chat/completions", 200, 0.1, 0.05)
    metrics.observe_failure("rate_limit")
    metrics.observe_flush(10, 3)
    assert scraped() == before


def test_failures_flushes_and_runs_by_status(on):
    before = scraped()
    metrics.observe_failure("rate_limit")
    metrics.observe_flush(7)
    metrics.observe_flush(0, dropped=2)
    make_run(status="passed")
    make_run(status="passed")
    make_run(status="failed")
    after = scraped()
    assert (
        value(after, "harness_injected_failures_total", kind="rate_limit")
        - value(before, "harness_injected_failures_total", kind="rate_limit")
        == 1
    )
    assert (
        value(after, "harness_recorder_batches_written_total") - value(before, "harness_recorder_batches_written_total")
        == 1
    )
    assert (
        value(after, "harness_recorder_events_written_total") - value(before, "harness_recorder_events_written_total")
        == 7
    )
    assert (
        value(after, "harness_recorder_events_dropped_total") - value(before, "harness_recorder_events_dropped_total")
        == 2
    )
    assert (value(after, "harness_runs", status="passed"), value(after, "harness_runs", status="failed")) == (2, 1)
    assert value(after, "harness_runs", status="errored") == 0 and ("harness_runs", (("status", "errored"),)) in after
    metrics.watch_queue(lambda: 5)
    assert value(scraped(), "harness_recorder_queue_depth") == 5


def test_metrics_are_off_by_default(client):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {make_token('read')}")
    assert response.status_code == 404 and "HARNESS_METRICS" in response.json()["detail"]


def test_metrics_need_a_token_unless_public(on, client):
    refused = client.get("/metrics")
    assert refused.status_code == 401 and refused["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-a-token").status_code == 401
    read = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {make_token('read')}")
    assert read.status_code == 200 and read["Content-Type"].startswith("text/plain; version=")
    assert ("harness_runs", (("status", "running"),)) in samples(read.content.decode())
    on.HARNESS_METRICS_PUBLIC = True
    assert client.get("/metrics").status_code == 200


def test_the_health_check_is_anonymous_and_queries_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(1):
        response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.django_db(transaction=True)
def test_a_live_server_scraped_after_a_known_load(tmp_path):
    """Needs the consumer's hook lines (observe_request, observe_failure): see runs_app/metrics.py."""
    make_scenario("metrics-text", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Counted."}}])
    make_scenario(
        "metrics-429",
        [{"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit",
          "response": {"kind": "text", "assistant_text": "After the 429."}}],
    )  # fmt: skip
    env = {"HARNESS_PACING": "off", "HARNESS_METRICS": "1", "HARNESS_METRICS_PUBLIC": "1"}
    with running_server(tmp_path, env) as server:
        for i in range(3):
            oai = openai.OpenAI(base_url=f"{server.url}/v1", api_key=f"sk-metrics-{i}", max_retries=0)
            oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "metrics-text"}])
        retrying = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-metrics-429", max_retries=1)
        retrying.chat.completions.create(model="m", messages=[{"role": "user", "content": "metrics-429"}])
        assert httpx.get(f"{server.url}/v1/nothing-here").status_code == 404
        found = samples(httpx.get(f"{server.url}/metrics").text)
    chat = {"protocol": "openai", "route": "POST /v1/chat/completions"}
    assert value(found, "harness_requests_total", status="200", **chat) == 4
    assert value(found, "harness_requests_total", status="429", **chat) == 1
    assert value(found, "harness_requests_total", protocol="openai", route="other", status="404") == 1
    assert value(found, "harness_request_duration_seconds_count", **chat) == 5
    assert value(found, "harness_time_to_first_byte_seconds_count", **chat) == 5
    assert value(found, "harness_injected_failures_total", kind="rate_limit") == 1
    assert value(found, "harness_runs", status="passed") == 4
    assert value(found, "harness_recorder_batches_written_total") >= 1


def test_the_example_dashboard_charts_only_metrics_the_registry_exposes(on):
    import json
    import re

    from tests.conftest import ROOT

    dashboard = json.loads((ROOT / "docs" / "grafana-dashboard.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    charted = {name for expr in exprs for name in re.findall(r"\bharness_[a-z_]+", expr)}
    metrics.observe_request("openai", "POST", "/v1/chat/completions", 200, 0.1, 0.05)
    metrics.observe_failure("timeout")
    exposed = {name for name, _ in scraped()}
    assert charted and charted <= exposed, charted - exposed
