"""Builders and readers for the Anthropic Messages wire tests (tests/test_wire_anthropic_*.py)."""

from __future__ import annotations

import json
from typing import Any

import orjson

from harnessweb.engine.exchange import Block, Reply, Usage, sign_thinking
from harnessweb.engine.wire.anthropic import encode_message, encode_stream
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
