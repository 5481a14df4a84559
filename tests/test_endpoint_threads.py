"""Anthropic message threads (beta message-threads-2026-08-12) through the SDK's default tool runner: the server keeps
the thread's conversation, so a continuation that sends only the tool result plays the next turn."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic import beta_tool

from tests.conftest import make_scenario, recorded_run

TURNS = [
    {
        "turn": 1,
        "expected_tools": ["get_weather"],
        "response": {
            "kind": "tool-call",
            "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Paris"}}],
        },
    },
    {"turn": 2, "response": {"kind": "text", "assistant_text": "It is sunny in Paris."}},
]


@beta_tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city
    """
    return json.dumps({"city": city, "sky": "clear"})


def sent_bodies(harness_server: Any, api_key: str) -> tuple[anthropic.Anthropic, list[dict[str, Any]]]:
    """A client that records every request body it sends."""
    bodies: list[dict[str, Any]] = []

    def record(request: httpx2.Request) -> None:
        bodies.append(json.loads(request.content))

    http_client = httpx2.Client(event_hooks={"request": [record]})
    client = anthropic.Anthropic(base_url=harness_server.url, api_key=api_key, http_client=http_client, max_retries=0)
    return client, bodies


def test_it_plays_a_tool_loop_through_the_default_threaded_tool_runner(harness_server, api_key, transactional_db):
    make_scenario("threaded-weather", TURNS)
    client, bodies = sent_bodies(harness_server, api_key)
    runner = client.beta.messages.tool_runner(
        model="claude-harness",
        max_tokens=256,
        system="You are a weather assistant",
        messages=[{"role": "user", "content": "threaded-weather"}],
        tools=[get_weather],
    )
    final = runner.until_done()

    assert final.content[0].text == "It is sunny in Paris."
    assert [body.get("thread", {}).get("type") for body in bodies] == ["create", "continue"]
    continuation = bodies[1]
    assert continuation["thread"]["previous_message_id"].startswith("msg_")
    assert [m["content"][0]["type"] for m in continuation["messages"]] == ["tool_result"]
    assert "system" not in continuation and "tools" not in continuation


def test_it_keeps_each_conversation_s_thread_apart(harness_server, api_key, transactional_db):
    make_scenario("threaded-apart", TURNS)
    client, _ = sent_bodies(harness_server, api_key)
    first = client.beta.messages.create(
        model="m",
        max_tokens=64,
        messages=[{"role": "user", "content": "threaded-apart"}],
        thread={"type": "create"},
        tools=[get_weather.to_dict()],
        betas=["message-threads-2026-08-12"],
    )
    other = client.beta.messages.create(
        model="m",
        max_tokens=64,
        messages=[{"role": "user", "content": "threaded-apart"}],
        thread={"type": "create"},
        system="another conversation",
        tools=[get_weather.to_dict()],
        betas=["message-threads-2026-08-12"],
    )
    assert first.id != other.id
    call = first.content[0]
    raw = client.beta.messages.with_raw_response.create(
        model="m",
        max_tokens=64,
        messages=[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "clear"}]}],
        thread={"type": "continue", "previous_message_id": first.id},
        betas=["message-threads-2026-08-12"],
    )
    assert raw.parse().content[0].text == "It is sunny in Paris."
    run = recorded_run(raw.headers["x-harness-run"], status="passed", events=8)
    assert run.turns_served == [1, 2]


def test_it_answers_an_unknown_thread_with_thread_not_found(claude):
    with pytest.raises(anthropic.BadRequestError) as caught:
        claude.beta.messages.create(
            model="m",
            max_tokens=64,
            messages=[{"role": "user", "content": "hi"}],
            thread={"type": "continue", "previous_message_id": "msg_unknown"},
            betas=["message-threads-2026-08-12"],
        )
    assert caught.value.body["error"]["details"]["error_code"] == "thread_not_found"
