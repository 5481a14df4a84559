"""Our Anthropic streams against the recorded ones: event sequence, JSON keys, accumulated content, and what the
Anthropic SDK reads from both."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from tests.conftest import make_scenario
from tests.sse import parse_sse
from tests.wire_cassettes_helpers import (
    ANTHROPIC_STREAMS,
    body_chunks,
    header,
    interaction_of,
    replay_client,
    scenario_id,
)

# The recorded requests name a model the SDK warns about; that warning is about the recordings, not the endpoint.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


# ---------------------------------------------------------------------------------------------------------------
# Anthropic

REQUIRED_USAGE = {"input_tokens", "output_tokens"}


def anthropic_events(chunks: list[bytes]) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for name, data in parse_sse(chunks):
        payload = json.loads(data)
        assert name == payload["type"]  # the event name repeats the data's type
        events.append((name, payload))
    return events


def anthropic_content(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Accumulate a stream into its content blocks, stop reason and final usage."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    stop_reason = usage = None
    for name, payload in events:
        if name == "content_block_start":
            blocks[payload["index"]] = dict(payload["content_block"])
            partial[payload["index"]] = ""
        elif name == "content_block_delta":
            block, delta = blocks[payload["index"]], payload["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] += delta["signature"]
            elif delta["type"] == "input_json_delta":
                partial[payload["index"]] += delta["partial_json"]
            else:
                raise AssertionError(f"unknown delta {delta['type']}")
        elif name == "content_block_stop":
            block = blocks[payload["index"]]
            if block["type"] == "tool_use":
                block["input"] = json.loads(partial[payload["index"]] or "{}")
        elif name == "message_delta":
            stop_reason, usage = payload["delta"]["stop_reason"], payload["usage"]
    assert sorted(blocks) == list(range(len(blocks)))
    return {"blocks": [blocks[i] for i in sorted(blocks)], "stop_reason": stop_reason, "usage": usage}


def anthropic_sequence(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[Any, ...]]:
    """Event names (with block index and type, delta type), consecutive equal deltas collapsed: chunking differs."""
    sequence: list[tuple[Any, ...]] = []
    for name, payload in events:
        if name == "content_block_start":
            step: tuple[Any, ...] = (name, payload["index"], payload["content_block"]["type"])
        elif name == "content_block_delta":
            step = (name, payload["index"], payload["delta"]["type"])
        elif name == "content_block_stop":
            step = (name, payload["index"])
        else:
            step = (name,)
        if not sequence or sequence[-1] != step or name != "content_block_delta":
            sequence.append(step)
    return sequence


def anthropic_turn(content: dict[str, Any]) -> dict[str, Any]:
    """A scenario turn giving the same content: thinking as reasoning segments, then a text or tool-call turn."""
    blocks = content["blocks"]
    thinking = [b for b in blocks if b["type"] == "thinking"]
    rest = blocks[len(thinking) :]
    assert all(b["type"] != "thinking" for b in rest), "thinking after other blocks cannot be authored"
    response: dict[str, Any] = {"reasoning": [{"text": b["thinking"], "signature": b["signature"]} for b in thinking]}
    calls, text = [], None
    for block in rest:
        if block["type"] == "text":
            assert text is None, "two text blocks in a row cannot be authored"
            text = block["text"]
        else:
            assert block["type"] == "tool_use"
            call = {"tool_name": block["name"], "arguments": block["input"], "call_id": block["id"]}
            if text is not None and calls:
                call["assistant_text"] = text
            elif text is not None:
                response["assistant_text"] = text
            calls.append(call)
            text = None
    if calls:
        assert text is None, "text after the last tool call cannot be authored"
        response.update(kind="tool-call", tool_calls=calls)
    else:
        response.update(kind="text", assistant_text=text or "")
    usage = content["usage"]
    return {
        "turn": 1,
        "response": response,
        "finish_reason": content["stop_reason"],
        "usage": {
            "input_tokens": usage["input_tokens"],
            "output_tokens": usage["output_tokens"],
            "total_tokens": usage["input_tokens"] + usage["output_tokens"],
        },
    }


def claude_params(name: str, index: int) -> dict[str, Any]:
    """The recorded request's parameters, asking for the authored scenario by its id."""
    body = interaction_of(name, index)["request"]["body"]
    params = {k: body[k] for k in ("model", "max_tokens", "system", "thinking", "tools") if k in body}
    params["messages"] = [{"role": "user", "content": scenario_id(name, index)}]
    if "temperature" in body:
        params["extra_body"] = {"temperature": body["temperature"]}  # no such parameter in the 2.x SDK
    return params


def recorded_anthropic(name: str, index: int) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    events = anthropic_events(body_chunks(interaction_of(name, index)["response"]))
    content = anthropic_content(events)
    for block in content["blocks"]:
        if block["type"] == "thinking":
            assert block["signature"], "a recorded thinking block ends with its signature"
    make_scenario(scenario_id(name, index), [anthropic_turn(content)])
    return events, content


@pytest.mark.parametrize(("name", "index"), ANTHROPIC_STREAMS)
def test_it_streams_anthropic_events_of_the_recorded_shape_and_content(claude, name, index):
    recorded, content = recorded_anthropic(name, index)
    with claude.messages.with_streaming_response.create(stream=True, **claude_params(name, index)) as response:
        assert response.status_code == 200
        headers = response.headers
        ours = anthropic_events(list(response.iter_bytes()))
    recorded_headers = interaction_of(name, index)["response"]["headers"]
    assert headers["content-type"] == header(recorded_headers, "content-type")
    assert headers["request-id"].startswith("req_") and header(recorded_headers, "request-id").startswith("req_")

    assert anthropic_sequence(ours) == anthropic_sequence(recorded)

    def first(events: list[tuple[str, dict[str, Any]]], name: str) -> dict[str, Any]:
        return next(payload for event, payload in events if event == name)

    # message_start: the same message keys; usage keys a subset of the real ones. The real usage also carries
    # cache_creation (per-TTL detail) and service_tier, which an endpoint without caching or tiers has no
    # values for; clients read the four token counts.
    real_start, our_start = first(recorded, "message_start")["message"], first(ours, "message_start")["message"]
    assert set(our_start) == set(real_start)
    assert REQUIRED_USAGE <= set(our_start["usage"]) <= set(real_start["usage"])
    assert (our_start["content"], our_start["stop_reason"], our_start["stop_sequence"]) == ([], None, None)
    assert our_start["role"] == "assistant" and our_start["type"] == "message"
    assert our_start["id"].startswith("msg_") and our_start["model"] == real_start["model"]

    # content_block_start: block by block, the same keys and the same empty opening values.
    real_openings = [p["content_block"] for e, p in recorded if e == "content_block_start"]
    our_openings = [p["content_block"] for e, p in ours if e == "content_block_start"]
    for real_block, our_block in zip(real_openings, our_openings, strict=True):
        assert our_block.keys() == real_block.keys()
        if our_block["type"] == "tool_use":
            assert (our_block["input"], our_block["id"], our_block["name"]) == (
                {},
                real_block["id"],
                real_block["name"],
            )
        else:
            assert our_block == real_block
    assert first(ours, "ping") == first(recorded, "ping") == {"type": "ping"}

    # message_delta: the same keys at the top and in delta; usage as for message_start.
    real_delta, our_delta = first(recorded, "message_delta"), first(ours, "message_delta")
    assert our_delta.keys() == real_delta.keys() and our_delta["delta"].keys() == real_delta["delta"].keys()
    assert REQUIRED_USAGE <= set(our_delta["usage"]) <= set(real_delta["usage"])
    assert {k: our_delta["usage"][k] for k in REQUIRED_USAGE} == {k: real_delta["usage"][k] for k in REQUIRED_USAGE}
    assert ours[-1] == ("message_stop", {"type": "message_stop"})

    accumulated = anthropic_content(ours)
    assert accumulated["blocks"] == content["blocks"]
    assert accumulated["stop_reason"] == content["stop_reason"]


def sdk_blocks(message: Any) -> list[dict[str, Any]]:
    """The SDK's final message content in the accumulated form used above."""
    keep = {
        "text": ("type", "text"),
        "thinking": ("type", "thinking", "signature"),
        "tool_use": ("type", "id", "name", "input"),
    }
    return [{k: getattr(b, k) for k in keep[b.type]} for b in message.content]


@pytest.mark.parametrize(("name", "index"), ANTHROPIC_STREAMS)
def test_it_streams_what_the_anthropic_sdk_reads_to_the_same_message_as_the_recording(claude, name, index):
    _, content = recorded_anthropic(name, index)
    params = claude_params(name, index)
    with replay_client(anthropic, interaction_of(name, index)["response"]).messages.stream(**params) as stream:
        replayed = stream.get_final_message()
    with claude.messages.stream(**params) as stream:
        served = stream.get_final_message()
    assert sdk_blocks(replayed) == sdk_blocks(served) == content["blocks"]
    assert replayed.stop_reason == served.stop_reason == content["stop_reason"]
    assert (served.usage.input_tokens, served.usage.output_tokens) == (
        replayed.usage.input_tokens,
        replayed.usage.output_tokens,
    )
