"""Which scenario an MCP session plays when several declare its server, through the official ``mcp`` client against
the real server: the one its model's run plays (named by ``X-Harness-Run`` or a ``harness-run-<id>`` key: what its
model turns played, else the run's script), never the previous test's; with no run to tell, a JSON-RPC error naming
the candidates and the header to send."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import httpx2
import openai
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import LiveServer, make_scenario, recorded_run
from tests.test_mcp_sdk import with_session


def desk(answer: str) -> dict[str, Any]:
    """An MCP block whose server ``desk`` answers its one tool with ``answer``."""
    tool = {"name": "lookup", "description": "Looks a thing up."}
    return {"servers": {"desk": {"tools": [tool], "answers": [{"tool": "lookup", "text": answer}]}}}


@pytest.fixture
def two_scenarios(transactional_db: None) -> tuple[str, str]:
    """Two scenarios declaring the same MCP server ``desk``, each answering its tool with its own id."""
    first, second = f"desk-a-{uuid.uuid4().hex[:6]}", f"desk-b-{uuid.uuid4().hex[:6]}"
    make_scenario(first, mcp=desk(first))
    make_scenario(second, mcp=desk(second))
    return first, second


def ask_model(server: LiveServer, scenario_id: str, run_id: str) -> None:
    """One model request of the run, playing the scenario (what a test's agent does first, usually)."""
    client = openai.OpenAI(
        base_url=f"{server.url}/v1",
        api_key=f"sk-test-{uuid.uuid4().hex}",
        default_headers={"X-Harness-Scenario": scenario_id, "X-Harness-Run": run_id},
        max_retries=0,
    )
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])


def lookup(server: LiveServer, headers: dict[str, str]) -> str:
    """The tool's answer in a new session of the official client opened with ``headers``."""

    async def work(session: ClientSession) -> str:
        result = await session.call_tool("lookup", {})
        return result.content[0].text  # type: ignore[union-attr]

    return asyncio.run(with_session(f"{server.url}/mcp/desk", headers, work))


def refusal(server: LiveServer, headers: dict[str, str]) -> MCPError:
    """The error the official client's ``initialize`` raises when the session cannot be opened with ``headers``."""

    async def opening() -> MCPError:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=20) as http,
            streamable_http_client(f"{server.url}/mcp/desk", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            with pytest.raises(MCPError) as raised:
                await session.initialize()
            return raised.value

    return asyncio.run(opening())


def test_a_session_before_the_first_model_request_plays_its_run_s_script_not_the_previous_test_s(
    harness_server: LiveServer, two_scenarios: tuple[str, str]
) -> None:
    from harnessweb.engine.configured import Answers
    from runs_app.endpoint import scripts

    first, second = two_scenarios
    previous, run_id = str(uuid.uuid4()), str(uuid.uuid4())
    ask_model(harness_server, first, previous)  # the previous test: the latest run to get a request plays `first`
    scripts.store(uuid.UUID(run_id), Answers.from_data({}), second)  # this test's run: its script plays `second`

    assert lookup(harness_server, {"X-Harness-Run": run_id}) == second

    run = recorded_run(run_id, events=2)
    calls = [e.data["tool"] for e in run.events.filter(kind="mcp_call")]
    assert (run.scenario_id, calls) == (second, ["lookup"])


def test_a_session_plays_what_its_run_s_model_turns_played_named_by_a_run_key(
    harness_server: LiveServer, two_scenarios: tuple[str, str]
) -> None:
    first, second = two_scenarios
    run_id = str(uuid.uuid4())
    ask_model(harness_server, first, run_id)
    ask_model(harness_server, second, str(uuid.uuid4()))  # another run, later: not this session's

    assert lookup(harness_server, {"Authorization": f"Bearer harness-run-{run_id}"}) == first


def test_without_a_run_to_tell_the_session_is_refused_naming_the_candidates_and_the_header(
    harness_server: LiveServer, two_scenarios: tuple[str, str]
) -> None:
    first, second = two_scenarios
    ask_model(harness_server, first, str(uuid.uuid4()))  # a run plays one of them: no reason to take it

    error = refusal(harness_server, {})

    assert error.error.code == -32600  # Invalid Request
    assert error.error.message == (
        f"Several scenarios declare an MCP server 'desk' ({first}, {second}) and no run is named "
        "(x-harness-run, or a harness-run-<id> key): name one in the x-harness-scenario header"
    )
    answer = httpx.post(
        f"{harness_server.url}/mcp/desk",
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=20,
    )
    assert answer.status_code == 400 and answer.json()["error"]["message"] == error.error.message


def test_a_named_run_that_plays_nothing_yet_is_refused_saying_so(
    harness_server: LiveServer, two_scenarios: tuple[str, str]
) -> None:
    first, second = two_scenarios
    run_id = str(uuid.uuid4())

    error = refusal(harness_server, {"X-Harness-Run": run_id})

    assert f"({first}, {second}) and run {run_id} plays no scenario yet: name one in the x-harness-scenario" in (
        error.error.message
    )
    assert lookup(harness_server, {"X-Harness-Run": run_id, "X-Harness-Scenario": second}) == second


def test_a_run_playing_a_scenario_without_the_server_is_refused_naming_it(
    harness_server: LiveServer, two_scenarios: tuple[str, str]
) -> None:
    other = f"no-desk-{uuid.uuid4().hex[:6]}"
    make_scenario(other)
    run_id = str(uuid.uuid4())
    ask_model(harness_server, other, run_id)

    error = refusal(harness_server, {"X-Harness-Run": run_id})

    assert f"and run {run_id} plays '{other}': name one in the x-harness-scenario header" in error.error.message


def test_a_bad_run_header_is_refused_naming_it(harness_server: LiveServer, two_scenarios: tuple[str, str]) -> None:
    error = refusal(harness_server, {"X-Harness-Run": "not-a-uuid"})

    assert (error.error.code, error.error.message) == (-32602, "x-harness-run must be a UUID, got 'not-a-uuid'")
