"""Anthropic Messages wire: the SSE event stream encoder, in the recorded event order."""

from __future__ import annotations

import json
import random
import re

import orjson
import pytest

from harnessweb.engine.exchange import Reply, sign_thinking
from harnessweb.engine.wire.anthropic import encode_message, encode_reply, encode_stream, parse_request
from tests.wire_anthropic_helpers import (
    KEY,
    LONG_ARGUMENTS,
    deltas_of,
    make_body,
    make_call,
    make_reasoning,
    make_reply,
    make_text,
    message,
    parse_sse,
    stream_events,
)

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
