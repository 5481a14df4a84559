"""OpenAI Chat Completions wire: the SSE stream encoder, compared with the recorded shapes."""

from __future__ import annotations

import json
import random
import re

import orjson

from harnessweb.engine.exchange import Reply
from harnessweb.engine.wire.common import CREATED
from harnessweb.engine.wire.openai import DONE, encode_completion, encode_reply, encode_stream, parse_request
from tests.wire_openai_helpers import (
    LONG_ARGUMENTS,
    choice_deltas,
    completion,
    make_body,
    make_call,
    make_reasoning,
    make_reply,
    make_text,
    parse_sse,
    stream_chunks,
)

# ---------------------------------------------------------------------------------------------------------------
# Streaming


def test_it_frames_every_chunk_as_one_data_line_and_ends_with_done():
    encoded = encode_stream(make_reply(make_text("one two three four five six seven")), "gpt-test", True)
    assert encoded.status == 200
    assert dict(encoded.headers)[b"content-type"] == b"text/event-stream; charset=utf-8"
    assert encoded.frames[-1] == DONE == b"data: [DONE]\n\n"
    for frame in encoded.frames[:-1]:
        assert re.fullmatch(rb"data: \{[^\n]*\}\n\n", frame)
        orjson.loads(frame[len(b"data: ") : -2])
    assert encoded.body == b"".join(encoded.frames)


def test_it_shapes_each_chunk_like_a_chat_completion_chunk():
    chunks = stream_chunks(make_reply(make_text("hello there"), id_seed="demo:1"), model="gpt-x")
    for chunk in chunks:
        assert list(chunk) == ["id", "object", "created", "model", "system_fingerprint", "choices"]
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["created"] == CREATED
        assert chunk["model"] == "gpt-x"
        assert chunk["system_fingerprint"] is None
        assert re.fullmatch(r"chatcmpl-[0-9a-f]{24}", chunk["id"])
    assert len({c["id"] for c in chunks}) == 1


def test_it_streams_text_with_the_role_first_and_stop_last():
    text = "one two three four five six seven eight nine ten eleven"
    chunks = stream_chunks(make_reply(make_text(text)))
    choices = [c["choices"][0] for c in chunks]
    # The role rides on the first content delta, with no empty opening chunk.
    assert choices[0] == {
        "index": 0,
        "delta": {"role": "assistant", "content": "one two three four five"},
        "finish_reason": None,
    }
    assert [c["delta"]["content"] for c in choices[:-1]] == [
        "one two three four five",
        " six seven eight nine ten",
        " eleven",
    ]
    assert all(c["finish_reason"] is None for c in choices[:-1])
    assert choices[-1] == {"index": 0, "delta": {}, "finish_reason": "stop"}


def test_it_chunks_text_by_the_reply_chunk_words():
    chunks = stream_chunks(make_reply(make_text("a b c d e"), chunk_words=2))
    assert [c["choices"][0]["delta"].get("content") for c in chunks[:-1]] == ["a b", " c d", " e"]


def test_it_streams_text_that_concatenates_back_exactly():
    text = "  leading\nand   multiple\t\twhitespace ünïcödé ✓ 🎉\n\nend  "
    chunks = stream_chunks(make_reply(make_text(text), chunk_words=3))
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == text


def test_it_streams_reasoning_as_delta_reasoning_before_the_text():
    chunks = stream_chunks(make_reply(make_reasoning("think think think"), make_text("answer")))
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"role": "assistant", "reasoning": "think think think"}
    assert deltas[1] == {"content": "answer"}
    assert deltas[2] == {}
    assert all("signature" not in json.dumps(c) for c in chunks)


def test_it_streams_tool_calls_with_id_and_name_only_on_the_first_delta():
    reply = make_reply(
        make_text("Looking."),
        make_call("search", LONG_ARGUMENTS, "call_first"),
        make_call("fetch", {}, "call_second"),
    )
    choices = [c["choices"][0] for c in stream_chunks(reply)]
    calls = [d for c in choices for d in c["delta"].get("tool_calls", [])]
    assert all(len(c["delta"].get("tool_calls", [])) <= 1 for c in choices)
    for index, (call_id, name, arguments) in enumerate(
        [("call_first", "search", LONG_ARGUMENTS), ("call_second", "fetch", {})]
    ):
        mine = [d for d in calls if d["index"] == index]
        assert mine[0] == {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        assert all(set(d) == {"index", "function"} and set(d["function"]) == {"arguments"} for d in mine[1:])
        joined = "".join(d["function"]["arguments"] for d in mine)
        assert json.loads(joined) == arguments
        assert joined == orjson.dumps(arguments).decode()
    assert len([d for d in calls if d["index"] == 0]) > 2  # the long arguments come in several pieces
    assert choices[-1] == {"index": 0, "delta": {}, "finish_reason": "tool_calls"}


def test_it_finishes_tool_calls_with_tool_calls_even_when_the_reply_says_stop():
    choices = [c["choices"][0] for c in stream_chunks(make_reply(make_call("t", {}), finish="stop"))]
    assert choices[-1]["finish_reason"] == "tool_calls"


def test_it_keeps_length_as_the_finish_reason():
    choices = [c["choices"][0] for c in stream_chunks(make_reply(make_call("t", {}), finish="length"))]
    assert choices[-1]["finish_reason"] == "length"
    assert completion(make_reply(make_call("t", {}), finish="length"))["choices"][0]["finish_reason"] == "length"


def test_it_adds_a_usage_chunk_with_no_choices_only_when_asked():
    reply = make_reply(make_text("hi"))
    with_usage = stream_chunks(reply, include_usage=True)
    assert with_usage[-1]["choices"] == []
    assert with_usage[-1]["usage"] == {"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33}
    assert with_usage[-1]["id"] == with_usage[0]["id"]
    assert with_usage[-1]["object"] == "chat.completion.chunk"
    assert with_usage[-2]["choices"][0]["finish_reason"] == "stop"
    # Every other chunk carries "usage": null when usage was asked for, and no usage key otherwise.
    assert all(c["usage"] is None for c in with_usage[:-1])
    without = stream_chunks(reply, include_usage=False)
    assert without == [{k: v for k, v in c.items() if k != "usage"} for c in with_usage[:-1]]
    assert all("usage" not in c for c in without)


def test_it_streams_instruction_messages_as_separate_choice_indices():
    reply = make_reply(
        make_reasoning("r r", choice=0),
        make_text("t t", choice=0),
        make_call("get", {"a": 1}, "call_x", choice=1),
        make_call("put", {"b": 2}, "call_y", choice=1),
        make_text("last", choice=2),
    )
    chunks = stream_chunks(reply, include_usage=True)
    first = choice_deltas(chunks, 0)
    second = choice_deltas(chunks, 1)
    third = choice_deltas(chunks, 2)
    for deltas in (first, second, third):
        assert deltas[0]["delta"]["role"] == "assistant"
        assert deltas[-1]["delta"] == {}
        assert deltas[-1]["finish_reason"] is not None
        assert all(d["finish_reason"] is None for d in deltas[:-1])
    assert [d["delta"] for d in first[:-1]] == [{"role": "assistant", "reasoning": "r r"}, {"content": "t t"}]
    # Each choice finishes on its own content: only the one that calls tools says tool_calls.
    assert (first[-1]["finish_reason"], third[-1]["finish_reason"]) == ("stop", "stop")
    calls = [t for d in second for t in d["delta"].get("tool_calls", [])]
    assert [c["index"] for c in calls if "id" in c] == [0, 1]
    assert [c["id"] for c in calls if "id" in c] == ["call_x", "call_y"]
    assert second[-1]["finish_reason"] == "tool_calls"
    assert [d["delta"] for d in third[:-1]] == [{"role": "assistant", "content": "last"}]


def test_it_counts_the_content_frames():
    reply = make_reply(make_reasoning("a b c d e f"), make_text("g h"), make_call("t", LONG_ARGUMENTS))
    encoded = encode_stream(reply, "m", False)
    chunks = stream_chunks(reply)
    with_content = [
        c
        for c in chunks
        if any(c["choices"][0]["delta"].get(k) for k in ("content", "reasoning"))
        or any(t["function"]["arguments"] for t in c["choices"][0]["delta"].get("tool_calls", []))
    ]
    assert encoded.content_frames == len(with_content)


def test_it_parses_the_stream_the_same_whatever_the_network_chunking():
    reply = make_reply(
        make_reasoning("ünïcödé reasoning ✓ " * 4),
        make_text("text with 🎉 emoji and\nnewlines\n\n" * 3),
        make_call("search", LONG_ARGUMENTS),
        chunk_words=2,
    )
    body = encode_stream(reply, "gpt-test", True).body
    whole = parse_sse(body)
    assert parse_sse(body, list(range(1, len(body)))) == whole
    rng = random.Random(1234)
    for _ in range(50):
        cuts = rng.sample(range(1, len(body)), rng.randint(1, 40))
        assert parse_sse(body, cuts) == whole
    frame_cuts = []
    offset = 0
    for frame in encode_stream(reply, "gpt-test", True).frames[:-1]:
        offset += len(frame)
        frame_cuts.append(offset)
    assert parse_sse(body, frame_cuts) == whole


def test_it_encodes_the_same_reply_to_the_same_bytes():
    def reply() -> Reply:
        return make_reply(make_text("same text"), make_call("t", {"x": 1}), id_seed="demo:3")

    first = encode_stream.__wrapped__(reply(), "m", True)
    assert first == encode_stream.__wrapped__(reply(), "m", True)
    assert encode_stream(reply(), "m", True) == first
    other = encode_stream.__wrapped__(make_reply(make_text("same text"), id_seed="demo:4"), "m", True)
    assert other.body != first.body


def test_it_encodes_the_request_way_streamed_or_not():
    reply = make_reply(make_text("hi"))
    streamed = parse_request(make_body(stream=True, stream_options={"include_usage": True}))
    assert encode_reply(reply, streamed) == encode_stream(reply, "gpt-test", True)
    plain = parse_request(make_body())
    assert encode_reply(reply, plain) == encode_completion(reply, "gpt-test")
