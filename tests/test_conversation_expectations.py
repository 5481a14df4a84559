"""A turn's ``expect`` block on the conversation the client sent: the last message's text or pattern, the previous
answer's tool calls each answered by a result carrying its id, the earlier messages kept, the system prompt's
fragments; read from every protocol's parsed request alike, and failing the turn in the engine. Pure: no database."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from harnessweb.engine.exchange import ChatRequest, Message
from harnessweb.engine.expectations import conversation_expectations, expectations
from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario, TurnExpect
from harnessweb.engine.wire import anthropic, bedrock, cohere, gemini, openai, responses

TOOL_TURN = {"kind": "tool-call", "tool_calls": [{"tool_name": "weather", "call_id": "call_w1"}]}


def scenario(expect: dict[str, Any], **fields: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "id": "checks",
            "turns": [
                {"turn": 1, "response": TOOL_TURN},
                {"turn": 2, "response": {"kind": "text", "assistant_text": "Sunny."}, "expect": expect},
            ],
            **fields,
        }
    )


def request(*messages: Message, system: str = "") -> ChatRequest:
    return ChatRequest(protocol="openai", model="m", system=system, messages=messages)


def rows(expect: dict[str, Any], sent: ChatRequest) -> list[tuple[str, bool, str]]:
    return [(r.what, r.ok, r.problem) for r in conversation_expectations(TurnExpect.model_validate(expect), sent)]


ASKED = Message("user", "checks")
CALLED = Message("assistant", "", call_ids=("call_w1", "call_w2"))


def test_it_checks_the_last_user_or_tool_message_by_text_and_by_pattern() -> None:
    sent = request(ASKED, CALLED, Message("tool", '{"temp": 21}', result_ids=("call_w1", "call_w2")))
    assert rows({"last_message_contains": '"temp"', "last_message_regex": r"\d+\}$"}, sent) == [
        ("Last message contains", True, ""),
        ("Last message matches", True, ""),
    ]
    [(_, ok, problem)] = rows({"lastMessageContains": "Lisbon"}, sent)
    assert not ok
    assert problem == (
        "Expected the last user or tool message to contain 'Lisbon' but the last tool message reads '{\"temp\": 21}'"
    )
    [(_, ok, problem)] = rows({"last_message_regex": "^temp"}, request(ASKED))
    assert (ok, problem) == (
        False,
        "Expected the last user or tool message to match '^temp' but the last user message reads 'checks'",
    )
    [(_, ok, problem)] = rows({"last_message_contains": "x"}, request(CALLED))
    assert (
        problem == "Expected the last user or tool message to contain 'x' but the request has no user or tool message"
    )


def test_it_names_the_tool_calls_no_result_answers() -> None:
    half = request(ASKED, CALLED, Message("tool", "21", result_ids=("call_w1",)))
    [row] = conversation_expectations(TurnExpect(tool_calls_answered=True), half)
    assert (row.what, row.ok, row.actual) == ("Tool calls answered", False, "no result for call_w2")
    assert row.problem == "Tool calls of the previous answer have no result carrying their id: call_w2"
    both = request(
        ASKED, CALLED, Message("tool", "21", result_ids=("call_w1",)), Message("tool", "x", result_ids=("call_w2",))
    )
    assert rows({"tool_calls_answered": True}, both) == [("Tool calls answered", True, "")]
    # Results of an older answer do not answer the last one's calls.
    older = request(
        ASKED,
        CALLED,
        Message("tool", "21", result_ids=("call_w1", "call_w2")),
        Message("assistant", "", call_ids=("call_x",)),
    )
    assert rows({"tool_calls_answered": True}, older)[0][1:] == (
        False,
        "Tool calls of the previous answer have no result carrying their id: call_x",
    )
    no_calls = conversation_expectations(
        TurnExpect(tool_calls_answered=True), request(ASKED, Message("assistant", "hi"))
    )
    assert (no_calls[0].ok, no_calls[0].actual) == (True, "the previous answer called no tool")


def test_it_counts_the_messages_before_the_last_and_checks_the_system_prompt() -> None:
    sent = request(ASKED, Message("assistant", "a"), Message("user", "b"), system="You are a travel agent.")
    checked = rows({"min_earlier_messages": 2, "system_prompt_must_include": ["travel agent", "Be brief"]}, sent)
    assert checked == [
        ("Earlier messages", True, ""),
        ("System prompt includes", True, ""),
        ("System prompt includes", False, "System prompt missing: Be brief"),
    ]
    [(_, ok, problem)] = rows({"min_earlier_messages": 3}, sent)
    assert (ok, problem) == (False, "Expected at least 3 earlier messages but the request carried 2")


def test_it_refuses_a_bad_pattern_naming_the_field() -> None:
    with pytest.raises(ValidationError) as caught:
        scenario({"last_message_regex": "temp(("})
    [error] = caught.value.errors()
    assert error["loc"] == ("turns", 1, "expect", "last_message_regex")
    assert error["msg"].startswith("Value error, not a valid regular expression: missing )")


def test_it_keeps_the_block_in_the_canonical_form_under_its_snake_case_names() -> None:
    loaded = scenario({"lastMessageContains": "21", "toolCallsAnswered": True, "minEarlierMessages": 2})
    assert loaded.canonical()["turns"][1]["expect"] == {
        "last_message_contains": "21",
        "tool_calls_answered": True,
        "min_earlier_messages": 2,
        "system_prompt_must_include": [],
    }
    assert "expect" not in loaded.canonical()["turns"][0]


# The same second turn (the weather call answered, or not) as each protocol's client sends it.
def openai_body(answered: bool) -> dict[str, Any]:
    call = {"id": "call_w1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "checks"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    messages.append({"role": "tool", "tool_call_id": "call_w1" if answered else "call_other", "content": "21"})
    return {"model": "m", "messages": messages}


def anthropic_body(answered: bool) -> dict[str, Any]:
    use = {"type": "tool_use", "id": "call_w1", "name": "weather", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "call_w1" if answered else "toolu_other", "content": "21"}
    messages = [
        {"role": "user", "content": "checks"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    return {"model": "m", "max_tokens": 10, "system": "You are a weather bot.", "messages": messages}


def responses_body(answered: bool) -> dict[str, Any]:
    items = [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "checks"},
        {"type": "function_call", "call_id": "call_w1", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_w1" if answered else "call_other", "output": "21"},
    ]
    return {"model": "m", "input": items}


def gemini_body(answered: bool) -> dict[str, Any]:
    contents = [
        {"role": "user", "parts": [{"text": "checks"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {}}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "weather" if answered else "other", "response": {"t": 21}}}],
        },
    ]
    return {"contents": contents, "systemInstruction": {"parts": [{"text": "You are a weather bot."}]}}


def bedrock_body(answered: bool) -> dict[str, Any]:
    messages = [
        {"role": "user", "content": [{"text": "checks"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "call_w1", "name": "weather", "input": {}}}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "call_w1" if answered else "x", "content": [{"text": "21"}]}}],
        },
    ]
    return {"messages": messages, "system": [{"text": "You are a weather bot."}]}


def cohere_body(answered: bool) -> dict[str, Any]:
    call = {"id": "call_w1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    messages = [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "checks"},
        {"role": "assistant", "tool_calls": [call], "tool_plan": "Look it up."},
        {"role": "tool", "tool_call_id": "call_w1" if answered else "call_other", "content": "21"},
    ]
    return {"model": "command-a", "messages": messages}


PROTOCOLS = {
    "openai": (openai, openai_body),
    "anthropic": (anthropic, anthropic_body),
    "responses": (responses, responses_body),
    "gemini": (gemini, gemini_body),
    "bedrock": (bedrock, bedrock_body),
    "cohere": (cohere, cohere_body),
}


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_every_protocol_carries_the_calls_and_results_the_checks_read(protocol: str) -> None:
    wire, body = PROTOCOLS[protocol]
    expect = {
        "tool_calls_answered": True,
        "last_message_contains": "21",
        "min_earlier_messages": 2,
        "system_prompt_must_include": ["weather bot"],
    }
    played = scenario(expect)
    answered = wire.parse_request(body(True))
    if protocol == "gemini":  # the model comes from the path
        answered = answered.__class__(**{**vars(answered), "model": "m"})
    assert [(r.what, r.ok) for r in expectations(played, played.turn(2), answered)] == [
        ("Last message contains", True),
        ("Tool calls answered", True),
        ("Earlier messages", True),
        ("System prompt includes", True),
    ]
    unanswered = wire.parse_request(body(False))
    failed = [r for r in expectations(played, played.turn(2), unanswered) if not r.ok]
    missing = "weather" if protocol == "gemini" else "call_w1"  # Gemini ties a call to its response by name
    assert [r.problem for r in failed] == [
        f"Tool calls of the previous answer have no result carrying their id: {missing}"
    ]


def test_the_engine_fails_the_turn_on_the_first_unmet_check() -> None:
    played = scenario({"last_message_regex": r"^\d+$", "tool_calls_answered": True})
    catalog = Catalog.build([played])
    good = openai.parse_request(openai_body(True))
    assert decide(catalog, good).problem == ""
    bad = openai.parse_request(openai_body(False))
    decision = decide(catalog, bad)
    assert decision.problem == "Tool calls of the previous answer have no result carrying their id: call_w1"
    assert decision.reply.tool_calls[0]["name"] == "agent__final_report"
