"""Anthropic Messages wire: the request parser, the SSE and JSON encoders, errors and simulated failures."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import orjson
import pytest

from harnessweb.engine.exchange import Block, Failure, InvalidRequest, Message, Reply, Thinking, Usage, sign_thinking
from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario
from harnessweb.engine.wire.anthropic import (
    encode_error,
    encode_failure,
    encode_message,
    encode_models,
    encode_reply,
    encode_stream,
    malformed,
    parse_request,
)
from harnessweb.engine.wire.common import WireError
from tests.sse import parse_sse as parse_chunks

KEY = "anthropic-test-key"
LONG_ARGUMENTS = {"query": "the weather in Paris and in Zürich", "limit": 10, "nested": {"ok": True, "list": [1, 2]}}


def make_body(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "claude-test", "max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}]}
    body.update(fields)
    return body


def make_text(text: str) -> Block:
    return Block(type="text", text=text)


def make_reasoning(text: str, signature: str | None = None) -> Block:
    return Block(type="reasoning", text=text, signature=signature or sign_thinking(text, KEY))


def make_call(name: str, arguments: Any, call_id: str = "call_0123abcd", derived: bool = True) -> Block:
    return Block(
        type="tool_call", call_id=call_id, name=name, arguments=orjson.dumps(arguments).decode(), derived_id=derived
    )


def make_reply(*blocks: Block, finish: str | None = None, chunk_words: int = 5, id_seed: str = "seed") -> Reply:
    if finish is None:
        finish = "tool_calls" if any(b.type == "tool_call" for b in blocks) else "stop"
    return Reply(
        blocks=blocks, finish=finish, usage=Usage(11, 22, 33), chunk_words=chunk_words, interval_ms=0, id_seed=id_seed
    )


def parse_sse(body: bytes, cuts: list[int] | None = None) -> list[tuple[str, str]]:
    """The events of a body delivered in pieces cut at ``cuts`` (the shared line-based parser of tests/sse.py)."""
    edges = [0, *sorted(cuts or []), len(body)]
    pieces = [body[start:end] for start, end in zip(edges, edges[1:], strict=False)]
    return [(event or "message", data) for event, data in parse_chunks(pieces)]


def stream_events(reply: Reply, model: str = "claude-test") -> list[tuple[str, dict[str, Any]]]:
    """The (name, data) events of a streamed reply; each event's name is its data's type."""
    events = [(name, json.loads(data)) for name, data in parse_sse(encode_stream(reply, model).body)]
    for name, data in events:
        assert data["type"] == name
    return events


def deltas_of(events: list[tuple[str, dict[str, Any]]], index: int) -> list[dict[str, Any]]:
    return [d["delta"] for n, d in events if n == "content_block_delta" and d["index"] == index]


def message(reply: Reply, model: str = "claude-test") -> dict[str, Any]:
    return orjson.loads(encode_message(reply, model).body)


# ---------------------------------------------------------------------------------------------------------------
# Request parsing


def test_it_parses_a_minimal_request():
    request = parse_request(make_body())
    assert request.protocol == "anthropic"
    assert request.model == "claude-test"
    assert request.messages == (Message(role="user", text="hi"),)
    assert (request.system, request.tools) == ("", ())
    assert (request.temperature, request.top_p) == (None, None)
    assert (request.reasoning_enabled, request.stream, request.include_usage) == (False, False, False)


def test_it_parses_string_and_block_content():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}},
            ],
        },
        {"role": "user", "content": "plain"},
        {"role": "user", "content": [{"type": "image", "source": {}}, {"type": "text", "text": "see"}]},
    ]
    request = parse_request(make_body(messages=messages))
    assert request.messages == (
        Message(role="user", text="one\ntwo"),
        Message(role="assistant", text="calling", call_ids=("toolu_1",)),
        Message(role="user", text="plain"),
        Message(role="user", text="see"),
    )
    assert request.turn == 2


@pytest.mark.parametrize(
    ("system", "expected"),
    [
        (None, ""),
        ("You are a tester.", "You are a tester."),
        (
            [{"type": "text", "text": "Part A."}, {"type": "text", "text": "Part B.", "cache_control": {}}],
            "Part A.\nPart B.",
        ),
    ],
)
def test_it_reads_the_system_prompt_as_string_or_blocks(system, expected):
    fields = {"system": system} if system is not None else {}
    assert parse_request(make_body(**fields)).system == expected


def test_it_reads_tool_names_temperature_and_top_p():
    tools = [{"name": "search", "input_schema": {}}, {"name": "web.fetch", "input_schema": {}}]
    request = parse_request(make_body(tools=tools, temperature=0.3, top_p=1, stream=True))
    assert request.tools == ("search", "web.fetch")
    assert (request.temperature, request.top_p, request.stream) == (0.3, 1.0, True)


@pytest.mark.parametrize(
    ("thinking", "enabled"),
    [
        ({"type": "enabled", "budget_tokens": 2048}, True),
        ({"type": "adaptive"}, True),
        ({"type": "disabled"}, False),
        ({}, False),
        (None, False),
    ],
)
def test_it_reads_the_thinking_setting(thinking, enabled):
    fields = {"thinking": thinking} if thinking is not None else {}
    assert parse_request(make_body(**fields)).reasoning_enabled is enabled


def test_it_turns_tool_result_only_user_turns_into_tool_messages():
    messages = [
        {"role": "user", "content": "demo"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "result one"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "result two"}]},
                {"type": "tool_result", "tool_use_id": "toolu_3"},
            ],
        },
    ]
    request = parse_request(make_body(messages=messages))
    assert request.messages[2] == Message(
        role="tool", text="result one\nresult two\n", result_ids=("toolu_1", "toolu_2", "toolu_3")
    )
    assert (request.first_user, request.last_user, request.turn) == ("demo", "demo", 2)


def test_it_keeps_a_user_turn_that_mixes_tool_results_and_text_as_the_user():
    content = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}, {"type": "text", "text": "and?"}]
    request = parse_request(make_body(messages=[{"role": "user", "content": content}]))
    assert request.messages == (Message(role="user", text="r\nand?", result_ids=("toolu_1",)),)


def test_it_reads_thinking_blocks_in_assistant_messages_with_their_path():
    messages = [
        {"role": "user", "content": "demo"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan A", "signature": "sig-a"},
                {"type": "text", "text": "ok"},
                {"type": "thinking", "thinking": "plan B"},
                {"type": "redacted_thinking", "data": "xyz"},
            ],
        },
        {"role": "user", "content": [{"type": "thinking", "thinking": "ignored in user turns"}]},
    ]
    request = parse_request(make_body(messages=messages))
    assert request.messages[1] == Message(
        role="assistant",
        text="ok",
        thinking=(
            Thinking(text="plan A", signature="sig-a", where="messages.1.content.0"),
            Thinking(text="plan B", signature=None, where="messages.1.content.2"),
        ),
    )
    assert request.messages[2].thinking == ()


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ([], None),
        ("body", None),
        ({"max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}, "model"),
        (make_body(model=""), "model"),
        (make_body(model=None), "model"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
        (make_body(max_tokens="10"), "max_tokens"),
        (make_body(max_tokens=True), "max_tokens"),
        (make_body(max_tokens=1.5), "max_tokens"),
        (make_body(messages=None), "messages"),
        (make_body(messages=[]), "messages"),
        (make_body(messages="hi"), "messages"),
        (make_body(messages=["hi"]), "messages.0"),
        (make_body(messages=[{"role": "system", "content": "x"}]), "messages.0.role"),
        (make_body(messages=[{"role": "user", "content": "a"}, {"content": "b"}]), "messages.1.role"),
        (make_body(messages=[{"role": "user", "content": 3}]), "messages.0.content"),
        (make_body(messages=[{"role": "user", "content": None}]), "messages.0.content"),
        (make_body(messages=[{"role": "user", "content": [{"text": "x"}]}]), "messages.0.content.0"),
        (make_body(messages=[{"role": "user", "content": [{"type": "text"}]}]), "messages.0.content.0.text"),
        (
            make_body(
                messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": [{"type": "thinking"}]}]
            ),
            "messages.1.content.0.thinking",
        ),
        (make_body(system=5), "system"),
        (make_body(tools={"name": "x"}), "tools"),
        (make_body(tools=[{"input_schema": {}}]), "tools.0.name"),
        (make_body(thinking="enabled"), "thinking"),
        (make_body(temperature="warm"), "temperature"),
        (make_body(stream="true"), "stream"),
    ],
)
def test_it_refuses_a_bad_request_naming_the_field(body, param):
    with pytest.raises(WireError) as caught:
        parse_request(body)
    assert caught.value.param == param
    assert caught.value.status == 400
    if param:
        assert caught.value.message.startswith(param)


# ---------------------------------------------------------------------------------------------------------------
# Streaming


def test_it_frames_every_event_as_event_and_data_lines():
    reply = make_reply(make_reasoning("thinking words"), make_text("hello there"), make_call("t", {"a": 1}))
    encoded = encode_stream(reply, "claude-test")
    assert encoded.status == 200
    assert dict(encoded.headers)[b"content-type"] == b"text/event-stream; charset=utf-8"
    for frame in encoded.frames:
        match = re.fullmatch(rb"event: ([a-z_]+)\ndata: (\{[^\n]*\})\n\n", frame)
        assert match, frame
        assert json.loads(match.group(2))["type"] == match.group(1).decode()


def test_it_streams_text_in_the_recorded_event_order():
    events = stream_events(make_reply(make_text("one two three four five six seven"), id_seed="demo:1"))
    assert [n for n, _ in events] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0][1]["message"]
    assert re.fullmatch(r"msg_[0-9a-f]{24}", start.pop("id"))
    assert start == {
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 11,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
        },
    }
    assert events[1][1] == {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    assert deltas_of(events, 0) == [
        {"type": "text_delta", "text": "one two three four five"},
        {"type": "text_delta", "text": " six seven"},
    ]
    assert events[5][1] == {"type": "content_block_stop", "index": 0}
    assert events[6][1] == {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {
            "input_tokens": 11,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 22,
        },
    }
    assert events[7][1] == {"type": "message_stop"}


def test_it_sends_one_ping_right_after_the_first_block_start():
    events = stream_events(make_reply(make_reasoning("r"), make_text("a"), make_call("t", {})))
    names = [n for n, _ in events]
    assert names.count("ping") == 1
    assert names[:3] == ["message_start", "content_block_start", "ping"]


def test_it_streams_blocks_in_order_each_opened_and_closed_once():
    reply = make_reply(make_reasoning("r1"), make_text("t"), make_call("a", {}), make_call("b", {"x": 1}))
    events = stream_events(reply)
    body = [(n, d) for n, d in events if n.startswith("content_block")]
    current = None
    seen = []
    for name, data in body:
        if name == "content_block_start":
            assert current is None
            current = data["index"]
            seen.append(current)
        elif name == "content_block_stop":
            assert data["index"] == current
            current = None
        else:
            assert data["index"] == current
    assert current is None
    assert seen == [0, 1, 2, 3]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_it_streams_thinking_then_exactly_one_signature_before_the_block_stops():
    signature = sign_thinking("deep thoughts here and more words", KEY)
    events = stream_events(make_reply(make_reasoning("deep thoughts here and more words"), make_text("answer")))
    assert events[1][1]["content_block"] == {"type": "thinking", "thinking": "", "signature": ""}
    deltas = deltas_of(events, 0)
    assert [d["type"] for d in deltas] == ["thinking_delta", "thinking_delta", "signature_delta"]
    assert "".join(d["thinking"] for d in deltas[:-1]) == "deep thoughts here and more words"
    assert deltas[-1] == {"type": "signature_delta", "signature": signature}
    stop_at = events.index(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    assert events[stop_at - 1][1]["delta"]["type"] == "signature_delta"


def test_it_streams_an_authored_signature_verbatim():
    deltas = deltas_of(stream_events(make_reply(make_reasoning("x", "authored-signature"))), 0)
    assert deltas[-1] == {"type": "signature_delta", "signature": "authored-signature"}


def test_it_streams_tool_use_with_empty_input_then_json_pieces():
    reply = make_reply(make_text("Let me search."), make_call("search", LONG_ARGUMENTS, "call_0123abcd"))
    events = stream_events(reply)
    starts = [d for n, d in events if n == "content_block_start"]
    assert starts[1]["content_block"] == {"type": "tool_use", "id": "toolu_0123abcd", "name": "search", "input": {}}
    deltas = deltas_of(events, 1)
    assert deltas[0] == {"type": "input_json_delta", "partial_json": ""}
    assert all(d["type"] == "input_json_delta" for d in deltas)
    assert len(deltas) > 3
    joined = "".join(d["partial_json"] for d in deltas)
    assert joined == orjson.dumps(LONG_ARGUMENTS).decode()
    assert json.loads(joined) == LONG_ARGUMENTS


def test_it_prefixes_derived_tool_ids_and_keeps_authored_ids_verbatim():
    reply = make_reply(
        make_call("a", {}, "call_derived1", derived=True),
        make_call("b", {}, "call_authored", derived=False),
        make_call("c", {}, "my-own-id", derived=False),
        make_call("agent__final_report", {}, "agent-final-report", derived=False),
    )
    ids = [d["content_block"]["id"] for n, d in stream_events(reply) if n == "content_block_start"]
    assert ids == ["toolu_derived1", "call_authored", "my-own-id", "agent-final-report"]
    assert [c["id"] for c in message(reply)["content"]] == ids


@pytest.mark.parametrize(
    ("blocks", "finish", "stop_reason"),
    [
        ((make_text("x"),), "stop", "end_turn"),
        ((make_text("x"), make_call("t", {})), "tool_calls", "tool_use"),
        ((make_text("x"), make_call("t", {})), "stop", "tool_use"),  # tool blocks always stop for tool_use
        ((make_text("x"),), "length", "max_tokens"),
    ],
)
def test_it_maps_the_finish_to_the_stop_reason(blocks, finish, stop_reason):
    reply = make_reply(*blocks, finish=finish)
    assert stream_events(reply)[-2][1]["delta"]["stop_reason"] == stop_reason
    assert message(reply)["stop_reason"] == stop_reason


def test_it_streams_text_that_concatenates_back_exactly():
    text = "  leading\nand   multiple\t\twhitespace ünïcödé ✓ 🎉\n\nend  "
    deltas = deltas_of(stream_events(make_reply(make_text(text), chunk_words=2)), 0)
    assert "".join(d["text"] for d in deltas) == text


def test_it_counts_content_frames_as_the_deltas_of_a_text_reply():
    encoded = encode_stream(make_reply(make_text("a b c d e f g h i j k")), "m")
    assert encoded.content_frames == 3


def test_it_parses_the_stream_the_same_whatever_the_network_chunking():
    reply = make_reply(
        make_reasoning("ünïcödé reasoning ✓ " * 4),
        make_text("text with 🎉 emoji and\nnewlines\n\n" * 3),
        make_call("search", LONG_ARGUMENTS),
        chunk_words=2,
    )
    body = encode_stream(reply, "claude-test").body
    whole = parse_sse(body)
    assert len(whole) == len(encode_stream(reply, "claude-test").frames)
    assert parse_sse(body, list(range(1, len(body)))) == whole
    rng = random.Random(4321)
    for _ in range(50):
        cuts = rng.sample(range(1, len(body)), rng.randint(1, 40))
        assert parse_sse(body, cuts) == whole
    # Two events in one network chunk, then a chunk that ends mid-event.
    frames = encode_stream(reply, "claude-test").frames
    cuts = [len(frames[0]) + len(frames[1]), len(frames[0]) + len(frames[1]) + len(frames[2]) // 2]
    assert parse_sse(body, cuts) == whole


def test_it_encodes_the_same_reply_to_the_same_bytes():
    def reply() -> Reply:
        return make_reply(make_reasoning("r"), make_text("same text"), make_call("t", {"x": 1}), id_seed="demo:3")

    first = encode_stream.__wrapped__(reply(), "m")
    assert first == encode_stream.__wrapped__(reply(), "m")
    assert encode_stream(reply(), "m") == first
    assert encode_message.__wrapped__(reply(), "m") == encode_message.__wrapped__(reply(), "m")
    other = encode_stream.__wrapped__(make_reply(make_text("same text"), id_seed="demo:4"), "m")
    assert other.body != first.body


def test_it_encodes_the_request_way_streamed_or_not():
    reply = make_reply(make_text("hi"))
    assert encode_reply(reply, parse_request(make_body(stream=True))) == encode_stream(reply, "claude-test")
    assert encode_reply(reply, parse_request(make_body())) == encode_message(reply, "claude-test")


# ---------------------------------------------------------------------------------------------------------------
# Non-streamed messages


def test_it_shapes_a_message_object():
    reply = make_reply(
        make_reasoning("because", "sig"), make_text("Hello."), make_call("search", {"q": "x"}), id_seed="demo:1"
    )
    encoded = encode_message(reply, "claude-x")
    assert encoded.status == 200
    assert dict(encoded.headers)[b"content-type"] == b"application/json"
    body = orjson.loads(encoded.body)
    assert body["id"] == stream_events(reply)[0][1]["message"]["id"]
    assert re.fullmatch(r"msg_[0-9a-f]{24}", body.pop("id"))
    assert body == {
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [
            {"type": "thinking", "thinking": "because", "signature": "sig"},
            {"type": "text", "text": "Hello."},
            {"type": "tool_use", "id": "toolu_0123abcd", "name": "search", "input": {"q": "x"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 11,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 22,
        },
    }


def test_it_round_trips_thinking_signatures_through_the_next_request():
    scenario = Scenario.model_validate(
        {
            "id": "demo",
            "turns": [
                {
                    "turn": 1,
                    "response": {
                        "kind": "tool-call",
                        "tool_calls": [{"tool_name": "search", "arguments": {"q": "x"}}],
                        "reasoning": [{"text": "derived plan"}, {"text": "authored plan", "signature": "authored"}],
                    },
                },
                {"turn": 2, "response": {"kind": "text", "assistant_text": "done"}},
            ],
        }
    )
    catalog = Catalog.build([scenario])
    first = parse_request(make_body(messages=[{"role": "user", "content": "demo"}]))
    content = message(decide(catalog, first, signature_key=KEY).reply)["content"]
    assert content[2]["id"].startswith("toolu_")
    result = {"type": "tool_result", "tool_use_id": content[2]["id"], "content": "found"}
    history = [
        {"role": "user", "content": "demo"},
        {"role": "assistant", "content": content},
        {"role": "user", "content": [result]},
    ]
    second = decide(catalog, parse_request(make_body(messages=history)), signature_key=KEY)
    assert second.reply.text == "done"
    assert second.completes_run is True
    tampered = [dict(content[0], signature=content[0]["signature"][:-4] + "AAA="), *content[1:]]
    history[1] = {"role": "assistant", "content": tampered}
    with pytest.raises(InvalidRequest, match=re.escape("messages.1.content.0: Invalid `signature`")):
        decide(catalog, parse_request(make_body(messages=history)), signature_key=KEY)
    history[1] = {"role": "assistant", "content": [{k: v for k, v in content[0].items() if k != "signature"}]}
    with pytest.raises(InvalidRequest, match=re.escape("messages.1.content.0.signature: Field required")):
        decide(catalog, parse_request(make_body(messages=history)), signature_key=KEY)


# ---------------------------------------------------------------------------------------------------------------
# Errors and simulated failures


def error_body(encoded: Any) -> dict[str, Any]:
    body = orjson.loads(encoded.body)
    assert list(body) == ["type", "error", "request_id"]
    assert body["type"] == "error"
    return body


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (413, "request_too_large"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (504, "timeout_error"),
        (529, "overloaded_error"),
        (418, "api_error"),
    ],
)
def test_it_shapes_errors_like_anthropic_typed_by_status(status, kind):
    encoded = encode_error(status, "what went wrong", request_id="req_123")
    assert encoded.status == status
    assert dict(encoded.headers)[b"content-type"] == b"application/json"
    assert error_body(encoded) == {
        "type": "error",
        "error": {"type": kind, "message": "what went wrong"},
        "request_id": "req_123",
    }


def make_failure(status: str = "model_error", **fields: Any) -> Failure:
    defaults: dict[str, Any] = {"message": "Simulated", "retryable": True, "retry_after_ms": None, "error": None}
    defaults.update(fields)
    return Failure(status=status, **defaults)


def test_it_encodes_a_rate_limit_with_retry_headers():
    encoded = encode_failure(make_failure("rate_limit", message="Rate limit exceeded (simulated)", retry_after_ms=1500))
    assert encoded.status == 429
    headers = dict(encoded.headers)
    assert (headers[b"retry-after"], headers[b"retry-after-ms"]) == (b"2", b"1500")
    assert b"x-should-retry" not in headers
    assert error_body(encoded)["error"] == {"type": "rate_limit_error", "message": "Rate limit exceeded (simulated)"}


@pytest.mark.parametrize(
    ("status", "retryable", "http", "kind"),
    [
        ("model_error", True, 500, "api_error"),
        ("model_error", False, 400, "invalid_request_error"),
        ("timeout", True, 504, "timeout_error"),
        ("rate_limit", False, 429, "rate_limit_error"),
    ],
)
def test_it_maps_failure_statuses_to_http(status, retryable, http, kind):
    encoded = encode_failure(make_failure(status, retryable=retryable))
    assert encoded.status == http
    assert error_body(encoded)["error"]["type"] == kind
    headers = dict(encoded.headers)
    assert headers.get(b"x-should-retry") == (None if retryable else b"false")


def test_it_merges_the_failure_error_into_the_error_object():
    failure = make_failure("model_error", message="boom", error={"type": "overloaded_error", "detail": 1})
    assert error_body(encode_failure(failure))["error"] == {"type": "overloaded_error", "message": "boom", "detail": 1}


@pytest.mark.parametrize("stream", [True, False])
def test_it_sends_a_malformed_body_that_really_does_not_parse(stream):
    encoded = malformed(stream)
    assert encoded.status == 200
    if not stream:
        with pytest.raises(ValueError):
            json.loads(encoded.body)
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(encoded.body)
        return
    events = parse_sse(encoded.body)
    assert [name for name, _ in events] == ["message_start"]
    with pytest.raises(ValueError):
        json.loads(events[0][1])


def test_it_lists_models():
    body = orjson.loads(encode_models(["a", "b"]).body)
    assert body == {
        "data": [
            {"type": "model", "id": "a", "display_name": "a", "created_at": "2025-01-01T00:00:00Z"},
            {"type": "model", "id": "b", "display_name": "b", "created_at": "2025-01-01T00:00:00Z"},
        ],
        "has_more": False,
        "first_id": "a",
        "last_id": "b",
    }
    assert orjson.loads(encode_models([]).body) == {"data": [], "has_more": False, "first_id": None, "last_id": None}
