"""Failures scoped per provider, through the SDKs against the real server: a client that falls back from one provider
to another in the same run (another model on the same protocol, another protocol, Azure's path of OpenAI's protocol,
another key) sees the first fail and the second succeed; each provider counts its own attempts."""

from __future__ import annotations

import uuid
from typing import Any

import anthropic
import openai
import pytest

from harnessweb.engine import keys
from runs_app.models import RunEvent
from tests.conftest import make_scenario, recorded_run

FAST = {"failure_status": "rate_limit", "failure_retry_after_ms": 10}


def scenario(scenario_id: str, failures: int | str, scope: dict[str, Any] | None) -> None:
    turn: dict[str, Any] = {"turn": 1, "failures_before_success": failures, **FAST,
                            "response": {"kind": "text", "assistant_text": "Answered."}}  # fmt: skip
    if scope is not None:
        turn["failure_scope"] = scope
    make_scenario(scenario_id, [turn])


def gpt(url: str, run: str, key: str = "sk-primary", **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, default_headers={"X-Harness-Run": run}, **kw)


def ask(client: Any, scenario_id: str, model: str) -> str:
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": scenario_id}])
    return reply.choices[0].message.content


def with_fallback(first: Any, second: Any) -> str:
    """What a client with a fallback provider does: the first, retried by its SDK, then the second."""
    try:
        return first()
    except (openai.RateLimitError, anthropic.RateLimitError):
        return second()


def failures(run: str) -> list[str]:
    """The path and model of each request that got a failure, in order."""
    events = {e.seq: e for e in RunEvent.objects.filter(run_id=run).order_by("seq")}
    shown = []
    for seq, event in events.items():
        if event.kind == "failure_injected":
            request = next(events[s] for s in range(seq, 0, -1) if s in events and events[s].kind == "request")
            shown.append(f"{request.data['path']} {request.data['body'].get('model', '')}")
    return shown


def test_openai_model_a_fails_twice_and_model_b_succeeds_in_the_same_run(harness_server, transactional_db) -> None:
    scenario("scope-model", 2, {"model": ["model-a"]})
    run = str(uuid.uuid4())
    client = gpt(harness_server.url, run, max_retries=1)  # two attempts at model A
    answer = with_fallback(lambda: ask(client, "scope-model", "model-a"), lambda: ask(client, "scope-model", "model-b"))
    assert answer == "Answered."
    recorded_run(run, status="passed", events=12)
    assert failures(run) == ["/v1/chat/completions model-a"] * 2


def test_without_a_scope_the_fallback_model_fails_too(harness_server, transactional_db) -> None:
    scenario("scope-none", "always", None)
    client = gpt(harness_server.url, str(uuid.uuid4()), max_retries=0)
    with pytest.raises(openai.RateLimitError):
        with_fallback(lambda: ask(client, "scope-none", "model-a"), lambda: ask(client, "scope-none", "model-b"))


def test_each_model_in_the_scope_counts_its_own_failures(harness_server, transactional_db) -> None:
    scenario("scope-two-models", 2, {"model": ["model-a", "model-b"]})
    run = str(uuid.uuid4())
    client = gpt(harness_server.url, run, max_retries=0)
    outcomes = []
    for model in ("model-a", "model-a", "model-b", "model-a", "model-b", "model-b"):
        try:
            outcomes.append(ask(client, "scope-two-models", model))
        except openai.RateLimitError:
            outcomes.append("429")
    assert outcomes == ["429", "429", "429", "Answered.", "429", "Answered."]


def test_openai_fails_and_the_anthropic_fallback_succeeds(harness_server, transactional_db) -> None:
    scenario("scope-protocol", "always", {"protocol": ["openai"]})
    run = str(uuid.uuid4())
    client = gpt(harness_server.url, run, max_retries=1)
    claude = anthropic.Anthropic(base_url=harness_server.url, api_key="sk-ant-backup", max_retries=0,
                                 default_headers={"X-Harness-Run": run})  # fmt: skip

    def fallback() -> str:
        message = claude.messages.create(
            model="claude-sonnet-4-6", max_tokens=50, messages=[{"role": "user", "content": "scope-protocol"}]
        )
        return message.content[0].text

    assert with_fallback(lambda: ask(client, "scope-protocol", "gpt-4o"), fallback) == "Answered."
    recorded_run(run, status="passed", events=12)
    assert failures(run) == ["/v1/chat/completions gpt-4o"] * 2


def test_azure_fails_and_openai_speaking_the_same_protocol_succeeds(harness_server, transactional_db) -> None:
    scenario("scope-azure", "always", {"protocol": ["azure"]})
    run = str(uuid.uuid4())
    headers = {"X-Harness-Run": run}
    azure = openai.AzureOpenAI(azure_endpoint=harness_server.url, api_key="azure-key", api_version="2024-10-21",
                               default_headers=headers, max_retries=0)  # fmt: skip
    plain = gpt(harness_server.url, run, max_retries=0)
    answer = with_fallback(
        lambda: ask(azure, "scope-azure", "gpt-4o-deployment"), lambda: ask(plain, "scope-azure", "gpt-4o")
    )
    assert answer == "Answered."
    assert failures(run) == ["/openai/deployments/gpt-4o-deployment/chat/completions gpt-4o-deployment"]


def test_a_failing_key_gives_way_to_the_backup_key(harness_server, transactional_db) -> None:
    scenario("scope-key", "always", {"key_fingerprint": [keys.fingerprint("sk-primary")]})
    run = str(uuid.uuid4())
    primary = gpt(harness_server.url, run, "sk-primary", max_retries=0)
    backup = gpt(harness_server.url, run, "sk-backup", max_retries=0)
    assert with_fallback(lambda: ask(primary, "scope-key", "m"), lambda: ask(backup, "scope-key", "m")) == "Answered."
