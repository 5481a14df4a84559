"""A trace log's outcome through the REST upload: given (``outcome``, any case) or read from the file's SUCCESS /
FAILED footer when not given; an explicit blank means none; anything else is a 422 naming the field."""

from __future__ import annotations

import pytest

from runs_app.models import TraceLog
from tests.conftest import make_client, make_run

pytestmark = pytest.mark.django_db


def test_it_reads_the_footer_when_no_outcome_is_given() -> None:
    run = make_run()
    batch = [
        {"turnNumber": 1, "filePath": "logs/2026-11-24/10-00-01_r1.log", "content": "planner ok\n=== SUCCESS ===\n"},
        {"turnNumber": 2, "filePath": "logs/2026-11-24/10-00-09_r2.log", "content": "boom\nFAILED: timeout\n\n"},
        {"turnNumber": 3, "filePath": "logs/2026-11-24/10-00-20_r3.log", "content": "still running"},
    ]

    response = make_client().post(f"/runs/{run.id}/trace-logs", json=batch)

    assert response.status_code == 207
    stored = TraceLog.objects.filter(run=run).order_by("turn_number")
    assert [(log.turn_number, log.outcome) for log in stored] == [(1, "success"), (2, "failed"), (3, "")]


def test_a_given_outcome_wins_over_the_footer() -> None:
    run = make_run()
    log = {"turn_number": 1, "file_path": "a.log", "content": "SUCCESS", "outcome": "FAILED"}

    response = make_client().post(f"/runs/{run.id}/trace-logs", json=log)

    assert response.status_code == 201
    assert response.json()["outcome"] == "failed"
    assert TraceLog.objects.get(run=run).outcome == "failed"


def test_a_blank_outcome_says_none_whatever_the_footer() -> None:
    run = make_run()

    response = make_client().post(
        f"/runs/{run.id}/trace-logs", json={"turn_number": 1, "file_path": "a.log", "content": "FAILED", "outcome": ""}
    )

    assert response.status_code == 201
    assert TraceLog.objects.get(run=run).outcome == ""


def test_an_unknown_outcome_is_a_422_naming_the_field() -> None:
    run = make_run()

    response = make_client().post(
        f"/runs/{run.id}/trace-logs", json={"turn_number": 1, "file_path": "a.log", "content": "x", "outcome": "ok"}
    )

    assert response.status_code == 422
    assert [error["field"] for error in response.json()["errors"]] == ["body.outcome"]
    assert not TraceLog.objects.exists()
