"""Builders and readers for the OpenAI Chat Completions wire tests (tests/test_wire_openai_*.py)."""

from __future__ import annotations

import json
from typing import Any

import orjson

from harnessweb.engine.exchange import Block, Reply, Usage, sign_thinking
from harnessweb.engine.wire.openai import encode_completion, encode_stream
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
