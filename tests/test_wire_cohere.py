"""Cohere v2 wire, byte for byte: the chat parser, the typed SSE events and the chat response, errors and simulated
failures, the Embed parser and its embeddings by type, and the stream summary of what it sends."""

from __future__ import annotations

import base64
import struct
from typing import Any

import orjson
import pytest

from harnessweb.engine import asked, keys, routes, tokens
from harnessweb.engine.exchange import Block, ChatRequest, Failure, Reply, Usage
from harnessweb.engine.stream_summary import sse_events, summarize
from harnessweb.engine.wire import BY_NAME, cohere, embeddings
from harnessweb.engine.wire.common import WireError

USAGE = {"billed_units": {"input_tokens": 11, "output_tokens": 22}, "tokens": {"input_tokens": 11, "output_tokens": 22}}


EMPTY_DOCUMENT = {"role": "tool", "tool_call_id": "c", "content": [{"type": "document", "document": {}}]}


def make_body(**fields: Any) -> dict[str, Any]:
    return {"model": "command-a-03-2025", "messages": [{"role": "user", "content": "hello"}], **fields}


def make_reply(*blocks: Block, finish: str | None = None, chunk_words: int = 5) -> Reply:
    if finish is None:
        finish = "tool_calls" if any(b.type == "tool_call" for b in blocks) else "stop"
    return Reply(blocks=blocks, finish=finish, usage=Usage(11, 22, 33), chunk_words=chunk_words, id_seed="seed")


def weather_call(derived: bool = False) -> Block:
    return Block("tool_call", call_id="call_0123456789abcdef", name="get_weather",
                 arguments='{"city":"Paris","unit":"celsius"}', derived_id=derived)  # fmt: skip


def events(encoded: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(name or "", orjson.loads(data)) for name, data in sse_events(encoded.body.decode())]


# -- the request ---------------------------------------------------------------------------------------------------


def test_it_is_listed_and_routed_under_v2() -> None:
    assert BY_NAME["cohere"] is cohere
    chat = routes.resolve("POST", "/v2/chat", {})
    embed = routes.resolve("POST", "/v2/embed", {})
    assert (chat.kind, chat.wire, embed.kind, embed.wire) == ("play", cohere, "embeddings", cohere)
    assert routes.is_provider_path("/v2/rerank") and routes.play_wire("/v2/chat") is cohere
    missing = routes.resolve("POST", "/v2/rerank", {})
    assert isinstance(missing, routes.Refusal) and missing.wire is cohere and missing.status == 404
    assert routes.error_wire("/v1/models", {"x-fern-sdk-name": "cohere"}) is cohere


def test_it_reads_a_conversation_with_a_tool_call_and_its_result() -> None:
    body = make_body(
        messages=[
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "tool_plan": "I will look it up.",
             "tool_calls": [{"id": "get_weather_1", "type": "function",
                             "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
            {"role": "tool", "tool_call_id": "get_weather_1",
             "content": [{"type": "document", "document": {"data": {"temp": 21}}}]},
        ],
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        temperature=0.3, p=0.9, stream=True, thinking={"type": "enabled", "token_budget": 100},
    )  # fmt: skip
    request = cohere.parse_request(body)
    assert request.system == "Be brief." and request.tools == ("get_weather",) and request.turn == 2
    assert [(m.role, m.text) for m in request.messages] == [
        ("user", "Weather in Paris?"),
        ("assistant", "I will look it up."),
        ("tool", '{"temp":21}'),
    ]
    assert (request.temperature, request.top_p, request.stream, request.reasoning_enabled) == (0.3, 0.9, True, True)


def test_it_takes_a_documents_data_sent_as_a_json_string_as_its_text() -> None:
    # Cohere's tool-use guide and haystack's CohereChatGenerator send {"data": json.dumps(result)}.
    result = '{"temp": 21, "sky": "clear"}'
    body = make_body(
        messages=[
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "tool_calls": [{"id": "get_weather_1", "type": "function",
                                                  "function": {"name": "get_weather", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "get_weather_1",
             "content": [{"type": "document", "document": {"data": result}},
                         {"type": "document", "document": {"id": "2", "data": {"temp": 22}}}]},
        ],
        documents=[{"id": "doc-1", "data": '{"title": "Paris"}'}, {"data": {"title": "Lyon"}}, "Marseille"],
    )  # fmt: skip
    request = cohere.parse_request(body)
    assert request.messages[-1].text == result + '\n{"temp":22}'
    assert request.messages[-1].result_ids == ("get_weather_1",)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, "model"),
        (make_body(documents=[{"data": 3}]), "documents[0].data"),
        (make_body(messages=[EMPTY_DOCUMENT]), "messages[0].content[0].document.data"),
        (make_body(messages=[]), "messages"),
        (make_body(messages=[{"role": "chatbot", "content": "x"}]), "messages[0].role"),
        (make_body(messages=[{"role": "user"}]), "messages[0].content"),
        (make_body(messages=[{"role": "tool", "content": "{}"}]), "messages[0].tool_call_id"),
        (make_body(messages=[{"role": "user", "content": [{"type": "audio"}]}]), "messages[0].content[0].type"),
        (make_body(tools=[{"type": "function", "function": {}}]), "tools[0].function.name"),
        (make_body(documents=[3]), "documents[0]"),
        (make_body(response_format={"type": "json_schema"}), "response_format.type"),
        (make_body(temperature="hot"), "temperature"),
    ],
)
def test_it_refuses_a_bad_body_naming_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(WireError) as caught:
        cohere.parse_request(body)
    assert caught.value.param == param and caught.value.message.startswith("invalid request: ")


def test_it_honours_the_limits_schema_and_forced_tool_a_cohere_body_asks_for() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    body = make_body(max_tokens=3, stop_sequences=["END"], tool_choice="REQUIRED",
                     response_format={"type": "json_object", "json_schema": schema},
                     tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}])  # fmt: skip
    demands = asked.demands(body, ("f",))
    assert demands["max_tokens"] == 3 and demands["stop"] == ("END",) and demands["required_tools"] == ("f",)
    assert orjson.loads(demands["schema_json"]) == schema


# -- the answer ----------------------------------------------------------------------------------------------------


def test_it_encodes_a_plain_answer_as_a_chat_response() -> None:
    encoded = cohere.encode_response(make_reply(Block("text", text="Hello there.")))
    assert encoded.status == 200 and encoded.headers == ((b"content-type", b"application/json"),)
    assert orjson.loads(encoded.body) == {
        "id": cohere.uuid_of("seed"),
        "message": {"role": "assistant", "content": [{"type": "text", "text": "Hello there."}]},
        "finish_reason": "COMPLETE",
        "usage": USAGE,
    }


def test_it_encodes_a_tool_call_with_its_text_as_the_tool_plan() -> None:
    body = orjson.loads(cohere.encode_response(make_reply(Block("text", text="Checking."), weather_call(True))).body)
    assert body["finish_reason"] == "TOOL_CALL" and "content" not in body["message"]
    assert body["message"]["tool_plan"] == "Checking."
    assert body["message"]["tool_calls"] == [
        {"id": "get_weather_0123456789ab", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city":"Paris","unit":"celsius"}'}}
    ]  # fmt: skip


def test_it_streams_text_as_typed_events_byte_for_byte() -> None:
    encoded = cohere.encode_stream(make_reply(Block("text", text="one two three four five six seven")))
    assert encoded.headers[0] == (b"content-type", b"text/event-stream; charset=utf-8")
    uid = cohere.uuid_of("seed")
    assert encoded.frames == (
        b'event: message-start\ndata: {"id":"' + uid.encode() + b'","type":"message-start","delta":{"message":'
        b'{"role":"assistant","content":[],"tool_plan":"","tool_calls":[],"citations":[]}}}\n\n',
        b'event: content-start\ndata: {"type":"content-start","index":0,"delta":{"message":{"content":'
        b'{"type":"text","text":""}}}}\n\n',
        b'event: content-delta\ndata: {"type":"content-delta","index":0,"delta":{"message":{"content":'
        b'{"text":"one two three four five"}}}}\n\n',
        b'event: content-delta\ndata: {"type":"content-delta","index":0,"delta":{"message":{"content":'
        b'{"text":" six seven"}}}}\n\n',
        b'event: content-end\ndata: {"type":"content-end","index":0}\n\n',
        b'event: message-end\ndata: {"type":"message-end","delta":{"finish_reason":"COMPLETE","usage":'
        + orjson.dumps(USAGE)
        + b"}}\n\n",
    )
    assert encoded.content_frames == 2 and [p.text for p in encoded.pieces if p] == ["one two three four five",
                                                                                    " six seven"]  # fmt: skip


def test_it_streams_thinking_then_a_plan_then_tool_calls() -> None:
    reply = make_reply(Block("reasoning", text="Need weather."), Block("text", text="Let me check."), weather_call())
    stream = events(cohere.encode_stream(reply))
    assert [name for name, _ in stream] == [
        "message-start", "content-start", "content-delta", "content-end", "tool-plan-delta",
        "tool-call-start", "tool-call-delta", "tool-call-delta", "tool-call-end", "message-end",
    ]  # fmt: skip
    assert all(payload["type"] == name for name, payload in stream)
    assert stream[1][1]["delta"]["message"]["content"] == {"type": "thinking", "thinking": ""}
    assert stream[4][1]["delta"]["message"]["tool_plan"] == "Let me check."
    assert stream[5][1]["delta"]["message"]["tool_calls"] == {
        "id": "call_0123456789abcdef", "type": "function", "function": {"name": "get_weather", "arguments": ""}
    }  # fmt: skip
    pieces = [s[1]["delta"]["message"]["tool_calls"]["function"]["arguments"] for s in stream[6:8]]
    assert "".join(pieces) == '{"city":"Paris","unit":"celsius"}'
    assert stream[-1][1]["delta"]["finish_reason"] == "TOOL_CALL"


@pytest.mark.parametrize(
    ("max_tokens", "stop", "finish", "text"),
    [(2, (), "MAX_TOKENS", "one two"), (None, ("three",), "STOP_SEQUENCE", "one two ")],
)
def test_it_says_why_the_requests_limits_cut_the_answer(
    max_tokens: int | None, stop: tuple[str, ...], finish: str, text: str
) -> None:
    request = ChatRequest(protocol="cohere", model="m", max_tokens=max_tokens, stop=stop)
    reply = tokens.finished(make_reply(Block("text", text="one two three four")), request)
    body = orjson.loads(cohere.encode_reply(reply, request).body)
    assert body["finish_reason"] == finish and body["message"]["content"][0]["text"] == text
    assert events(cohere.encode_stream(reply))[-1][1]["delta"]["finish_reason"] == finish


def test_it_gives_the_same_log_probabilities_whole_and_streamed() -> None:
    reply = make_reply(Block("text", text="Hello, world and all the rest"), chunk_words=2)
    whole = orjson.loads(cohere.encode_response(reply, True).body)["logprobs"]
    assert [item["text"] for item in whole] == tokens.tokens("Hello, world and all the rest")
    assert [item["logprobs"][0] for item in whole] == [e["logprob"] for e in tokens.logprobs(reply.text, 0)]
    deltas = [p["logprobs"] for _, p in events(cohere.encode_stream(reply, True)) if p["type"] == "content-delta"]
    assert "".join(d["text"] for d in deltas) == reply.text and len(deltas) == 3
    assert [lp for d in deltas for lp in d["logprobs"]] == [item["logprobs"][0] for item in whole]
    assert [i for d in deltas for i in d["token_ids"]] == [item["token_ids"][0] for item in whole]
    assert "logprobs" not in orjson.loads(cohere.encode_response(reply).body)


def test_its_stream_reads_back_as_the_same_summary() -> None:
    reply = make_reply(Block("text", text="Let me check."), weather_call())
    summary = summarize(cohere.encode_stream(reply).body)
    assert summary.protocol == "cohere" and summary.text == "Let me check." and summary.has_done
    assert summary.stop_reason == "tool_use" and summary.usage == USAGE
    assert [(c.id, c.name, c.arguments) for c in summary.tool_calls] == [
        ("call_0123456789abcdef", "get_weather", '{"city":"Paris","unit":"celsius"}')
    ]
    whole = summarize(cohere.encode_response(make_reply(Block("text", text="Hi."))).body)
    assert (whole.protocol, whole.text, whole.stop_reason, whole.timeline) == (
        "cohere", "Hi.", "stop", ["start", "text_start", "text_delta", "text_end", "done"]
    )  # fmt: skip
    truncated = summarize(b"".join(cohere.encode_stream(reply).frames[:-1]))
    assert not truncated.has_done


# -- errors and failures -------------------------------------------------------------------------------------------


def test_it_sends_errors_in_cohere_shape() -> None:
    encoded = cohere.encode_error(400, "invalid request: messages must be a non-empty list", param="messages",
                                  request_id="req_1")  # fmt: skip
    assert encoded.status == 400
    assert orjson.loads(encoded.body) == {
        "id": "req_1",
        "message": "invalid request: messages must be a non-empty list",
    }
    assert orjson.loads(cohere.encode_error(400, "bad", param="x").body)["message"] == "bad (x)"


@pytest.mark.parametrize(
    ("kind", "status"),
    [("rate_limit", 429), ("auth_error", 401), ("overloaded", 503), ("timeout", 504), ("request_too_large", 413)],
)
def test_it_sends_each_failure_kind_with_its_status(kind: str, status: int) -> None:
    failure = Failure(
        kind, f"{kind} (simulated)", retryable=True, retry_after_ms=1500 if kind == "rate_limit" else None
    )
    encoded = cohere.encode_failure(failure, "req_9")
    assert encoded.status == status and orjson.loads(encoded.body) == {"id": "req_9", "message": failure.message}
    assert (b"retry-after", b"2") in encoded.headers if kind == "rate_limit" else len(encoded.headers) == 1


def test_its_malformed_answers_cannot_be_parsed() -> None:
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(cohere.malformed(False).body)
    [(name, data)] = list(sse_events(cohere.malformed(True).body.decode()))
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(data)
    assert name == "message-start"


def test_it_refuses_a_missing_or_empty_bearer_key_with_cohere_401() -> None:
    assert keys.refusal("cohere", {}) == (401, "no api key supplied")
    assert keys.refusal("cohere", {"authorization": "Bearer "}) == (401, "no api key supplied")
    assert keys.refusal("cohere", {"x-api-key": "k"}) == (401, "no api key supplied")
    assert keys.refusal("cohere", {"authorization": "Bearer k"}) is None


# -- /v2/embed -----------------------------------------------------------------------------------------------------


def test_it_embeds_texts_with_each_type_asked_for() -> None:
    request = cohere.parse_embeddings({"model": "embed-v4.0", "texts": ["alpha", "beta"], "input_type": "search_query",
                                       "embedding_types": ["float", "int8", "ubinary", "base64"]})  # fmt: skip
    assert isinstance(request, embeddings.EmbeddingRequest) and request.dimensions == 1536
    body = orjson.loads(cohere.encode_embeddings(request).body)
    alpha = embeddings.vector("alpha", 1536)
    assert body["texts"] == ["alpha", "beta"] and body["meta"]["billed_units"] == {"input_tokens": 2}
    assert body["embeddings"]["float"][0] == pytest.approx(list(alpha)) and len(body["embeddings"]["float"]) == 2
    assert struct.unpack("<1536f", base64.b64decode(body["embeddings"]["base64"][0])) == pytest.approx(alpha)
    assert max(map(abs, body["embeddings"]["int8"][0])) == 127 and len(body["embeddings"]["ubinary"][0]) == 192
    assert body["embeddings"]["ubinary"][0][0] == int("".join("1" if v > 0 else "0" for v in alpha[:8]), 2)
    assert set(body["embeddings"]) == {"float", "int8", "ubinary", "base64"}


def test_it_sizes_vectors_by_model_and_output_dimension() -> None:
    def dims(**fields: Any) -> int:
        return cohere.parse_embeddings({"texts": ["x"], "input_type": "clustering", **fields}).dimensions

    assert (dims(model="embed-english-v3.0"), dims(model="embed-english-light-v3.0")) == (1024, 384)
    assert dims(model="embed-v4.0", output_dimension=256) == 256


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"texts": ["x"], "input_type": "search_query"}, "model"),
        ({"model": "e", "texts": ["x"]}, "input_type"),
        ({"model": "e", "texts": [], "input_type": "search_query"}, "texts"),
        ({"model": "e", "input_type": "search_query"}, "texts"),
        ({"model": "e", "texts": ["x"], "input_type": "search_query", "embedding_types": ["fp16"]}, "embedding_types"),
        ({"model": "e", "texts": ["x"], "input_type": "search_query", "output_dimension": 100}, "output_dimension"),
        (
            {"model": "e", "inputs": [{"content": [{"type": "audio"}]}], "input_type": "search_query"},
            "inputs[0].content",
        ),
    ],
)
def test_it_refuses_a_bad_embed_body_naming_the_field(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(WireError) as caught:
        cohere.parse_embeddings(fields)
    assert caught.value.param == param
