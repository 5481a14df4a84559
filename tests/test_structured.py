"""The tools a request requires (a named tool forces one; ``required`` / ``any`` allow every offered tool) and the
``structured`` response kind served where the request asks for it, at the engine: no server, no SDK."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from pydantic import ValidationError

from harnessweb.engine import asked, configured
from harnessweb.engine.expectations import demand_expectations
from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario, ScenarioTurn, format_validation_error
from harnessweb.engine.wire import openai as openai_wire

PERSON = {
    "type": "object",
    "title": "Person",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
NOTHING = {"type": "object", "properties": {}}


def tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def request(**body: Any):
    """A Chat Completions request as the endpoint reads it: parsed, then what it demands read from the body."""
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Who is it?"}], **body}
    parsed = openai_wire.parse_request(body)
    return replace(parsed, **asked.demands(body, parsed.tools))


def play(response: dict[str, Any], **body: Any):
    scenario = Scenario.model_validate({"id": "who", "turns": [{"turn": 1, "response": response}]})
    return decide(Catalog.build([scenario]), request(**body), header_scenario="who")


def calls(decision) -> list[tuple[str, Any]]:
    return [(b.name, json.loads(b.arguments)) for b in decision.reply.blocks if b.type == "tool_call"]


def texts(decision) -> list[str]:
    return [b.text for b in decision.reply.blocks if b.type == "text"]


TOOLS = ["a", "b"]


@pytest.mark.parametrize(
    ("body", "required"),
    [
        ({"tool_choice": "required"}, ("a", "b")),  # OpenAI
        ({"tool_choice": {"type": "function", "function": {"name": "b"}}}, ("b",)),
        ({"tool_choice": {"type": "any"}}, ("a", "b")),  # Anthropic
        ({"tool_choice": {"type": "tool", "name": "b"}}, ("b",)),
        ({"tool_choice": "REQUIRED"}, ("a", "b")),  # Cohere
        ({"toolConfig": {"toolChoice": {"any": {}}}}, ("a", "b")),  # Bedrock's Converse
        ({"toolConfig": {"toolChoice": {"tool": {"name": "b"}}}}, ("b",)),
        ({"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}, ("a", "b")),  # Gemini
        ({"toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["b"]}}}, ("b",)),
        ({"toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["a", "b"]}}}, ("a", "b")),
        ({"tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "required",
                                                                    "tools": [{"type": "function",
                                                                               "function": {"name": "b"}}]}}}, ("b",)),
        ({"tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "b"}]}}, ()),
        ({"tool_choice": "auto"}, ()),
        ({"tool_choice": "required"} | {"tools": []}, ()),
    ],
)  # fmt: skip
def test_it_reads_the_tools_a_request_requires_one_of(body: dict[str, Any], required: tuple[str, ...]) -> None:
    tools = [] if body.get("tools") == [] else TOOLS
    assert asked.demands(body, tuple(tools))["required_tools"] == required


def test_required_allows_a_scripted_call_to_any_offered_tool() -> None:
    response = {"kind": "tool-call", "tool_calls": [{"tool_name": "final_answer", "arguments": {"answer": "42"}}]}
    decision = play(response, tools=[tool("search", WEATHER), tool("final_answer", NOTHING)], tool_choice="required")
    assert not decision.problem and calls(decision) == [("final_answer", {"answer": "42"})]


def test_a_turn_calling_a_tool_outside_the_allowed_ones_still_fails() -> None:
    response = {"kind": "tool-call", "tool_calls": [{"tool_name": "search", "arguments": {"city": "Oslo"}}]}
    only = {"type": "function", "function": {"name": "final_answer"}}
    decision = play(response, tools=[tool("search", WEATHER), tool("final_answer", NOTHING)], tool_choice=only)
    assert decision.problem == "tool_choice forces 'final_answer' but turn 1 answers calls search"
    text = play({"kind": "text", "assistant_text": "no"}, tools=[tool("a", NOTHING), tool("b", NOTHING)],
                tool_choice="required")  # fmt: skip
    assert text.problem == "tool_choice requires a call to one of 'a', 'b' but turn 1 answers text"


def test_the_run_pages_forced_tool_row_names_the_tool_as_it_is_and_the_message_quotes_it() -> None:
    step = ScenarioTurn.model_validate({"turn": 1, "response": {"kind": "text", "assistant_text": "no"}})
    forced = {"type": "function", "function": {"name": "final_answer"}}
    [one] = demand_expectations(step, request(tools=[tool("final_answer", NOTHING)], tool_choice=forced))
    assert (one.what, one.expected, one.actual, one.ok) == ("Forced tool", "final_answer", "text", False)
    assert one.problem == "tool_choice forces 'final_answer' but turn 1 answers text"
    tools = [tool("a", NOTHING), tool("b", NOTHING)]
    [several] = demand_expectations(step, request(tools=tools, tool_choice="required"))
    assert several.expected == "one of 'a', 'b'"
    assert several.problem == "tool_choice requires a call to one of 'a', 'b' but turn 1 answers text"


def test_lorem_under_required_calls_the_first_offered_tool_with_valid_arguments() -> None:
    tools = [tool("get_weather", WEATHER), tool("person", PERSON)]
    first = decide(Catalog.build([]), request(tools=tools, tool_choice="required"))
    again = decide(Catalog.build([]), request(tools=tools, tool_choice="required"))
    assert [name for name, _ in calls(first)] == ["get_weather"] and calls(first) == calls(again)
    assert isinstance(calls(first)[0][1]["city"], str)
    named = decide(Catalog.build([]), request(tools=tools, tool_choice={"type": "function",
                                                                       "function": {"name": "person"}}))  # fmt: skip
    assert [name for name, _ in calls(named)] == ["person"]


# -- the structured kind -----------------------------------------------------------------------------------------

ALICE = {"name": "Alice", "age": 30}
STRUCTURED = {"kind": "structured", "data": ALICE}


def test_a_structured_turn_is_the_forced_tools_arguments() -> None:
    forced = {"type": "function", "function": {"name": "Person"}}
    decision = play(STRUCTURED, tools=[tool("Person", PERSON)], tool_choice=forced)
    assert not decision.problem and calls(decision) == [("Person", ALICE)] and texts(decision) == []
    assert decision.reply.finish == "tool_calls"


def test_under_required_a_structured_turn_calls_the_tool_whose_parameters_describe_it() -> None:
    # pydantic-ai's output tool among function tools: one without parameters takes any object, it must not win.
    tools = [tool("roll_dice", NOTHING), tool("get_weather", WEATHER), tool("final_result", PERSON)]
    decision = play(STRUCTURED, tools=tools, tool_choice="required")
    assert not decision.problem and calls(decision) == [("final_result", ALICE)]


@pytest.mark.parametrize(
    "body",
    [
        {"response_format": {"type": "json_schema", "json_schema": {"name": "Person", "schema": PERSON}}},
        {"response_format": {"type": "json_object"}},
        {},
    ],
    ids=["json_schema", "json_object", "plain"],
)
def test_a_structured_turn_is_the_json_text_otherwise(body: dict[str, Any]) -> None:
    decision = play(STRUCTURED, **body)
    assert not decision.problem and calls(decision) == [] and [json.loads(t) for t in texts(decision)] == [ALICE]
    assert decision.reply.finish == "stop"


def test_a_long_running_server_keeps_no_reply_per_schema_it_was_asked_for() -> None:
    # A structured turn's reply follows each request's tools and schema: built each time, not kept per schema (a
    # server asked with ever new schemas would keep them all); a scripted text turn is still built once.
    text = {"turn": 1, "response": {"kind": "text", "assistant_text": "hi"}}
    scenarios = [{"id": "who", "turns": [{"turn": 1, "response": STRUCTURED}]}, {"id": "hi", "turns": [text]}]
    catalog = Catalog.build([Scenario.model_validate(s) for s in scenarios])
    for index in range(3):
        schema = {**PERSON, "title": f"Person{index}"}
        body = {"response_format": {"type": "json_schema", "json_schema": {"name": f"P{index}", "schema": schema}}}
        decision = decide(catalog, request(**body), header_scenario="who")
        assert not decision.problem and [json.loads(t) for t in texts(decision)] == [ALICE]
    assert catalog.replies == {}
    first, again = (decide(catalog, request(), header_scenario="hi") for _ in range(2))
    assert texts(first) == ["hi"] and first.reply == again.reply and len(catalog.replies) == 1


def test_a_structured_turn_that_breaks_the_schema_fails_validation_naming_where() -> None:
    bad = {"kind": "structured", "data": {"name": "Alice", "age": -1}}
    schema_format = {"type": "json_schema", "json_schema": {"name": "Person", "schema": PERSON}}
    decision = play(bad, response_format=schema_format)
    assert decision.problem == (
        "The request asks for JSON valid against 'Person'; turn 1's structured answer fails it: "
        "at $.age: -1 is less than the minimum of 0"
    )
    as_tool = play(bad, tools=[tool("Person", PERSON)], tool_choice="required")
    assert "a call to 'Person' with arguments valid against its parameters" in as_tool.problem
    assert "at $.age: -1 is less than the minimum of 0" in as_tool.problem


def test_a_configured_json_answer_takes_the_same_way() -> None:
    answer = configured.make_answer(None, None, ALICE, True, None, None)
    tools = [tool("roll_dice", NOTHING), tool("final_result", PERSON)]
    decision, _ = configured.play(answer, request(tools=tools, tool_choice="required"), 0, "")
    assert calls(decision) == [("final_result", ALICE)]
    wrong = configured.make_answer(None, None, {"name": "Alice"}, True, None, None)
    schema_format = {"type": "json_schema", "json_schema": {"name": "Person", "schema": PERSON}}
    refused, _ = configured.play(wrong, request(response_format=schema_format), 0, "")
    assert refused.problem == (
        "The request asks for JSON valid against 'Person'; set_response(json, model=None) fails it: "
        "at $: 'age' is a required property"
    )


def test_the_structured_kind_reads_camel_case_files_and_refuses_data_that_is_no_object() -> None:
    camel = {"id": "s", "turns": [{"turn": 1, "response": {"kind": "structured", "data": ALICE,
                                                          "reasoningContent": "Looked it up."}}]}  # fmt: skip
    scenario = Scenario.model_validate(camel)
    assert scenario.canonical()["turns"][0]["response"] == {
        "kind": "structured", "data": ALICE, "reasoning": [{"text": "Looked it up."}]
    }  # fmt: skip
    assert Scenario.model_validate(scenario.canonical()) == scenario
    with pytest.raises(ValidationError) as caught:
        Scenario.model_validate({"id": "s", "turns": [{"turn": 1, "response": {"kind": "structured", "data": 3}}]})
    assert format_validation_error(caught.value) == (
        "turns.0.response.structured.data: Value error, must be a JSON object (or an array), the answer's data"
    )
