"""Our streams and error bodies against the VCR cassettes (recorded and hand-written provider traffic).

For every streamed 200 on a protocol we serve, the recording's content is authored as a scenario, requested from
the server with the same protocol, and both streams are compared: event sequence, JSON keys, accumulated content.
The official SDKs then parse the recording and our stream alike. Error bodies are compared by JSON shape.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from harnessweb.engine.wire import anthropic as anthropic_wire
from harnessweb.engine.wire import gemini as gemini_wire
from harnessweb.engine.wire import openai as openai_wire
from tests.conftest import VCR_DIR, make_scenario
from tests.sse import SSEParser, parse_sse

# ---------------------------------------------------------------------------------------------------------------
# The cassettes


def load_cassettes() -> dict[str, dict[str, Any]]:
    """Every cassette in the folder (files with ``interactions``; the manifest is not one)."""
    cassettes = {}
    for path in sorted(VCR_DIR.glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "interactions" in data:
            cassettes[path.name] = data
    return cassettes


CASSETTES = load_cassettes()
# The recorded requests name a model the SDK warns about; that warning is about the recordings, not the endpoint.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


def protocol_of(interaction: dict[str, Any]) -> str | None:
    """The protocol we serve that the recorded request speaks, from its URL; None for the others."""
    path = interaction["request"]["url"].split("?")[0]
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    if path.endswith("/chat/completions"):  # OpenAI's and Azure's deployments URL alike
        return "openai"
    return None


def header(headers: Any, name: str) -> str | None:
    items = headers.items() if isinstance(headers, dict) else headers
    return next((value for key, value in items if key.lower() == name), None)


def media_type(value: str | None) -> str:
    return (value or "").split(";")[0].strip().lower()


def body_chunks(response: dict[str, Any]) -> list[bytes]:
    if "body_chunks_base64" in response:
        return [base64.b64decode(chunk) for chunk in response["body_chunks_base64"]]
    return [chunk.encode("utf-8") for chunk in response["body_chunks"]]


def is_stream(response: dict[str, Any]) -> bool:
    return response["status"] == 200 and media_type(header(response["headers"], "content-type")) == "text/event-stream"


def is_json_error(response: dict[str, Any]) -> bool:
    if response["status"] < 400 or media_type(header(response["headers"], "content-type")) != "application/json":
        return False
    return isinstance(json.loads(b"".join(body_chunks(response))), dict)


def select(protocol: str, kind: Any) -> list[Any]:
    return [
        pytest.param(name, index, id=f"{name.removesuffix('.json')}#{index}")
        for name, cassette in CASSETTES.items()
        for index, interaction in enumerate(cassette["interactions"])
        if protocol_of(interaction) == protocol and kind(interaction["response"])
    ]


ANTHROPIC_STREAMS = select("anthropic", is_stream)
OPENAI_STREAMS = select("openai", is_stream)
GEMINI_STREAMS = select("gemini", is_stream)
ERRORS = select("anthropic", is_json_error) + select("openai", is_json_error) + select("gemini", is_json_error)
STREAMS = ANTHROPIC_STREAMS + OPENAI_STREAMS + GEMINI_STREAMS


def interaction_of(name: str, index: int) -> dict[str, Any]:
    return CASSETTES[name]["interactions"][index]


def scenario_id(name: str, index: int) -> str:
    return f"vcr-{name.removesuffix('.json')}-{index}"


def replay_client(sdk: Any, response: dict[str, Any]) -> Any:
    """An official SDK client whose transport answers with the recorded response, chunk by recorded chunk."""
    skip = {"transfer-encoding", "content-length", "connection", "content-encoding"}
    headers = [(k, v) for k, v in response["headers"] if k.lower() not in skip]

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(response["status"], headers=headers, content=iter(body_chunks(response)))

    http_client = httpx2.Client(transport=httpx2.MockTransport(answer))
    kwargs = {"api_key": "replay", "http_client": http_client, "max_retries": 0}
    if sdk is anthropic:
        return anthropic.Anthropic(base_url="http://recording.invalid", **kwargs)
    return openai.OpenAI(base_url="http://recording.invalid/v1", **kwargs)


def test_it_compares_every_cassette_of_every_protocol_it_serves():
    covered = {p.values[0] for p in STREAMS + ERRORS}
    assert sorted(set(CASSETTES) - covered) == []
    # Every served protocol's streamed 200 is compared below.
    for name, cassette in CASSETTES.items():
        for index, interaction in enumerate(cassette["interactions"]):
            assert protocol_of(interaction) is not None, name
            if is_stream(interaction["response"]):
                assert (name, index) in {tuple(p.values) for p in STREAMS}
    assert len(ANTHROPIC_STREAMS) >= 10 and len(OPENAI_STREAMS) >= 10 and len(GEMINI_STREAMS) >= 7
    assert len(ERRORS) >= 13


# ---------------------------------------------------------------------------------------------------------------
# The SSE parser, on the recordings' own chunking


def test_it_parses_the_same_events_however_the_stream_is_cut():
    stream = (
        'event: message_start\ndata: {"type":"message_start"}\n\n'
        ": a comment\r\n"
        'event: content_block_delta\r\ndata: {"text":"😀 ok"}\r\n\r\n'
        "data: line one\ndata: line two\n\n"
        "event: no_data\n\n"
        "data: [DONE]\r\r"
        "data: unterminated"
    ).encode()
    expected = [
        ("message_start", '{"type":"message_start"}'),
        ("content_block_delta", '{"text":"😀 ok"}'),
        (None, "line one\nline two"),
        (None, "[DONE]"),
    ]
    assert parse_sse([stream]) == expected
    assert parse_sse([stream[i : i + 1] for i in range(len(stream))]) == expected  # cut inside UTF-8 and CRLF
    for cut in range(len(stream)):
        assert parse_sse([stream[:cut], stream[cut:]]) == expected
    parser = SSEParser()
    assert parser.feed("data: a\n") == [] and parser.feed("\ndata: b\n\n") == [(None, "a"), (None, "b")]


@pytest.mark.parametrize(("name", "index"), ANTHROPIC_STREAMS + OPENAI_STREAMS)
def test_it_parses_the_same_events_from_the_recorded_chunks_and_the_whole_body(name, index):
    chunks = body_chunks(interaction_of(name, index)["response"])
    events = parse_sse(chunks)
    assert events == parse_sse([b"".join(chunks)])
    assert len(events) == b"".join(chunks).count(b"\n\n")  # one event per blank line, whatever the chunking


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


# ---------------------------------------------------------------------------------------------------------------
# OpenAI Chat Completions (OpenAI's and Azure's recordings)


def openai_chunks(chunks: list[bytes]) -> list[dict[str, Any]]:
    events = parse_sse(chunks)
    assert all(name is None for name, _ in events)  # data-only events
    data = [d for _, d in events]
    assert data[-1] == "[DONE]" and data.count("[DONE]") == 1
    return [json.loads(d) for d in data[:-1]]


def openai_content(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    text, reasoning, finish = "", "", None
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk["choices"]:
            assert choice["index"] == 0
            delta = choice["delta"]
            text += delta.get("content") or ""
            reasoning += delta.get("reasoning") or ""
            for item in delta.get("tool_calls") or []:
                call = calls.setdefault(item["index"], {"id": None, "name": None, "arguments": ""})
                call["id"] = item.get("id") or call["id"]
                call["name"] = item.get("function", {}).get("name") or call["name"]
                call["arguments"] += item.get("function", {}).get("arguments") or ""
            finish = choice["finish_reason"] or finish
    tool_calls = [{**calls[i], "arguments": json.loads(calls[i]["arguments"])} for i in sorted(calls)]
    assert sorted(calls) == list(range(len(calls)))
    usage = next((c["usage"] for c in chunks if c.get("usage")), None)
    return {"text": text, "reasoning": reasoning, "tool_calls": tool_calls, "finish_reason": finish, "usage": usage}


def tool_call_steps(chunks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Where each tool call's index, id, type and name appear: its first delta, then argument deltas only."""
    steps: list[tuple[Any, ...]] = []
    for chunk in chunks:
        for choice in chunk["choices"]:
            for item in choice["delta"].get("tool_calls") or []:
                function = item["function"]
                if "id" in item:
                    step = ("first", item["index"], sorted(item), sorted(function), function["arguments"] == "")
                else:
                    step = ("arguments", item["index"], sorted(item), sorted(function))
                if not steps or steps[-1] != step:
                    steps.append(step)
    return steps


def openai_turn(content: dict[str, Any]) -> dict[str, Any]:
    usage = content["usage"]
    if content["tool_calls"]:
        response: dict[str, Any] = {
            "kind": "tool-call",
            "tool_calls": [
                {"tool_name": c["name"], "arguments": c["arguments"], "call_id": c["id"]} for c in content["tool_calls"]
            ],
        }
        if content["text"]:
            response["assistant_text"] = content["text"]
    else:
        response = {"kind": "text", "assistant_text": content["text"]}
    if content["reasoning"]:
        response["reasoning"] = [{"text": content["reasoning"]}]
    return {
        "turn": 1,
        "response": response,
        "finish_reason": content["finish_reason"],
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            "total_tokens": usage["total_tokens"],
        },
    }


def recorded_openai(name: str, index: int) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    chunks = openai_chunks(body_chunks(interaction_of(name, index)["response"]))
    content = openai_content(chunks)
    make_scenario(scenario_id(name, index), [openai_turn(content)])
    params: dict[str, Any] = {
        "model": chunks[0]["model"],
        "messages": [{"role": "user", "content": scenario_id(name, index)}],
    }
    if content["tool_calls"]:
        names = sorted({c["name"] for c in content["tool_calls"]})
        params["tools"] = [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names
        ]
    return chunks, content, params


def choice_chunks(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [choice for chunk in chunks for choice in chunk["choices"]]


@pytest.mark.parametrize(("name", "index"), OPENAI_STREAMS)
def test_it_streams_openai_chunks_of_the_recorded_shape_and_content(oai, name, index):
    recorded, content, params = recorded_openai(name, index)
    with oai.chat.completions.with_streaming_response.create(
        stream=True, stream_options={"include_usage": True}, **params
    ) as response:
        assert response.status_code == 200
        content_type = response.headers["content-type"]
        ours = openai_chunks(list(response.iter_bytes()))
    assert media_type(content_type) == media_type(
        header(interaction_of(name, index)["response"]["headers"], "content-type")
    )

    # Chunk keys: the real API's chunks carry system_fingerprint, which the hand-written recordings leave out.
    # Usage: these recordings put it on the finish_reason chunk; the real API sends it only when asked
    # (stream_options.include_usage), on one more chunk with "choices": [] just before [DONE], as we do.
    real_keys = set().union(*(c.keys() for c in recorded)) - {"usage"}
    assert set().union(*(c.keys() for c in ours)) - {"usage", "system_fingerprint"} == real_keys
    assert {c["object"] for c in ours} == {c["object"] for c in recorded} == {"chat.completion.chunk"}
    assert len({c["id"] for c in ours}) == 1 and {c["model"] for c in ours} == {params["model"]}
    *body, usage_chunk = ours
    assert usage_chunk["choices"] == [] and all(c["choices"] for c in body)
    assert usage_chunk["usage"] == content["usage"]

    real_choices, our_choices = choice_chunks(recorded), choice_chunks(body)
    assert set().union(*(c.keys() for c in our_choices)) == set().union(*(c.keys() for c in real_choices))
    # The role comes with the first delta, and only there.
    for choices in (real_choices, our_choices):
        assert choices[0]["delta"]["role"] == "assistant"
        assert all("role" not in c["delta"] for c in choices[1:])
    # The same delta fields, the opening delta included (role rides on the first content or tool call delta).
    for choices in (real_choices, our_choices):
        assert all(set(c["delta"]) <= {"role", "content", "tool_calls"} for c in choices)
    assert set(our_choices[0]["delta"]) == set(real_choices[0]["delta"])
    assert {k for c in our_choices for k in c["delta"]} == {k for c in real_choices for k in c["delta"]}
    assert tool_call_steps(ours) == tool_call_steps(recorded)
    # finish_reason on the last choice chunk only, with an empty delta.
    for choices in (real_choices, our_choices):
        assert all(c["finish_reason"] is None for c in choices[:-1])
        assert choices[-1]["finish_reason"] and choices[-1]["delta"] == {}

    assert openai_content(ours) == content


def final_snapshot(client: openai.OpenAI, params: dict[str, Any]) -> Any:
    """The SDK's accumulated completion (get_final_completion refuses finish_reason "length" when parsing)."""
    with client.chat.completions.stream(**params) as stream:
        for _ in stream:
            pass
        return stream.current_completion_snapshot


@pytest.mark.parametrize(("name", "index"), OPENAI_STREAMS)
def test_it_streams_what_the_openai_sdk_reads_to_the_same_completion_as_the_recording(oai, name, index):
    _, content, params = recorded_openai(name, index)
    replayed = final_snapshot(replay_client(openai, interaction_of(name, index)["response"]), params)
    served = final_snapshot(oai, params)

    def summary(completion: Any) -> dict[str, Any]:
        choice = completion.choices[0]
        calls = choice.message.tool_calls or []
        return {
            "text": choice.message.content,
            "tool_calls": [
                {"id": c.id, "name": c.function.name, "arguments": json.loads(c.function.arguments)} for c in calls
            ],
            "finish_reason": choice.finish_reason,
        }

    expected = {k: content[k] for k in ("text", "tool_calls", "finish_reason")}
    # Strictly equal, None content included (a tool-call-only stream has no text at all).
    assert summary(replayed) == summary(served)
    assert {**summary(served), "text": summary(served)["text"] or ""} == expected
    assert len(served.choices) == len(replayed.choices) == 1


# ---------------------------------------------------------------------------------------------------------------
# Error bodies


def keys_tree(value: Any) -> Any:
    """The JSON shape: object keys, recursively (values reduced to None)."""
    if isinstance(value, dict):
        return {k: keys_tree(v) for k, v in value.items()}
    return None


@pytest.mark.parametrize(("name", "index"), ERRORS)
def test_it_answers_error_bodies_of_the_recorded_shape(name, index):
    interaction = interaction_of(name, index)
    response = interaction["response"]
    recorded = json.loads(b"".join(body_chunks(response)))
    status = response["status"]
    if protocol_of(interaction) == "gemini":
        ours = json.loads(gemini_wire.encode_error(status, "message").body)
        assert keys_tree(ours) == keys_tree(recorded)
        assert (ours["error"]["code"], ours["error"]["status"]) == (
            recorded["error"]["code"],
            recorded["error"]["status"],
        )
    elif protocol_of(interaction) == "anthropic":
        ours = json.loads(anthropic_wire.encode_error(status, "message", request_id="req_test").body)
        real = keys_tree(recorded)
        if header(response["headers"], "request-id") is None:
            # Hand-written: the real API's errors (the recorded 400s, with their request-id header) always carry
            # the request_id at the top as well.
            real["request_id"] = None
        assert keys_tree(ours) == real
        assert ours["error"]["type"] == recorded["error"]["type"]
    else:
        ours = json.loads(openai_wire.encode_error(status, "message", code="code").body)
        assert ours.keys() == recorded.keys() == {"error"}
        if name.startswith("azure_"):
            # Azure's own error object is {code, message}; the endpoint speaks OpenAI's, of which that is a subset
            # (the openai SDK reads message and code from either).
            assert set(recorded["error"]) <= set(ours["error"])
        else:
            assert keys_tree(ours) == keys_tree(recorded)


# ---------------------------------------------------------------------------------------------------------------
# Gemini


def gemini_events(chunks: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(data) for _, data in parse_sse(chunks)]


def gemini_content(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What a Gemini stream says, accumulated: text, function calls, the finish reason, the usage."""
    text, calls, finish = "", [], None
    for event in events:
        for candidate in event["candidates"]:
            for part in candidate["content"]["parts"]:
                if "functionCall" in part:
                    calls.append(part["functionCall"])
                elif not part.get("thought"):
                    text += part.get("text", "")
            finish = candidate.get("finishReason") or finish
    usage = next((e["usageMetadata"] for e in events if e.get("usageMetadata")), None)
    return {"text": text, "calls": calls, "finish": finish, "usage": usage}


def gemini_turn(content: dict[str, Any]) -> dict[str, Any]:
    if content["calls"]:
        calls = [{"tool_name": c["name"], "arguments": c["args"]} for c in content["calls"]]
        response: dict[str, Any] = {"kind": "tool-call", "tool_calls": calls}
        if content["text"]:
            response["assistant_text"] = content["text"]
    else:
        response = {"kind": "text", "assistant_text": content["text"]}
    usage = content["usage"]
    return {
        "turn": 1,
        "response": response,
        "finish_reason": "length" if content["finish"] == "MAX_TOKENS" else "stop",
        "usage": {
            "input_tokens": usage["promptTokenCount"],
            "output_tokens": usage["candidatesTokenCount"],
            "total_tokens": usage["totalTokenCount"],
        },
    }


@pytest.mark.parametrize(("name", "index"), GEMINI_STREAMS)
def test_it_streams_gemini_chunks_of_the_recorded_shape_and_content(harness_server, transactional_db, name, index):
    interaction = interaction_of(name, index)
    recorded = gemini_events(body_chunks(interaction["response"]))
    content = gemini_content(recorded)
    make_scenario(scenario_id(name, index), [gemini_turn(content)])
    path = interaction["request"]["url"].split("googleapis.com", 1)[1].split("&key=")[0]
    body = {"contents": [{"role": "user", "parts": [{"text": scenario_id(name, index)}]}]}
    response = httpx2.post(f"{harness_server.url}{path}", json=body, headers={"x-goog-api-key": "k"}, timeout=20)
    assert response.status_code == 200
    assert media_type(response.headers["content-type"]) == "text/event-stream"
    ours = gemini_events([response.content])

    # The real API adds modelVersion and responseId to every chunk, which these hand-written recordings leave out.
    assert set().union(*(e.keys() for e in ours)) - {"modelVersion", "responseId"} == set().union(
        *(e.keys() for e in recorded)
    )
    for events in (recorded, ours):
        candidates = [c for e in events for c in e["candidates"]]
        assert all(c["content"]["role"] == "model" for c in candidates)
        # finishReason on the last chunk only, usageMetadata on the last chunk only.
        assert [bool(c.get("finishReason")) for c in candidates] == [False] * (len(candidates) - 1) + [True]
        assert [bool(e.get("usageMetadata")) for e in events] == [False] * (len(events) - 1) + [True]
        assert all(
            set(part) <= {"text", "functionCall", "thought", "thoughtSignature"}
            for c in candidates
            for part in c["content"]["parts"]
        )
    assert gemini_content(ours) == content
