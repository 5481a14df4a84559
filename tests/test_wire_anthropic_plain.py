"""Anthropic Messages wire: non-streamed message objects and thinking signatures round-tripped."""

from __future__ import annotations

import re

import orjson
import pytest

from harnessweb.engine.exchange import InvalidRequest
from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario
from harnessweb.engine.wire.anthropic import encode_message, parse_request
from tests.wire_anthropic_helpers import (
    KEY,
    make_body,
    make_call,
    make_reasoning,
    make_reply,
    make_text,
    message,
    stream_events,
)

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
