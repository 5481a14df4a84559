"""A Realtime session recorded as finely as an HTTP stream (through the official openai SDK's realtime client,
unmodified): each response's first message and every message's time, drawn as dots on the waterfall; the messages
that ask for no response as ``message`` events on the same time axis; a named run's script answering before any
scenario; and its cassette export refused with a reason, never an empty cassette."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import openai

from runs_app.live.presenters import waterfall_context
from tests.conftest import LiveServer, make_client, make_scenario, recorded_run
from tests.test_realtime_sdk import until_done, user_text

WORDS = "one two three four five"
PACING = {"chunk_words": 1, "interval_ms": 40}


def session_of(server: LiveServer, run_id: str, asks: int = 1) -> list[list[Any]]:
    """A Realtime session on the run: its settings, the user's text, then ``asks`` responses; each response's
    events from ``response.created`` to ``response.done``, as the client got them."""
    client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=f"sk-test-{uuid.uuid4().hex}")

    async def session() -> list[list[Any]]:
        headers = {"X-Harness-Run": run_id}
        async with client.realtime.connect(model="gpt-realtime", extra_headers=headers) as connection:
            await connection.session.update(session={"type": "realtime", "output_modalities": ["text"]})
            await connection.conversation.item.create(item=user_text("rt-timed"))
            answers = []
            for _ in range(asks):
                await connection.response.create()
                events = await until_done(connection)
                answers.append(events[[e.type for e in events].index("response.created") :])
            return answers

    return asyncio.run(session())


def test_a_paced_response_records_its_first_message_and_each_message_s_time(
    paced_server: LiveServer, transactional_db: None, staff_client: Any
) -> None:
    make_scenario("rt-timed", [{"turn": 1, "response": {"kind": "text", "assistant_text": WORDS}}], pacing=PACING)
    run_id = str(uuid.uuid4())
    [received] = session_of(paced_server, run_id)
    assert "".join(e.delta for e in received if e.type == "response.output_text.delta") == WORDS

    run = recorded_run(run_id, status="passed", events=6)
    events = list(run.events.order_by("seq"))
    [response] = [e for e in events if e.kind == "response"]
    data = response.data
    # One time per message the client got, from response.created (the first, at 0) to response.done.
    n = len(received)  # response.created, the item's 3 openings, 5 deltas, 5 closings and response.done
    assert data["chunks"] == n == len(data["frame_ms"]) == 14
    assert data["frame_ms"][0] == 0 and data["frame_ms"] == sorted(data["frame_ms"])
    assert 0 < data["ttfb_ms"] <= data["duration_ms"]
    assert data["frame_ms"][-1] <= data["duration_ms"] - data["ttfb_ms"] + 1
    paced = [b - a for a, b in zip(data["frame_ms"], data["frame_ms"][1:], strict=False) if b - a >= 35]
    assert len(paced) >= 4  # the deltas after the first, each its interval after the one before

    # The messages that asked for no response, in and out, before the request on one time axis.
    messages = [e for e in events if e.kind == "message"]
    assert [(m.data["type"], m.data["replies"], m.turn) for m in messages] == [
        ("session.update", ["session.updated"], 1),
        ("conversation.item.create", ["conversation.item.added", "conversation.item.done"], 1),
    ]
    request = next(e for e in events if e.kind == "request")
    assert all(m.seq < request.seq and m.timestamp <= request.timestamp for m in messages)

    # The waterfall reads them: a first message, then a dot per message set apart by the pacing.
    chart = waterfall_context(run_id, run, events)["chart"]
    [row] = chart.rows
    assert row.asked == "response.create" and row.ttfb_ms == data["ttfb_ms"]
    assert row.frame_ms == data["frame_ms"] and row.x1 < row.x_first_byte < row.x2
    assert len(row.dots) >= 5 and row.dots[-1].last == n and len(row.gaps) >= 4
    assert f"{n} messages over" in row.sentence and "first message after" in row.sentence
    assert re.fullmatch(r"messages? 1(–\d+)? at \+0 ms after the first message", row.dots[0].label)

    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert len(re.findall(r'<circle class="wf-dot"', page)) == len(row.dots)
    assert "client → server: session.update · server → client: session.updated" in page
    assert "client → server: conversation.item.create · server → client: conversation.item.added" in page
    assert re.search(rf"server → client: {n} messages · finish stop · first message after [\d.]+\s?m?s", page)


def test_a_named_run_s_script_answers_the_socket_and_its_failure_is_an_error_event(
    harness_server: LiveServer, transactional_db: None
) -> None:
    make_scenario("rt-timed", [{"turn": 1, "response": {"kind": "text", "assistant_text": "from the scenario"}}])
    run_id = str(uuid.uuid4())
    script = {"answers": [{"text": "From the script."}], "errors": [{"kind": "rate_limit", "times": 1}]}
    assert make_client().put(f"/runs/{run_id}/script", json=script).status_code == 200

    failed, answered = session_of(harness_server, run_id, asks=2)
    assert [e.type for e in failed] == ["response.created", "error", "response.done"]
    assert failed[-1].response.status == "failed"
    assert "".join(e.delta for e in answered if e.type == "response.output_text.delta") == "From the script."

    run = recorded_run(run_id, status="passed", events=10)
    events = list(run.events.order_by("seq"))
    [injected] = [e.data for e in events if e.kind == "failure_injected"]
    assert (injected["status"], injected["attempt"], injected["of"]) == ("rate_limit", 1, 1)
    first, second = [e.data for e in events if e.kind == "response"]
    assert first["failure"] == "rate_limit" and first["ttfb_ms"] is not None and len(first["frame_ms"]) == 3
    assert second["text"] == "From the script." and second["chunks"] == len(answered) == len(second["frame_ms"])
    used = make_client().get(f"/runs/{run_id}/script").json()
    assert [a["used"] for a in used["answers"]] == [1] and [e["used"] for e in used["errors"]] == [1]

    # Its cassette export says why there is none: a socket's messages are no HTTP exchanges.
    exported = make_client().get(f"/runs/{run_id}/cassette")
    assert exported.status_code == 422
    detail = exported.json()["detail"]
    assert detail.startswith(f"Run {run_id} is no cassette: a realtime socket session: ")
    assert "a VCR cassette holds HTTP exchanges only" in detail and f"GET /api/runs/{run_id}" in detail
    summaries = make_client().get(f"/runs/{run_id}/stream-summary").json()
    assert summaries["responses"] == [] and len(summaries["skipped"]) == 2
    assert all("realtime socket session" in s["reason"] for s in summaries["skipped"])
