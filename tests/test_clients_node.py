"""Which node client calls what: the official `openai`, `@anthropic-ai/sdk` and `ollama` (ollama-js) packages and the
AI SDK's openai, anthropic and google providers (versions pinned in tests/clients/package-lock.json, installed by
`make test`), each run by tests/clients/clients.mjs against the harness with its defaults, for a plain answer, a
stream and its tool loop (and ollama-js's `format` with a schema). Every case checks the text the script got, the
endpoint path it called and the run the harness recorded.

Without `node` on the machine this module collects no test (`make test` says so in one line); with node but
without tests/clients/node_modules every test fails, naming the command that installs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.client_runs import (
    ANSWER,
    STREAMED,
    TEXT,
    paths,
    played,
    stream_scenario,
    streaming,
    text_scenario,
    threads,
    tools_scenario,
)
from tests.conftest import make_scenario

NODE = shutil.which("node")
SCRIPTS = Path(__file__).resolve().parent / "clients"
GEMINI = "/v1beta/models/gemini-2.5-flash:generateContent"
# Each client and the endpoint it calls by default.
CLIENTS = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic-messages": "/v1/messages",
    "ai-sdk-openai": "/v1/responses",
    "ai-sdk-openai-chat": "/v1/chat/completions",
    "ai-sdk-anthropic": "/v1/messages",
    "ai-sdk-google": GEMINI,
    "ollama-js": "/api/chat",
}


def run_client(server: Any, api_key: str, client: str, mode: str, scenario: str) -> dict[str, Any]:
    """Run the node script for one client and mode; what it printed, as JSON."""
    assert (SCRIPTS / "node_modules").is_dir(), "the node clients are not installed: npm ci --prefix tests/clients"
    env = {
        **os.environ,
        "HARNESS_URL": server.url,
        "HARNESS_KEY": api_key,
        "HARNESS_SCENARIO": scenario,
        # Whatever a client reads from the environment points at the harness too: nothing leaves the machine.
        "OPENAI_API_KEY": api_key,
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "ANTHROPIC_API_KEY": api_key,
        "ANTHROPIC_BASE_URL": server.url,
        "GOOGLE_GENERATIVE_AI_API_KEY": api_key,
        "OLLAMA_HOST": server.url,
    }
    done = subprocess.run(
        [NODE or "node", "clients.mjs", client, mode],
        cwd=SCRIPTS,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"node clients.mjs {client} {mode} failed:\n{done.stderr}\n{done.stdout}"
    return json.loads(done.stdout.strip().splitlines()[-1])


if NODE is None:
    warnings.warn(
        "node is not installed: the node client tests (tests/test_clients_node.py) are not collected", stacklevel=1
    )
else:

    @pytest.mark.parametrize("client", CLIENTS)
    def test_it_answers_text_through_each_client(
        client: str, harness_server: Any, api_key: str, transactional_db: None
    ) -> None:
        scenario = text_scenario(f"node-{client}")
        got = run_client(harness_server, api_key, client, "text", scenario)
        assert got["text"] == TEXT
        assert paths(played(scenario, [1])) == {CLIENTS[client]}

    @pytest.mark.parametrize("client", CLIENTS)
    def test_it_streams_through_each_client(
        client: str, harness_server: Any, api_key: str, transactional_db: None
    ) -> None:
        scenario = stream_scenario(f"node-{client}")
        got = run_client(harness_server, api_key, client, "stream", scenario)
        assert got["text"] == STREAMED == "".join(got["deltas"]) and len(got["deltas"]) > 1
        assert paths(played(scenario, [1])) == {streaming(CLIENTS[client])}

    @pytest.mark.parametrize("client", CLIENTS)
    def test_it_runs_each_client_s_own_tool_loop(
        client: str, harness_server: Any, api_key: str, transactional_db: None
    ) -> None:
        scenario = tools_scenario(f"node-{client}")
        got = run_client(harness_server, api_key, client, "tools", scenario)
        assert got["text"] == ANSWER and got["calls"] == ["Paris"]
        run = played(scenario, [1, 2])
        assert paths(run) == {CLIENTS[client]}
        if client == "anthropic-messages":  # the tool runner threads the conversation by default
            assert threads(run) == ["create", "continue"]

    def test_it_answers_ollama_js_format_with_the_structured_answer(
        harness_server: Any, api_key: str, transactional_db: None
    ) -> None:
        weather = {"city": "Paris", "celsius": 21}
        make_scenario("structured-ollama-js", [{"turn": 1, "response": {"kind": "structured", "data": weather}}])
        got = run_client(harness_server, api_key, "ollama-js", "structured", "structured-ollama-js")
        assert json.loads(got["text"]) == weather
        run = played("structured-ollama-js", [1])
        assert paths(run) == {"/api/chat"}
        assert run.events.get(kind="request").data["body"]["format"]["required"] == ["city", "celsius"]
