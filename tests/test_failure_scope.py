"""A turn's failure scoped to providers (seed 000: attempt counters keyed by scenario, turn and provider): only
requests whose protocol (path family), model and key fingerprint the scope holds fail, each provider counted on
its own, so a client that falls back to another provider sees the first fail and the second succeed. Pure."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from harnessweb.engine import keys, respond, routes, wire
from harnessweb.engine.exchange import ChatRequest
from harnessweb.engine.playback import Catalog, counter_key, decide, in_scope
from harnessweb.engine.schemas import PROTOCOL_PATTERN, FailureScope, Scenario, format_validation_error

FP = keys.fingerprint("sk-scoped-key")


def request(path: str, body: dict[str, Any], **headers: str) -> ChatRequest:
    route = routes.resolve("POST", path, headers)
    assert isinstance(route, routes.Route)
    _, parsed = respond.read_request(route, orjson.dumps(body))
    assert isinstance(parsed, ChatRequest)
    return keys.stamped(parsed, headers)


def openai(model: str = "model-a", **headers: str) -> ChatRequest:
    return request("/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": "scoped"}]},
                   **headers)  # fmt: skip


def anthropic(model: str = "claude-a") -> ChatRequest:
    body = {"model": model, "max_tokens": 20, "messages": [{"role": "user", "content": "scoped"}]}
    return request("/v1/messages", body)


def azure() -> ChatRequest:
    body = {"messages": [{"role": "user", "content": "scoped"}]}
    return request("/openai/deployments/model-a/chat/completions", body)


def scoped(scope: dict[str, Any] | None) -> Scenario:
    turn: dict[str, Any] = {
        "turn": 1,
        "failures_before_success": 2,
        "failure_status": "rate_limit",
        "response": {"kind": "text", "assistant_text": "Recovered."},
    }
    if scope is not None:
        turn["failure_scope"] = scope
    return Scenario.model_validate({"id": "scoped", "turns": [turn]})


def test_no_scope_fails_every_provider() -> None:
    assert all(in_scope(None, r) for r in (openai(), anthropic(), azure()))
    assert in_scope(FailureScope(), openai())


@pytest.mark.parametrize(
    ("scope", "inside", "outside"),
    [
        ({"model": ["model-a"]}, openai("model-a"), openai("model-b")),
        ({"protocol": ["openai"]}, openai(), anthropic()),
        ({"protocol": ["azure"]}, azure(), openai("model-a")),  # the same protocol, told apart by its path
        ({"key_fingerprint": [FP]}, openai(authorization="Bearer sk-scoped-key"), openai(authorization="Bearer no")),
        ({"protocol": ["openai"], "model": ["model-a"]}, openai("model-a"), azure()),
    ],
    ids=["model", "protocol", "azure-path", "key", "every-list-must-hold"],
)
def test_a_scope_holds_only_its_providers(scope: dict[str, Any], inside: ChatRequest, outside: ChatRequest) -> None:
    failure_scope = FailureScope.model_validate(scope)
    assert in_scope(failure_scope, inside)
    assert not in_scope(failure_scope, outside)


def test_a_request_outside_the_scope_is_answered_at_once() -> None:
    catalog = Catalog.build([scoped({"model": ["model-a"]})])
    first = decide(catalog, openai("model-a"))
    assert first.failure is not None and first.failure.status == "rate_limit" and first.failures_before_success == 2
    second = decide(catalog, openai("model-b"))
    assert second.failure is None and second.reply.text == "Recovered."


def test_each_provider_the_scope_tells_apart_counts_on_its_own() -> None:
    by_model = scoped({"model": ["model-a", "model-b"]})
    step = by_model.turns[0]
    a, b = openai("model-a"), openai("model-b")
    assert counter_key("scoped", step.failure_scope, a) != counter_key("scoped", step.failure_scope, b)
    unscoped = scoped(None).turns[0]
    # Without a scope the model does not count, the protocol and the path it came by do.
    assert counter_key("scoped", unscoped.failure_scope, a) == counter_key("scoped", unscoped.failure_scope, b)
    assert counter_key("scoped", None, a) != counter_key("scoped", None, anthropic())
    assert counter_key("scoped", None, a) != counter_key("scoped", None, azure())
    assert counter_key("scoped", None, a) != counter_key("other", None, a)  # and the scenario
    key = counter_key("scoped", step.failure_scope, a)
    assert key.startswith("openai:") and len(key) <= 20  # the counter's column holds 20 characters
    assert len(counter_key("s", None, ChatRequest(protocol="a-very-long-protocol-name", model="m"))) == 20


def test_the_engine_names_the_provider_it_counts_for() -> None:
    catalog = Catalog.build([scoped({"protocol": ["openai"]})])
    decision = decide(catalog, openai())
    assert decision.counter == counter_key("scoped", FailureScope(protocol=["openai"]), openai())


@pytest.mark.parametrize(
    ("scope", "where"),
    [
        ({"protocol": ["OpenAI"]}, "turns.0.failure_scope.protocol"),
        ({"key_fingerprint": ["sk-a-real-key-000"]}, "turns.0.failure_scope.key_fingerprint"),
        ({"model": [""]}, "turns.0.failure_scope.model.0"),
        ({"region": ["eu"]}, "turns.0.failure_scope.region"),
    ],
)
def test_a_bad_scope_is_refused_naming_the_field(scope: dict[str, Any], where: str) -> None:
    with pytest.raises(ValidationError) as caught:
        scoped(scope)
    message = format_validation_error(caught.value)
    assert message.startswith(f"{where}: ")
    assert "sk-a-real-key-000" not in message


def test_the_canonical_form_keeps_only_the_lists_given() -> None:
    turn = scoped({"model": ["model-a"]}).canonical()["turns"][0]
    assert turn["failure_scope"] == {"model": ["model-a"]}
    assert "failure_scope" not in scoped(None).canonical()["turns"][0]


def test_every_protocol_served_can_be_named_in_a_scope() -> None:
    assert all(PROTOCOL_PATTERN.fullmatch(name) for name in wire.BY_NAME)
    assert FailureScope(protocol=sorted(wire.BY_NAME)).protocol == sorted(wire.BY_NAME)
    for module in wire.WIRES:  # each counter key fits the counter's column, whatever the protocol's name
        request = ChatRequest(protocol=module.PROTOCOL, model="m", family=module.PROTOCOL)
        assert len(counter_key("a-scenario", None, request)) <= 20
