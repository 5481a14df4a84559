"""The scenario list through the Django test client: who may see it, search, tags, counts, escaping."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from scenarios_app.models import Scenario
from tests.conftest import make_run, make_scenario
from tests.scenario_views_helpers import HTMX, editor_post, make_tool_scenario, new_data
from tests.scenario_views_helpers import client_fixture as client_fixture  # a fixture: pytest finds it by name
from tests.scenario_views_helpers import user_fixture as user_fixture  # a fixture: pytest finds it by name

pytestmark = pytest.mark.django_db


# -- access -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/scenarios/"),
        ("get", "/scenarios/new/"),
        ("get", "/scenarios/demo/"),
        ("get", "/scenarios/demo/export/"),
        ("get", "/scenarios/import/"),
        ("post", "/scenarios/editor/validate/"),
        ("post", "/scenarios/editor/save/"),
        ("post", "/scenarios/editor/preview/"),
        ("post", "/scenarios/demo/delete/"),
        ("post", "/scenarios/demo/versions/1/restore/"),
    ],
)
def test_it_sends_anonymous_visitors_to_the_login_page(method: str, url: str) -> None:
    make_scenario("demo")

    response = getattr(Client(), method)(url)

    assert response.status_code == 302
    assert response["Location"].startswith(f"/login/?next={url}")
    assert Scenario.objects.filter(id="demo").exists()


def test_it_refuses_posts_without_a_csrf_token(user: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    make_scenario("demo")

    assert client.post("/scenarios/demo/delete/").status_code == 403
    assert client.post("/scenarios/editor/save/", editor_post(new_data())).status_code == 403
    assert Scenario.objects.filter(id="demo").exists()
    assert not Scenario.objects.filter(id="fresh").exists()


# -- the list -----------------------------------------------------------------------------------------------------


@pytest.mark.backends
def test_it_lists_scenarios_with_turns_last_status_and_pass_rate(client: Client) -> None:
    make_tool_scenario("weather", tags=["tools"])
    make_scenario("plain")
    now = timezone.now()
    make_run(scenario_id="weather", status="passed", started_at=now - dt.timedelta(minutes=30))
    make_run(scenario_id="weather", status="failed", started_at=now - dt.timedelta(minutes=20))
    make_run(scenario_id="weather", status="passed", started_at=now - dt.timedelta(minutes=10))
    make_run(scenario_id="weather", status="running", started_at=now - dt.timedelta(minutes=1))

    response = client.get("/scenarios/")

    rows = {row["id"]: row for row in response.context["rows"]}
    assert rows["weather"]["turns"] == 2
    assert rows["weather"]["last_status"] == "running"
    assert (rows["weather"]["passed"], rows["weather"]["finished"], rows["weather"]["pass_rate"]) == (2, 3, 67)
    assert rows["plain"]["last_status"] == ""
    assert rows["plain"]["pass_rate"] is None
    assert b"67%" in response.content
    assert b"never run" in response.content


@pytest.mark.backends
def test_it_counts_runs_in_one_query_whatever_the_number_of_rows(client: Client, django_assert_num_queries) -> None:
    make_scenario("one")
    make_run(scenario_id="one", status="passed")
    client.get("/scenarios/")  # warm the session and user caches
    with django_assert_num_queries(4) as one:  # session, user, tags, rows
        client.get("/scenarios/")
    for n in range(8):
        make_scenario(f"more-{n}")
        make_run(scenario_id=f"more-{n}", status="failed")
    with django_assert_num_queries(len(one.captured_queries)):
        client.get("/scenarios/")


def test_it_searches_ids_and_descriptions_with_an_htmx_partial(client: Client) -> None:
    make_scenario("alpha", description="Refund flow")
    make_scenario("beta", description="Weather")
    make_scenario("refund-two")

    response = client.get("/scenarios/", {"q": "refund"}, **HTMX)

    assert [row["id"] for row in response.context["rows"]] == ["alpha", "refund-two"]
    assert response.templates[0].name == "scenarios_app/scenario_table.html"
    assert b"<html" not in response.content
    assert "HX-Request" in response["Vary"]


def test_it_serves_the_whole_page_for_a_history_restore(client: Client) -> None:
    response = client.get("/scenarios/", {"q": "x"}, HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")

    assert b"<html" in response.content


@pytest.mark.backends
def test_it_filters_by_tag(client: Client) -> None:
    make_scenario("a", tags=["tools", "weather"])
    make_scenario("b", tags=["tools"])
    make_scenario("c")

    response = client.get("/scenarios/", {"tag": "weather"})

    assert [row["id"] for row in response.context["rows"]] == ["a"]
    assert response.context["tags"] == ["tools", "weather"]
    assert b'<option value="weather" selected>' in response.content


def test_it_escapes_user_content_on_the_list_and_in_the_editor(client: Client) -> None:
    make_scenario("xss", description="<script>alert(1)</script>", tags=["<b>t</b>"])

    for url in ("/scenarios/", "/scenarios/xss/"):
        content = client.get(url).content
        assert b"<script>alert(1)</script>" not in content
        assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in content
        assert b"<b>t</b>" not in content
