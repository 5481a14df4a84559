"""OpenAI Chat Completions wire: the request parser."""

from __future__ import annotations

import pytest

from harnessweb.engine.exchange import Message
from harnessweb.engine.wire.common import WireError
from harnessweb.engine.wire.openai import parse_request
from tests.wire_openai_helpers import make_body

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
