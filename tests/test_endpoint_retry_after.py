"""How long each official SDK waits before retrying a 429 whose wait is below a second or not whole: measured from
the run's events (the failure's response to the retry's request), with their default retry settings.

The harness sends ``retry-after`` in whole seconds rounded up and ``retry-after-ms`` exact (README, "Scenarios").
The bounds say which header a client read: 200 ms gives ``retry-after: 1``, 2500 ms gives ``retry-after: 3``, so a
wait under the rounded second means ``retry-after-ms`` was read, and a wait under 2.5 s at 2500 ms that both were
ignored. A client that changes what it reads fails here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors, types

from tests.conftest import LiveServer, make_scenario, wait_for

ANSWER = "Recovered after the rate limit."
NODE = shutil.which("node")
SCRIPTS = Path(__file__).resolve().parent / "clients"
# The wait each client takes (seconds, low inclusive, high exclusive) for a failure_retry_after_ms. The high bounds
# leave room for a slow machine, never reaching the next reading: the rounded second, or the exact wait.
READS_RETRY_AFTER_MS = {200: (0.2, 0.9), 2500: (2.5, 2.95)}
# google-genai's HttpRetryOptions: tenacity's exponential backoff from 1 s plus up to 1 s of jitter, headers unread.
IGNORES_BOTH = {200: (1.0, 2.4), 2500: (1.0, 2.4)}


def make_rate_limited(scenario_id: str, retry_after_ms: int) -> None:
    make_scenario(
        scenario_id,
        [
            {
                "turn": 1,
                "failures_before_success": 1,
                "failure_status": "rate_limit",
                "failure_retry_after_ms": retry_after_ms,
                "response": {"kind": "text", "assistant_text": ANSWER},
            }
        ],
    )


def events(run_id: str) -> list[Any]:
    from runs_app.models import RunEvent

    return list(RunEvent.objects.filter(run_id=run_id).order_by("seq"))


def retry_wait(run_id: str) -> float:
    """Seconds from the 429's response event to the retry's request event."""

    def both() -> tuple[Any, Any] | None:
        recorded = events(run_id)
        failed = [e for e in recorded if e.kind == "response" and e.data.get("failure")]
        requests = [e for e in recorded if e.kind == "request"]
        return (failed[0], requests[1]) if failed and len(requests) > 1 else None

    failed, retry = wait_for(both, message=f"a retry in run {run_id}")
    return (retry.timestamp - failed.timestamp).total_seconds()


# -- the Python SDKs ---------------------------------------------------------------------------------------------


def call_openai(server: LiveServer, key: str, headers: dict[str, str], scenario: str) -> str:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, default_headers=headers, timeout=20)
    answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": scenario}])
    return answer.choices[0].message.content or ""


def call_anthropic(server: LiveServer, key: str, headers: dict[str, str], scenario: str) -> str:
    client = anthropic.Anthropic(base_url=server.url, api_key=key, default_headers=headers, timeout=20)
    answer = client.messages.create(model="c", max_tokens=64, messages=[{"role": "user", "content": scenario}])
    return answer.content[0].text


def call_genai(server: LiveServer, key: str, headers: dict[str, str], scenario: str, **options: Any) -> str:
    http_options = types.HttpOptions(base_url=server.url, headers=headers, **options)
    client = genai.Client(api_key=key, http_options=http_options)
    return client.models.generate_content(model="gemini-2.5-flash", contents=scenario).text or ""


def call_genai_retrying(server: LiveServer, key: str, headers: dict[str, str], scenario: str) -> str:
    # Retries are off unless asked for; HttpRetryOptions() asks with the SDK's defaults, attempts cut to 2.
    return call_genai(server, key, headers, scenario, retry_options=types.HttpRetryOptions(attempts=2))


PYTHON: dict[str, tuple[Callable[..., str], dict[int, tuple[float, float]]]] = {
    "openai": (call_openai, READS_RETRY_AFTER_MS),
    "anthropic": (call_anthropic, READS_RETRY_AFTER_MS),
    "google-genai-retry-options": (call_genai_retrying, IGNORES_BOTH),
}


@pytest.mark.parametrize("retry_after_ms", [200, 2500])
@pytest.mark.parametrize("client", PYTHON)
def test_it_measures_the_python_sdk_s_wait(
    harness_server: LiveServer, api_key: str, transactional_db: None, client: str, retry_after_ms: int
) -> None:
    call, bounds = PYTHON[client]
    scenario, run_id = f"retry-{client}-{retry_after_ms}", str(uuid.uuid4())
    make_rate_limited(scenario, retry_after_ms)
    assert call(harness_server, api_key, {"x-harness-run": run_id}, scenario) == ANSWER
    low, high = bounds[retry_after_ms]
    assert low <= retry_wait(run_id) < high


@pytest.mark.parametrize("retry_after_ms", [200, 2500])
def test_it_finds_google_genai_does_not_retry_by_default(
    harness_server: LiveServer, api_key: str, transactional_db: None, retry_after_ms: int
) -> None:
    scenario, run_id = f"retry-google-genai-{retry_after_ms}", str(uuid.uuid4())
    make_rate_limited(scenario, retry_after_ms)
    with pytest.raises(errors.ClientError) as caught:
        call_genai(harness_server, api_key, {"x-harness-run": run_id}, scenario)
    assert caught.value.code == 429
    wait_for(lambda: any(e.kind == "response" for e in events(run_id)), message="the 429's response event")
    assert [e.kind for e in events(run_id)].count("request") == 1


# -- the node SDKs -----------------------------------------------------------------------------------------------

NODE_CLIENTS = ("openai", "anthropic", "ai-sdk-openai-chat")


@pytest.mark.skipif(NODE is None, reason="node is not installed (tests/test_clients_node.py says so too)")
@pytest.mark.parametrize("retry_after_ms", [200, 2500])
@pytest.mark.parametrize("client", NODE_CLIENTS)
def test_it_measures_the_node_sdk_s_wait(
    harness_server: LiveServer, api_key: str, transactional_db: None, client: str, retry_after_ms: int
) -> None:
    assert (SCRIPTS / "node_modules").is_dir(), "the node clients are not installed: npm ci --prefix tests/clients"
    scenario, run_id = f"retry-node-{client}-{retry_after_ms}", str(uuid.uuid4())
    make_rate_limited(scenario, retry_after_ms)
    env = {
        **os.environ,
        "HARNESS_URL": harness_server.url,
        "HARNESS_KEY": api_key,
        "HARNESS_RUN": run_id,
        "HARNESS_SCENARIO": scenario,
    }
    done = subprocess.run(
        [NODE or "node", "retry_after.mjs", client], cwd=SCRIPTS, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"node retry_after.mjs {client} failed:\n{done.stderr}\n{done.stdout}"
    assert json.loads(done.stdout.strip().splitlines()[-1])["text"] == ANSWER
    low, high = READS_RETRY_AFTER_MS[retry_after_ms]
    assert low <= retry_wait(run_id) < high
