"""OpenAI Chat Completions wire: non-streamed completions."""

from __future__ import annotations

import json
import re

import orjson

from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario
from harnessweb.engine.wire.common import CREATED
from harnessweb.engine.wire.openai import encode_completion, parse_request
from tests.wire_openai_helpers import (
    LONG_ARGUMENTS,
    completion,
    make_body,
    make_call,
    make_reasoning,
    make_reply,
    make_text,
    stream_chunks,
)

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
