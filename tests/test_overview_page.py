"""The overview page (the home after log-in) through the test client and its socket: access, each widget and its
link, escaping, the empty state, the number of queries, and the live re-render."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from harnessweb.routing import websocket_urlpatterns
from runs_app.endpoint.recorder import RUNS_GROUP
from runs_app.models import Run, RunEvent
from tests.conftest import make_run, make_user, make_verdict

pytestmark = pytest.mark.django_db
HOSTILE = '<script>alert("x")</script>&'


def make_client_run(agent: str = "OpenAI/Python 1.99.0", *, failures: int = 0, **fields: Any) -> Run:
    """A played run whose requests carry ``agent``; with ``failures``, that many rate limits each retried."""
    run = make_run(**{"status": "passed", "started_at": timezone.now() - dt.timedelta(minutes=5), **fields})
    at = run.started_at
    rows = [("request", {"headers": {"user-agent": agent}, "body": {}})]
    for _ in range(failures):
        rows += [
            ("failure_injected", {"status": "rate_limit", "attempt": 1, "of": failures, "retry_after_ms": 10}),
            ("response", {"status": 429, "ttfb_ms": 1.0, "duration_ms": 2.0}),
            ("request", {"headers": {"user-agent": agent}, "body": {}}),
        ]
    rows.append(("response", {"status": 200, "ttfb_ms": 4.0, "duration_ms": 800.0}))
    for seq, (kind, data) in enumerate(rows, start=1):
        RunEvent.objects.create(
            run=run, seq=seq, timestamp=at + dt.timedelta(milliseconds=seq * 50), kind=kind, turn=1, data=data
        )
    return run


def body(response: Any) -> str:
    assert response.status_code == 200
    return response.content.decode()


# -- access and home -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/?period=7d"])
def test_it_sends_anonymous_visitors_to_log_in(client, path):
    response = client.get(path)
    assert response.status_code == 302 and response["Location"].startswith("/login/?next=")


def test_it_is_the_page_the_log_in_form_lands_on(client):
    make_user("alice")
    response = client.post("/login/", {"username": "alice", "password": "pw"})
    assert response.status_code == 302 and response["Location"] == "/"
    page = body(client.get("/"))
    assert "<h1>Overview</h1>" in page
    assert '<a href="/" aria-current="page">Overview</a>' in page
    assert client.get("/runs/").status_code == 200  # the runs list keeps its address


def test_it_shows_staff_the_review_queue_and_others_its_count_alone(client, admin_client):
    make_verdict(overall="FAIL")
    staff_page = body(admin_client.get("/"))
    assert re.search(r'<a href="/admin/runs_app/judgeverdict/queue/">1</a>', staff_page)
    client.force_login(make_user("viewer"))
    page = body(client.get("/"))
    assert '<p class="big">1</p>' in page and "judgeverdict/queue" not in page
    assert "staff review them in the admin" in page


# -- the empty state ---------------------------------------------------------------------------------------------


def test_it_says_where_to_point_an_sdk_when_there_are_no_runs(admin_client):
    page = body(admin_client.get("/"))
    assert "No runs yet: point your SDK at http://testserver/v1" in page
    assert 'OpenAI(base_url="http://testserver/v1"' in page
    assert 'Anthropic(base_url="http://testserver"' in page
    assert "genai.Client(" in page and "curl http://testserver/v1/chat/completions" in page
    assert "<svg" not in page
    make_run()
    assert "No runs yet" not in body(admin_client.get("/"))


# -- the widgets and their links ----------------------------------------------------------------------------------


def test_it_draws_the_runs_as_stacked_bars_linking_to_their_hour_or_day(admin_client):
    now = timezone.now()
    make_run(status="passed", started_at=now)
    make_run(status="failed", started_at=now)
    make_run(status="passed", started_at=now - dt.timedelta(days=3))  # outside the last 24 hours
    page = body(admin_client.get("/"))
    day = timezone.localdate().isoformat()
    hour = timezone.localtime(now).strftime("%Y-%m-%dT%H")
    assert 'role="img" aria-labelledby="chart-title chart-desc"' in page
    assert '<desc id="chart-desc">2 runs (1 passed, 1 failed); the busiest was' in page
    # An hourly bar opens its hour, not its whole day.
    assert f'<a href="/runs/?hour={hour}&amp;status=failed"><rect class="seg seg-failed"' in page
    assert page.count('<rect class="seg ') == 2
    assert f'<a href="/runs/?hour={hour}">' in page  # the table of figures, one row per hour
    assert "?date=" not in page
    assert "click a bar for that hour's runs" in page
    week = body(admin_client.get("/?period=7d"))
    assert "Runs per day, last 7 days" in week and week.count('<rect class="seg ') == 3
    assert f'<a href="/runs/?date={day}">' in week and "click a bar for that day's runs" in week
    assert "Runs per hour, last 24 hours" in body(admin_client.get("/?period=nonsense"))


def test_it_lists_scenarios_whose_pass_rate_dropped_escaped(admin_client):
    now = timezone.now()
    make_run(scenario_id=HOSTILE, status="passed", started_at=now - dt.timedelta(hours=30))
    make_run(scenario_id=HOSTILE, status="failed", started_at=now - dt.timedelta(hours=1))
    page = body(admin_client.get("/"))
    assert HOSTILE not in page and "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in page
    link = "/runs/?scenario=%3Cscript%3Ealert%28%22x%22%29%3C%2Fscript%3E%26&amp;status=failed"
    assert f'<a href="{link}">' in page
    section = page.split('id="widget-drops"')[1].split("</section>")[0]
    assert "<td>100%</td>" in section and '<td class="bad">0%</td>' in section


def test_it_ranks_the_slowest_and_the_most_retried_clients(admin_client):
    make_client_run("Slow-SDK/1.0")
    make_client_run("Retrying-SDK/2.0", failures=2, protocol="anthropic")
    page = body(admin_client.get("/"))
    slowest = page.split('id="widget-slowest"')[1].split("</section>")[0]
    assert '<a href="/runs/?protocol=openai&amp;source=endpoint">Slow-SDK/1.0</a>' in slowest
    assert "800 ms" in slowest
    retried = page.split('id="widget-retried"')[1].split("</section>")[0]
    assert '<a href="/runs/?protocol=anthropic&amp;source=endpoint">Retrying-SDK/2.0</a>' in retried
    assert "<td>2</td><td>2</td><td>0</td>" in retried
    assert "Slow-SDK" not in retried  # no failure injected: not listed


def test_it_links_each_provider_s_coverage_gaps_to_their_evidence(admin_client):
    page = body(admin_client.get("/"))
    section = page.split('id="widget-coverage"')[1].split("</section>")[0]
    assert '<a href="/coverage/">Coverage gaps</a>' in section
    assert re.search(r'<a href="/coverage/[\w-]+/[\w_]+/" class="gap-missing"', section)


def test_it_keeps_the_chart_s_coordinates_unlocalized_in_a_comma_language():
    from django.utils import translation

    from runs_app.overview.presenters import render_widgets

    make_run(status="passed")
    with translation.override("de"):
        html = render_widgets("24h", staff=False, base_url="http://h")
    coordinates = re.findall(r' (?:x|y|width|height)="([^"]*)"', html)
    assert coordinates and all("," not in value for value in coordinates)
    assert any("." in value for value in coordinates)


# -- cost ----------------------------------------------------------------------------------------------------------


def test_it_costs_the_same_few_queries_whatever_the_number_of_runs(admin_client, django_assert_max_num_queries):
    for i in range(3):
        make_client_run(f"agent-{i}", failures=1, scenario_id=f"s{i}")
    with django_assert_max_num_queries(18) as few:  # two of them the cost widget's (prices, responses)
        body(admin_client.get("/?period=7d"))
    for i in range(30):
        make_client_run(f"agent-{i % 5}", failures=i % 3, scenario_id=f"s{i % 7}")
        make_run(status="failed", scenario_id=f"s{i % 7}", started_at=timezone.now() - dt.timedelta(hours=30))
    with django_assert_max_num_queries(18) as many:
        body(admin_client.get("/?period=7d"))
    assert len(many.captured_queries) == len(few.captured_queries)


# -- live ------------------------------------------------------------------------------------------------------------


def as_user(user: Any) -> Any:
    application = URLRouter(websocket_urlpatterns)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        return await application({**scope, "user": user}, receive, send)

    return app


@pytest.mark.django_db(transaction=True)
async def test_it_re_renders_the_widgets_when_a_run_changes():
    user = await sync_to_async(make_user)("watcher")
    headers = [(b"host", b"harness.test:8000")]
    communicator = WebsocketCommunicator(as_user(user), "/ws/overview/?period=7d", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    first = await communicator.receive_from(timeout=3)  # the catch-up render
    assert '<div id="overview-widgets" class="overview" hx-swap-oob="true"' in first
    assert "point your SDK at http://harness.test:8000/v1" in first
    run = await sync_to_async(make_run)(status="failed", scenario_id="live-one")
    await get_channel_layer().group_send(
        RUNS_GROUP, {"type": "runs.changed", "runs": [{"run": str(run.id), "status": "failed"}]}
    )
    html = await communicator.receive_from(timeout=3)
    assert "Runs per day, last 7 days" in html
    assert "1 run (1 failed); the busiest was" in html
    assert '<rect class="seg seg-failed"' in html
    await communicator.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_it_renders_again_for_a_change_that_came_during_a_render(monkeypatch):
    from runs_app.live import consumers

    started, release = asyncio.Event(), asyncio.Event()
    renders: list[str] = []

    async def slow_render(period: str, *, staff: bool, base_url: str) -> str:
        renders.append(period)
        started.set()
        if len(renders) == 1:
            await release.wait()
        return f"<p>render {len(renders)}</p>"

    monkeypatch.setattr(consumers, "render_overview", slow_render)
    monkeypatch.setattr(consumers.OverviewConsumer, "batch_s", 0.01)
    user = await sync_to_async(make_user)("watcher")
    communicator = WebsocketCommunicator(as_user(user), "/ws/overview/")
    assert (await communicator.connect())[0]
    await asyncio.wait_for(started.wait(), 3)  # the catch-up render is reading the figures
    await get_channel_layer().group_send(
        RUNS_GROUP, {"type": "runs.changed", "runs": [{"run": "r", "status": "passed"}]}
    )
    await asyncio.sleep(0.05)
    release.set()
    assert await communicator.receive_from(timeout=3) == "<p>render 1</p>"
    assert await communicator.receive_from(timeout=3) == "<p>render 2</p>"
    assert await communicator.receive_nothing(timeout=0.1)
    await communicator.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_it_refuses_an_anonymous_socket():
    communicator = WebsocketCommunicator(as_user(AnonymousUser()), "/ws/overview/")
    connected, code = await communicator.connect()
    assert not connected and code == 4403
