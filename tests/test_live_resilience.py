"""Client resilience read from a run's events: waits against Retry-After, backoff, giving up, going on."""

from datetime import UTC, datetime, timedelta
from typing import Any

from runs_app.live.resilience import (
    GAVE_UP,
    HONOURED,
    NO_ADVICE,
    RETRIED,
    TOO_EARLY,
    WAITED_OUT,
    WAITING,
    WENT_ON,
    analyse,
    format_ms,
)

START = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def make_events(*steps: tuple[float, str, int | None, dict[str, Any]]) -> list[dict[str, Any]]:
    """Events as recorded, from (milliseconds after the start, kind, turn, data) tuples, numbered in order."""
    return [
        {"seq": i, "timestamp": START + timedelta(milliseconds=at), "kind": kind, "turn": turn, "data": data}
        for i, (at, kind, turn, data) in enumerate(steps, start=1)
    ]


def make_failure(at: float, turn: int, status: str = "rate_limit", *, attempt: int = 1, of: int = 1, **data: Any):
    """A failed attempt: request, failure injected, then the failed response ``5 ms`` later."""
    http = {"rate_limit": 429, "model_error": 500, "timeout": 504, "auth_error": 401, "overloaded": 529}.get(
        status, 200
    )
    failure = {
        "status": status,
        "message": "simulated",
        "attempt": attempt,
        "of": of,
        "retryable": data.pop("retryable", True),
        "retry_after_ms": data.pop("retry_after_ms", None),
    }
    response = {"status": http, "failure": status, "dropped": status == "network_error", "stream": True}
    return [
        (at, "request", turn, {"body": {}}),
        (at + 1, "failure_injected", turn, failure),
        (at + 5, "response", turn, response),
    ]


def make_success(at: float, turn: int) -> list[tuple[float, str, int, dict[str, Any]]]:
    return [(at, "request", turn, {"body": {}}), (at + 5, "response", turn, {"status": 200, "text": "ok"})]


def test_it_honours_a_retry_after_that_was_waited_out():
    events = make_events(*make_failure(0, 1, retry_after_ms=200), *make_success(210, 1))
    [failure] = analyse(events).failures
    assert failure.outcome == RETRIED
    assert failure.waited_ms == 205.0
    assert failure.advised_ms == 200
    assert failure.verdict == HONOURED
    assert "honouring the advised 200 ms" in failure.sentence


def test_it_says_too_early_when_the_client_retried_before_the_advice():
    events = make_events(*make_failure(0, 1, retry_after_ms=1000), *make_success(105, 1))
    report = analyse(events)
    [failure] = report.failures
    assert failure.verdict == TOO_EARLY
    assert failure.waited_ms == 100.0
    assert "too early: it was told to wait 1 s" in failure.sentence
    assert any("before the advised Retry-After" in s for s in report.summary)


def test_it_allows_a_few_milliseconds_of_measuring_slack():
    events = make_events(*make_failure(0, 1, retry_after_ms=200), *make_success(195, 1))
    assert analyse(events).failures[0].verdict == HONOURED


def test_it_gives_no_advice_for_a_dropped_stream_even_if_the_scenario_sets_a_time():
    events = make_events(*make_failure(0, 1, "network_error", retry_after_ms=500), *make_success(400, 1))
    [failure] = analyse(events).failures
    assert failure.advised_ms is None
    assert failure.verdict == NO_ADVICE
    assert "no Retry-After was given" in failure.sentence


def test_it_gives_no_advice_when_the_client_hung_up_during_a_timeout():
    events = make_events(
        (0, "request", 1, {}),
        (1, "failure_injected", 1, {"status": "timeout", "attempt": 1, "of": 1, "retry_after_ms": 5000}),
        (300, "client_disconnected", 1, {"after_ms": 300}),
        *make_success(800, 1),
    )
    [failure] = analyse(events).failures
    assert not failure.received
    assert failure.advised_ms is None
    assert failure.waited_ms == 500.0  # from the moment it hung up
    assert "hung up on" in failure.sentence


def test_it_sees_successive_retries_back_off():
    events = make_events(
        *make_failure(0, 2, "model_error", attempt=1, of=3),
        *make_failure(505, 2, "model_error", attempt=2, of=3),
        *make_failure(1510, 2, "model_error", attempt=3, of=3),
        *make_success(3515, 2),
    )
    report = analyse(events)
    assert [f.waited_ms for f in report.failures] == [500.0, 1000.0, 2000.0]
    [backoff] = report.backoff
    assert backoff.turn == 2 and backoff.backed_off
    assert "backing off each time" in backoff.sentence


def test_it_sees_retries_that_do_not_back_off():
    events = make_events(
        *make_failure(0, 1, "model_error", attempt=1, of=2),
        *make_failure(105, 1, "model_error", attempt=2, of=2),
        *make_success(210, 1),
    )
    [backoff] = analyse(events).backoff
    assert backoff.waits_ms == (100.0, 100.0)
    assert not backoff.backed_off and not backoff.followed_advice
    assert "without backing off" in backoff.sentence


def test_it_credits_constant_waits_that_follow_the_advice():
    events = make_events(
        *make_failure(0, 1, attempt=1, of=2, retry_after_ms=200),
        *make_failure(206, 1, attempt=2, of=2, retry_after_ms=200),
        *make_success(412, 1),
    )
    [backoff] = analyse(events).backoff
    assert not backoff.backed_off and backoff.followed_advice
    assert "as each Retry-After advised" in backoff.sentence


def test_it_says_the_client_gave_up_when_no_later_request_came_for_the_turn():
    report = analyse(make_events(*make_failure(0, 1, "model_error")))
    [failure] = report.failures
    assert failure.outcome == GAVE_UP and failure.waited_ms is None
    assert "gave up (no later request for turn 1)" in failure.sentence
    assert "The client gave up on 1 retryable failure." in report.summary


def test_it_says_giving_up_on_a_non_retryable_error_is_right():
    [failure] = analyse(make_events(*make_failure(0, 1, "model_error", retryable=False))).failures
    assert failure.outcome == GAVE_UP
    assert "rightly" in failure.sentence


def test_it_waits_rather_than_judging_a_live_run_with_nothing_after_the_failure():
    [failure] = analyse(make_events(*make_failure(0, 1, retry_after_ms=5000)), live=True).failures
    assert failure.outcome == WAITING


def test_it_flags_a_client_that_went_on_after_a_dropped_stream():
    events = make_events(*make_failure(0, 1, "network_error"), *make_success(300, 2))
    report = analyse(events)
    [failure] = report.failures
    assert failure.outcome == WENT_ON and failure.next_turn == 2
    assert failure.flagged and report.flagged == (failure,)
    assert "went on to turn 2 as if nothing happened" in failure.sentence
    assert report.summary[0] == failure.sentence  # the first thing said


def test_it_flags_a_client_that_went_on_after_a_malformed_response():
    events = make_events(*make_failure(0, 3, "invalid_response"), *make_success(50, 4))
    [failure] = analyse(events).failures
    assert failure.outcome == WENT_ON
    assert "a malformed response (invalid_response)" in failure.sentence


def test_it_does_not_flag_a_client_that_retried_the_dropped_turn_first():
    events = make_events(*make_failure(0, 1, "network_error"), *make_success(500, 1), *make_success(600, 2))
    report = analyse(events)
    assert report.failures[0].outcome == RETRIED
    assert report.flagged == ()
    assert report.summary[0] == "The client retried the injected failure."


def test_it_summarises_a_run_without_failures():
    report = analyse(make_events(*make_success(0, 1)))
    assert not report.has_failures
    assert report.summary == ("No failures were injected on this run, so there is no retry behaviour to judge.",)


def test_it_reads_iso_timestamps_as_broadcast_and_orders_by_seq():
    events = make_events(*make_failure(0, 1, retry_after_ms=100), *make_success(110, 1))
    for event in events:
        event["timestamp"] = event["timestamp"].isoformat()
    report = analyse(list(reversed(events)))
    assert report.failures[0].waited_ms == 105.0
    assert report.summary[0] == ("The client retried the injected failure and honoured every Retry-After it was given.")


def test_it_formats_durations_for_people():
    assert format_ms(None) == "—"
    assert format_ms(850.4) == "850 ms"
    assert format_ms(1250) == "1.25 s"
    assert format_ms(2000) == "2 s"


def test_it_flags_going_on_after_each_broken_body_as_taking_a_broken_answer():
    for status in ("wrong_content_type", "missing_content_type", "invalid_json_in_stream", "invalid_utf8",
                   "truncated_stream"):  # fmt: skip
        [failure] = analyse(make_events(*make_failure(0, 1, status), *make_success(50, 2))).failures
        assert failure.outcome == WENT_ON and failure.flagged, status
        assert f"({status})" in failure.sentence and "as if nothing happened" in failure.sentence


def test_it_counts_a_slow_first_byte_sat_through_as_waited_out():
    [failure] = analyse(make_events(*make_failure(0, 1, "slow_first_byte"), *make_success(50, 2))).failures
    assert failure.outcome == WAITED_OUT and not failure.flagged
    assert failure.sentence == (
        "Turn 1, failure 1 of 1, a slow first byte (slow_first_byte): the client waited for the answer that followed."
    )
    # A client that hung up during the stall and asked again retried.
    events = make_events(
        (0, "request", 1, {"body": {}}),
        (1, "failure_injected", 1, {"status": "slow_first_byte", "attempt": 1, "of": 1, "retry_after_ms": 5000}),
        (300, "client_disconnected", 1, {}),
        *make_success(400, 1),
    )
    [failure] = analyse(events).failures
    assert failure.outcome == RETRIED and "a slow_first_byte it hung up on" in failure.sentence


def test_it_reads_provider_errors_that_always_fail_with_their_status():
    failures = analyse(
        make_events(
            *make_failure(0, 1, "auth_error", of=2**31 - 1, retryable=False),
            *make_failure(50, 1, "overloaded", attempt=2, of=2**31 - 1, retry_after_ms=10),
        )  # fmt: skip
    ).failures
    assert failures[0].sentence.startswith("Turn 1, failure 1 (it always fails), auth_error (HTTP 401): the client")
    assert failures[1].advised_ms == 10 and "overloaded (HTTP 529)" in failures[1].sentence
