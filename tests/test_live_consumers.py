"""The live pages' sockets through channels' WebsocketCommunicator and the in-memory channel layer."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.utils import timezone

from harnessweb.routing import websocket_urlpatterns
from runs_app.endpoint.recorder import RUNS_GROUP, event_payload, group_name
from runs_app.models import Run, RunEvent
from tests.conftest import make_run, make_user

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = (b"origin", b"http://127.0.0.1:8000")


def make_event(run: Run, seq: int, kind: str, turn: int | None = 1, **data: Any) -> RunEvent:
    return RunEvent.objects.create(
        run=run, seq=seq, timestamp=run.started_at + dt.timedelta(milliseconds=seq), kind=kind, turn=turn, data=data
    )


def as_user(application: Any, user: Any) -> Any:
    """The application with ``user`` in every scope, as channels.auth's middleware would put it."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        return await application({**scope, "user": user}, receive, send)

    return app


async def open_socket(path: str, user: Any = None) -> WebsocketCommunicator:
    user = user or await sync_to_async(make_user)()
    communicator = WebsocketCommunicator(as_user(URLRouter(websocket_urlpatterns), user), path)
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def close(communicator: WebsocketCommunicator) -> None:
    await communicator.disconnect()


# -- who may connect ---------------------------------------------------------------------------------------------


async def test_it_refuses_an_anonymous_socket_on_the_real_stack():
    from harnessweb.asgi import application

    for path in ("/ws/runs/", f"/ws/runs/{uuid.uuid4()}/"):
        communicator = WebsocketCommunicator(application, path, headers=[ORIGIN])
        connected, code = await communicator.connect()
        assert not connected
        assert code == 4403


async def test_it_refuses_a_forced_anonymous_user():
    from django.contrib.auth.models import AnonymousUser

    communicator = WebsocketCommunicator(as_user(URLRouter(websocket_urlpatterns), AnonymousUser()), "/ws/runs/")
    connected, _ = await communicator.connect()
    assert not connected


def session_cookie() -> bytes:
    client = Client()
    client.force_login(make_user("cookie-user"))
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def test_it_accepts_a_logged_in_session_from_an_allowed_origin_only():
    from harnessweb.asgi import application

    cookie = await sync_to_async(session_cookie)()
    communicator = WebsocketCommunicator(application, "/ws/runs/", headers=[ORIGIN, (b"cookie", cookie)])
    connected, _ = await communicator.connect()
    assert connected
    await communicator.disconnect()
    # The same cookie from another site's page is refused.
    elsewhere = [(b"origin", b"https://evil.example"), (b"cookie", cookie)]
    communicator = WebsocketCommunicator(application, "/ws/runs/", headers=elsewhere)
    connected, _ = await communicator.connect()
    assert not connected


# -- the run page ------------------------------------------------------------------------------------------------


async def test_it_sends_a_recorded_event_as_the_parts_of_its_turn():
    run = await sync_to_async(make_run)()
    await sync_to_async(make_event)(run, 1, "request", path="/v1/chat/completions", body={"model": "m"})
    communicator = await open_socket(f"/ws/runs/{run.id}/?after=1")
    event = await sync_to_async(make_event)(
        run, 2, "validation", ok=False, problem="Expected temperature 0.2 but received 0.9"
    )
    await get_channel_layer().group_send(group_name(run.id), {"type": "run.events", "events": [event_payload(event)]})
    html = await communicator.receive_from(timeout=3)
    assert 'id="run-header" class="card run-header" hx-swap-oob="true"' in html
    assert 'id="run-resilience"' in html
    assert '<ol id="turn-1-events" class="events" hx-swap-oob="true">' in html
    assert 'id="turn-1-head" class="turn-head" hx-swap-oob="true"' in html
    assert "Validation failed: Expected temperature 0.2 but received 0.9" in html
    assert 'hx-swap-oob="beforeend:#timeline"' not in html  # the page already has turn 1
    assert 'id="turn-1-live"' not in html  # the stream viewer is left to the chunks
    await close(communicator)


async def test_it_appends_streamed_chunks_to_their_blocks_escaped():
    run_id = uuid.uuid4()  # a run the database does not know yet
    communicator = await open_socket(f"/ws/runs/{run_id}/?after=0")
    layer = get_channel_layer()
    pieces = [[0, "reasoning", "Let me "], [0, "reasoning", "think."], [1, "text", "<b>Hi</b> "]]
    await layer.group_send(group_name(run_id), {"type": "run.chunk", "run": str(run_id), "turn": 3, "pieces": pieces})
    html = await communicator.receive_from(timeout=3)
    # A card for the new turn, an empty stream viewer, then the blocks and their text.
    assert html.index('<div hx-swap-oob="beforeend:#timeline"><section id="turn-3"') == 0
    assert '<div id="turn-3-live" class="stream" hx-swap-oob="true"></div>' in html
    assert (
        '<div hx-swap-oob="beforeend:#turn-3-live"><div class="stream-block kind-reasoning" id="turn-3-block-0">'
        in html
    )
    assert '<span hx-swap-oob="beforeend:#turn-3-block-0">Let me think.</span>' in html
    assert '<span hx-swap-oob="beforeend:#turn-3-block-1">&lt;b&gt;Hi&lt;/b&gt; </span>' in html
    assert "<b>Hi" not in html

    more = [[1, "text", "there"], [2, "tool_call", "get_weather"], [2, "arguments", '{"city":']]
    await layer.group_send(group_name(run_id), {"type": "run.chunk", "run": str(run_id), "turn": 3, "pieces": more})
    html = await communicator.receive_from(timeout=3)
    assert "section" not in html and 'id="turn-3-live"' not in html  # same card, same attempt
    assert html.lstrip().startswith('<span hx-swap-oob="beforeend:#turn-3-block-1">there</span>')
    assert 'id="turn-3-block-2"><span class="tool-name">get_weather</span></div>' in html
    assert '<span hx-swap-oob="beforeend:#turn-3-block-2">{&quot;city&quot;:</span>' in html
    await close(communicator)


async def test_it_starts_a_fresh_stream_for_the_next_attempt_at_a_turn():
    run = await sync_to_async(make_run)()
    communicator = await open_socket(f"/ws/runs/{run.id}/?after=0")
    layer = get_channel_layer()
    chunk = {"type": "run.chunk", "run": str(run.id), "turn": 1, "pieces": [[0, "text", "partial "]]}
    await layer.group_send(group_name(run.id), chunk)
    assert 'id="turn-1-live" class="stream" hx-swap-oob="true"' in await communicator.receive_from(timeout=3)
    dropped = await sync_to_async(make_event)(run, 1, "response", failure="network_error", dropped=True)
    await layer.group_send(group_name(run.id), {"type": "run.events", "events": [event_payload(dropped)]})
    assert "Connection dropped mid-response" in await communicator.receive_from(timeout=3)
    await layer.group_send(group_name(run.id), chunk)
    html = await communicator.receive_from(timeout=3)
    assert html.lstrip().startswith('<div id="turn-1-live" class="stream" hx-swap-oob="true"></div>')
    assert 'id="turn-1-block-0"' in html  # the block is created again in the emptied viewer
    await close(communicator)


async def test_it_fills_in_the_whole_answer_once_recorded_for_a_page_opened_mid_stream():
    run = await sync_to_async(make_run)()
    await sync_to_async(make_event)(run, 1, "request", path="/v1/chat/completions", body={"model": "m"})
    communicator = await open_socket(f"/ws/runs/{run.id}/?after=1")
    layer = get_channel_layer()
    tail = {"type": "run.chunk", "run": str(run.id), "turn": 1, "pieces": [[0, "text", "four five"]]}
    await layer.group_send(group_name(run.id), tail)
    await communicator.receive_from(timeout=3)
    answer = await sync_to_async(make_event)(run, 2, "response", text="one two three four five", status=200)
    await layer.group_send(group_name(run.id), {"type": "run.events", "events": [event_payload(answer)]})
    html = await communicator.receive_from(timeout=3)
    stream = html[html.index('<div id="turn-1-live" class="stream" hx-swap-oob="true">') :]
    assert stream.index("one two three four five") < stream.index("</div></div>")
    await close(communicator)


async def test_it_catches_up_on_events_recorded_between_the_page_and_the_socket():
    run = await sync_to_async(make_run)()
    for seq, kind in enumerate(("request", "match", "validation"), start=1):
        await sync_to_async(make_event)(run, seq, kind, turn=1, ok=True)
    await sync_to_async(make_event)(run, 4, "request", turn=2)
    communicator = await open_socket(f"/ws/runs/{run.id}/?after=3")
    first = await communicator.receive_from(timeout=3)
    assert first.lstrip().startswith('<div hx-swap-oob="beforeend:#timeline"><section id="turn-2"')
    second = await communicator.receive_from(timeout=3)
    assert '<ol id="turn-2-events" class="events" hx-swap-oob="true">' in second
    assert 'id="turn-1-events"' not in second
    await close(communicator)


# -- the runs list -----------------------------------------------------------------------------------------------


async def changed(run: Run) -> None:
    change = {"run": str(run.id), "status": run.status}
    await get_channel_layer().group_send(RUNS_GROUP, {"type": "runs.changed", "runs": [change]})


def since(seconds_ago: float = 1) -> str:
    return (timezone.now() - dt.timedelta(seconds=seconds_ago)).isoformat().replace("+", "%2B")


async def test_it_puts_a_new_run_on_top_of_the_list():
    communicator = await open_socket(f"/ws/runs/?page=1&since={since()}")
    run = await sync_to_async(make_run)(scenario_id="fresh-run")
    await changed(run)
    html = await communicator.receive_from(timeout=3)
    assert html.lstrip().startswith(
        f'<tbody hx-swap-oob="afterbegin:#runs-body"><tr id="run-row-{run.id}" class="run-row">'
    )
    assert "fresh-run" in html and '<span class="badge running">running</span>' in html
    await close(communicator)


async def test_it_replaces_the_row_of_a_run_the_page_already_had():
    run = await sync_to_async(make_run)(started_at=timezone.now() - dt.timedelta(minutes=5), status="passed")
    communicator = await open_socket(f"/ws/runs/?since={since()}")
    await changed(run)
    html = await communicator.receive_from(timeout=3)
    assert html.lstrip().startswith(f'<tr id="run-row-{run.id}" class="run-row" hx-swap-oob="true">')
    assert '<span class="badge passed">passed</span>' in html
    await close(communicator)


async def test_it_does_not_insert_a_new_run_that_the_filters_leave_out():
    communicator = await open_socket(f"/ws/runs/?status=failed&protocol=anthropic&since={since()}")
    other = await sync_to_async(make_run)(scenario_id="not-this-one", status="failed", protocol="openai")
    wanted = await sync_to_async(make_run)(scenario_id="this-one", status="failed", protocol="anthropic")
    await changed(other)
    await changed(wanted)
    html = await communicator.receive_from(timeout=3)  # one batch for both
    inserted = html[: html.index("</tbody>")]
    assert "this-one" in inserted and "not-this-one" not in inserted
    assert f'<tr id="run-row-{other.id}" class="run-row" hx-swap-oob="true">' in html  # a no-op unless shown
    await close(communicator)


async def test_it_inserts_nothing_on_later_pages():
    communicator = await open_socket(f"/ws/runs/?page=2&since={since()}")
    run = await sync_to_async(make_run)()
    await changed(run)
    html = await communicator.receive_from(timeout=3)
    assert "afterbegin" not in html and f'id="run-row-{run.id}"' in html
    await close(communicator)
