"""The editor's preview: the request that plays a turn of a scenario and meets its expectations, and exactly
what the endpoint answers it (the engine and the protocol's encoder, pacing off), failures first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings

from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario as ScenarioSchema
from harnessweb.engine.wire import BY_NAME
from harnessweb.text import pretty_json
from scenarios_app.models import Scenario

# The protocols whose requests carry a whole conversation, so any turn can be previewed.
PREVIEW_PROTOCOLS = {name: BY_NAME[name].LABEL for name in ("openai", "anthropic")}

PREVIEW_MODEL = "scenario-harness"


def try_body(scenario: ScenarioSchema, turn: int, protocol: str) -> dict[str, Any]:
    """The streamed request that plays ``turn`` of the scenario and meets its expectations.

    The first user message is the scenario id, turn-1 assistant messages precede it, the system prompt holds every
    required fragment (the scenario's and the turn's), the tools are the expected ones, and temperature, top_p and
    reasoning are as expected. For the turn's ``expect`` block, the last message holds the text it must contain and
    earlier user messages make up the context it asks for (a pattern it must match is left to the author).
    """
    step = scenario.turn(turn)
    expect = step.expect if step else None
    system = "\n".join([*scenario.system_prompt_must_include, *(expect.system_prompt_must_include if expect else [])])
    tools = list(step.expected_tools) if step else []
    body: dict[str, Any] = {"model": PREVIEW_MODEL, "stream": True}
    messages_: list[dict[str, Any]] = [{"role": "user", "content": scenario.id}]
    for earlier in range(1, turn):
        messages_.append({"role": "assistant", "content": f"(the answer of turn {earlier})"})
        messages_.append({"role": "user", "content": "Continue."})
    if expect is not None and expect.last_message_contains:
        messages_[-1]["content"] += f"\n{expect.last_message_contains}"
    if expect is not None and expect.min_earlier_messages:
        missing = expect.min_earlier_messages - (len(messages_) - 1)
        messages_[:0] = [{"role": "user", "content": f"(earlier message {n})"} for n in range(1, missing + 1)]
    if protocol == "anthropic":
        body["max_tokens"] = 1024
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [{"name": t, "input_schema": {"type": "object", "properties": {}}} for t in tools]
        if step and step.expected_reasoning == "enabled":
            body["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    else:
        if system:
            messages_.insert(0, {"role": "system", "content": system})
        if tools:
            body["tools"] = [
                {"type": "function", "function": {"name": t, "parameters": {"type": "object", "properties": {}}}}
                for t in tools
            ]
        if step and step.expected_reasoning == "enabled":
            body["reasoning_effort"] = "medium"
    body["messages"] = messages_
    if step and step.expected_temperature is not None:
        body["temperature"] = step.expected_temperature
    if step and step.expected_top_p is not None:
        body["top_p"] = step.expected_top_p
    return body


@dataclass(frozen=True)
class Preview:
    """What the endpoint sends for one turn: the SSE text, plus the simulated failure that comes first, if any."""

    protocol: str
    turn: int
    path: str
    body: dict[str, Any]
    sse: str
    problem: str = ""
    failure_count: int = 0
    failure_status: str = ""
    failure_http: str = ""
    failure_text: str = ""


def build_preview(scenario: ScenarioSchema, turn: int, protocol: str) -> Preview:
    """Run the engine and the protocol's encoder on the request :func:`try_body` builds, pacing off: the bytes are
    those the endpoint would stream (pacing only spaces them out in time)."""
    wire = BY_NAME[protocol]
    body = try_body(scenario, turn, protocol)
    request = wire.parse_request(body)
    decision = decide(
        Catalog.build([scenario]),
        request,
        header_scenario=scenario.id,
        pacing_enabled=False,
        signature_key=settings.HARNESS_SIGNATURE_KEY,
        default_usage=settings.HARNESS_DEFAULT_USAGE,
    )
    encoded = wire.encode_reply(decision.reply, request)
    preview = Preview(
        protocol=protocol,
        turn=turn,
        path=wire.PATH,
        body=body,
        sse=encoded.body.decode("utf-8"),
        problem=decision.problem,
    )
    failure = decision.failure
    if failure is None:
        return preview
    if failure.status in ("network_error", "invalid_response"):
        text = (
            "The connection is cut partway through the stream."
            if failure.status == "network_error"
            else wire.malformed(True).body.decode("utf-8")
        )
        http = "" if failure.status == "network_error" else "200"
    else:
        failed = wire.encode_failure(failure)
        headers = "".join(f"\n{k.decode()}: {v.decode()}" for k, v in failed.headers)
        http = f"{failed.status}{headers}"
        text = failed.body.decode("utf-8")
    return replace(
        preview,
        failure_count=decision.failures_before_success,
        failure_status=failure.status,
        failure_http=http,
        failure_text=text,
    )


def preview_context(scenario: ScenarioSchema, row: Scenario | None, turn: int, protocol: str) -> dict[str, Any]:
    """The preview partial's context; "Try it" is offered once the scenario is stored (the endpoint serves it)."""
    shown = build_preview(scenario, turn, protocol)
    return {
        "preview": shown,
        "protocol_label": BY_NAME[protocol].LABEL,
        "body_json": pretty_json(shown.body),
        "saved": row is not None,
        "unsaved": row is not None and row.data != scenario.canonical(),
        "scenario_id": scenario.id,
    }
