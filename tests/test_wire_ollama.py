"""Ollama's native API, byte for byte: the chat and generate parsers, the NDJSON stream and the whole answer (the
counts and durations last, the same every time), errors and simulated failures, the embeddings, the model list,
show, ps and version; and the routes: Ollama's exact paths (and under /ollama/) reach the fake endpoint while every
route of the REST API under /api/ still reaches Django."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest

from harnessweb.engine import respond, routes, stream_ollama
from harnessweb.engine.exchange import Block, ChatRequest, Failure, Message, Reply, Usage
from harnessweb.engine.stream_events import Folder, StreamBroken, StreamSummary
from harnessweb.engine.wire import BY_NAME, embeddings, ollama, ollama_endpoints
from harnessweb.engine.wire.common import WireError

OLLAMA_ROUTES = [
    ("POST", "/api/chat", "play"),
    ("POST", "/api/generate", "play"),
    ("POST", "/api/embed", "embeddings"),
    ("POST", "/api/embeddings", "embeddings"),
    ("GET", "/api/tags", "models"),
    ("POST", "/api/show", "answer"),
    ("GET", "/api/ps", "answer"),
    ("GET", "/api/version", "answer"),
]
REPLY = Reply(
    blocks=(
        Block("reasoning", text="think"),
        Block("text", text="Hello there, world"),
        Block("tool_call", call_id="call_1", name="get_weather", arguments='{"city":"Paris"}'),
    ),
    finish="tool_calls",
    usage=Usage(3, 4, 7),
    chunk_words=2,
)
HEAD = '{"model":"llama3.2","created_at":"2025-01-01T00:00:00Z",'
STATS = (
    '"total_duration":84000000,"load_duration":1000000,"prompt_eval_count":3,"prompt_eval_duration":3000000,'
    '"eval_count":4,"eval_duration":80000000}'
)
CALL = '{"id":"call_1","function":{"index":0,"name":"get_weather","arguments":{"city":"Paris"}}}'


def make_body(**fields: Any) -> dict[str, Any]:
    return {"model": "llama3.2", "messages": [{"role": "user", "content": "hello"}], **fields}


def read(path: str, body: dict[str, Any]) -> Any:
    route = routes.resolve("POST", path, {})
    return respond.read_request(route, orjson.dumps(body))[1]


# -- routes ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "kind"), OLLAMA_ROUTES)
def test_it_routes_each_ollama_path_to_the_endpoint_bare_and_under_ollama(method: str, path: str, kind: str) -> None:
    assert BY_NAME["ollama"] is ollama
    for asked in (path, "/ollama" + path, path + "/"):
        route = routes.resolve(method, asked, {})
        assert routes.is_provider_path(asked) and (route.kind, route.wire) == (kind, ollama)


def test_it_leaves_every_rest_route_under_api_to_django() -> None:
    from django.urls import get_resolver

    def walk(patterns: Any, prefix: str = "") -> list[str]:
        found = []
        for pattern in patterns:
            if hasattr(pattern, "url_patterns"):
                found += walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                found.append(prefix + str(pattern.pattern))
        return found

    rest = [re.sub(r"<[^>]+>", "1", p) for p in walk(get_resolver().url_patterns) if p.startswith("api/")]
    assert "api/runs" in rest and "api/scenarios/1" in rest and len(rest) > 20
    reached = [p for p in rest if routes.is_provider_path("/" + p) or routes.is_provider_path("/" + p + "/")]
    assert reached == []
    assert not routes.is_provider_path("/api/") and not routes.is_provider_path("/api/chats")


def test_it_answers_a_wrong_method_or_path_in_ollamas_format() -> None:
    wrong = routes.resolve("GET", "/api/chat", {})
    assert isinstance(wrong, routes.Refusal) and (wrong.status, wrong.wire) == (405, ollama)
    assert orjson.loads(ollama.encode_error(405, wrong.message).body) == {"error": wrong.message}
    missing = routes.resolve("POST", "/ollama/api/pull", {})
    assert isinstance(missing, routes.Refusal) and (missing.status, missing.wire) == (404, ollama)
    assert "POST /api/chat" in missing.message and "GET /api/tags" in missing.message
    assert routes.play_wire("/ollama/api/generate") is ollama


# -- the request -----------------------------------------------------------------------------------------------------


def test_it_reads_a_chat_with_a_tool_call_and_its_result_streaming_by_default() -> None:
    body = make_body(
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
            },  # fmt: skip
            {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
        ],
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        options={"temperature": 0.2, "top_p": 0.9},
    )
    request = ollama.parse_request(body)
    assert (request.protocol, request.model, request.system, request.stream) == (
        "ollama",
        "llama3.2",
        "Be brief.",
        True,
    )
    assert request.messages == (
        Message("user", "Weather?"),
        Message("assistant", "", call_ids=("get_weather",)),
        Message("tool", "sunny", result_ids=("get_weather",)),
    )
    assert (request.tools, request.temperature, request.top_p, request.turn) == (("get_weather",), 0.2, 0.9, 2)
    assert ollama.parse_request(make_body(stream=False)).stream is False


def test_it_reads_call_ids_where_the_client_sends_them_else_the_tools_name() -> None:
    call = {"id": "c1", "function": {"name": "get_weather", "arguments": {}}}
    result = {"role": "tool", "content": "sunny", "tool_call_id": "c1", "tool_name": "get_weather"}
    body = make_body(
        messages=[{"role": "user", "content": "Weather?"}, {"role": "assistant", "tool_calls": [call]}, result]
    )
    _, assistant, tool = ollama.parse_request(body).messages
    assert (assistant.call_ids, tool.result_ids) == (("c1",), ("c1", "get_weather"))
    # Calls sent back without their ids (the ollama package drops them) are answered by the results in their places.
    anonymous = [{"function": {"name": "a"}}, {"function": {"name": "b"}}]
    body = make_body(messages=[{"role": "assistant", "tool_calls": anonymous}, {"role": "tool", "tool_call_id": "x"},
                               {"role": "tool", "tool_name": "b"}, {"role": "tool", "content": "extra"}])  # fmt: skip
    assistant, *tools = ollama.parse_request(body).messages
    assert (assistant.call_ids, [t.result_ids for t in tools]) == (("a", "b"), [("x", "a"), ("b",), ()])


def test_it_reads_a_generate_body_and_answers_in_generates_shape() -> None:
    request = read("/api/generate", {"model": "m", "prompt": "Hi", "system": "Sys", "think": "high"})
    assert (request.messages, request.system, request.framing) == ((Message("user", "Hi"),), "Sys", "generate")
    assert request.reasoning_enabled and request.family == "ollama"


def test_it_reads_format_and_options_as_the_engines_demands() -> None:
    schema = {"title": "Weather", "type": "object", "properties": {"city": {"type": "string"}}}
    request = read("/api/chat", make_body(format=schema, options={"num_predict": 12, "stop": ["\n\n"]}))
    assert (orjson.loads(request.schema_json), request.max_tokens, request.stop) == (schema, 12, ("\n\n",))
    assert orjson.loads(read("/api/chat", make_body(format="json")).schema_json) == {"type": "object"}
    unlimited = read("/api/chat", make_body(options={"num_predict": -1}))
    assert (unlimited.max_tokens, unlimited.schema_json, unlimited.reasoning_enabled) == (None, "", False)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": []}, "model"),
        (make_body(model=""), "model"),
        ({"model": "m"}, "messages"),
        (make_body(messages=[{"role": "robot", "content": "x"}]), "messages[0].role"),
        (make_body(messages=[{"role": "user", "content": ["x"]}]), "messages[0].content"),
        (make_body(messages=[{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}]),
         "messages[0].tool_calls[0].function.arguments"),
        (make_body(tools=[{"type": "function", "function": {}}]), "tools[0].function.name"),
        (make_body(format="yaml"), "format"),
        (make_body(think="very"), "think"),
        (make_body(stream="yes"), "stream"),
        (make_body(options={"stop": "x"}), "options.stop"),
        (make_body(options={"num_predict": 1.5}), "options.num_predict"),
        (make_body(options={"temperature": "hot"}), "temperature"),
    ],
)  # fmt: skip
def test_it_refuses_a_bad_body_naming_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(WireError) as caught:
        ollama.parse_request(body)
    assert caught.value.param == param and caught.value.status == 400
    error = ollama.encode_error(400, caught.value.message, param=caught.value.param)
    assert error.status == 400 and param in orjson.loads(error.body)["error"]


# -- the answer ------------------------------------------------------------------------------------------------------


def test_it_streams_ndjson_thinking_text_and_whole_tool_calls_then_the_counts() -> None:
    encoded = ollama.encode_reply(REPLY, ChatRequest("ollama", "llama3.2", stream=True))
    assert encoded.headers == ((b"content-type", b"application/x-ndjson"),)
    assert encoded.body.decode().splitlines() == [
        HEAD + '"message":{"role":"assistant","content":"","thinking":"think"},"done":false}',
        HEAD + '"message":{"role":"assistant","content":"Hello there,"},"done":false}',
        HEAD + '"message":{"role":"assistant","content":" world"},"done":false}',
        HEAD + '"message":{"role":"assistant","content":"","tool_calls":[' + CALL + ']},"done":false}',
        HEAD + '"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop",' + STATS,
    ]
    assert all(frame.endswith(b"}\n") and frame.count(b"\n") == 1 for frame in encoded.frames)
    assert encoded.content_frames == 3  # a call's line opens it whole (as a tool_call piece, not counted)


def test_it_answers_whole_when_stream_is_false() -> None:
    encoded = ollama.encode_reply(REPLY, ChatRequest("ollama", "llama3.2", stream=False))
    assert encoded.headers == ((b"content-type", b"application/json; charset=utf-8"),)
    assert encoded.body.decode() == (
        HEAD + '"message":{"role":"assistant","content":"Hello there, world","thinking":"think","tool_calls":['
        + CALL + ']},"done":true,"done_reason":"stop",' + STATS
    )  # fmt: skip


def test_it_answers_generate_with_response_and_context_and_without_tools() -> None:
    request = ChatRequest("ollama", "llama3.2", stream=True, framing="generate")
    lines = [orjson.loads(line) for line in ollama.encode_reply(REPLY, request).body.splitlines()]
    assert [line.get("response") for line in lines] == ["", "Hello there,", " world", ""]
    assert lines[0]["thinking"] == "think" and "message" not in lines[-1]
    assert lines[-1]["context"] == ollama.context_of(REPLY) and len(lines[-1]["context"]) == 4
    whole = orjson.loads(ollama.encode_reply(REPLY, ChatRequest("ollama", "m", framing="generate")).body)
    assert (whole["response"], whole["thinking"], whole["done"]) == ("Hello there, world", "think", True)


def test_it_reports_the_same_counts_and_durations_for_the_same_answer() -> None:
    again = Reply(REPLY.blocks, REPLY.finish, Usage(3, 4, 7), chunk_words=2)
    first = ollama.encode_response.__wrapped__(REPLY, "m")
    assert first.body == ollama.encode_response.__wrapped__(again, "m").body
    stats = ollama.stats(REPLY)
    assert stats["total_duration"] == stats["load_duration"] + stats["prompt_eval_duration"] + stats["eval_duration"]
    assert (stats["prompt_eval_count"], stats["eval_count"], stats["eval_duration"]) == (3, 4, 4 * 20_000_000)


def test_it_says_length_when_the_token_budget_cut_the_answer() -> None:
    cut = Reply((Block("text", text="Hello"),), "stop", Usage(1, 1, 2), cuts=((0, "length", ""),))
    assert orjson.loads(ollama.encode_reply(cut, ChatRequest("ollama", "m")).body.splitlines()[-1])["done_reason"] == (
        "length"
    )


def test_it_gives_errors_and_failures_in_ollamas_format() -> None:
    failure = ollama.encode_failure(Failure("rate_limit", "slow down", True, 2500))
    assert (failure.status, orjson.loads(failure.body)) == (429, {"error": "slow down"})
    assert (b"retry-after", b"3") in failure.headers and (b"retry-after-ms", b"2500") in failure.headers
    assert ollama.encode_error(404, "model 'x' not found").body == b'{"error":"model \'x\' not found"}'
    for stream in (True, False):
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(ollama.malformed(stream).body)


# -- the endpoints beside chat ---------------------------------------------------------------------------------------


def test_it_embeds_inputs_and_the_older_prompt_with_the_deterministic_vectors() -> None:
    request = read("/api/embed", {"model": "nomic-embed-text", "input": ["red", "blue"], "truncate": True})
    body = orjson.loads(ollama.encode_embeddings(request).body)
    assert body["model"] == "nomic-embed-text" and body["prompt_eval_count"] == 2
    assert body["embeddings"][1] == pytest.approx(list(embeddings.vector("blue", 768)))
    assert body["total_duration"] == body["load_duration"] + 2 * 1_000_000
    older = read("/api/embeddings", {"model": "nomic-embed-text", "prompt": "red", "options": {}})
    assert orjson.loads(ollama.encode_embeddings(older).body) == {"embedding": body["embeddings"][0]}
    empty = read("/api/embed", {"model": "m", "input": ""})
    assert orjson.loads(ollama.encode_embeddings(empty).body)["embeddings"] == []
    for bad, param in (({"input": "x"}, "model"), ({"model": "m"}, "input"), ({"model": "m", "input": [1]}, "input"),
                       ({"model": "m", "input": "x", "dimensions": 0}, "dimensions"),
                       ({"model": "m", "prompt": 3}, "prompt")):  # fmt: skip
        with pytest.raises(WireError) as caught:
            ollama.parse_embeddings(bad)
        assert caught.value.param == param


def test_it_lists_shows_and_reports_version_and_ps() -> None:
    tags = orjson.loads(ollama.encode_models(["a", "b"]).body)["models"]
    assert [(m["name"], m["model"], len(m["digest"])) for m in tags] == [("a", "a", 64), ("b", "b", 64)]
    shown = orjson.loads(ollama.encode_answer("show", b'{"model": "llama3.2"}').body)
    assert "FROM llama3.2" in shown["modelfile"] and "tools" in shown["capabilities"]
    assert orjson.loads(ollama.encode_answer("version", b"").body) == {"version": ollama_endpoints.VERSION}
    assert orjson.loads(ollama.encode_answer("ps", b"").body) == {"models": []}
    for body in (b"{}", b"[]", b"{bad"):
        with pytest.raises(WireError):
            ollama.encode_answer("show", body)


# -- what a client reads back (seed 003's stream summary, from stream_ollama) ---------------------------------------


def fold(body: bytes) -> StreamSummary:
    summary = StreamSummary(status=200, protocol="ollama")
    folder = Folder(summary)
    try:
        for payload, whole in stream_ollama.payloads(body.decode()):
            stream_ollama.read(folder, payload, whole)
    except StreamBroken as exc:
        summary.stream_error = str(exc)
    return summary


@pytest.mark.parametrize("framing", ["", "generate"])
def test_it_reads_back_the_stream_it_writes(framing: str) -> None:
    encoded = ollama.encode_reply(REPLY, ChatRequest("ollama", "m", stream=True, framing=framing))
    assert stream_ollama.is_ndjson(encoded.body.decode())
    summary = fold(encoded.body)
    assert (summary.text, summary.thinking, summary.text_deltas, summary.has_done) == (REPLY.text, "think", 2, True)
    assert summary.usage["eval_count"] == 4 and summary.stream_error is None
    if framing:  # generate has no tools
        assert (summary.tool_calls, summary.stop_reason) == ([], "stop")
    else:
        assert [(c.id, c.name, c.arguments) for c in summary.tool_calls] == [
            ("call_1", "get_weather", '{"city":"Paris"}')
        ]
        assert summary.stop_reason == "tool_use"


def test_it_reads_a_whole_answer_an_error_line_and_a_broken_line() -> None:
    whole = fold(ollama.encode_reply(REPLY, ChatRequest("ollama", "m")).body)
    assert (whole.text, whole.has_done, len(whole.tool_calls)) == (REPLY.text, True, 1)
    failed = fold(ollama.encode_reply(REPLY, ChatRequest("ollama", "m", stream=True)).frames[0] + b'{"error":"boom"}\n')
    assert failed.error.message == "boom" and failed.stop_reason == "error" and not failed.has_done
    broken = fold(respond.broken("invalid_json_in_stream", ollama.encode_stream(REPLY, "m"), True).body)
    assert broken.stream_error.startswith("invalid JSON on line 3") and not broken.has_done
    assert not stream_ollama.is_ndjson('{"model":"m"}\n') and not stream_ollama.is_ndjson("data: {}\n\n")
