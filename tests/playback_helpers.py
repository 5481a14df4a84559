"""Builders for the scenario engine's tests (tests/test_playback_*.py): scenarios, catalogs, requests, decisions."""

from __future__ import annotations

from typing import Any

import orjson

from harnessweb.engine.exchange import ChatRequest, Decision, Message
from harnessweb.engine.fallback import INSTRUCTION_END, INSTRUCTION_START
from harnessweb.engine.playback import FINAL_REPORT_CALL_ID, FINAL_REPORT_TOOL, Catalog, decide
from harnessweb.engine.schemas import Scenario

KEY = "test-signature-key"


def make_turn(turn: int = 1, response: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    if response is None:
        response = {"kind": "text", "assistant_text": f"turn {turn} text"}
    return {"turn": turn, "response": response, **fields}


def make_scenario(scenario_id: str = "demo", turns: list[dict[str, Any]] | None = None, **fields: Any) -> Scenario:
    if turns is None:
        turns = [make_turn(1)]
    return Scenario.model_validate({"id": scenario_id, "turns": turns, **fields})


def make_catalog(*scenarios: Scenario) -> Catalog:
    return Catalog.build(list(scenarios))


def make_request(*messages: str | Message, **fields: Any) -> ChatRequest:
    """A request; plain strings are user messages."""
    built = tuple(Message(role="user", text=m) if isinstance(m, str) else m for m in messages)
    return ChatRequest(
        protocol=fields.pop("protocol", "openai"), model=fields.pop("model", "m"), messages=built, **fields
    )


def make_conversation(first_user: str, answered: int = 0, **fields: Any) -> ChatRequest:
    """The first user message followed by ``answered`` assistant/user exchanges: the request for turn answered+1."""
    messages: list[str | Message] = [first_user]
    for n in range(answered):
        messages += [Message(role="assistant", text=f"answer {n + 1}"), "go on"]
    return make_request(*messages, **fields)


def make_decision(scenario: Scenario, answered: int = 0, **fields: Any) -> Decision:
    pacing_enabled = fields.pop("pacing_enabled", True)
    request = make_conversation(scenario.id, answered, **fields)
    return decide(make_catalog(scenario), request, pacing_enabled=pacing_enabled, signature_key=KEY)


def make_instruction(data: Any) -> str:
    body = data if isinstance(data, str) else orjson.dumps(data).decode()
    return f"{INSTRUCTION_START}{body}{INSTRUCTION_END}"


def report_arguments(decision: Decision) -> dict[str, Any]:
    calls = [b for b in decision.reply.blocks if b.type == "tool_call" and b.name == FINAL_REPORT_TOOL]
    assert len(calls) == 1
    assert calls[0].call_id == FINAL_REPORT_CALL_ID
    return orjson.loads(calls[0].arguments)


def assert_harness_error(decision: Decision, message: str) -> None:
    assert decision.problem == message
    assert decision.failure is None
    assert decision.failures_before_success == 0
    assert decision.completes_run is False
    assert decision.reply.text == "Scenario validation failed."
    assert decision.reply.finish == "tool_calls"
    assert report_arguments(decision) == {
        "status": "failure",
        "report_format": "markdown",
        "report_content": f"# Test Harness Error\n\n{message}",
    }
