"""A scenario's MCP servers through the official ``mcp`` client (``streamable_http_client`` + ``ClientSession``),
unmodified, against the real server: tools listed and called, ordered and argument-matched answers, scripted
errors, resources and prompts, every call on the run's timeline; a closed world fails the run on an undeclared
tool, naming it; bad requests get MCP's error with the right status."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import LiveServer, make_scenario, recorded_run

WEATHER = {
    "servers": {
        "weather": {
            "instructions": "Forecasts for the trip planner.",
            "tools": [
                {
                    "name": "get_forecast",
                    "description": "The forecast for a city.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                        "required": ["city"],
                    },
                },
                {"name": "next_departure", "description": "The next train."},
                {"name": "book", "description": "Books a seat."},
            ],
            "answers": [
                {"tool": "get_forecast", "arguments": {"city": "Paris"}, "text": "Sunny, 24°C"},
                {"tool": "get_forecast", "match": "subset", "arguments": {"city": "Oslo"}, "text": "Snow, -3°C"},
                {"tool": "next_departure", "text": "09:12"},
                {"tool": "next_departure", "text": "10:40"},
                {"tool": "book", "isError": True, "text": "No seats left"},
                {"tool": "book", "error": {"code": -32001, "message": "Booking service unreachable"}},
            ],
            "resources": [{"uri": "file:///trip.md", "name": "trip", "mimeType": "text/markdown", "text": "# Trip"}],
            "prompts": [
                {
                    "name": "plan",
                    "arguments": [{"name": "city", "required": True}],
                    "messages": [{"role": "user", "text": "Plan a day in {city}."}],
                }
            ],
        }
    },
    "closed_world": True,
}


def mcp_url(server: LiveServer, name: str = "weather") -> str:
    return f"{server.url}/mcp/{name}"


async def with_session(url: str, headers: dict[str, str], work: Any) -> Any:
    """``work(session)`` inside an initialized session of the official client."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=20) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await work(session)


def test_the_official_client_lists_and_calls_the_scenario_s_tools(
    harness_server: LiveServer, transactional_db: None
) -> None:
    make_scenario("mcp-weather", mcp=WEATHER)
    run_id = str(uuid.uuid4())

    async def work(session: ClientSession) -> dict[str, Any]:
        listed = await session.list_tools()
        return {
            "tools": listed.tools,
            "paris": await session.call_tool("get_forecast", {"city": "Paris"}),
            "oslo": await session.call_tool("get_forecast", {"city": "Oslo", "days": 2}),
            "lyon": await session.call_tool("get_forecast", {"city": "Lyon"}),
            "invalid": await session.call_tool("get_forecast", {"days": 2}),
            "first": await session.call_tool("next_departure", {}),
            "second": await session.call_tool("next_departure", {}),
            "third": await session.call_tool("next_departure", {}),
            "full": await session.call_tool("book", {}),
            "resources": await session.list_resources(),
            "trip": await session.read_resource("file:///trip.md"),
            "prompt": await session.get_prompt("plan", {"city": "Paris"}),
            "ping": await session.send_ping(),
        }

    got = asyncio.run(with_session(mcp_url(harness_server), {"X-Harness-Run": run_id}, work))

    assert [t.name for t in got["tools"]] == ["get_forecast", "next_departure", "book"]
    assert got["tools"][0].input_schema["required"] == ["city"]
    assert got["paris"].content[0].text == "Sunny, 24°C" and not got["paris"].is_error
    assert got["oslo"].content[0].text == "Snow, -3°C"  # subset: the extra argument does not matter
    assert got["lyon"].is_error and "No scripted answer of tool get_forecast" in got["lyon"].content[0].text
    assert got["invalid"].is_error and "'city' is a required property" in got["invalid"].content[0].text
    assert [got[n].content[0].text for n in ("first", "second", "third")] == ["09:12", "10:40", "10:40"]
    assert got["full"].is_error and got["full"].content[0].text == "No seats left"
    assert [r.uri for r in got["resources"].resources] == ["file:///trip.md"]
    assert got["trip"].contents[0].text == "# Trip"
    assert got["prompt"].messages[0].content.text == "Plan a day in Paris."

    run = recorded_run(run_id, events=16)
    calls = [e.data for e in run.events.order_by("seq") if e.kind == "mcp_call"]
    results = [e.data for e in run.events.order_by("seq") if e.kind == "mcp_result"]
    assert [(c["tool"], c["arguments"]) for c in calls[:2]] == [
        ("get_forecast", {"city": "Paris"}),
        ("get_forecast", {"city": "Oslo", "days": 2}),
    ]
    assert [r["answer"] for r in results] == [0, 1, None, None, 2, 3, 3, 4]
    assert run.scenario_id == "mcp-weather" and run.status == "running"


def test_a_scripted_json_rpc_error_reaches_the_client_as_an_mcp_error(
    harness_server: LiveServer, transactional_db: None
) -> None:
    make_scenario("mcp-weather", mcp=WEATHER)

    async def work(session: ClientSession) -> Any:
        await session.call_tool("book", {})  # the first answer: a failed tool (isError)
        try:
            await session.call_tool("book", {})
        except MCPError as exc:
            return exc
        raise AssertionError("the second booking should fail with the scripted JSON-RPC error")

    raised = asyncio.run(with_session(mcp_url(harness_server), {"X-Harness-Scenario": "mcp-weather"}, work))

    assert raised.error.code == -32001 and raised.error.message == "Booking service unreachable"


def test_a_closed_world_fails_the_run_on_an_undeclared_tool_naming_it(
    harness_server: LiveServer, transactional_db: None
) -> None:
    make_scenario("mcp-weather", mcp=WEATHER)
    run_id = str(uuid.uuid4())

    async def work(session: ClientSession) -> Any:
        try:
            await session.call_tool("delete_everything", {"really": True})
        except MCPError as exc:
            return exc
        raise AssertionError("an undeclared tool should be refused")

    raised = asyncio.run(with_session(mcp_url(harness_server), {"X-Harness-Run": run_id}, work))

    assert raised.error.code == -32602 and raised.error.message.startswith("Unknown tool: delete_everything")
    run = recorded_run(run_id, status="failed")
    assert "MCP tool 'delete_everything' was called on server 'weather'" in run.status_reason
    assert "closed world" in run.status_reason


def test_an_open_world_answers_an_undeclared_tool_without_failing_the_run(
    harness_server: LiveServer, transactional_db: None
) -> None:
    make_scenario("mcp-open", mcp={**WEATHER, "closed_world": False})
    run_id = str(uuid.uuid4())

    async def work(session: ClientSession) -> Any:
        try:
            await session.call_tool("delete_everything", {})
        except MCPError as exc:
            return exc

    headers = {"X-Harness-Run": run_id, "X-Harness-Scenario": "mcp-open"}
    raised = asyncio.run(with_session(mcp_url(harness_server), headers, work))

    assert raised is not None and raised.error.message.startswith("Unknown tool: delete_everything")
    run = recorded_run(run_id, events=3)
    assert run.status == "running"


def post(server: LiveServer, body: Any, headers: dict[str, str] | None = None, path: str = "weather") -> httpx.Response:
    sent = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **(headers or {})}
    return httpx.post(mcp_url(server, path), json=body, headers=sent, timeout=10)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}


def test_bad_requests_get_mcp_errors_with_the_right_status(harness_server: LiveServer, transactional_db: None) -> None:
    make_scenario("mcp-weather", mcp=WEATHER)
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}

    opened = post(harness_server, INITIALIZE)
    unknown = post(harness_server, listing, {"Mcp-Session-Id": "nope"})
    missing = post(harness_server, listing)
    nobody = post(harness_server, INITIALIZE, path="calendar")
    broken = httpx.post(mcp_url(harness_server), content=b"{", headers={"Content-Type": "application/json"}, timeout=10)
    stream = httpx.get(mcp_url(harness_server), headers={"Accept": "text/event-stream"}, timeout=10)

    assert opened.status_code == 200 and opened.json()["result"]["protocolVersion"] == "2025-06-18"
    session = opened.headers["mcp-session-id"]
    assert post(harness_server, listing, {"Mcp-Session-Id": session}).json()["result"]["tools"][0]["name"] == (
        "get_forecast"
    )
    assert unknown.status_code == 404 and unknown.json()["error"]["message"].startswith("Not Found: no session")
    assert missing.status_code == 400 and "Missing session ID" in missing.json()["error"]["message"]
    assert nobody.status_code == 404 and nobody.json()["error"]["message"] == (
        "No scenario declares an MCP server 'calendar'"
    )
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700
    assert stream.status_code == 405 and stream.headers["allow"] == "POST, DELETE"
    ended = httpx.delete(mcp_url(harness_server), headers={"Mcp-Session-Id": session}, timeout=10)
    assert ended.status_code == 200
    assert post(harness_server, listing, {"Mcp-Session-Id": session}).status_code == 404
