"""Seed 003's StreamSummary from a response's bytes (harnessweb/engine/stream_summary.py): every real cassette's
summary against what the official SDK reads from the same bytes, and each protocol's encoder output, streamed and
not, read back into the answer it encoded."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from harnessweb.engine.exchange import Block, ChatRequest, Failure, Reply, Usage
from harnessweb.engine.stream_summary import summarize
from harnessweb.engine.wire import BY_NAME
from runs_app.ci.recordings import protocol_of, response_body, summarize_interaction
from tests.conftest import VCR_DIR

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


def _cassettes() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(VCR_DIR.glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "interactions" in data:
            found[path.name] = data
    return found


CASSETTES = _cassettes()
INTERACTIONS = [
    pytest.param(name, index, id=f"{name.removesuffix('.json')}#{index}")
    for name, data in CASSETTES.items()
    for index in range(len(data["interactions"]))
]


def _client(protocol: str, response: dict[str, Any]) -> Any:
    """The official SDK of a protocol, its transport answering with the recorded response chunk by chunk."""
    skip = {"transfer-encoding", "content-length", "connection", "content-encoding"}
    headers = [(k, v) for k, v in response["headers"] if k.lower() not in skip]
    chunks = [response_body(response)]

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(response["status"], headers=headers, content=iter(chunks))

    http_client = httpx2.Client(transport=httpx2.MockTransport(answer))
    if protocol == "anthropic":
        return anthropic.Anthropic(base_url="http://recording.invalid", api_key="x", http_client=http_client,
                                   max_retries=0)  # fmt: skip
    if protocol == "gemini":
        from google import genai
        from google.genai import types

        options = types.HttpOptions(base_url="http://recording.invalid", httpx_client=http_client)
        return genai.Client(api_key="x", http_options=options)
    return openai.OpenAI(base_url="http://recording.invalid/v1", api_key="x", http_client=http_client, max_retries=0)


def sdk_reading(protocol: str, response: dict[str, Any]) -> dict[str, Any]:
    """What the official SDK reads from a recorded 200 stream: text, thinking, tool calls (name, arguments)."""
    client = _client(protocol, response)
    if protocol == "anthropic":
        with client.messages.stream(model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}]) as stream:
            message = stream.get_final_message()
        return {
            "text": "".join(b.text for b in message.content if b.type == "text"),
            "thinking": "".join(b.thinking for b in message.content if b.type == "thinking"),
            "tools": [(b.name, b.input) for b in message.content if b.type == "tool_use"],
        }
    if protocol == "gemini":
        text, tools = "", []
        for chunk in client.models.generate_content_stream(model="gemini-x", contents="x"):
            for part in chunk.candidates[0].content.parts or []:
                if part.text and not part.thought:
                    text += part.text
                if part.function_call:
                    tools.append((part.function_call.name, part.function_call.args))
        return {"text": text, "thinking": "", "tools": tools}
    text, calls = "", {}
    for chunk in client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True):
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                name, arguments = calls.get(call.index, ("", ""))
                calls[call.index] = (name or call.function.name or "", arguments + (call.function.arguments or ""))
    return {"text": text, "thinking": "", "tools": [(n, json.loads(a)) for n, a in calls.values()]}


@pytest.mark.parametrize(("name", "index"), INTERACTIONS)
def test_it_reads_every_cassette_as_the_official_sdk_does(name, index):
    interaction = CASSETTES[name]["interactions"][index]
    response = interaction["response"]
    protocol = protocol_of(interaction["request"])
    summary = summarize_interaction(interaction)
    assert protocol in ("anthropic", "openai", "gemini", "azure")
    protocol = "openai" if protocol == "azure" else protocol  # Azure speaks OpenAI's protocol: the openai SDK reads it
    if response["status"] >= 400:
        # The SDK raises its status error with the provider's message; the summary says the same, before any event.
        with pytest.raises(Exception) as raised:
            sdk_reading(protocol, response)
        assert summary.error is not None and summary.error.message in str(raised.value)
        assert summary.stream_error.startswith(f"HTTP {response['status']}")
        assert (summary.event_count, summary.has_start, summary.has_done) == (0, False, False)
        return
    read = sdk_reading(protocol, response)
    assert summary.text == read["text"]
    assert summary.thinking == read["thinking"]
    assert [(call.name, json.loads(call.arguments)) for call in summary.tool_calls] == read["tools"]
    assert summary.has_start and summary.has_done and not summary.has_error_event and summary.stream_error is None
    assert summary.timeline[0] == "start" and summary.timeline[-1] == "done"
    assert summary.event_count == len(summary.timeline)
    assert summary.text_deltas == summary.timeline.count("text_delta") and (summary.text_deltas > 0) == bool(
        read["text"]
    )
    assert summary.stop_reason == ("tool_use" if read["tools"] else summary.stop_reason)
    assert summary.stop_reason in ("stop", "length", "tool_use")


def test_it_summarises_anthropic_simple_text_as_the_seed_lists_it():
    summary = summarize_interaction(CASSETTES["anthropic_simple_text.json"]["interactions"][0])
    assert summary.timeline == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert (summary.text, summary.text_deltas, summary.stop_reason, summary.protocol) == (
        "pong",
        2,
        "stop",
        "anthropic",
    )
    assert summary.usage["output_tokens"] == 5


def test_it_keeps_thinking_blocks_with_their_signatures():
    interaction = CASSETTES["anthropic_thinking_with_tool_calls.json"]["interactions"][1]
    summary = summarize_interaction(interaction)
    assert summary.timeline[:2] == ["start", "thinking_start"] and "thinking_end" in summary.timeline
    assert len(summary.thinking_blocks) == 1 and summary.thinking_blocks[0].signature
    assert summary.thinking_blocks[0].text == summary.thinking
    assert [(c.name, json.loads(c.arguments)) for c in summary.tool_calls] == [("echo", {"text": "hi"})]


REPLY = Reply(
    blocks=(
        Block("reasoning", text="think first", signature="c2ln"),
        Block("text", text="Hello there, world"),
        Block("tool_call", call_id="call_1", name="get_weather", arguments='{"city":"Paris"}'),
    ),
    finish="tool_calls",
    usage=Usage(3, 4, 7),
    chunk_words=2,
)
CASES = [
    pytest.param(protocol, stream, framing, id="-".join(filter(None, (protocol, ("json", "stream")[stream], framing))))
    for protocol in BY_NAME
    for stream in (True, False)
    for framing in (("sse", "json") if protocol in ("gemini", "vertex") and stream else ("",))
]  # fmt: skip


@pytest.mark.parametrize(("protocol", "stream", "framing"), CASES)
def test_it_reads_back_what_each_encoder_writes(protocol, stream, framing):
    request = ChatRequest(protocol=protocol, model="m", stream=stream, reasoning_enabled=True, framing=framing)
    encoded = BY_NAME[protocol].encode_reply(REPLY, request)
    headers = [(k.decode(), v.decode()) for k, v in encoded.headers]
    summary = summarize(encoded.body, status=encoded.status, headers=headers)
    # Azure's bytes are OpenAI's, Claude on Bedrock's Anthropic's (in event-stream chunks when streamed)
    # (Azure's legacy completions, the legacy protocol's)
    speaks = {"azure": "openai", "azure_completions": "completions", "bedrock_claude": "anthropic"}.get(protocol)
    speaks = {"vertex": "gemini", "vertex_claude": "anthropic"}.get(protocol, speaks or protocol)  # at Vertex's paths
    assert summary.protocol == speaks and summary.has_start and summary.has_done and summary.stream_error is None
    assert summary.text == "Hello there, world"
    if speaks == "completions":  # text only: no reasoning, no tools on the legacy protocol
        assert (summary.thinking, summary.tool_calls, summary.stop_reason) == ("", [], "stop")
        return
    assert summary.thinking == "think first"
    assert [(c.name, json.loads(c.arguments)) for c in summary.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert summary.stop_reason == "tool_use"
    if protocol in ("anthropic", "gemini"):
        assert summary.thinking_blocks[0].signature == "c2ln"
    if stream and protocol != "harness":  # the harness's own protocol answers one JSON body, streamed or not
        assert summary.text_deltas == 2  # chunk_words=2: "Hello there," + " world"


@pytest.mark.parametrize("protocol", list(BY_NAME))
def test_it_gives_an_error_status_as_a_stream_error_before_any_event(protocol):
    encoded = BY_NAME[protocol].encode_failure(Failure("rate_limit", "slow down", True, 2500), "req_1")
    summary = summarize(
        encoded.body, status=encoded.status, headers=[(k.decode(), v.decode()) for k, v in encoded.headers]
    )
    assert summary.status == 429 and summary.error.message == "slow down"
    assert summary.stream_error.startswith("HTTP 429: ") and summary.stream_error.endswith("slow down")
    assert summary.timeline == [] and not summary.has_start


def test_it_stops_at_a_data_line_that_is_not_json_keeping_what_came_before():
    body = (
        b'data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\ndata: {"obj\n\n'
    )
    summary = summarize(body)
    assert summary.text == "Hi" and not summary.has_done
    assert summary.stream_error.startswith("invalid JSON in a data line")


def test_it_reports_bytes_that_are_not_utf8():
    body = (
        b'data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\ndata: \xff\n\n'
    )
    summary = summarize(body)
    assert summary.text == "Hi" and summary.stream_error.startswith("invalid UTF-8 at byte")


def test_it_checks_the_content_type_when_given_headers():
    body = b'data: {"object":"chat.completion.chunk","choices":[]}\n\ndata: [DONE]\n\n'
    assert summarize(body, headers=[]).stream_error == "protocol error: missing content-type"
    wrong = summarize(body, headers=[("Content-Type", "text/plain")])
    assert wrong.stream_error == "protocol error: unexpected content-type text/plain" and wrong.timeline == []
    assert summarize(body).has_done  # no headers given: not checked


def test_it_marks_an_in_stream_error_event():
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{"usage":{}}}\n\n'
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    summary = summarize(body)
    assert summary.timeline == ["start", "error"] and summary.has_error_event and summary.stop_reason == "error"
    assert summary.error.type == "overloaded_error" and not summary.has_done


def test_it_leaves_a_truncated_stream_without_done():
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"cut"}}\n\n'
    )
    summary = summarize(body)
    assert summary.text == "cut" and not summary.has_done and summary.stop_reason is None


def test_it_says_an_empty_body_is_empty():
    assert summarize(b"").stream_error == "empty body" and summarize(b"").timeline == []


@pytest.mark.parametrize(
    "line",
    [
        '{"object":"chat.completion.chunk","choices":[{"delta":"x"}]}',
        '{"object":"chat.completion.chunk","choices":["x"]}',
        '{"object":"chat.completion.chunk","choices":[{"delta":{"tool_calls":[{"index":{}}]}}]}',
    ],
)  # fmt: skip
def test_it_says_a_misshapen_payload_is_a_stream_error_and_never_raises(line):
    summary = summarize(f"data: {line}\n\ndata: [DONE]\n\n".encode(), headers=[("content-type", "text/event-stream")])
    assert summary.stream_error is not None and "not shaped as its protocol's" in summary.stream_error
