"""``harness.reset()`` forgets the in-process MCP servers' calls and problems (``harness.mcp_url``), as it forgets the
model calls: a closed world broken and an expected call unmade before it no longer fail the test, a session stays
open, and the calls after it are checked from the start (official ``mcp`` client, unmodified)."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from harnessweb.testing.harness import Harness
from tests.test_plugin_mcp_failures import CLOSED_WORLD, TRIP, UNMET


async def call_tools(harness: Harness, *tools: str, reset_after: int | None = None) -> None:
    """Call ``tools`` on the test's ``travel`` server in one session (after the first ``reset_after`` of them,
    ``harness.reset()`` and the scenario used again); a tool the closed world does not declare answers an error."""
    async with (
        httpx2.AsyncClient(timeout=10) as http,
        streamable_http_client(harness.mcp_url("travel"), http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for index, tool in enumerate(tools):
            if index == reset_after:
                harness.reset()
                harness.use_scenario(TRIP)
            if tool == "rm":
                with pytest.raises(MCPError, match="Unknown tool: rm"):
                    await session.call_tool(tool, {})
            else:
                await session.call_tool(tool, {"seat": "12A"})


def test_reset_forgets_a_broken_closed_world_and_an_unmet_expected_call() -> None:
    harness = Harness()
    harness.use_scenario(TRIP)
    asyncio.run(call_tools(harness, "rm"))
    harness.get_model("gpt-4o").prompt("Book me a seat").text()  # the scripted end: book was never called
    assert harness.mcp_problems() == [CLOSED_WORLD, UNMET]

    harness.reset()

    assert harness.mcp_problems() == []
    assert harness._mcp[1].calls == []


def test_after_reset_the_calls_are_checked_from_the_start() -> None:
    harness = Harness()
    harness.use_scenario(TRIP)
    asyncio.run(call_tools(harness, "get_forecast", "next_departure"))
    harness.reset()
    harness.use_scenario(TRIP)

    asyncio.run(call_tools(harness, "book"))
    harness.get_model("gpt-4o").prompt("Book me a seat").text()  # the scripted end sees the one call since reset

    assert harness.mcp_problems() == []
    assert [(server, call.tool) for server, call in harness._mcp[1].calls] == [("travel", "book")]


def test_a_session_open_across_reset_keeps_answering_and_only_its_later_calls_count() -> None:
    harness = Harness()
    harness.use_scenario(TRIP)

    asyncio.run(call_tools(harness, "rm", "book", reset_after=1))

    assert harness.mcp_problems() == []
    assert [call.tool for _, call in harness._mcp[1].calls] == ["book"]


def test_a_session_open_across_reset_without_the_scenario_again_is_told_so() -> None:
    harness = Harness()
    harness.use_scenario(TRIP)

    async def across() -> None:
        async with (
            httpx2.AsyncClient(timeout=10) as http,
            streamable_http_client(harness.mcp_url("travel"), http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            harness.reset()
            with pytest.raises(MCPError, match="Scenario 'trip' is not the test's: use_scenario it"):
                await session.call_tool("book", {"seat": "12A"})

    asyncio.run(across())

    assert harness.mcp_problems() == [] and harness._mcp[1].calls == []
