"""A turn's ``expect`` block through the official SDKs against the real server: a client that answers the previous
turn's tool call with a result carrying its id, keeps the conversation and the system prompt plays the turn; one that
loses the id (or the context) gets the validation failure, its run fails naming what was missing, and the run page
shows every check with its verdict."""

from __future__ import annotations

import re
from typing import Any

import anthropic
import openai

from tests.conftest import make_scenario, recorded_run

SYSTEM = "You are a weather bot. Answer in Celsius."
EXPECT = {
    "tool_calls_answered": True,
    "last_message_regex": r"\d+ ?°C",
    "min_earlier_messages": 2,
    "system_prompt_must_include": ["weather bot"],
}


def turns(expect: dict[str, Any] = EXPECT) -> list[dict[str, Any]]:
    # The call's id is derived (no call_id): each protocol serves its own shape of it, and the client echoes it.
    call = {"tool_name": "get_weather", "arguments": {"city": "Lisbon"}}
    return [
        {"turn": 1, "response": {"kind": "tool-call", "tool_calls": [call]}},
        {"turn": 2, "response": {"kind": "text", "assistant_text": "It is 21 °C in Lisbon."}, "expect": expect},
    ]


OPENAI_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def openai_second_turn(oai: openai.OpenAI, scenario: str, result_id: str | None, result: str) -> tuple[str, str, str]:
    """Turn 1 (the call), then turn 2 answering it with ``result_id`` (None: the call's own id); the second
    answer's text, the run id and the call's id."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": scenario}]
    first = oai.chat.completions.with_raw_response.create(model="gpt-4o", messages=messages, tools=[OPENAI_TOOL])
    message = first.parse().choices[0].message
    call_id = message.tool_calls[0].id
    messages.append(message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": result_id or call_id, "content": result})
    second = oai.chat.completions.create(model="gpt-4o", messages=messages, tools=[OPENAI_TOOL])
    return second.choices[0].message.content or "", first.headers["x-harness-run"], call_id


def test_an_openai_client_that_answers_the_call_by_its_id_plays_the_turn(oai: openai.OpenAI) -> None:
    make_scenario("conv-openai-good", turns())
    text, run_id, call_id = openai_second_turn(oai, "conv-openai-good", None, '{"celsius": "21 °C"}')
    assert text == "It is 21 °C in Lisbon."
    assert call_id.startswith("call_")
    assert recorded_run(run_id, status="passed", events=8).status_reason == ""


def test_an_openai_client_that_loses_the_call_id_fails_the_run_and_the_page_says_why(
    oai: openai.OpenAI, admin_client: Any
) -> None:
    make_scenario("conv-openai-bad", turns())
    text, run_id, call_id = openai_second_turn(oai, "conv-openai-bad", "call_someone_else", '{"celsius": "21 °C"}')
    assert text == "Scenario validation failed."
    run = recorded_run(run_id, status="failed")
    problem = f"Tool calls of the previous answer have no result carrying their id: {call_id}"
    assert problem in run.status_reason
    page = admin_client.get(f"/runs/{run_id}/").content.decode()
    assert f"no result for {call_id}" in page
    # Every check of the turn is shown with its verdict: only the lost id is unmet.
    assert re.findall(r'<tr class="(ok|bad)"><th scope="row">([^<]*)</th>', page) == [
        ("ok", "Last message matches"),
        ("bad", "Tool calls answered"),
        ("ok", "Earlier messages"),
        ("ok", "System prompt includes"),
    ]


def test_an_openai_client_whose_tool_result_misses_the_pattern_fails_the_turn(oai: openai.OpenAI) -> None:
    make_scenario("conv-openai-regex", turns())
    text, run_id, _ = openai_second_turn(oai, "conv-openai-regex", None, '{"fahrenheit": 70}')
    assert text == "Scenario validation failed."
    run = recorded_run(run_id, status="failed")
    assert "Expected the last user or tool message to match '\\\\d+ ?°C' but the last tool message reads" in (
        run.status_reason
    )


ANTHROPIC_TOOL = {"name": "get_weather", "input_schema": {"type": "object"}}


def anthropic_second_turn(claude: anthropic.Anthropic, scenario: str, answer: bool, keep_context: bool) -> Any:
    asked = {"role": "user", "content": scenario}
    first = claude.messages.with_raw_response.create(
        model="claude-sonnet-4-6", max_tokens=200, system=SYSTEM, messages=[asked], tools=[ANTHROPIC_TOOL]
    )
    answered = first.parse()
    use = next(block for block in answered.content if block.type == "tool_use")
    assert use.id.startswith("toolu_")
    result = {"type": "tool_result", "tool_use_id": use.id if answer else "toolu_lost", "content": "21 °C"}
    earlier = [asked] if keep_context else []
    messages = [*earlier, {"role": "assistant", "content": answered.content}, {"role": "user", "content": [result]}]
    with claude.messages.stream(
        model="claude-sonnet-4-6", max_tokens=200, system=SYSTEM, messages=messages, tools=[ANTHROPIC_TOOL]
    ) as stream:
        text = stream.get_final_text()
    return text, first.headers["x-harness-run"], use.id


def test_an_anthropic_client_that_answers_the_tool_use_plays_the_turn(claude: anthropic.Anthropic) -> None:
    make_scenario("conv-claude-good", turns())
    text, run_id, _ = anthropic_second_turn(claude, "conv-claude-good", answer=True, keep_context=True)
    assert text == "It is 21 °C in Lisbon."
    assert recorded_run(run_id, status="passed", events=8).status_reason == ""


def test_an_anthropic_client_that_loses_the_tool_use_id_fails_naming_it(claude: anthropic.Anthropic) -> None:
    make_scenario("conv-claude-bad", turns())
    text, run_id, use_id = anthropic_second_turn(claude, "conv-claude-bad", answer=False, keep_context=True)
    assert "Scenario validation failed." in text
    run = recorded_run(run_id, status="failed")
    assert f"Tool calls of the previous answer have no result carrying their id: {use_id}" in run.status_reason


def test_a_client_that_drops_the_earlier_messages_fails_the_context_check(claude: anthropic.Anthropic) -> None:
    # Only the minimum of context is asked for: the first user message dropped leaves one earlier message.
    make_scenario("conv-claude-context", turns({"min_earlier_messages": 2}))
    asked = {"role": "user", "content": "conv-claude-context"}
    first = claude.messages.create(model="m", max_tokens=50, messages=[asked], tools=[ANTHROPIC_TOOL])
    use = next(block for block in first.content if block.type == "tool_use")
    result = {"type": "tool_result", "tool_use_id": use.id, "content": "21 °C"}
    raw = claude.messages.with_raw_response.create(
        model="m",
        max_tokens=50,
        messages=[{"role": "assistant", "content": first.content}, {"role": "user", "content": [result]}],
        tools=[ANTHROPIC_TOOL],
        extra_headers={"X-Harness-Scenario": "conv-claude-context"},
    )
    run = recorded_run(raw.headers["x-harness-run"], status="failed")
    assert "Expected at least 2 earlier messages but the request carried 1" in run.status_reason


def test_a_responses_client_continuing_a_stored_response_answers_its_calls(
    oai: openai.OpenAI, admin_client: Any
) -> None:
    """The call lives in the stored response the request continues (previous_response_id), not in its input: the
    engine and the run page both read the conversation kept with it."""
    make_scenario("conv-responses", turns({"tool_calls_answered": True, "min_earlier_messages": 2}))
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    first = oai.responses.create(model="m", input="conv-responses", tools=[tool])
    call = next(item for item in first.output if item.type == "function_call")

    def answer(call_id: str) -> Any:
        output = {"type": "function_call_output", "call_id": call_id, "output": "21 °C"}
        return oai.responses.with_raw_response.create(
            model="m", previous_response_id=first.id, input=[output], tools=[tool]
        )

    lost = answer("call_lost")
    assert "Scenario validation failed." in lost.parse().output_text
    run = recorded_run(lost.headers["x-harness-run"], status="failed")
    assert f"have no result carrying their id: {call.call_id}" in run.status_reason
    page = admin_client.get(f"/runs/{run.id}/").content.decode()
    assert re.findall(r'<tr class="(ok|bad)"><th scope="row">([^<]*)</th>', page) == [
        ("bad", "Tool calls answered"),
        ("ok", "Earlier messages"),
    ]
    assert f"no result for {call.call_id}" in page
    assert answer(call.call_id).parse().output_text == "It is 21 °C in Lisbon."
