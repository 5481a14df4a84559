"""The plugin's in-process MCP servers (``harness.mcp_url``) fail a test as the server fails its run (pytester, in a
subprocess, with the official ``mcp`` client and the ``openai`` SDK unmodified): a call of a tool a closed world does
not declare fails it at teardown naming the tool, an expected call (``expect_calls``) the agent had not made at the
scenario's scripted end fails it naming the call and its arguments, each in the server's words; an agent loop that
makes its calls passes."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from harnessweb.engine import mcp
from harnessweb.engine.expectations import mcp_call_expectations
from harnessweb.engine.schemas import Scenario
from harnessweb.testing.harness import Harness

pytest_plugins = ["pytester"]

CLOSED_WORLD = (
    "MCP tool 'rm' was called on server 'travel' but the scenario does not declare it "
    "(closed world; its tools: get_forecast, next_departure, book)"
)
UNMET = 'Expected the agent to call MCP tool book with {"seat":"12A"} but it never did'

TESTS = '''
import asyncio
import json

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

TOOLS = [
    {"name": "get_forecast", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}},
    {"name": "next_departure"},
    {"name": "book", "inputSchema": {"type": "object", "properties": {"seat": {"type": "string"}}}},
]
ANSWERS = [
    {"tool": "get_forecast", "arguments": {"city": "Paris"}, "text": "Sunny, 24°C"},
    {"tool": "next_departure", "text": "09:12"},
    {"tool": "book", "match": "any", "text": "Booked"},
]
TURNS = [
    {"turn": 1, "response": {"kind": "tool-call",
                             "tool_calls": [{"tool_name": "get_forecast", "arguments": {"city": "Paris"}}]}},
    {"turn": 2, "response": {"kind": "tool-call", "tool_calls": [{"tool_name": "next_departure", "arguments": {}}]}},
    {"turn": 3, "response": {"kind": "text", "assistant_text": "Sunny in Paris: take the 09:12."}},
]
EXPECTED = [{"tool": "get_forecast", "arguments": {"city": "Paris"}}, {"tool": "next_departure"}]


def trip(expect_calls=EXPECTED, closed_world=True):
    servers = {"travel": {"tools": TOOLS, "answers": ANSWERS}}
    mcp = {"servers": servers, "closed_world": closed_world, "expect_calls": expect_calls}
    return {"id": "trip", "turns": TURNS, "mcp": mcp}


async def agent(harness, task="Should I go to Paris today?", use_tools=True):
    """A small agent loop: the model (the harness, in-process) asks for tools, the MCP server answers them."""
    model = harness.async_openai_client()
    async with (
        httpx2.AsyncClient(timeout=10) as http,
        streamable_http_client(harness.mcp_url("travel"), http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = (await session.list_tools()).tools
        tools = [{"type": "function", "function": {"name": t.name, "parameters": t.input_schema}} for t in listed]
        messages = [{"role": "user", "content": task}]
        while True:
            completion = await model.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
            reply = completion.choices[0].message
            if not reply.tool_calls:
                return reply.content
            messages.append(reply.model_dump(exclude_none=True))
            for call in reply.tool_calls:
                if use_tools:
                    result = await session.call_tool(call.function.name, json.loads(call.function.arguments or "{}"))
                    text = result.content[0].text
                else:  # an agent that makes its tools' answers up
                    text = "Sunny" if call.function.name == "get_forecast" else "09:12"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


async def call_directly(harness, tool):
    async with (
        httpx2.AsyncClient(timeout=10) as http,
        streamable_http_client(harness.mcp_url("travel"), http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        with pytest.raises(MCPError, match=f"Unknown tool: {tool}"):
            await session.call_tool(tool, {})


def test_an_agent_that_makes_its_calls_passes(harness):
    harness.use_scenario(trip())
    assert asyncio.run(agent(harness)) == "Sunny in Paris: take the 09:12."
    assert harness.mcp_problems() == []


def test_twice_each_scripted_end_checks_its_own_calls(harness):
    harness.use_scenario(trip())
    assert asyncio.run(agent(harness)) == asyncio.run(agent(harness)) == "Sunny in Paris: take the 09:12."


def test_an_open_world_lets_an_undeclared_tool_fail_alone(harness):
    harness.use_scenario(trip(closed_world=False))
    asyncio.run(call_directly(harness, "rm"))


def test_fails_a_closed_world_call(harness):
    harness.use_scenario(trip())
    asyncio.run(call_directly(harness, "rm"))


def test_fails_an_expected_call_never_made(harness):
    harness.use_scenario(trip([*EXPECTED, {"tool": "book", "arguments": {"seat": "12A"}}]))
    assert asyncio.run(agent(harness)) == "Sunny in Paris: take the 09:12."
    assert harness.last_call.problem.startswith("Expected the agent to call MCP tool book")


def test_fails_the_second_run_whose_agent_made_no_call(harness):
    harness.use_scenario(trip())
    asyncio.run(agent(harness))
    asyncio.run(agent(harness, use_tools=False))


def test_fails_an_expected_call_with_other_arguments(harness):
    harness.use_scenario(trip([{"tool": "get_forecast", "arguments": {"city": "Oslo"}}]))
    asyncio.run(agent(harness))
'''


def test_the_plugin_fails_tests_on_what_fails_the_server_s_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=TESTS)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-v")

    result.assert_outcomes(passed=7, errors=4)  # a test failed at teardown counts as passed, and as an error
    result.stdout.fnmatch_lines(
        [
            "*test_an_agent_that_makes_its_calls_passes PASSED*",
            "*test_twice_each_scripted_end_checks_its_own_calls PASSED*",
            "*test_an_open_world_lets_an_undeclared_tool_fail_alone PASSED*",
        ],
        consecutive=False,
    )
    errors = {line.split("::")[1].split()[0] for line in result.outlines if line.startswith("ERROR ")}
    assert errors == {
        "test_fails_a_closed_world_call",
        "test_fails_an_expected_call_never_made",
        "test_fails_the_second_run_whose_agent_made_no_call",
        "test_fails_an_expected_call_with_other_arguments",
    }
    output = "\n".join(result.outlines)
    assert f"harness: {CLOSED_WORLD}" in output
    assert f"harness: {UNMET}" in output
    assert 'harness: Expected the agent to call MCP tool get_forecast with {"city":"Paris"} but it never did' in output
    assert (
        'harness: Expected MCP tool get_forecast to be called with {"city":"Oslo"} but it was called with '
        '{"city":"Paris"}'
    ) in output


SERVER_TESTS = (
    TESTS.split("def test_an_agent_that_makes_its_calls_passes")[0]
    + """
def test_an_agent_that_makes_its_calls_passes_on_the_server(harness):
    harness.serve()
    harness.use_scenario(trip())
    assert harness.mcp_url("travel").startswith(harness.base_url + "/mcp/")
    assert asyncio.run(agent(harness)) == "Sunny in Paris: take the 09:12."


def test_fails_a_closed_world_call_on_the_server(harness):
    harness.serve()
    harness.use_scenario(trip())
    asyncio.run(call_directly(harness, "rm"))


def test_fails_an_expected_call_never_made_on_the_server(harness):
    harness.serve()
    harness.use_scenario(trip([*EXPECTED, {"tool": "book", "arguments": {"seat": "12A"}}]))
    assert asyncio.run(agent(harness)) == "Sunny in Paris: take the 09:12."
"""
)


def test_in_server_mode_the_run_s_mcp_failures_fail_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_server_agent=SERVER_TESTS)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-v")

    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines(["*test_an_agent_that_makes_its_calls_passes_on_the_server PASSED*"])
    errors = {line.split("::")[1].split()[0] for line in result.outlines if line.startswith("ERROR ")}
    assert errors == {
        "test_fails_a_closed_world_call_on_the_server",
        "test_fails_an_expected_call_never_made_on_the_server",
    }
    output = "\n".join(result.outlines)
    assert f"harness: {CLOSED_WORLD}" in output
    assert f"harness: {UNMET}" in output


# -- the same words as the server's, and what the harness keeps, without a subprocess --------------------------------

TRIP: dict[str, Any] = {
    "id": "trip",
    "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Done."}}],
    "mcp": {
        "closed_world": True,
        "servers": {"travel": {"tools": [{"name": "get_forecast"}, {"name": "next_departure"}, {"name": "book"}]}},
        "expect_calls": [{"tool": "book", "arguments": {"seat": "12A"}}],
    },
}


def test_the_messages_are_the_engine_s_that_the_server_records() -> None:
    config = Scenario.model_validate(TRIP).mcp
    assert config is not None
    session = mcp.Session("s1", "travel", "trip")
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rm", "arguments": {}}}

    answered = mcp.handle(config, session, message)

    assert answered.call is not None and answered.call.problem == CLOSED_WORLD
    assert [row.problem for row in mcp_call_expectations(config, [])] == [UNMET]


def test_the_scripted_end_checks_the_expected_calls_at_the_llm_boundary_too() -> None:
    harness = Harness()
    harness.use_scenario(TRIP)

    harness.get_model("gpt-4o").prompt("Book me a seat").text()

    assert harness.mcp_problems() == [UNMET]
    assert harness.last_call is not None and harness.last_call.problem == UNMET


def test_the_calls_an_earlier_scripted_end_checked_do_not_count_again() -> None:
    harness = Harness()
    harness.use_scenario(TRIP)

    async def book() -> None:
        async with (
            httpx2.AsyncClient(timeout=10) as http,
            streamable_http_client(harness.mcp_url("travel"), http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.call_tool("book", {"seat": "12A"})

    asyncio.run(book())
    model = harness.get_model("gpt-4o")
    model.prompt("Book me a seat").text()  # the scripted end: the call was made
    assert harness.mcp_problems() == []

    model.prompt("Book me another").text()  # a new run of the scenario: no call since

    assert harness.mcp_problems() == [UNMET]


def test_a_scenario_expecting_no_calls_and_a_test_without_servers_have_no_problems() -> None:
    harness = Harness()
    harness.use_scenario({**TRIP, "mcp": {**TRIP["mcp"], "expect_calls": []}})

    harness.get_model("gpt-4o").prompt("Hello").text()

    assert harness.mcp_problems() == []
