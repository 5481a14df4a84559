"""An OpenAI Agents SDK agent, unmodified, whose model is the harness (``OpenAIChatCompletionsModel`` on the fake
endpoint) and whose tools come from the scenario's MCP server (``MCPServerStreamableHttp``): a two-tool task runs end
to end as one run, its timeline showing each model turn and each tool call in order, and the scenario's expected
calls checked on the run page."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import openai
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp

from tests.conftest import LiveServer, make_scenario, wait_for

TURNS = [
    {
        "turn": 1,
        "response": {
            "kind": "tool-call",
            "tool_calls": [{"tool_name": "get_forecast", "arguments": {"city": "Paris"}}],
        },
        "expected_tools": ["get_forecast", "next_departure"],
    },
    {
        "turn": 2,
        "response": {"kind": "tool-call", "tool_calls": [{"tool_name": "next_departure", "arguments": {}}]},
        "expect": {"last_message_contains": "Sunny", "tool_calls_answered": True},
    },
    {
        "turn": 3,
        "response": {"kind": "text", "assistant_text": "Sunny in Paris: take the 09:12."},
        "expect": {"last_message_contains": "09:12"},
    },
]
MCP = {
    "servers": {
        "travel": {
            "tools": [
                {
                    "name": "get_forecast",
                    "description": "The forecast for a city.",
                    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                },
                {"name": "next_departure", "description": "The next train to Paris."},
            ],
            "answers": [
                {"tool": "get_forecast", "arguments": {"city": "Paris"}, "text": "Sunny, 24°C"},
                {"tool": "next_departure", "text": "09:12"},
            ],
        }
    },
    "closed_world": True,
    "expect_calls": [{"tool": "get_forecast", "arguments": {"city": "Paris"}}, {"tool": "next_departure"}],
}


def run_agent(server: LiveServer, api_key: str, scenario_id: str, mcp_headers: dict[str, str]) -> Any:
    """The agent's answer to the task: its model asked with the scenario's header, its MCP server with
    ``mcp_headers``."""
    set_tracing_disabled(True)  # nothing leaves the machine
    client = openai.AsyncOpenAI(
        base_url=f"{server.url}/v1", api_key=api_key, default_headers={"X-Harness-Scenario": scenario_id}
    )

    async def main() -> Any:
        params = {"url": f"{server.url}/mcp/travel", "headers": mcp_headers, "timeout": 20}
        async with MCPServerStreamableHttp(params=params, name="travel") as travel:  # type: ignore[arg-type]
            agent = Agent(
                name="Trip planner",
                instructions="Check the weather, then the next train.",
                model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client),
                mcp_servers=[travel],
            )
            return await Runner.run(agent, "Should I go to Paris today?")

    return asyncio.run(main())


def the_run(scenario_id: str, status: str) -> Any:
    from runs_app.models import Run

    def ready() -> Any:
        run = Run.objects.filter(scenario_id=scenario_id).first()
        return run if run is not None and run.status == status and run.events.count() >= 16 else None

    return wait_for(ready, timeout=10, message=f"the run of {scenario_id}, {status}")


def test_an_agent_with_the_scenario_s_mcp_server_runs_a_two_tool_task_as_one_run(
    harness_server: LiveServer, api_key: str, transactional_db: None
) -> None:
    scenario_id = f"trip-{uuid.uuid4().hex[:8]}"
    make_scenario(scenario_id, TURNS, mcp=MCP)

    # The MCP client names no run: its calls join the run of the scenario's latest model turn.
    result = run_agent(harness_server, api_key, scenario_id, {})

    assert result.final_output == "Sunny in Paris: take the 09:12."
    from runs_app.models import Run

    run = the_run(scenario_id, "passed")
    assert Run.objects.filter(scenario_id=scenario_id).count() == 1
    timeline = [
        (e.kind, e.turn, e.data.get("tool"))
        for e in run.events.order_by("seq")
        if e.kind in ("response", "mcp_call", "mcp_result")
    ]
    assert timeline == [
        ("response", 1, None),
        ("mcp_call", 1, "get_forecast"),
        ("mcp_result", 1, "get_forecast"),
        ("response", 2, None),
        ("mcp_call", 2, "next_departure"),
        ("mcp_result", 2, "next_departure"),
        ("response", 3, None),
    ]
    results = [e.data for e in run.events.filter(kind="mcp_result").order_by("seq")]
    assert [r["result"]["content"][0]["text"] for r in results] == ["Sunny, 24°C", "09:12"]


def test_the_run_page_shows_the_tool_calls_and_the_expected_calls(
    harness_server: LiveServer, api_key: str, transactional_db: None, client: Any
) -> None:
    from tests.conftest import make_user

    scenario_id = f"trip-{uuid.uuid4().hex[:8]}"
    make_scenario(scenario_id, TURNS, mcp=MCP)
    run_agent(harness_server, api_key, scenario_id, {"X-Harness-Scenario": scenario_id})
    run = the_run(scenario_id, "passed")
    client.force_login(make_user())

    page = client.get(f"/runs/{run.id}/").content.decode()

    assert "MCP tool call" in page and "travel · get_forecast" in page
    assert "MCP call 1" in page and "get_forecast with {&quot;city&quot;:&quot;Paris&quot;}" in page
    assert "call 1 of 2" in page and "call 2 of 2" in page
