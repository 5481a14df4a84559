"""Anthropic Messages wire: the request parser."""

from __future__ import annotations

import pytest

from harnessweb.engine.exchange import Message, Thinking
from harnessweb.engine.wire.anthropic import parse_request
from harnessweb.engine.wire.common import WireError
from tests.wire_anthropic_helpers import make_body

# ---------------------------------------------------------------------------------------------------------------
# Request parsing


def test_it_parses_a_minimal_request():
    request = parse_request(make_body())
    assert request.protocol == "anthropic"
    assert request.model == "claude-test"
    assert request.messages == (Message(role="user", text="hi"),)
    assert (request.system, request.tools) == ("", ())
    assert (request.temperature, request.top_p) == (None, None)
    assert (request.reasoning_enabled, request.stream, request.include_usage) == (False, False, False)


def test_it_parses_string_and_block_content():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}},
            ],
        },
        {"role": "user", "content": "plain"},
        {"role": "user", "content": [{"type": "image", "source": {}}, {"type": "text", "text": "see"}]},
    ]
    request = parse_request(make_body(messages=messages))
    assert request.messages == (
        Message(role="user", text="one\ntwo"),
        Message(role="assistant", text="calling", call_ids=("toolu_1",)),
        Message(role="user", text="plain"),
        Message(role="user", text="see"),
    )
    assert request.turn == 2


@pytest.mark.parametrize(
    ("system", "expected"),
    [
        (None, ""),
        ("You are a tester.", "You are a tester."),
        (
            [{"type": "text", "text": "Part A."}, {"type": "text", "text": "Part B.", "cache_control": {}}],
            "Part A.\nPart B.",
        ),
    ],
)
def test_it_reads_the_system_prompt_as_string_or_blocks(system, expected):
    fields = {"system": system} if system is not None else {}
    assert parse_request(make_body(**fields)).system == expected


def test_it_reads_tool_names_temperature_and_top_p():
    tools = [{"name": "search", "input_schema": {}}, {"name": "web.fetch", "input_schema": {}}]
    request = parse_request(make_body(tools=tools, temperature=0.3, top_p=1, stream=True))
    assert request.tools == ("search", "web.fetch")
    assert (request.temperature, request.top_p, request.stream) == (0.3, 1.0, True)


@pytest.mark.parametrize(
    ("thinking", "enabled"),
    [
        ({"type": "enabled", "budget_tokens": 2048}, True),
        ({"type": "adaptive"}, True),
        ({"type": "disabled"}, False),
        ({}, False),
        (None, False),
    ],
)
def test_it_reads_the_thinking_setting(thinking, enabled):
    fields = {"thinking": thinking} if thinking is not None else {}
    assert parse_request(make_body(**fields)).reasoning_enabled is enabled


def test_it_turns_tool_result_only_user_turns_into_tool_messages():
    messages = [
        {"role": "user", "content": "demo"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "result one"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "result two"}]},
                {"type": "tool_result", "tool_use_id": "toolu_3"},
            ],
        },
    ]
    request = parse_request(make_body(messages=messages))
    assert request.messages[2] == Message(
        role="tool", text="result one\nresult two\n", result_ids=("toolu_1", "toolu_2", "toolu_3")
    )
    assert (request.first_user, request.last_user, request.turn) == ("demo", "demo", 2)


def test_it_keeps_a_user_turn_that_mixes_tool_results_and_text_as_the_user():
    content = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}, {"type": "text", "text": "and?"}]
    request = parse_request(make_body(messages=[{"role": "user", "content": content}]))
    assert request.messages == (Message(role="user", text="r\nand?", result_ids=("toolu_1",)),)


def test_it_reads_thinking_blocks_in_assistant_messages_with_their_path():
    messages = [
        {"role": "user", "content": "demo"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan A", "signature": "sig-a"},
                {"type": "text", "text": "ok"},
                {"type": "thinking", "thinking": "plan B"},
                {"type": "redacted_thinking", "data": "xyz"},
            ],
        },
        {"role": "user", "content": [{"type": "thinking", "thinking": "ignored in user turns"}]},
    ]
    request = parse_request(make_body(messages=messages))
    assert request.messages[1] == Message(
        role="assistant",
        text="ok",
        thinking=(
            Thinking(text="plan A", signature="sig-a", where="messages.1.content.0"),
            Thinking(text="plan B", signature=None, where="messages.1.content.2"),
        ),
    )
    assert request.messages[2].thinking == ()


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ([], None),
        ("body", None),
        ({"max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}, "model"),
        (make_body(model=""), "model"),
        (make_body(model=None), "model"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
        (make_body(max_tokens="10"), "max_tokens"),
        (make_body(max_tokens=True), "max_tokens"),
        (make_body(max_tokens=1.5), "max_tokens"),
        (make_body(messages=None), "messages"),
        (make_body(messages=[]), "messages"),
        (make_body(messages="hi"), "messages"),
        (make_body(messages=["hi"]), "messages.0"),
        (make_body(messages=[{"role": "system", "content": "x"}]), "messages.0.role"),
        (make_body(messages=[{"role": "user", "content": "a"}, {"content": "b"}]), "messages.1.role"),
        (make_body(messages=[{"role": "user", "content": 3}]), "messages.0.content"),
        (make_body(messages=[{"role": "user", "content": None}]), "messages.0.content"),
        (make_body(messages=[{"role": "user", "content": [{"text": "x"}]}]), "messages.0.content.0"),
        (make_body(messages=[{"role": "user", "content": [{"type": "text"}]}]), "messages.0.content.0.text"),
        (
            make_body(
                messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": [{"type": "thinking"}]}]
            ),
            "messages.1.content.0.thinking",
        ),
        (make_body(system=5), "system"),
        (make_body(tools={"name": "x"}), "tools"),
        (make_body(tools=[{"input_schema": {}}]), "tools.0.name"),
        (make_body(thinking="enabled"), "thinking"),
        (make_body(temperature="warm"), "temperature"),
        (make_body(stream="true"), "stream"),
    ],
)
def test_it_refuses_a_bad_request_naming_the_field(body, param):
    with pytest.raises(WireError) as caught:
        parse_request(body)
    assert caught.value.param == param
    assert caught.value.status == 400
    if param:
        assert caught.value.message.startswith(param)
