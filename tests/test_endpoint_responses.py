"""The OpenAI Responses API through the official `openai` SDK: text, streams, function calls continued by
previous_response_id or by the whole history, stored responses, errors and injected failures."""

from __future__ import annotations

import json

import openai
import pytest

from tests.conftest import make_scenario, recorded_run

TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
WEATHER_TURNS = [
    {
        "turn": 1,
        "expected_tools": ["get_weather"],
        "response": {
            "kind": "tool-call",
            "reasoning": [{"text": "I should look it up."}],
            "tool_calls": [{"tool_name": "get_weather", "call_id": "call_paris", "arguments": {"city": "Paris"}}],
        },
    },
    {"turn": 2, "response": {"kind": "text", "assistant_text": "It is sunny in Paris."}},
]


def test_it_answers_a_scenario_turn_as_a_response_object(oai):
    make_scenario("hello-responses", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hi there."}}])
    raw = oai.responses.with_raw_response.create(model="gpt-4.1", input="hello-responses")
    response = raw.parse()
    assert response.output_text == "Hi there." and response.status == "completed"
    assert response.id.startswith("resp_") and response.usage.total_tokens == 6
    run = recorded_run(raw.headers["x-harness-run"], status="passed", events=4)
    assert (run.protocol, run.scenario_id) == ("responses", "hello-responses")


def test_it_streams_the_typed_events_the_sdk_accumulates(oai):
    make_scenario("stream-responses", [{"turn": 1, "response": {"kind": "text", "assistant_text": "one two three"}}])
    with oai.responses.stream(model="gpt-4.1", input="stream-responses") as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert final.output_text == "one two three"
    types = [event.type for event in events]
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed"
    assert "response.output_text.delta" in types and "response.content_part.added" in types
    assert [event.sequence_number for event in events] == list(range(len(events)))


def test_it_continues_a_conversation_from_previous_response_id(oai):
    make_scenario("weather-responses", WEATHER_TURNS)
    first = oai.responses.with_raw_response.create(model="m", input="weather-responses", tools=[TOOL])
    response = first.parse()
    call = next(item for item in response.output if item.type == "function_call")
    assert (call.name, call.call_id, json.loads(call.arguments)) == ("get_weather", "call_paris", {"city": "Paris"})
    assert [item.type for item in response.output] == ["reasoning", "function_call"]

    second = oai.responses.with_raw_response.create(
        model="m",
        previous_response_id=response.id,
        input=[{"type": "function_call_output", "call_id": "call_paris", "output": '{"sky": "clear"}'}],
        tools=[TOOL],
    )
    assert second.parse().output_text == "It is sunny in Paris."
    assert second.parse().previous_response_id == response.id
    assert second.headers["x-harness-run"] == first.headers["x-harness-run"]
    run = recorded_run(first.headers["x-harness-run"], status="passed", events=8)
    assert run.turns_served == [1, 2]


def test_it_counts_turns_from_the_whole_history_as_the_agents_sdk_sends_it(oai):
    make_scenario("history-responses", WEATHER_TURNS)
    first = oai.responses.create(model="m", input="history-responses", tools=[TOOL])
    history = [{"role": "user", "content": "history-responses"}, *[item.model_dump() for item in first.output]]
    history.append({"type": "function_call_output", "call_id": "call_paris", "output": "clear"})
    second = oai.responses.create(model="m", input=history, tools=[TOOL])
    assert second.output_text == "It is sunny in Paris."


def test_it_gives_a_response_back_by_its_id(oai):
    make_scenario("kept-responses", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Kept."}}])
    created = oai.responses.create(model="m", input="kept-responses", stream=False)
    again = oai.responses.retrieve(created.id)
    assert again.model_dump() == created.model_dump()
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve("resp_unknown")


def test_it_refuses_an_unknown_previous_response_id_as_the_api_does(oai):
    with pytest.raises(openai.BadRequestError) as caught:
        oai.responses.create(model="m", input="hi", previous_response_id="resp_nope")
    assert caught.value.body["param"] == "previous_response_id"
    assert caught.value.body["message"] == "Previous response with id 'resp_nope' not found."


def test_it_reads_instructions_as_the_system_prompt(oai):
    make_scenario(
        "instructed-responses",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": "Obeyed."}}],
        system_prompt_must_include=["You are terse"],
    )
    ok = oai.responses.create(model="m", instructions="You are terse.", input="instructed-responses")
    missing = oai.responses.create(model="m", input="instructed-responses")
    assert ok.output_text == "Obeyed."
    assert "# Test Harness Error" in json.loads(missing.output[-1].arguments)["report_content"]


def test_it_injects_a_rate_limit_the_sdk_retries(oai):
    make_scenario(
        "limited-responses",
        [
            {
                "turn": 1,
                "failures_before_success": 1,
                "failure_status": "rate_limit",
                "failure_retry_after_ms": 50,
                "response": {"kind": "text", "assistant_text": "After the wait."},
            }
        ],
    )
    raw = oai.responses.with_raw_response.create(model="m", input="limited-responses")
    assert raw.parse().output_text == "After the wait." and raw.retries_taken == 1


def test_it_keeps_no_response_the_request_asked_not_to_store(oai):
    make_scenario("unstored-responses", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Gone."}}])
    created = oai.responses.create(model="m", input="unstored-responses", store=False)
    assert created.output_text == "Gone."
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve(created.id)
