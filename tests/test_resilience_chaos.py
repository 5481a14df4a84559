"""Client resilience on a failure chaos by probability chose: said as chaos with its seed, not "failure 1 of 1"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harnessweb.engine import chaos
from harnessweb.engine.playback import failure_of
from runs_app.live.resilience import GAVE_UP, RETRIED, WENT_ON, analyse
from tests.live_views_helpers import make_events, make_played_run, make_request, make_response

START = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def events(*steps: tuple[str, int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Events as recorded, 10 ms apart, from (kind, turn, data)."""
    return [
        {"seq": i, "timestamp": START + timedelta(milliseconds=10 * i), "kind": kind, "turn": turn, "data": data}
        for i, (kind, turn, data) in enumerate(steps, start=1)
    ]


def chaos_failure(status: str, seed: int, ordinal: int, http: int | None) -> list[tuple[str, int, dict[str, Any]]]:
    """A request chaos failed, as the endpoint records it (``steps.injected`` with ``Hit.event_data``)."""
    hit = chaos.Hit(failure_of(status, "Simulated (chaos)"), seed, ordinal)
    injected = {**hit.event_data(), "status": status, "message": "m", "attempt": 1, "of": 1, "retryable": True}
    return [
        ("request", 1, {"body": {}}),
        ("failure_injected", 1, {**injected, "retry_after_ms": None}),
        ("response", 1, {"status": http, "failure": status, "dropped": http is None}),
    ]


def test_a_retried_chaos_failure_names_chaos_and_its_seed() -> None:
    report = analyse(
        events(
            *chaos_failure("rate_limit", 7, 0, 429),
            *chaos_failure("server_error", 7, 1, 500),
            ("request", 1, {"body": {}}),
            ("response", 1, {"status": 200}),
        )
    )

    assert [(f.outcome, f.chaos_seed, f.tried) for f in report.failures] == [
        (RETRIED, 7, "chaos (seed 7)"),
        (RETRIED, 7, "chaos (seed 7)"),
    ]
    assert report.failures[0].sentence == (
        "Turn 1, chaos (seed 7), rate_limit (HTTP 429): the client retried after 10 ms (no Retry-After was given)."
    )
    assert report.failures[1].sentence.startswith("Turn 1, chaos (seed 7), server_error (HTTP 500): the client")
    assert not any("failure 1 of 1" in sentence for sentence in report.summary)


def test_going_on_after_a_chaos_drop_is_flagged_with_its_seed() -> None:
    report = analyse(
        events(*chaos_failure("network_error", 42, 3, None), ("request", 2, {"body": {}}), ("response", 2, {}))
    )

    [failure] = report.flagged
    assert failure.outcome == WENT_ON
    assert failure.sentence.startswith("Turn 1, chaos (seed 42), a dropped connection (network_error): the client")


@pytest.mark.parametrize(
    ("data", "tried"),
    [
        ({"attempt": 2, "of": 3}, "2 of 3"),
        ({"attempt": 1, "of": 2**31 - 1}, "1 (it always fails)"),
        ({"attempt": 1, "of": 1, "seed": 5}, "1 of 1"),  # a seed without the chaos mark is not chaos's
        ({"attempt": 1, "of": 1, "chaos": True, "seed": "5"}, "1 of 1"),  # nor a seed that is no number
    ],
)
def test_a_scripted_failure_still_counts_its_attempts(data: dict[str, Any], tried: str) -> None:
    report = analyse(events(("request", 1, {}), ("failure_injected", 1, {"status": "rate_limit", **data})))

    [failure] = report.failures
    assert (failure.outcome, failure.chaos_seed, failure.tried) == (GAVE_UP, None, tried)
    assert failure.sentence.startswith(f"Turn 1, failure {tried}, a rate_limit it hung up on")


@pytest.mark.django_db
def test_the_run_page_says_chaos_and_its_seed(admin_client: Any) -> None:
    run = make_played_run(scenario_id="flaky")
    hit = {"chaos": True, "seed": 9, "ordinal": 0, "status": "server_error", "message": "m", "attempt": 1, "of": 1}
    make_events(
        run,
        make_request(1),
        ("failure_injected", 1, {**hit, "retryable": True}),
        ("response", 1, {"ttfb_ms": 1, "duration_ms": 1, "status": 500, "failure": "server_error", "dropped": False}),
        make_request(1),
        make_response(1),
    )

    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    resilience = html[html.index('id="run-resilience"') : html.index("<h2>Timeline</h2>")]
    assert "Turn 1, chaos (seed 9), server_error (HTTP 500): the client retried" in resilience
    assert '<small class="muted">chaos (seed 9)</small>' in resilience
    assert "1 of 1" not in resilience
