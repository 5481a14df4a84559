"""``POST /api/runs/{id}/calls``: a test's calls recorded as the run's events in the endpoint's own shape, after the
run's events, all or nothing, a 422 naming the call and field."""

from __future__ import annotations

import uuid

import pytest

from runs_app.models import RunEvent
from tests.conftest import make_ci_run, make_client

pytestmark = pytest.mark.django_db

CALL = {
    "protocol": "anthropic",
    "model": "claude",
    "path": "/v1/messages",
    "body": {"model": "claude", "messages": [{"role": "user", "content": "hi"}], "stream": True},
    "answered_by": "configured",
    "response": {"text": "hello", "finish_reason": "stop"},
    "timestamp": "2026-11-23T10:00:00Z",
    "duration_ms": 1.5,
}


def test_it_records_calls_as_events_after_the_runs_own():
    run = make_ci_run()
    RunEvent.objects.create(run=run, seq=1, timestamp=run.started_at, kind="note", data={})
    failed = {**CALL, "response": None, "error": {"status": 429, "kind": "rate_limit", "message": "slow down"}}
    response = make_client().post(f"/runs/{run.id}/calls", json={"calls": [CALL, failed]})
    assert response.status_code == 201 and response.json() == {"calls": 2, "events": 7}
    events = list(run.events.order_by("seq").values_list("seq", "kind"))
    assert [seq for seq, _ in events] == list(range(1, 9))
    assert [kind for _, kind in events[1:]] == [
        "request", "match", "response", "request", "match", "failure_injected", "response",
    ]  # fmt: skip
    response_event = run.events.get(seq=4).data
    assert (response_event["text"], response_event["stream"], response_event["status"]) == ("hello", True, 200)
    assert run.events.get(seq=8).data["status"] == 429
    run.refresh_from_db()
    assert run.protocol == "anthropic"


@pytest.mark.parametrize(
    ("calls", "field"),
    [
        ([{**CALL, "timestamp": "yesterday"}], "body.calls.0.timestamp"),
        ([CALL, {**CALL, "surprise": 1}], "body.calls.1.surprise"),
        ([{k: v for k, v in CALL.items() if k != "path"}], "body.calls.0.path"),
        ([{**CALL, "turn": 0}], "body.calls.0.turn"),
    ],
)
def test_it_refuses_a_bad_call_naming_it_and_writes_nothing(calls, field):
    run = make_ci_run()
    response = make_client().post(f"/runs/{run.id}/calls", json={"calls": calls})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == field
    assert not run.events.exists()


def test_it_answers_404_for_an_unknown_run_and_403_for_a_read_token():
    assert make_client().post(f"/runs/{uuid.uuid4()}/calls", json={"calls": []}).status_code == 404
    run = make_ci_run()
    assert make_client("read").post(f"/runs/{run.id}/calls", json={"calls": [CALL]}).status_code == 403
