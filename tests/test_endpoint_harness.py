"""The harness's own endpoint (``POST /harness/v1/generate``, the npm package's AI SDK provider) through the live
server: seed 000's flows (reasoning with its signature, tool calls, the final report, failures before success thrown
or with a status, a validation failure), each recorded in its run like any other call."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
import orjson
import pytest

from tests.conftest import make_scenario, recorded_run

PATH = "/harness/v1/generate"
SYSTEM = "You are a test agent. Use the tools."
TOOLS = [{"name": "search", "description": "Search", "input_schema": {"type": "object"}}]


@pytest.fixture
def url(harness_server: Any, transactional_db: None) -> str:
    return harness_server.url + PATH


def make_seed_scenario(scenario_id: str, second: dict[str, Any] | None = None) -> None:
    make_scenario(
        scenario_id,
        [
            {
                "turn": 1,
                "expectedTools": ["search"],
                "expectedTemperature": 0.2,
                "response": {
                    "kind": "tool-call",
                    "reasoning": [{"text": "Search first.", "providerMetadata": {"anthropic": {"signature": "sig-a"}}}],
                    "toolCalls": [{"toolName": "search", "callId": "call-1", "arguments": {"q": "oslo"}}],
                },
            },
            {
                "turn": 2,
                "response": {"kind": "final-report", "reportContent": "# Oslo is sunny", "reportFormat": "markdown"},
                **(second or {}),
            },
        ],
        systemPromptMustInclude=["test agent"],
    )


def first_prompt(scenario_id: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": [{"type": "text", "text": scenario_id}]},
    ]


def second_prompt(scenario_id: str, answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The prompt the AI SDK sends after the first answer: its parts as assistant content (the metadata as
    options), then the tool's result."""
    parts = []
    for part in answer["content"]:
        if part["type"] == "tool-call":
            parts.append({**part, "input": orjson.loads(part["input"])})
        elif part["type"] == "reasoning":
            parts.append({"type": "reasoning", "text": part["text"], "providerOptions": part["providerMetadata"]})
        else:
            parts.append(part)
    result = {
        "type": "tool-result",
        "toolCallId": "call-1",
        "toolName": "search",
        "output": {"type": "text", "value": "sunny"},
    }
    return [*first_prompt(scenario_id), {"role": "assistant", "content": parts}, {"role": "tool", "content": [result]}]


def post(url: str, prompt: list[dict[str, Any]], run: uuid.UUID, **fields: Any) -> httpx2.Response:
    body = {"model": "test-llm", "prompt": prompt, "tools": TOOLS, "temperature": 0.2, **fields}
    return httpx2.post(url, json=body, headers={"Authorization": f"Bearer harness-run-{run}"}, timeout=10)


def test_it_plays_reasoning_tool_calls_and_the_final_report_in_the_run_its_key_names(url: str) -> None:
    make_seed_scenario("native-flow")
    run = uuid.uuid4()

    first = post(url, first_prompt("native-flow"), run)
    assert first.status_code == 200 and first.headers["x-harness-run"] == str(run)
    answer = first.json()
    assert answer["content"] == [
        {"type": "reasoning", "text": "Search first.", "providerMetadata": {"anthropic": {"signature": "sig-a"}}},
        {"type": "tool-call", "toolCallId": "call-1", "toolName": "search", "input": '{"q":"oslo"}'},
    ]
    assert answer["finishReason"] == "tool-calls" and answer["usage"]["totalTokens"] > 0
    second = post(url, second_prompt("native-flow", answer), run, stream=True).json()
    report = second["content"][-1]
    assert report["toolName"] == "agent__final_report"
    assert orjson.loads(report["input"])["report_content"] == "# Oslo is sunny"

    recorded = recorded_run(str(run), status="passed", events=8)
    assert recorded.protocol == "harness" and recorded.scenario_id == "native-flow"
    requests = [e.data for e in recorded.events.filter(kind="request").order_by("id")]
    assert [r["path"] for r in requests] == [PATH, PATH] and requests[1]["body"]["stream"] is True


def test_a_thrown_failure_says_so_then_the_turn_answers(url: str) -> None:
    make_seed_scenario("native-throws", {"failuresBeforeSuccess": 1, "failureThrows": True, "failureMessage": "boom"})
    run = uuid.uuid4()
    answer = post(url, first_prompt("native-throws"), run).json()

    failed = post(url, second_prompt("native-throws", answer), run)
    assert failed.status_code == 500
    assert failed.json() == {
        "status": "network_error",
        "message": "boom",
        "retryable": True,
        "retryAfterMs": None,
        "throws": True,
    }
    retried = post(url, second_prompt("native-throws", answer), run)
    assert retried.json()["content"][-1]["toolName"] == "agent__final_report"
    recorded = recorded_run(str(run), status="passed", events=12)
    injected = [e.data for e in recorded.events.filter(kind="failure_injected")]
    assert [(d["status"], d["attempt"], d["of"]) for d in injected] == [("network_error", 1, 1)]


def test_a_failure_with_a_status_is_said_with_its_http_status_and_retry_after(url: str) -> None:
    second = {"failuresBeforeSuccess": 2, "failureStatus": "rate_limit", "failureRetryAfterMs": 20}
    make_seed_scenario("native-status", second)
    run = uuid.uuid4()
    answer = post(url, first_prompt("native-status"), run).json()

    statuses = [post(url, second_prompt("native-status", answer), run) for _ in range(3)]
    assert [r.status_code for r in statuses] == [429, 429, 200]
    assert statuses[0].headers["retry-after-ms"] == "20"
    assert statuses[0].json() == {
        "status": "rate_limit",
        "message": "Rate limit exceeded (simulated)",
        "retryable": True,
        "retryAfterMs": 20,
        "throws": False,
    }


def test_a_validation_failure_is_the_failure_report_and_fails_the_run(url: str) -> None:
    make_seed_scenario("native-invalid")
    run = uuid.uuid4()

    answer = post(url, first_prompt("native-invalid"), run, temperature=0.9).json()

    report = orjson.loads(answer["content"][-1]["input"])
    assert report["status"] == "failure"
    assert "Expected temperature 0.2 but received 0.9" in report["report_content"]
    recorded = recorded_run(str(run), status="failed")
    assert "Expected temperature 0.2 but received 0.9" in recorded.status_reason


def test_bad_requests_and_unknown_scenarios_get_the_protocol_s_errors(url: str) -> None:
    bad = httpx2.post(url, json={"model": "m", "prompt": [{"role": "user", "content": [{"type": "x"}]}]}, timeout=10)
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == "prompt.0.content.0.type: a user message has no 'x' part"
    assert bad.json()["error"]["param"] == "prompt.0.content.0.type"

    missing = httpx2.post(
        url,
        json={"model": "m", "prompt": [{"role": "user", "content": "hi"}]},
        headers={"X-Harness-Scenario": "no-such-scenario"},
        timeout=10,
    )
    assert missing.status_code == 404
    assert missing.json()["error"]["message"].startswith("Scenario 'no-such-scenario' not found")
    wrong_method = httpx2.get(url, timeout=10)
    assert wrong_method.status_code == 405 and "use POST" in wrong_method.json()["error"]["message"]
