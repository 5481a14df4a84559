"""The overview's figures from plain rows: buckets and the stacked bars' geometry, pass-rate drops, slowest and
most-retried clients. No database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from runs_app.overview import figures
from runs_app.overview.figures import PERIODS, ClientKey

NOW = datetime(2026, 3, 4, 15, 42, 10, tzinfo=UTC)
HOUR = PERIODS["24h"]
DAY = PERIODS["7d"]


def test_it_ends_the_buckets_with_the_one_holding_now():
    hours = figures.bucket_starts(HOUR, NOW)
    assert len(hours) == 24
    assert hours[-1] == datetime(2026, 3, 4, 15, tzinfo=UTC)
    assert hours[0] == datetime(2026, 3, 3, 16, tzinfo=UTC)
    days = figures.bucket_starts(DAY, NOW)
    assert days == [datetime(2026, 2, 26, tzinfo=UTC) + timedelta(days=i) for i in range(7)]


def test_it_stacks_the_statuses_of_a_bucket_from_the_baseline_up():
    last = datetime(2026, 3, 4, 15, tzinfo=UTC)
    chart = figures.chart([(last, "passed", 3), (last, "failed", 1), (last, "running", 1)], HOUR, NOW)
    bar = chart.bars[-1]
    assert bar.counts == {"passed": 3, "failed": 1, "errored": 0, "abandoned": 0, "running": 1}
    assert [s["status"] for s in bar.segments] == ["passed", "failed", "running"]
    # The axis tops at 5 (a round number at or above the busiest bar): five runs fill the drawing's height.
    inner = figures.HEIGHT - figures.TOP - figures.BOTTOM
    assert [s["height"] for s in bar.segments] == [
        round(3 / 5 * inner, 2),
        round(1 / 5 * inner, 2),
        round(inner / 5, 2),
    ]
    assert bar.segments[0]["y"] + bar.segments[0]["height"] == chart.baseline  # sits on the baseline
    assert bar.segments[1]["y"] + bar.segments[1]["height"] == bar.segments[0]["y"]  # on top of the one below
    assert bar.segments[-1]["y"] == figures.TOP  # the busiest bar reaches the top
    assert [tick["value"] for tick in chart.ticks] == [0, 2, 5]
    assert chart.totals == {"passed": 3, "failed": 1, "errored": 0, "abandoned": 0, "running": 1}
    assert all(not other.segments for other in chart.bars[:-1])


def test_it_ignores_rows_outside_the_buckets_and_unknown_statuses():
    chart = figures.chart(
        [(NOW - timedelta(days=2), "passed", 9), (datetime(2026, 3, 4, 14, tzinfo=UTC), "weird", 4)], HOUR, NOW
    )
    assert chart.total == 0
    assert chart.description == "No runs in this period."


def test_it_describes_the_chart_in_words_for_its_text_alternative():
    rows = [(datetime(2026, 3, 4, 9, tzinfo=UTC), "passed", 2), (datetime(2026, 3, 4, 10, tzinfo=UTC), "failed", 3)]
    chart = figures.chart(rows, HOUR, NOW)
    assert chart.description == "5 runs (2 passed, 3 failed); the busiest was 10:00 with 3."
    assert chart.bars[-6].title == "10:00: 3 runs (3 failed)"
    days = figures.chart([(datetime(2026, 3, 2, tzinfo=UTC), "passed", 1)], DAY, NOW)
    assert days.bars[-3].title == "Mon 02 Mar: 1 run (1 passed)"


def test_it_rounds_the_axis_up_to_one_two_or_five_times_a_power_of_ten():
    assert [figures._axis_max(n) for n in (0, 1, 2, 3, 6, 11, 21, 51, 101)] == [1, 1, 2, 5, 10, 20, 50, 100, 200]


def test_it_labels_about_eight_bars_so_that_labels_stay_readable():
    chart = figures.chart([], HOUR, NOW)
    assert sum(bar.show_label for bar in chart.bars) == 8
    assert all(bar.show_label for bar in figures.chart([], DAY, NOW).bars)


def test_it_lists_scenarios_whose_pass_rate_dropped_biggest_drop_first():
    rows = [
        ("checkout", False, "passed", 4),  # 100% before
        ("checkout", True, "passed", 1),
        ("checkout", True, "failed", 3),  # 25% now
        ("search", False, "passed", 1),
        ("search", False, "failed", 1),  # 50% before
        ("search", True, "passed", 1),
        ("search", True, "errored", 2),  # 33% now
        ("steady", False, "passed", 2),
        ("steady", True, "passed", 5),  # no drop
        ("new", True, "failed", 2),  # nothing before to compare with
        ("running-only", False, "passed", 1),
        ("running-only", True, "running", 3),  # nothing finished now
    ]
    drops = figures.pass_rate_drops(rows)
    assert [(d["scenario"], d["before_pct"], d["now_pct"], d["failed"], d["finished"]) for d in drops] == [
        ("checkout", 100, 25, 3, 4),
        ("search", 50, 33, 2, 3),
    ]


def test_it_names_a_run_s_client_by_its_user_agent_protocol_and_source():
    keys = figures.client_keys(
        [
            ("r1", None, "openai", "endpoint"),
            ("r1", "OpenAI/Python 1.99.0", "openai", "endpoint"),  # a named agent wins over none
            ("r2", "", "anthropic", "pytest"),
        ]
    )
    assert keys["r1"] == ClientKey("OpenAI/Python 1.99.0", "openai", "endpoint")
    assert keys["r2"].label == "unnamed pytest client"


def test_it_ranks_clients_by_the_median_time_of_their_responses():
    sdk, curl = ClientKey("OpenAI/Python", "openai", "endpoint"), ClientKey("curl/8", "openai", "endpoint")
    keys = {"a": sdk, "b": sdk, "c": curl}
    responses = [("a", 5.0, 100.0), ("a", 6.0, 300.0), ("b", None, 200.0), ("c", 1.0, 50.0), ("c", 1.0, None)]
    rows = figures.slowest_clients(keys, responses + [("unknown-run", 1.0, 9999.0)])
    assert [(r["client"], r["median_ms"], r["ttfb_ms"], r["responses"], r["runs"]) for r in rows] == [
        (sdk, 200.0, 5.5, 3, 2),
        (curl, 50.0, 1.0, 1, 1),
    ]


def event(seq: int, kind: str, turn: int, ms: int, **data: Any) -> dict[str, Any]:
    at = NOW + timedelta(milliseconds=ms)
    return {"seq": seq, "timestamp": at, "kind": kind, "turn": turn, "data": data}


def test_it_counts_the_injected_failures_each_client_retried():
    patient, careless = ClientKey("patient/1", "openai", "endpoint"), ClientKey("careless/1", "openai", "endpoint")
    retried = [
        event(1, "request", 1, 0),
        event(2, "failure_injected", 1, 1, status="rate_limit", attempt=1, of=2, retry_after_ms=100),
        event(3, "response", 1, 2, status=429),
        event(4, "request", 1, 200),
        event(5, "failure_injected", 1, 201, status="rate_limit", attempt=2, of=2, retry_after_ms=100),
        event(6, "response", 1, 202, status=429),
        event(7, "request", 1, 500),
        event(8, "response", 1, 501, status=200),
    ]
    went_on = [
        event(1, "request", 1, 0),
        event(2, "failure_injected", 1, 1, status="network_error", attempt=1, of=1),
        event(3, "response", 1, 2, status=None),
        event(4, "request", 2, 10),
    ]
    calm = [event(1, "request", 1, 0), event(2, "response", 1, 5, status=200)]
    keys = {"r1": patient, "r2": careless, "r3": careless}
    rows = figures.most_retried_clients(keys, {"r1": retried, "r2": went_on, "r3": calm})
    assert [(r["client"], r["retries"], r["failures"], r["went_on"], r["runs"]) for r in rows] == [
        (patient, 2, 2, 0, 1),
        (careless, 0, 1, 1, 1),
    ]
    assert figures.most_retried_clients(keys, {"r3": calm}) == []
