"""The runs list through the test client: who may see it, filters, htmx partials, pages."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.utils import timezone

from tests.live_views_helpers import make_played_run, rows_of

pytestmark = pytest.mark.django_db


# -- access ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/runs/", f"/runs/{uuid.uuid4()}/?live=1"])
def test_it_sends_anonymous_visitors_to_log_in(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


# -- the list ----------------------------------------------------------------------------------------------------


def test_it_lists_runs_newest_first(admin_client):
    now = timezone.now()
    make_played_run(scenario_id="older", started_at=now - dt.timedelta(hours=2))
    make_played_run(scenario_id="newest", started_at=now)
    make_played_run(scenario_id="middle", started_at=now - dt.timedelta(hours=1))
    response = admin_client.get("/runs/")
    assert response.status_code == 200
    assert rows_of(response) == ["newest", "middle", "older"]
    assert b'id="runs-body"' in response.content
    assert b'ws-connect="/ws/runs/?page=1&amp;since=' in response.content


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("scenario=refund", ["refund"]),
        ("status=failed", ["weather-failed"]),
        ("protocol=anthropic", ["anthropic-one"]),
        ("source=ci", ["from-ci"]),
        ("date=2024-03-01", ["on-march-first"]),
        ("status=passed&protocol=openai&source=endpoint", ["refund", "weather"]),
    ],
)
def test_it_filters_runs(admin_client, query, expected):
    now = timezone.now()
    make_played_run(scenario_id="weather", started_at=now - dt.timedelta(minutes=5))
    make_played_run(scenario_id="refund", started_at=now - dt.timedelta(minutes=4))
    make_played_run(scenario_id="weather-failed", status="failed", started_at=now - dt.timedelta(minutes=3))
    make_played_run(
        scenario_id="anthropic-one", protocol="anthropic", status="running", started_at=now - dt.timedelta(minutes=2)
    )
    make_played_run(scenario_id="from-ci", source="ci", status="running", started_at=now - dt.timedelta(minutes=1))
    make_played_run(
        scenario_id="on-march-first", status="errored", started_at=dt.datetime(2024, 3, 1, 12, tzinfo=dt.UTC)
    )
    response = admin_client.get(f"/runs/?{query}")
    assert rows_of(response) == expected


def test_it_answers_an_htmx_filter_with_the_table_alone_and_a_socket_that_knows_the_filters(admin_client):
    make_played_run(scenario_id="refund", status="failed")
    response = admin_client.get("/runs/?status=failed&protocol=openai", headers={"HX-Request": "true"})
    html = response.content.decode()
    assert "<html" not in html
    assert html.lstrip().startswith('<div id="runs-table"')
    assert "/ws/runs/?status=failed&amp;protocol=openai&amp;page=1&amp;since=" in html
    assert rows_of(response) == ["refund"]


def test_it_gives_a_history_restore_the_whole_page(admin_client):
    response = admin_client.get("/runs/", headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert b"<html" in response.content


def test_it_paginates_and_keeps_the_filters_in_the_pager(admin_client):
    now = timezone.now()
    for i in range(30):
        make_played_run(scenario_id=f"run-{i:02}", status="failed", started_at=now - dt.timedelta(seconds=i))
    make_played_run(scenario_id="passed-one")
    first = admin_client.get("/runs/?status=failed")
    assert rows_of(first) == [f"run-{i:02}" for i in range(25)]
    assert first.context["next_query"] == "status=failed&page=2"
    assert b"Page 1 of 2" in first.content
    second = admin_client.get("/runs/?status=failed&page=2")
    assert rows_of(second) == [f"run-{i:02}" for i in range(25, 30)]
    assert second.context["previous_query"] == "status=failed&page=1"
    assert second.context["next_query"] == ""
    assert "page=2" in second.context["socket_url"]


def test_it_says_so_when_no_run_matches(admin_client):
    response = admin_client.get("/runs/?scenario=nothing-like-this")
    assert b'id="runs-empty"' in response.content
    assert b"No runs match these filters." in response.content
