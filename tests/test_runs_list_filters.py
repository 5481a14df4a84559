"""The runs list's filters say when a value is not one they take (never ignored silently), its hour filter (what
the overview's hourly bars open), and the run page's small parts: the scenario a refused run asked for, counted
nouns, and its row of actions (judge, pin, compare only when there is something to compare with)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
from django.http import QueryDict
from django.utils import timezone

from runs_app.judging.forms import Selection
from runs_app.live.panels import event_row
from runs_app.models import Run, RunEvent
from tests.conftest import make_run

pytestmark = pytest.mark.django_db


def listed(response: Any) -> list[str]:
    return [row["run"].scenario_id for row in response.context["rows"]]


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("date=yesterday", "date: &#x27;yesterday&#x27; is not a date (YYYY-MM-DD)."),
        ("status=green", "status: &#x27;green&#x27; is not one of running, passed, failed"),
        ("protocol=grpc", "protocol: &#x27;grpc&#x27; is not one of openai"),
        ("source=laptop", "source: &#x27;laptop&#x27; is not one of endpoint, ci, pytest."),
        ("hour=noon", "hour: &#x27;noon&#x27; is not an hour (YYYY-MM-DDTHH, local time)."),
    ],
)
def test_it_says_which_filter_value_it_does_not_take_and_lists_nothing(admin_client, query, says):
    make_run(scenario_id="weather", status="passed")
    response = admin_client.get(f"/runs/?{query}")
    html = response.content.decode()
    assert response.status_code == 400
    assert says in html and 'class="alert bad filter-problem"' in html
    assert listed(response) == []  # never every run, as if the filter were not there
    assert "No runs listed until the filter above is fixed." in html
    # The table alone (an htmx filter request) says the same.
    partial = admin_client.get(f"/runs/?{query}", headers={"HX-Request": "true"})
    assert partial.status_code == 400 and says in partial.content.decode()


def test_a_judge_selection_with_a_filter_it_does_not_take_judges_nothing():
    make_run(scenario_id="weather", status="passed")
    assert Selection(QueryDict("date=yesterday")).runs() == []  # not every run, as before
    assert [r.scenario_id for r in Selection(QueryDict("status=passed")).runs()] == ["weather"]


def test_the_hour_filter_lists_the_runs_started_in_that_local_hour(admin_client, settings):
    settings.TIME_ZONE = "Europe/Paris"
    timezone.activate("Europe/Paris")
    try:
        paris = timezone.get_current_timezone()
        make_run(scenario_id="before", started_at=dt.datetime(2026, 3, 2, 13, 59, 59, tzinfo=paris))
        make_run(scenario_id="in", started_at=dt.datetime(2026, 3, 2, 14, 0, tzinfo=paris))
        make_run(scenario_id="late-in", started_at=dt.datetime(2026, 3, 2, 14, 59, 59, tzinfo=paris))
        make_run(scenario_id="after", started_at=dt.datetime(2026, 3, 2, 15, 0, tzinfo=paris))
        response = admin_client.get("/runs/?hour=2026-03-02T14")
        assert response.status_code == 200 and listed(response) == ["late-in", "in"]
        # A browser's datetime field sends minutes: the hour holding them.
        assert listed(admin_client.get("/runs/?hour=2026-03-02T14:30")) == ["late-in", "in"]
        assert 'name="hour" value="2026-03-02T14"' in response.content.decode()
    finally:
        timezone.deactivate()


def test_the_runs_count_has_an_element_the_live_list_updates(admin_client):
    make_run(scenario_id="one")
    html = admin_client.get("/runs/").content.decode()
    assert '<span id="runs-count" data-count="1">1 run</span>' in html


def request_event(run: Run, headers: dict[str, str]) -> RunEvent:
    data = {"method": "POST", "path": "/v1/chat/completions", "headers": headers, "body": {"model": "m"}}
    return RunEvent.objects.create(run=run, seq=1, timestamp=run.started_at, kind="request", turn=1, data=data)


def test_a_refused_run_reads_the_scenario_it_asked_for(admin_client):
    reason = "Scenario 'chekout-flow' not found (from the x-harness-scenario header)"
    run = make_run(scenario_id="", mode="scenario", status="errored", status_reason=reason)
    request_event(run, {"x-harness-scenario": "chekout-flow"})
    page = admin_client.get(f"/runs/{run.id}/").content.decode()
    assert "<h1>chekout-flow " in page
    assert '<dd>chekout-flow <small class="muted">(not found)</small>' in page
    row = admin_client.get("/runs/").content.decode()
    assert f'<a href="/runs/{run.id}/">chekout-flow</a> <small class="muted">(not found)</small>' in row
    assert f'<a class="muted" href="/runs/{run.id}/">scenario</a>' not in row


def test_a_run_without_a_scenario_still_reads_its_mode(admin_client):
    run = make_run(scenario_id="", mode="lorem", status="passed")
    request_event(run, {})
    assert f'<a class="muted" href="/runs/{run.id}/">lorem</a>' in admin_client.get("/runs/").content.decode()


def test_a_response_of_one_chunk_says_one_chunk():
    run = make_run()
    data = {"status": 200, "finish_reason": "stop", "chunks": 1, "ttfb_ms": 1, "duration_ms": 2}
    event = RunEvent.objects.create(run=run, seq=2, timestamp=run.started_at, kind="response", turn=1, data=data)
    assert "· 1 chunk ·" in event_row(event, run.started_at)["summary"]
    event.data = {**data, "chunks": 3}
    assert "· 3 chunks ·" in event_row(event, run.started_at)["summary"]


def test_the_run_page_s_actions_share_one_row_and_compare_only_with_another_run(admin_client):
    alone = make_run(scenario_id="weather", status="failed")
    page = admin_client.get(f"/runs/{alone.id}/").content.decode()
    actions = page[page.index('<div id="run-actions"') : page.index('<section id="run-header"')]
    assert "Judge this run" in actions and ">Pin</button>" in actions
    assert "compare-with" not in page  # nothing to compare with: no empty "Compare with"
    earlier = make_run(scenario_id="weather", status="passed", started_at=timezone.now() - dt.timedelta(minutes=1))
    page = admin_client.get(f"/runs/{alone.id}/").content.decode()
    actions = page[page.index('<div id="run-actions"') : page.index('<section id="run-header"')]
    assert 'class="compare-with"' in actions and f'value="{earlier.id}"' in actions


def test_a_page_waiting_for_its_run_gains_its_actions_once_the_run_exists(admin_client):
    run_id = uuid.uuid4()
    waiting = admin_client.get(f"/runs/{run_id}/?live=1").content.decode()
    assert '<div id="run-actions" class="run-actions">' in waiting and "Judge this run" not in waiting
    assert admin_client.get(f"/runs/{run_id}/actions/").status_code == 404
    make_run(id=run_id, scenario_id="weather")
    actions = admin_client.get(f"/runs/{run_id}/actions/").content.decode()
    assert actions.lstrip().startswith('<div id="run-actions" class="run-actions" data-ready>')
    assert "Judge this run" in actions and ">Pin</button>" in actions
