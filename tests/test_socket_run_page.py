"""A socket session's run on the dashboard: the runs list filters Realtime, Live and MCP runs, and a recorded Realtime
session (through the official openai SDK's realtime client) reads as messages in and out on its run page's
timeline and waterfall, never as HTTP exchanges."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import openai

from runs_app.live.presenters import waterfall_context
from tests.conftest import LiveServer, make_run, make_scenario, recorded_run
from tests.test_realtime_sdk import until_done, user_text


def test_the_runs_list_filters_socket_and_mcp_runs(staff_client: Any) -> None:
    for protocol in ("realtime", "gemini_live", "mcp", "openai"):
        make_run(scenario_id=f"by-{protocol}", protocol=protocol)
    page = staff_client.get("/runs/").content.decode()
    offered = re.findall(
        r"<option(?: selected)?>([a-z_]+)</option>", page.split('name="protocol"')[1].split("</select>")[0]
    )
    assert {"realtime", "gemini_live", "mcp"} <= set(offered)
    for protocol in ("realtime", "gemini_live", "mcp"):
        response = staff_client.get(f"/runs/?protocol={protocol}")
        assert response.status_code == 200
        assert f"by-{protocol}" in response.content.decode()
        assert "by-openai" not in response.content.decode()


def play_rate_limited_session(server: LiveServer, run_id: str) -> None:
    """A Realtime session whose first response is refused with a rate limit, then asked again and answered."""
    client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=f"sk-test-{uuid.uuid4().hex}")

    async def session() -> None:
        headers = {"X-Harness-Run": run_id}
        async with client.realtime.connect(model="gpt-realtime", extra_headers=headers) as connection:
            await connection.session.update(session={"type": "realtime", "output_modalities": ["text"]})
            await connection.conversation.item.create(item=user_text("rt-page"))
            await connection.response.create()
            await until_done(connection)
            await connection.response.create()
            await until_done(connection)

    asyncio.run(session())


def test_a_realtime_session_reads_as_messages_in_and_out(
    harness_server: LiveServer, transactional_db: None, staff_client: Any
) -> None:
    answer = {"kind": "text", "assistant_text": "Here on the socket."}
    turn = {"turn": 1, "response": answer, "failures_before_success": 1, "failure_status": "rate_limit"}
    make_scenario("rt-page", [turn])
    run_id = str(uuid.uuid4())
    play_rate_limited_session(harness_server, run_id)
    run = recorded_run(run_id, status="passed", events=9)

    chart = waterfall_context(run_id, run, list(run.events.order_by("seq")))["chart"]
    assert chart.socket
    assert [(row.turn, row.attempt, row.state) for row in chart.rows] == [(1, 1, "failed"), (1, 2, "ok")]
    failed, answered = chart.rows
    assert failed.status == "error event (rate_limit)"
    assert re.fullmatch(r"\d+ messages sent", answered.status)
    assert answered.sentence.startswith("Turn 1 · attempt 2: response.create at +")
    assert answered.sentence.endswith(" sent on the socket.")
    assert chart.summary.startswith("2 responses on a socket over ")
    assert answered.start_ms >= failed.end_ms  # one time axis: the retry after the error

    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert "client → server: response.create on /v1/realtime (socket) · 1 item · 0 tools" in page
    assert "server → client: error (rate_limit)" in page
    assert re.search(r"server → client: \d+ messages · finish stop", page)
    assert "A socket session: each response on one time axis" in page
    assert "GET /v1/realtime" not in page and "HTTP 200" not in page
    assert "<dt>Over</dt><dd>a socket</dd>" in page and "<dt>Messages</dt>" in page
    assert "<dt>HTTP</dt>" not in page and "<dt>First byte</dt>" not in page


def socket_events(protocol: str, path: str, *answers: dict[str, Any]) -> list[dict[str, Any]]:
    """A socket session's events as recorded: per answer, the request (the socket's path and protocol) then it."""
    events: list[dict[str, Any]] = []
    for i, answer in enumerate(answers):
        at = f"2026-01-01T00:00:0{i}+00:00"
        request = {"method": "GET", "path": path, "protocol": protocol, "body": {"input": []}}
        events.append({"seq": len(events) + 1, "timestamp": at, "kind": "request", "turn": 1, "data": request})
        events.append({"seq": len(events) + 1, "timestamp": at, "kind": "response", "turn": 1, "data": answer})
    return events


def test_the_waterfall_says_a_cut_socket_and_a_live_turn_in_the_socket_s_words() -> None:
    from runs_app.live.waterfall import build

    cut = {"duration_ms": 20, "status": None, "failure": "network_error", "stream": True, "dropped": True}
    served = {"duration_ms": 30, "status": 200, "stream": True, "chunks": 4}
    chart = build(socket_events("gemini_live", "/ws/google.ai.generativelanguage.v1beta.X", cut, served))
    assert [(row.status, row.state) for row in chart.rows] == [
        ("connection cut (network_error)", "failed"),
        ("4 messages sent", "ok"),
    ]
    assert chart.rows[1].sentence.startswith("Turn 1 · attempt 2: the client's turn at +")
    http = build(socket_events("openai", "/v1/chat/completions", served))  # an HTTP turn keeps its status
    assert not http.socket and http.rows[0].status == "200" and http.summary.startswith("1 request over")
