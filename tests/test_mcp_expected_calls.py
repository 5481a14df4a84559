"""A scenario's expected MCP calls (``mcp.expect_calls``) checked where its run reaches its scripted end: the official
``mcp`` client makes the agent's tool calls, the ``openai`` SDK the model request that completes the scenario, both
unmodified, against the real server. A call that never came fails the run with the first unmet row's message; the
client still gets its answer."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import openai
from mcp import ClientSession

from tests.conftest import LiveServer, make_scenario, recorded_run
from tests.test_mcp_sdk import mcp_url, with_session

MCP = {
    "servers": {
        "travel": {
            "tools": [
                {
                    "name": "get_forecast",
                    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
                {"name": "next_departure"},
            ],
            "answers": [{"tool": "get_forecast", "text": "Sunny, 24°C"}, {"tool": "next_departure", "text": "09:12"}],
        }
    },
    "expect_calls": [{"tool": "get_forecast", "arguments": {"city": "Paris"}}, {"tool": "next_departure"}],
}
TURNS = [{"turn": 1, "response": {"kind": "text", "assistant_text": "Sunny in Paris: take the 09:12."}}]


def agent_turn(server: LiveServer, api_key: str, headers: dict[str, str], tools: list[tuple[str, Any]]) -> str:
    """The agent's tool calls through the official MCP client, then its model request (the scenario's last turn)."""

    async def work(session: ClientSession) -> None:
        for tool, arguments in tools:
            await session.call_tool(tool, arguments)

    asyncio.run(with_session(mcp_url(server, "travel"), headers, work))
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=api_key, default_headers=headers, max_retries=0)
    answer = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Paris today?"}])
    return answer.choices[0].message.content or ""


def test_a_run_whose_expected_mcp_call_never_came_fails_at_its_scripted_end(
    harness_server: LiveServer, api_key: str, transactional_db: None
) -> None:
    scenario_id = f"trip-{uuid.uuid4().hex[:8]}"
    make_scenario(scenario_id, TURNS, mcp=MCP)
    missing, complete = str(uuid.uuid4()), str(uuid.uuid4())

    text = agent_turn(
        harness_server,
        api_key,
        {"X-Harness-Run": missing, "X-Harness-Scenario": scenario_id},
        [("get_forecast", {"city": "Paris"})],
    )
    agent_turn(
        harness_server,
        api_key,
        {"X-Harness-Run": complete, "X-Harness-Scenario": scenario_id},
        [("get_forecast", {"city": "Paris"}), ("next_departure", {})],
    )

    assert text == "Sunny in Paris: take the 09:12."  # the client's answer is served as scripted
    run = recorded_run(missing, status="failed")
    assert run.status_reason == "Expected the agent to call MCP tool next_departure but it never did"
    assert run.finished_at is not None
    problems = [e.data for e in run.events.filter(kind="validation").order_by("seq") if not e.data["ok"]]
    assert problems == [{"ok": False, "problem": run.status_reason}]
    passed = recorded_run(complete, status="passed")  # every expected call came: the same scenario passes
    assert passed.status_reason == ""


def test_a_call_with_other_arguments_fails_the_run_naming_both(
    harness_server: LiveServer, api_key: str, transactional_db: None
) -> None:
    scenario_id = f"trip-{uuid.uuid4().hex[:8]}"
    make_scenario(scenario_id, TURNS, mcp=MCP)
    run_id = str(uuid.uuid4())
    headers = {"X-Harness-Run": run_id, "X-Harness-Scenario": scenario_id}

    agent_turn(harness_server, api_key, headers, [("get_forecast", {"city": "Rome"}), ("next_departure", {})])

    run = recorded_run(run_id, status="failed")
    assert run.status_reason == (
        'Expected MCP tool get_forecast to be called with {"city":"Paris"} but it was called with {"city":"Rome"}'
    )
