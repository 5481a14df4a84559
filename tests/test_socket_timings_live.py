"""A Gemini Live session recorded as finely as an HTTP stream, through google-genai's live client (unmodified,
against ``harness serve --tls``): the setup and a content that asks for no turn as ``message`` events, the turn's
first message and every message's time, read by the waterfall; a named run's script answering before any scenario."""

from __future__ import annotations

import asyncio
import ssl
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from google.genai import types

from runs_app.live import waterfall
from tests.test_live_gemini_sdk import live_client, run_of, served_tls

SCENARIOS = [{"id": "live-timed", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "a b c d"}}]}]


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with served_tls(tmp_path_factory.mktemp("live-timed"), SCENARIOS) as line:
        yield line


def play(server: dict[str, Any], monkeypatch: pytest.MonkeyPatch, run_id: str) -> list[Any]:
    """A Live session on the run: a context content (no turn asked), then the user's turn; the turn's messages."""
    client = live_client(server, monkeypatch)
    config = types.LiveConnectConfig(
        response_modalities=[types.Modality.TEXT],
        http_options=types.HttpOptions(base_url=server["url"], headers={"X-Harness-Run": run_id}),
    )

    async def session() -> list[Any]:
        async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as live:
            await live.send_client_content(
                turns={"role": "user", "parts": [{"text": "live-timed"}]}, turn_complete=False
            )
            await live.send_client_content(turns={"role": "user", "parts": [{"text": "go on"}]}, turn_complete=True)
            return [message async for message in live.receive()]

    return asyncio.run(session())


def text_of(messages: list[Any]) -> str:
    return "".join(m.text or "" for m in messages if m.server_content and m.server_content.model_turn)


def test_a_live_turn_records_its_messages_times_and_the_messages_that_asked_for_none(
    tls_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = str(uuid.uuid4())
    received = play(tls_server, monkeypatch, run_id)
    assert text_of(received) == "a b c d" and received[-1].server_content.turn_complete

    events = run_of(tls_server, run_id)["events"]
    messages = [(e["data"]["type"], e["data"]["replies"], e["turn"]) for e in events if e["kind"] == "message"]
    assert messages == [("setup", ["setupComplete"], 1), ("clientContent", [], 1)]
    kinds = [e["kind"] for e in events]
    assert kinds.index("request") > max(i for i, kind in enumerate(kinds) if kind == "message")
    [data] = [e["data"] for e in events if e["kind"] == "response"]
    assert data["chunks"] == len(received) == len(data["frame_ms"]) and data["frame_ms"][0] == 0
    assert data["ttfb_ms"] is not None and 0 < data["ttfb_ms"] <= data["duration_ms"]

    [row] = waterfall.build(events).rows
    assert row.asked == "the client's turn" and row.ttfb_ms == data["ttfb_ms"] and row.x_first_byte is not None
    assert row.frame_ms == data["frame_ms"] and row.dots and row.dots[-1].last == len(received)
    assert f"{len(received)} messages over" in row.sentence


def test_a_named_run_s_script_answers_the_live_turn(
    tls_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = str(uuid.uuid4())
    answer = httpx.put(
        f"{tls_server['url']}/api/runs/{run_id}/script",
        json={"answers": [{"text": "Scripted, live."}]},
        headers={"Authorization": f"Bearer {tls_server['token']}"},
        verify=ssl.create_default_context(cafile=tls_server["ca"]),
        timeout=20,
    )
    assert answer.status_code == 200, answer.text
    assert text_of(play(tls_server, monkeypatch, run_id)) == "Scripted, live."
    run = run_of(tls_server, run_id)
    assert run["protocol"] == "gemini_live" and run["scenario_id"] in ("", None)
    assert [e["data"]["text"] for e in run["events"] if e["kind"] == "response"] == ["Scripted, live."]
