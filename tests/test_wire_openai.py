"""OpenAI Chat Completions wire: the request parser, the SSE and JSON encoders, errors and simulated failures."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import orjson
import pytest

from harnessweb.engine.exchange import Block, Failure, Message, Reply, Usage, sign_thinking
from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario
from harnessweb.engine.wire.common import CREATED, WireError
from harnessweb.engine.wire.openai import (
    DONE,
    encode_completion,
    encode_error,
    encode_failure,
    encode_models,
    encode_reply,
    encode_stream,
    malformed,
    parse_request,
)
from tests.sse import parse_sse as parse_chunks

LONG_ARGUMENTS = {"query": "the weather in Paris and in Zürich", "limit": 10, "nested": {"ok": True, "list": [1, 2]}}


def make_body(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-test", "messages": [{"role": "user", "content": "hello"}]}
    body.update(fields)
    return body


def make_text(text: str, choice: int = 0) -> Block:
    return Block(type="text", text=text, choice=choice)


def make_reasoning(text: str, choice: int = 0) -> Block:
    return Block(type="reasoning", text=text, signature=sign_thinking(text, "k"), choice=choice)


def make_call(name: str, arguments: Any, call_id: str = "call_abc", choice: int = 0) -> Block:
    return Block(
        type="tool_call", call_id=call_id, name=name, arguments=orjson.dumps(arguments).decode(), choice=choice
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


def stream_chunks(reply: Reply, include_usage: bool = False, model: str = "gpt-test") -> list[dict[str, Any]]:
    """The JSON chunks of a streamed reply, checking the framing and the final [DONE] on the way."""
    encoded = encode_stream(reply, model, include_usage)
    events = parse_sse(encoded.body)
    assert [data for _, data in events][-1] == "[DONE]"
    assert all(name == "message" for name, _ in events)
    return [json.loads(data) for _, data in events[:-1]]


def choice_deltas(chunks: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    return [c["choices"][0] for c in chunks if c["choices"] and c["choices"][0]["index"] == index]


def completion(reply: Reply, model: str = "gpt-test") -> dict[str, Any]:
    return orjson.loads(encode_completion(reply, model).body)


# ---------------------------------------------------------------------------------------------------------------
# Request parsing


def test_it_parses_a_minimal_request():
    request = parse_request(make_body())
    assert request.protocol == "openai"
    assert request.model == "gpt-test"
    assert request.messages == (Message(role="user", text="hello"),)
    assert request.system == ""
    assert request.tools == ()
    assert (request.temperature, request.top_p) == (None, None)
    assert (request.reasoning_enabled, request.stream, request.include_usage) == (False, False, False)


def test_it_parses_string_and_list_of_parts_content():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c", "content": "tool output"},
        {"role": "function", "name": "f", "content": "legacy output"},
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "look"}],
        },
    ]
    request = parse_request(make_body(messages=messages))
    assert request.messages == (
        Message(role="user", text="part one\npart two"),
        Message(role="assistant", text="", call_ids=("c",)),
        Message(role="tool", text="tool output", result_ids=("c",)),
        Message(role="tool", text="legacy output", result_ids=("f",)),
        Message(role="user", text="look"),
    )
    assert request.turn == 2
    assert (request.first_user, request.last_user) == ("part one\npart two", "look")


def test_it_joins_system_and_developer_messages_into_the_system_prompt():
    messages = [
        {"role": "system", "content": "You are a tester."},
        {"role": "user", "content": "hi"},
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
    ]
    request = parse_request(make_body(messages=messages))
    assert request.system == "You are a tester.\nBe brief."
    assert request.messages == (Message(role="user", text="hi"),)


def test_it_reads_tools_and_legacy_functions():
    tools = [
        {"type": "function", "function": {"name": "search", "parameters": {}}},
        {"type": "function", "function": {"name": "web.fetch"}},
    ]
    request = parse_request(make_body(tools=tools, functions=[{"name": "legacy_fn", "parameters": {}}]))
    assert request.tools == ("search", "web.fetch", "legacy_fn")


@pytest.mark.parametrize(
    ("fields", "enabled"),
    [
        ({}, False),
        ({"reasoning_effort": "low"}, True),
        ({"reasoning_effort": "minimal"}, True),
        ({"reasoning_effort": "high"}, True),
        ({"reasoning_effort": "none"}, False),
        ({"reasoning_effort": None}, False),
        ({"reasoning": {"effort": "medium"}}, True),
        ({"reasoning": {}}, True),
        ({"reasoning": {"effort": "none"}}, False),
        ({"reasoning": {"effort": None}}, False),
        ({"reasoning": None}, False),
    ],
)
def test_it_reads_reasoning_effort_and_the_reasoning_object(fields, enabled):
    assert parse_request(make_body(**fields)).reasoning_enabled is enabled


def test_it_reads_temperature_and_top_p_as_numbers():
    request = parse_request(make_body(temperature=0, top_p=0.25))
    assert (request.temperature, request.top_p) == (0.0, 0.25)
    assert isinstance(request.temperature, float)
    request = parse_request(make_body(temperature=1, top_p=None))
    assert (request.temperature, request.top_p) == (1.0, None)


def test_it_reads_stream_and_include_usage():
    request = parse_request(make_body(stream=True, stream_options={"include_usage": True}))
    assert (request.stream, request.include_usage) == (True, True)
    request = parse_request(make_body(stream=True, stream_options={"include_usage": False}))
    assert (request.stream, request.include_usage) == (True, False)
    request = parse_request(make_body(stream=None, stream_options=None))
    assert (request.stream, request.include_usage) == (False, False)


def test_it_reads_a_body_without_a_model_as_the_default_model():
    request = parse_request({"messages": [{"role": "user", "content": "x"}]})
    assert (request.model, request.model_missing) == ("harness-default", True)
    assert parse_request(make_body(model="gpt-4o")).model_missing is False


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ([], None),
        ("text", None),
        (None, None),
        (make_body(model=None), "model"),
        (make_body(model=""), "model"),
        (make_body(model=42), "model"),
        (make_body(messages=None), "messages"),
        (make_body(messages=[]), "messages"),
        (make_body(messages={"role": "user"}), "messages"),
        (make_body(messages=["hello"]), "messages[0]"),
        (make_body(messages=[{"content": "x"}]), "messages[0].role"),
        (make_body(messages=[{"role": "user", "content": "a"}, {"role": "bot", "content": "x"}]), "messages[1].role"),
        (make_body(messages=[{"role": "user", "content": 42}]), "messages[0].content"),
        (make_body(messages=[{"role": "user", "content": {"text": "x"}}]), "messages[0].content"),
        (make_body(messages=[{"role": "user", "content": ["x"]}]), "messages[0].content[0]"),
        (make_body(messages=[{"role": "user", "content": [{"text": "x"}]}]), "messages[0].content[0]"),
        (make_body(messages=[{"role": "user", "content": [{"type": "text"}]}]), "messages[0].content[0].text"),
        (make_body(temperature="hot"), "temperature"),
        (make_body(temperature=True), "temperature"),
        (make_body(top_p="0.5"), "top_p"),
        (make_body(stream="yes"), "stream"),
        (make_body(stream=1), "stream"),
        (make_body(tools={"name": "x"}), "tools"),
        (make_body(tools=["search"]), "tools[0].function.name"),
        (make_body(tools=[{"type": "function", "function": {}}]), "tools[0].function.name"),
        (make_body(tools=[{"type": "function", "function": {"name": "a"}}, {"name": "b"}]), "tools[1].function.name"),
        (make_body(functions=[{"parameters": {}}]), "functions[0].name"),
        (make_body(stream_options="yes"), "stream_options"),
    ],
)
def test_it_refuses_a_bad_request_naming_the_param(body, param):
    with pytest.raises(WireError) as caught:
        parse_request(body)
    assert caught.value.param == param
    assert caught.value.status == 400
    assert caught.value.message
    if param:
        assert param in caught.value.message or param == "model"


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


# ---------------------------------------------------------------------------------------------------------------
# Non-streamed completions


def test_it_shapes_a_text_completion():
    encoded = encode_completion(make_reply(make_text("Hello."), id_seed="demo:1"), "gpt-x")
    assert encoded.status == 200
    assert dict(encoded.headers)[b"content-type"] == b"application/json"
    body = orjson.loads(encoded.body)
    assert re.fullmatch(r"chatcmpl-[0-9a-f]{24}", body.pop("id"))
    assert body == {
        "object": "chat.completion",
        "created": CREATED,
        "model": "gpt-x",
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello.", "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33},
    }


def test_it_gives_the_stream_and_the_completion_the_same_id():
    reply = make_reply(make_text("x"), id_seed="demo:2")
    assert completion(reply)["id"] == stream_chunks(reply)[0]["id"]
    assert completion(make_reply(make_text("x"), id_seed="demo:3"))["id"] != completion(reply)["id"]


def test_it_gives_tool_calls_with_null_content_when_there_is_no_text():
    body = completion(make_reply(make_call("search", LONG_ARGUMENTS, "call_1"), make_call("fetch", {}, "call_2")))
    (choice,) = body["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"] == {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "search", "arguments": orjson.dumps(LONG_ARGUMENTS).decode()},
            },
            {"id": "call_2", "type": "function", "function": {"name": "fetch", "arguments": "{}"}},
        ],
    }


def test_it_joins_texts_and_adds_reasoning_to_the_message():
    reply = make_reply(make_reasoning("because"), make_text("a"), make_call("t", {}), make_text("b"))
    message = completion(reply)["choices"][0]["message"]
    assert message["content"] == "ab"
    assert message["reasoning"] == "because"
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["t"]


def test_it_gives_instruction_messages_their_own_choices_in_a_completion():
    reply = make_reply(make_text("one", choice=0), make_call("t", {"a": 1}, choice=1), make_text("two", choice=2))
    choices = completion(reply)["choices"]
    assert [c["index"] for c in choices] == [0, 1, 2]
    assert choices[0]["message"]["content"] == "one"
    assert choices[1]["message"]["content"] is None
    assert choices[1]["message"]["tool_calls"][0]["function"]["arguments"] == '{"a":1}'
    assert choices[1]["finish_reason"] == "tool_calls"
    assert choices[2]["message"]["content"] == "two"


def test_it_encodes_a_decided_scenario_turn_end_to_end():
    scenario = Scenario.model_validate(
        {
            "id": "demo",
            "turns": [
                {
                    "turn": 1,
                    "response": {
                        "kind": "tool-call",
                        "assistant_text": "Searching.",
                        "tool_calls": [{"tool_name": "search", "arguments": {"q": "x"}, "call_id": "authored-id"}],
                    },
                }
            ],
        }
    )
    request = parse_request(make_body(messages=[{"role": "user", "content": "demo"}], stream=True))
    reply = decide(Catalog.build([scenario]), request).reply
    chunks = stream_chunks(reply)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "Searching."
    calls = [t for c in chunks for t in c["choices"][0]["delta"].get("tool_calls", [])]
    assert calls[0]["id"] == "authored-id"
    assert json.loads("".join(t["function"]["arguments"] for t in calls)) == {"q": "x"}


# ---------------------------------------------------------------------------------------------------------------
# Errors and simulated failures


def error_body(encoded: Any) -> dict[str, Any]:
    body = orjson.loads(encoded.body)
    assert list(body) == ["error"]
    return body["error"]


def test_it_shapes_errors_like_openai():
    encoded = encode_error(400, "messages must be a non-empty array", param="messages")
    assert encoded.status == 400
    assert dict(encoded.headers)[b"content-type"] == b"application/json"
    assert error_body(encoded) == {
        "message": "messages must be a non-empty array",
        "type": "invalid_request_error",
        "param": "messages",
        "code": None,
    }


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (404, "invalid_request_error"),
        (413, "invalid_request_error"),
        (429, "requests"),
        (500, "server_error"),
        (504, "timeout"),
        (418, "server_error"),
    ],
)
def test_it_types_errors_by_status(status, kind):
    assert error_body(encode_error(status, "x"))["type"] == kind


def make_failure(status: str = "model_error", **fields: Any) -> Failure:
    defaults: dict[str, Any] = {"message": "Simulated", "retryable": True, "retry_after_ms": None, "error": None}
    defaults.update(fields)
    return Failure(status=status, **defaults)


def test_it_encodes_a_rate_limit_with_retry_headers():
    encoded = encode_failure(make_failure("rate_limit", message="Rate limit exceeded (simulated)", retry_after_ms=1000))
    assert encoded.status == 429
    headers = dict(encoded.headers)
    assert headers[b"retry-after"] == b"1"
    assert headers[b"retry-after-ms"] == b"1000"
    assert b"x-should-retry" not in headers
    assert error_body(encoded) == {
        "message": "Rate limit exceeded (simulated)",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }


@pytest.mark.parametrize(
    ("ms", "seconds"),
    [(1, b"1"), (999, b"1"), (1000, b"1"), (1001, b"2"), (1500, b"2"), (2500, b"3"), (60000, b"60"), (0, b"0")],
)
def test_it_rounds_retry_after_up_to_whole_seconds_and_keeps_the_exact_milliseconds(ms, seconds):
    headers = dict(encode_failure(make_failure("rate_limit", retry_after_ms=ms)).headers)
    assert headers[b"retry-after"] == seconds
    assert headers[b"retry-after-ms"] == str(ms).encode()


def test_it_sends_no_retry_headers_without_a_retry_after():
    headers = dict(encode_failure(make_failure("model_error")).headers)
    assert b"retry-after" not in headers
    assert b"retry-after-ms" not in headers


@pytest.mark.parametrize(
    ("status", "retryable", "http", "code"),
    [
        ("model_error", True, 500, "model_error"),
        ("model_error", False, 400, "model_error"),
        ("timeout", True, 504, "timeout"),
        ("rate_limit", False, 429, "rate_limit_exceeded"),
    ],
)
def test_it_maps_failure_statuses_to_http(status, retryable, http, code):
    encoded = encode_failure(make_failure(status, retryable=retryable))
    assert encoded.status == http
    assert error_body(encoded)["code"] == code
    headers = dict(encoded.headers)
    if retryable:
        assert b"x-should-retry" not in headers
    else:
        assert headers[b"x-should-retry"] == b"false"


def test_it_merges_the_failure_error_into_the_error_object():
    failure = make_failure("model_error", message="boom", error={"code": "custom_code", "detail": {"n": 1}})
    assert error_body(encode_failure(failure)) == {
        "message": "boom",
        "type": "server_error",
        "param": None,
        "code": "custom_code",
        "detail": {"n": 1},
    }


@pytest.mark.parametrize("stream", [True, False])
def test_it_sends_a_malformed_body_that_really_does_not_parse(stream):
    encoded = malformed(stream)
    assert encoded.status == 200
    if not stream:
        assert dict(encoded.headers)[b"content-type"] == b"application/json"
        with pytest.raises(ValueError):
            json.loads(encoded.body)
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(encoded.body)
        return
    assert dict(encoded.headers)[b"content-type"] == b"text/event-stream; charset=utf-8"
    events = parse_sse(encoded.body)
    assert events[-1] == ("message", "[DONE]")
    for _, data in events[:-1]:
        with pytest.raises(ValueError):
            json.loads(data)


def test_it_lists_models():
    body = orjson.loads(encode_models(["a", "b"]).body)
    assert body == {
        "object": "list",
        "data": [
            {"id": "a", "object": "model", "created": CREATED, "owned_by": "harness"},
            {"id": "b", "object": "model", "created": CREATED, "owned_by": "harness"},
        ],
    }


@pytest.mark.parametrize(("effort", "enabled"), [("", False), ("none", False), (None, False), ("low", True)])
def test_it_reads_reasoning_effort(effort, enabled):
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "reasoning_effort": effort}
    assert parse_request(body).reasoning_enabled is enabled
