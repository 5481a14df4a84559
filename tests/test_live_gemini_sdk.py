"""Gemini Live through google-genai's live client (``client.aio.live.connect``), unmodified, against ``harness
serve --tls``: google-genai opens Live over ``wss://`` whenever it has a key, so the server speaks TLS with a local
CA that the client trusts through ``SSL_CERT_FILE``. A text turn and a tool call with its response."""

from __future__ import annotations

import asyncio
import json
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors, types

from harnessweb.testing.server import read_announcement

SCENARIOS = [
    {
        "id": "live-text",
        "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello from the harness, live."}}],
    },
    {
        "id": "live-tools",
        "turns": [
            {
                "turn": 1,
                "response": {
                    "kind": "tool-call",
                    "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Paris"}}],
                },
                "expected_tools": ["get_weather"],
            },
            {
                "turn": 2,
                "response": {"kind": "text", "assistant_text": "Sunny in Paris."},
                "expect": {"tool_calls_answered": True, "last_message_contains": "sunny"},
            },
        ],
    },
    {
        "id": "live-drop",
        "pacing": {"chunk_words": 1},
        "turns": [
            {
                "turn": 1,
                "response": {"kind": "text", "assistant_text": "one two three four five six"},
                "failures_before_success": 1,
                "failure_status": "network_error",
            }
        ],
    },
]


@contextmanager
def served_tls(folder: Path, scenarios: list[dict[str, Any]], pacing: str = "off") -> Iterator[dict[str, Any]]:
    """``harness serve --fresh --tls --port 0`` with these scenarios, pacing off unless told; its JSON line
    (``url``, ``token``, ``ca``) for the ``with`` block, stopped after it."""
    (folder / "scenarios.json").write_text(json.dumps(scenarios))
    (folder / "tmp").mkdir()
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(folder / "tmp"), "HARNESS_TLS_DIR": str(folder / "tls")}
    env["HARNESS_PACING"] = pacing
    command = [sys.executable, "-m", "harnessweb", "serve", "--fresh", "--tls", "--port", "0"]
    log = folder / "serve.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [*command, "--scenarios", str(folder / "scenarios.json")], env=env, stdout=subprocess.PIPE, stderr=stderr
        )
    try:
        yield read_announcement(process, log)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        assert process.stdout is not None
        process.stdout.close()


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with served_tls(tmp_path_factory.mktemp("live"), SCENARIOS) as line:
        yield line


def live_client(server: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> genai.Client:
    monkeypatch.setenv("SSL_CERT_FILE", server["ca"])  # google-genai builds its websocket's TLS context from it
    options = types.HttpOptions(base_url=server["url"])
    return genai.Client(api_key="test-key", http_options=options)


def run_of(server: dict[str, Any], run_id: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {server['token']}"}
    answer = httpx.get(
        f"{server['url']}/api/runs/{run_id}",
        headers=headers,
        verify=ssl.create_default_context(cafile=server["ca"]),
        timeout=20,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_serve_tls_names_its_ca_and_answers_https(tls_server: dict[str, Any]) -> None:
    assert tls_server["url"].startswith("https://127.0.0.1:") and Path(tls_server["ca"]).is_file()
    answer = httpx.get(
        f"{tls_server['url']}/v1/models", verify=ssl.create_default_context(cafile=tls_server["ca"]), timeout=20
    )
    assert answer.status_code == 200
    with pytest.raises(httpx.ConnectError):  # the server's certificate is the local CA's, no public one's
        httpx.get(f"{tls_server['url']}/v1/models", timeout=20)


def test_a_live_text_turn_streams_model_turn_parts_then_turn_complete_with_usage(
    tls_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = live_client(tls_server, monkeypatch)
    config = types.LiveConnectConfig(response_modalities=[types.Modality.TEXT])

    async def session() -> list[Any]:
        async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as live:
            await live.send_client_content(turns={"role": "user", "parts": [{"text": "live-text"}]}, turn_complete=True)
            return [message async for message in live.receive()]

    messages = asyncio.run(session())
    text = "".join(m.text or "" for m in messages if m.server_content and m.server_content.model_turn)
    assert text == "Hello from the harness, live."
    last = messages[-1]
    assert last.server_content.turn_complete is True
    assert last.usage_metadata.response_token_count > 0
    assert last.usage_metadata.total_token_count == (
        last.usage_metadata.prompt_token_count + last.usage_metadata.response_token_count
    )


def test_a_live_tool_call_gets_its_response_then_the_answer_in_one_run(
    tls_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = live_client(tls_server, monkeypatch)
    weather = types.FunctionDeclaration(
        name="get_weather",
        description="The weather in a city",
        parameters=types.Schema(type="OBJECT", properties={"city": types.Schema(type="STRING")}),
    )
    config = types.LiveConnectConfig(
        response_modalities=[types.Modality.TEXT], tools=[types.Tool(function_declarations=[weather])]
    )
    run_id = "6f1c0c2e-5b7a-4f7e-9b35-2d1f0c7a9e11"
    options = types.HttpOptions(base_url=tls_server["url"], headers={"X-Harness-Run": run_id})
    config.http_options = options

    async def session() -> tuple[Any, list[Any]]:
        async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as live:
            await live.send_client_content(
                turns={"role": "user", "parts": [{"text": "live-tools"}]}, turn_complete=True
            )
            call = None
            async for message in live.receive():
                if message.tool_call:
                    call = message.tool_call.function_calls[0]
                    break
            assert call is not None
            await live.send_tool_response(
                function_responses=[types.FunctionResponse(id=call.id, name=call.name, response={"sky": "sunny"})]
            )
            return call, [message async for message in live.receive()]

    call, messages = asyncio.run(session())
    assert (call.name, call.args) == ("get_weather", {"city": "Paris"}) and call.id
    text = "".join(m.text or "" for m in messages if m.server_content and m.server_content.model_turn)
    assert text == "Sunny in Paris." and messages[-1].server_content.turn_complete
    run = run_of(tls_server, run_id)
    assert run["protocol"] == "gemini_live" and run["scenario_id"] == "live-tools"
    assert run["status"] == "passed", run


def test_a_network_error_cuts_the_live_socket_mid_turn_and_the_retry_in_the_same_run_is_answered(
    tls_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = live_client(tls_server, monkeypatch)
    run_id = "0b9e2a57-3c1d-4f0e-8a6b-5e4d3c2b1a09"
    config = types.LiveConnectConfig(
        response_modalities=[types.Modality.TEXT],
        http_options=types.HttpOptions(base_url=tls_server["url"], headers={"X-Harness-Run": run_id}),
    )

    async def attempt() -> tuple[str, Exception | None]:
        text = ""
        async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as live:
            await live.send_client_content(turns={"role": "user", "parts": [{"text": "live-drop"}]}, turn_complete=True)
            try:
                async for message in live.receive():
                    text += message.text or ""
            except errors.APIError as exc:
                return text, exc
        return text, None

    partial, cut = asyncio.run(attempt())
    assert isinstance(cut, errors.APIError) and cut.code == 1006  # abnormal closure: no close frame
    assert partial and "one two three four five six".startswith(partial) and partial != "one two three four five six"
    assert asyncio.run(attempt()) == ("one two three four five six", None)
    assert run_of(tls_server, run_id)["status"] == "passed"
