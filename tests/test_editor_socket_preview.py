"""The editor's preview for OpenAI Realtime and Gemini Live (scenarios_app/editor/socket_preview.py): the client
messages it shows, sent through a real socket to the real server, get exactly the server messages it shows (ids
aside), failures first; and the editor renders it, user text escaped."""

from __future__ import annotations

import asyncio
import base64
import html
import json
import re
import uuid
from typing import Any

import orjson
import pytest
from django.test import Client
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from harnessweb.engine.schemas import Scenario as ScenarioSchema
from harnessweb.engine.wire import gemini_live
from scenarios_app.editor.socket_preview import CUT, SocketPreview, build_socket_preview
from tests.conftest import ROOT, LiveServer, make_scenario, make_user

AUDIO = base64.b64encode((ROOT / "tests" / "fixtures" / "realtime" / "tone-440hz-250ms.pcm16").read_bytes()).decode()
HTMX = {"HTTP_HX_REQUEST": "true"}
# What differs between two sessions playing the same turn: the ids made from each session's own id.
IDS = frozenset({"event_id", "id", "item_id", "response_id", "previous_item_id", "conversation_id", "sessionId"})
CLOSED = "(closed)"


def bare(value: Any) -> Any:
    """A message without its ids."""
    if isinstance(value, dict):
        return {k: bare(v) for k, v in value.items() if k not in IDS}
    if isinstance(value, list):
        return [bare(v) for v in value]
    return value


def served(frames: Any) -> list[Any]:
    """The server's messages of a preview's frames, without their ids."""
    return [bare(f.message) for f in frames if f.side == "server"]


def client_messages(shown: SocketPreview) -> list[dict[str, Any]]:
    return [f.message for f in shown.frames if f.side == "client"]


def responded(shown: SocketPreview) -> int:
    """How many server messages come before the response (``response.created``)."""
    kinds = [f.kind for f in shown.frames if f.side == "server"]
    return kinds.index("response.created")


async def until(ws: Any, last: Any) -> list[Any]:
    """The server's messages (without ids) up to the one ``last`` accepts, or up to the socket's end, then a
    ``CLOSED`` marker with the close's code and reason (none when it was cut)."""
    got: list[Any] = []
    while True:
        try:
            message = orjson.loads(await ws.recv())
        except ConnectionClosed as exc:
            rcvd = exc.rcvd
            return [*got, (CLOSED, rcvd.code if rcvd else None, rcvd.reason if rcvd else None)]
        got.append(bare(message))
        if last(message):
            return got


def realtime_session(server: LiveServer, scenario_id: str, messages: list[dict[str, Any]], again: bool) -> list[Any]:
    """Send a Realtime session's client events through a real socket; the server's messages up to ``response.done``
    (or the socket's end), and with ``again`` a second ``response.create``'s too."""

    async def play() -> list[Any]:
        url = server.url.replace("http://", "ws://") + "/v1/realtime?model=scenario-harness"
        headers = {"Authorization": "Bearer sk-test", "X-Harness-Scenario": scenario_id}
        headers["X-Harness-Run"] = str(uuid.uuid4())
        async with connect(url, additional_headers=headers) as ws:
            for message in messages:
                await ws.send(json.dumps(message))
            got = await until(ws, lambda m: m["type"] == "response.done")
            if again:
                await ws.send(json.dumps({"type": "response.create"}))
                got += await until(ws, lambda m: m["type"] == "response.done")
            return got

    return asyncio.run(play())


def live_session(server: LiveServer, scenario_id: str, messages: list[dict[str, Any]]) -> list[Any]:
    """Send a Live session's client messages one by one through a real socket; the server's messages each answers
    (``setupComplete``; the turn up to ``turnComplete`` or a ``toolCall``, or the socket's end)."""

    def last(m: dict[str, Any]) -> bool:
        return "setupComplete" in m or "toolCall" in m or m.get("serverContent", {}).get("turnComplete") is True

    async def play() -> list[Any]:
        url = server.url.replace("http://", "ws://") + gemini_live.PATH + "?key=test-key"
        headers = {"X-Harness-Scenario": scenario_id, "X-Harness-Run": str(uuid.uuid4())}
        got: list[Any] = []
        async with connect(url, additional_headers=headers) as ws:
            for message in messages:
                await ws.send(json.dumps(message))
                got += await until(ws, last)
        return got

    return asyncio.run(play())


TOOL_THEN_SPOKEN = [
    {
        "turn": 1,
        "expected_tools": ["get_weather"],
        "response": {"kind": "tool-call", "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Oslo"}}]},
    },
    {
        "turn": 2,
        "response": {"kind": "text", "assistant_text": "It is 4 degrees in Oslo, and windy."},
        "audio": AUDIO,
        "transcript": "Four degrees in Oslo.",
    },
]

HEARD = [
    {
        "turn": 1,
        "input_transcript": "What is the weather in Oslo?",
        "expect": {"last_message_contains": "weather in Oslo"},
        "response": {"kind": "text", "assistant_text": "Cold and windy."},
    }
]


# -- the real socket sends what the preview shows ---------------------------------------------------------------


@pytest.mark.parametrize(("turns", "turn", "shows"), [
    (TOOL_THEN_SPOKEN, 1, "response.function_call_arguments.delta"),
    (TOOL_THEN_SPOKEN, 2, "response.output_audio.delta"),
    (HEARD, 1, "conversation.item.input_audio_transcription.completed"),
])  # fmt: skip
def test_realtime_the_socket_sends_the_preview_s_events(
    harness_server: LiveServer, transactional_db: None, turns: list[dict[str, Any]], turn: int, shows: str
) -> None:
    scenario = make_scenario("sp-rt", turns, system_prompt_must_include=["You are a weather bot"])
    shown = build_socket_preview(scenario, turn, "realtime")
    sent = client_messages(shown)
    assert [m["type"] for m in sent][:1] == ["session.update"] and sent[-1] == {"type": "response.create"}
    assert sent[0]["session"]["instructions"] == "You are a weather bot"
    assert shown.problem == "" and shown.failure_count == 0

    assert realtime_session(harness_server, "sp-rt", sent, again=False) == served(shown.frames)
    kinds = [f.kind for f in shown.frames if f.side == "server"]
    assert kinds[0] == "session.created" and kinds[-1] == "response.done" and shows in kinds
    usage = shown.frames[-1].message["response"]["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0


def test_realtime_a_scripted_error_comes_first_then_the_turn(
    harness_server: LiveServer, transactional_db: None
) -> None:
    turns = [
        {
            "turn": 1,
            "response": {"kind": "text", "assistant_text": "Back after the limit."},
            "failures_before_success": 1,
            "failure_status": "rate_limit",
        }
    ]
    scenario = make_scenario("sp-rt-429", turns)
    shown = build_socket_preview(scenario, 1, "realtime")
    assert (shown.failure_count, shown.failure_status) == (1, "rate_limit")
    assert [f.kind for f in shown.failure_frames] == ["response.created", "error", "response.done"]
    assert shown.failure_frames[-1].message["response"]["status"] == "failed"

    got = realtime_session(harness_server, "sp-rt-429", client_messages(shown), again=True)

    server = served(shown.frames)
    opened = responded(shown)
    # The first attempt: the session's events, then the failure's; the client asks again and gets the turn.
    assert got == server[:opened] + served(shown.failure_frames) + server[opened:]
    assert server[-1]["response"]["status"] == "completed"


def test_realtime_a_network_error_cuts_the_socket_where_the_preview_says(
    harness_server: LiveServer, transactional_db: None
) -> None:
    turns = [
        {
            "turn": 1,
            "response": {"kind": "text", "assistant_text": "one two three four five six seven eight"},
            "failures_before_success": 1,
            "failure_status": "network_error",
        }
    ]
    scenario = make_scenario("sp-rt-cut", turns)
    shown = build_socket_preview(scenario, 1, "realtime")
    assert shown.failure_end == CUT

    got = realtime_session(harness_server, "sp-rt-cut", client_messages(shown), again=False)

    *messages, closed = got
    assert messages == served(shown.frames)[: responded(shown)] + served(shown.failure_frames)
    assert closed == (CLOSED, None, None)  # no close frame


@pytest.mark.parametrize("turn", [1, 2])
def test_live_the_socket_sends_the_preview_s_messages(
    harness_server: LiveServer, transactional_db: None, turn: int
) -> None:
    scenario = make_scenario("sp-live", TOOL_THEN_SPOKEN, system_prompt_must_include=["You are a weather bot"])
    shown = build_socket_preview(scenario, turn, "gemini_live")
    sent = client_messages(shown)
    assert [next(iter(m)) for m in sent] == ["setup", "clientContent"]
    assert sent[1]["clientContent"]["turnComplete"] is True
    assert shown.problem == ""

    assert live_session(harness_server, "sp-live", sent) == served(shown.frames)
    last = shown.frames[-1]
    if turn == 1:
        assert last.kind == "toolCall" and last.message["toolCall"]["functionCalls"][0]["args"] == {"city": "Oslo"}
    else:
        assert last.kind == "serverContent.turnComplete" and last.message["usageMetadata"]["totalTokenCount"] > 0
        said = "".join(f.message["serverContent"]["modelTurn"]["parts"][0]["text"] for f in shown.frames[3:-2])
        assert said == "It is 4 degrees in Oslo, and windy."


@pytest.mark.parametrize("status", ["rate_limit", "network_error"])
def test_live_a_scripted_failure_ends_the_session_as_the_preview_says(
    harness_server: LiveServer, transactional_db: None, status: str
) -> None:
    turns = [
        {
            "turn": 1,
            "response": {"kind": "text", "assistant_text": "one two three four five six seven eight"},
            "failures_before_success": 1,
            "failure_status": status,
        }
    ]
    scenario = make_scenario(f"sp-live-{status}", turns)
    shown = build_socket_preview(scenario, 1, "gemini_live")

    *messages, closed = live_session(harness_server, scenario.id, client_messages(shown))

    assert messages == served(shown.frames)[:1] + served(shown.failure_frames)
    if status == "network_error":
        assert shown.failure_end == CUT and shown.failure_frames and closed == (CLOSED, None, None)
    else:
        assert shown.failure_frames == ()
        # The reason is the preview's alone: daphne 4.2 sends its close frames without the reason the consumer gives.
        assert closed[:2] == (CLOSED, 1000)
        assert shown.failure_end.endswith('reason "RESOURCE_EXHAUSTED: Rate limit exceeded (simulated)"')


# -- the editor renders it --------------------------------------------------------------------------------------


@pytest.fixture
def client(db: None) -> Client:
    client = Client()
    client.force_login(make_user("author"))
    return client


def preview_post(data: dict[str, Any], protocol: str, turn: int = 1) -> dict[str, str]:
    raw = json.dumps(data)
    return {"mode": "raw", "raw_format": "json", "raw": raw, "preview_protocol": protocol, "preview_turn": str(turn)}


@pytest.mark.parametrize(("protocol", "label", "kinds"), [
    ("realtime", "OpenAI Realtime", ["session.update", "response.output_text.delta", "response.done"]),
    ("gemini_live", "Gemini Live", ["setupComplete", "serverContent.modelTurn", "serverContent.turnComplete"]),
])  # fmt: skip
def test_the_editor_renders_the_socket_preview_escaped(
    client: Client, protocol: str, label: str, kinds: list[str]
) -> None:
    data = ScenarioSchema.model_validate(
        {"id": "sp-page", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "<b>bold</b> & co"}}]}
    ).canonical()

    response = client.post("/scenarios/editor/preview/", preview_post(data, protocol), **HTMX)

    assert response.status_code == 200
    assert [t.name for t in response.templates][0] == "scenarios_app/socket_preview.html"
    content = response.content.decode()
    assert f"{label}, turn 1" in content
    for kind in kinds:
        assert f"<code>{kind}</code>" in content
    assert "<b>bold" not in content and "&lt;b&gt;bold&lt;/b&gt; &amp; co" in content
    # Every frame shown is the preview's own, as pretty JSON.
    shown = build_socket_preview(ScenarioSchema.model_validate(data), 1, protocol)
    texts = [html.unescape(t) for t in _pre_texts(content)]
    assert texts == [f.text for f in shown.frames]


def _pre_texts(content: str) -> list[str]:
    return re.findall(r'<pre class="sse">(.*?)</pre>', content, re.S)


def test_the_editor_shows_the_failure_first_and_offers_both_sockets(client: Client) -> None:
    data = make_scenario(
        "sp-fail",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hi."}, "failures_before_success": 2,
          "failure_status": "network_error"}],
    ).canonical()  # fmt: skip

    page = client.get("/scenarios/sp-fail/")
    cut = client.post("/scenarios/editor/preview/", {**preview_post(data, "realtime"), "original_id": "sp-fail"})

    assert '<option value="realtime">OpenAI Realtime</option>' in page.content.decode()
    assert '<option value="gemini_live">Gemini Live</option>' in page.content.decode()
    content = html.unescape(cut.content.decode())
    assert "The first 2 attempts get a simulated <strong>network_error</strong> failure (after" in content
    assert CUT in content and content.index(CUT) < content.index("Then:")


def test_an_unknown_protocol_falls_back_to_the_http_preview(client: Client) -> None:
    data = ScenarioSchema.model_validate(
        {"id": "sp-other", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hi."}}]}
    ).canonical()

    response = client.post("/scenarios/editor/preview/", preview_post(data, "carrier-pigeon"), **HTMX)

    assert response.status_code == 200 and b'id="preview-sse"' in response.content


@pytest.mark.parametrize("protocol", ["realtime", "gemini_live"])
def test_a_timeout_says_how_long_the_socket_is_held_before_it_fails(client: Client, protocol: str) -> None:
    scenario = ScenarioSchema.model_validate(
        {
            "id": "sp-hold",
            "turns": [
                {
                    "turn": 1,
                    "response": {"kind": "text", "assistant_text": "Late."},
                    "failures_before_success": 1,
                    "failure_status": "timeout",
                    "failure_retry_after_ms": 250,
                }
            ],
        }
    )

    shown = build_socket_preview(scenario, 1, protocol)

    assert (shown.failure_status, shown.failure_hold_ms) == ("timeout", 250)
    if protocol == "realtime":
        assert [f.kind for f in shown.failure_frames] == ["response.created", "error", "response.done"]
        assert shown.failure_end == ""
    else:
        assert "DEADLINE_EXCEEDED" in shown.failure_end
    page = client.post("/scenarios/editor/preview/", preview_post(scenario.canonical(), protocol), **HTMX)
    after = " after <code>response.created</code>" if protocol == "realtime" else ""
    assert f"the server waits 250 ms{after} before it fails" in page.content.decode()


def test_a_turn_that_always_fails_shows_only_the_failure(client: Client) -> None:
    data = ScenarioSchema.model_validate(
        {"id": "sp-never", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Never sent."},
                                      "failures_before_success": "always", "failure_status": "server_error"}]}
    ).canonical()  # fmt: skip

    content = client.post("/scenarios/editor/preview/", preview_post(data, "gemini_live"), **HTMX).content.decode()

    assert "Every attempt gets a simulated <strong>server_error</strong> failure" in content
    assert "Then:" not in content and "serverContent" not in content
    assert "<code>setup</code>" in content and "<code>setupComplete</code>" in content and "clientContent" in content
