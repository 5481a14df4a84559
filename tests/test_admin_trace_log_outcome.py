"""Each turn's trace log with its outcome in the admin: the run's inline, the trace log list (with a filter) and the
log's own page show the footer's SUCCESS or FAILED as a badge, a log without a footer as "no footer"."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import change_url, changelist, listed_pks, make_run, make_trace_log, shows_badge, text

pytestmark = pytest.mark.django_db


def test_the_run_s_page_shows_each_turn_s_outcome(staff_client: Client) -> None:
    run = make_run()
    make_trace_log(run, turn_number=1, outcome="success")
    make_trace_log(run, turn_number=2, outcome="failed", file_path="/tmp/logs/2026-11-24/10-00-09_r2.log")

    body = text(staff_client.get(change_url(run)))

    assert shows_badge(body, "SUCCESS") and shows_badge(body, "FAILED")
    assert body.index("SUCCESS") < body.index("FAILED")  # in turn order


def test_the_list_shows_and_filters_by_outcome(staff_client: Client) -> None:
    passed = make_trace_log(outcome="success")
    failed = make_trace_log(outcome="failed")
    unfinished = make_trace_log(outcome="")

    body = text(staff_client.get(changelist("runs_app_tracelog")))
    assert shows_badge(body, "SUCCESS") and shows_badge(body, "FAILED") and shows_badge(body, "no footer")
    assert listed_pks(staff_client.get(changelist("runs_app_tracelog", outcome="failed"))) == {failed.pk}
    assert listed_pks(staff_client.get(changelist("runs_app_tracelog", outcome="success"))) == {passed.pk}
    assert unfinished.pk in listed_pks(staff_client.get(changelist("runs_app_tracelog")))


def test_a_log_s_page_shows_its_outcome(staff_client: Client) -> None:
    log = make_trace_log(outcome="failed")

    assert shows_badge(text(staff_client.get(change_url(log))), "FAILED")
