"""The pytest plugin's MCP servers, in-process (``harness.mcp_url``): the official client and an OpenAI Agents SDK agent
reach the test's scenario's servers by URL, with no Django and no harness server."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import httpx2
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from harnessweb.testing.harness import Harness
from tests.test_mcp_agents import MCP, TURNS
from tests.test_mcp_sdk import WEATHER


def test_the_official_client_calls_the_test_s_mcp_server_in_process(harness: Harness) -> None:
    harness.use_scenario({"id": "mcp-weather", "mcp": WEATHER})

    async def main() -> Any:
        async with (
            httpx2.AsyncClient(timeout=10) as http,
            streamable_http_client(harness.mcp_url("weather"), http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = await session.list_tools()
            return tools, [await session.call_tool("next_departure", {}) for _ in range(3)]

    tools, answers = asyncio.run(main())

    assert [t.name for t in tools.tools] == ["get_forecast", "next_departure", "book"]
    assert [a.content[0].text for a in answers] == ["09:12", "10:40", "10:40"]
    assert [(server, call.tool, call.answer) for server, call in harness._mcp[1].calls] == [
        ("weather", "next_departure", 2),
        ("weather", "next_departure", 3),
        ("weather", "next_departure", 3),
    ]


def test_an_agent_runs_a_two_tool_task_on_the_in_process_model_and_mcp_server(harness: Harness) -> None:
    harness.use_scenario({"id": "mcp-trip", "turns": TURNS, "mcp": MCP})
    set_tracing_disabled(True)

    async def main() -> Any:
        params = {"url": harness.mcp_url("travel"), "timeout": 10}
        async with MCPServerStreamableHttp(params=params, name="travel") as travel:  # type: ignore[arg-type]
            model = OpenAIChatCompletionsModel(model="gpt-4o", openai_client=harness.async_openai_client())
            agent = Agent(name="Trip planner", model=model, mcp_servers=[travel])
            return await Runner.run(agent, "Should I go to Paris today?")

    result = asyncio.run(main())

    assert result.final_output == "Sunny in Paris: take the 09:12."
    assert [c.tool for _, c in harness._mcp[1].calls] == ["get_forecast", "next_departure"]
    assert harness.prompt_count == 3


def test_a_url_of_no_test_is_not_found(harness: Harness) -> None:
    base = harness.mcp_url("weather").rsplit("/", 3)[0]

    answer = httpx.post(f"{base}/nobody/mcp/weather", json={}, timeout=5)

    assert answer.status_code == 404 and answer.json()["error"]["message"].startswith("Not Found: no test serves")
