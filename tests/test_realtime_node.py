"""OpenAI Realtime through the openai node SDK's native-WebSocket client (``OpenAIRealtimeWebSocket``), unmodified:
it opens ``wss://`` only and sends its key as the subprotocol ``openai-insecure-api-key.<key>``, so it meets
``harness serve --tls`` (its CA through ``NODE_EXTRA_CA_CERTS``). node 20 has the WebSocket behind a flag."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_live_gemini_sdk import served_tls

NODE = shutil.which("node")
ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "fixtures" / "realtime" / "node_session.mjs"
CLIENTS = ROOT / "tests" / "clients"  # where the node SDK is installed (npm ci --prefix tests/clients)
SCENARIOS = [
    {
        "id": "rt-node",
        "require_key": True,
        "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello from the harness, node."}}],
    }
]

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with served_tls(tmp_path_factory.mktemp("realtime-node"), SCENARIOS) as line:
        yield line


def run_node(server: dict[str, Any], key: str) -> subprocess.CompletedProcess[str]:
    assert (CLIENTS / "node_modules").is_dir(), "the node clients are not installed: npm ci --prefix tests/clients"
    env = {**os.environ, "NODE_EXTRA_CA_CERTS": server["ca"], "HARNESS_URL": server["url"], "HARNESS_KEY": key}
    env["HARNESS_SCENARIO"] = "rt-node"
    command = [str(NODE), "--no-warnings", "--experimental-websocket", "--input-type=module"]
    # The script on stdin, run from tests/clients: its imports resolve to the SDK installed there.
    return subprocess.run(
        command, input=SCRIPT.read_text(), cwd=CLIENTS, env=env, capture_output=True, text=True, timeout=60
    )


def test_the_node_sdk_s_realtime_client_plays_a_text_turn_with_its_key_in_the_subprotocol(
    tls_server: dict[str, Any],
) -> None:
    done = run_node(tls_server, "sk-node-key")
    assert done.returncode == 0, done.stderr
    events = json.loads(done.stdout)
    assert events[0]["type"] == "session.created"
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert "".join(deltas) == "Hello from the harness, node."
    assert events[-1]["type"] == "response.done" and events[-1]["response"]["status"] == "completed"
