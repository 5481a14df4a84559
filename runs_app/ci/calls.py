"""The calls router: ``POST /api/runs/{id}/calls`` records calls a test made outside the server (the pytest plugin's
in-process mode) as the run's events, in the shape the fake endpoint records its own (request, match, an injected
failure, response), so the run page shows them like any served conversation, their secrets redacted as the
endpoint's are; ``GET /api/runs/{id}/calls`` answers a run's calls read from its events by the core
(``harnessweb.engine.calls``), with the fields of the plugin's ``Call``: what the plugin's server mode and the npm
package read as a test's call history. One router owns the path, as ninja serves one path from one router."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Max
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router
from ninja.responses import Status
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harnessweb.apikit import ErrorOut, Instant, Str200, Text, invalid, invalid_from, json_body_doc, read_json
from harnessweb.engine.call_events import call_events
from harnessweb.engine.calls import calls_from_events
from harnessweb.engine.redaction import redact_json
from runs_app.models import Run, RunEvent

router = Router()
ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}
MAX_CALLS = 1000


class CallIn(BaseModel):
    """One call as the plugin's history holds it (``harnessweb.testing.calls.Call``)."""

    model_config = ConfigDict(extra="forbid")

    protocol: Str200
    model: Str200 = ""
    path: Str200
    body: dict[str, Any] = Field(default_factory=dict)
    turn: int | None = Field(None, ge=1, le=10_000)
    answered_by: Str200 = ""
    response: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    timestamp: Instant
    duration_ms: float | None = Field(None, ge=0)
    notes: Text = ""


class CallsIn(BaseModel):
    calls: list[CallIn] = Field(max_length=MAX_CALLS)


@router.post(
    "/runs/{run_id}/calls",
    response={201: dict[str, int], **ERRORS},
    summary="Record a test's calls as the run's events",
    openapi_extra=json_body_doc(CallsIn.model_json_schema()),
)
def upload_calls(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """Appends each call's events after the run's own, in order; all or nothing (a 422 names the call and field)."""
    run = get_object_or_404(Run, id=run_id)
    body = read_json(request)
    if not isinstance(body, dict):
        raise invalid(("body",), "must be an object with a 'calls' list")
    try:
        calls = CallsIn.model_validate(body).calls
    except ValidationError as exc:
        raise invalid_from(exc, "body") from None
    with transaction.atomic():
        Run.objects.select_for_update().filter(id=run.id).first()  # one writer of this run's sequence at a time
        seq = (run.events.aggregate(m=Max("seq"))["m"] or 0) + 1
        rows = []
        for call in calls:
            for kind, data in call_events(call.model_dump()):
                rows.append(
                    RunEvent(
                        run=run, seq=seq, timestamp=call.timestamp, kind=kind, turn=call.turn, data=redact_json(data)
                    )
                )
                seq += 1
        RunEvent.objects.bulk_create(rows)
        if calls and run.protocol == "":
            Run.objects.filter(id=run.id).update(protocol=calls[0].protocol[:20])
    return Status(201, {"calls": len(calls), "events": len(rows)})


# -- reading a run's calls -------------------------------------------------------------------------------------------

EXAMPLE_CALL: dict[str, Any] = {
    "protocol": "openai",
    "model": "gpt-4o",
    "path": "/v1/chat/completions",
    "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
    "system": "You are terse.",
    "prompt": "What is the weather in Paris?",
    "prompt_length": 29,
    "tools": ["get_weather"],
    "schema": None,
    "temperature": 0.2,
    "top_p": None,
    "max_tokens": 50,
    "params": {"seed": 7},
    "stream": False,
    "timestamp": "2026-11-27T16:30:00.123Z",
    "response": {"text": "Sunny.", "finish_reason": "stop", "usage": {"input_tokens": 12, "output_tokens": 2}},
    "error": None,
    "duration_ms": 3.5,
    "answered_by": "configured",
    "key": {"place": "authorization", "fingerprint": "c1a4e2f09b7d"},
    "problem": "",
    "body": {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "What is the weather in Paris?"},
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        "temperature": 0.2,
        "max_tokens": 50,
        "seed": 7,
    },
}


class CallOut(BaseModel):
    """One call of a run, as the pytest plugin's ``Call`` holds it (``harnessweb.engine.calls.Call.as_record``)."""

    model_config = ConfigDict(populate_by_name=True)

    protocol: str = Field(description="The protocol the request spoke: openai, anthropic, responses, gemini, ...")
    model: str
    path: str = Field(description="The path it reached, secrets in its query redacted")
    messages: list[dict[str, str]] = Field(description="The conversation sent, each as {role, content} text")
    system: str = Field(description="The system prompt (every system or developer message, joined)")
    prompt: str = Field(description="The last user message's text")
    prompt_length: int
    tools: list[str] = Field(description="The names of the tools offered")
    json_schema: dict[str, Any] | None = Field(alias="schema", description="The structured output asked for")
    temperature: float | None
    top_p: float | None
    max_tokens: int | None
    params: dict[str, Any] = Field(description="Every other parameter of the body")
    stream: bool
    timestamp: str = Field(description="When the request arrived (ISO 8601)")
    response: dict[str, Any] | None = Field(
        description="What it got: text, reasoning, tool_calls, finish_reason, usage, chunks"
    )
    error: dict[str, Any] | None = Field(description="The failure it got: {status, kind, message}")
    duration_ms: float | None
    answered_by: str = Field(description="configured, scenario, instruction, lorem, default or cassette")
    key: dict[str, Any] | None = Field(description="Where its API key came and its fingerprint, never the key")
    problem: str = Field(description="The validation failure it got, empty for none")
    body: dict[str, Any] = Field(description="The request body as sent, its secrets redacted")


class RunCallsOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"run_id": "0b9e5c1e-6f3a-4c2d-9a57-3d2f8e4b7a10", "calls": [EXAMPLE_CALL]}]}
    )

    run_id: uuid.UUID
    calls: list[CallOut]


def _instant(value: Any) -> str:
    return DjangoJSONEncoder().default(value)  # as GET /api/runs/{id} writes the same event's timestamp


@router.get(
    "/runs/{run_id}/calls",
    response={200: RunCallsOut, 401: ErrorOut, 404: ErrorOut},
    by_alias=True,
    summary="A run's calls, as the pytest plugin's history has them",
)
def run_calls(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """One call per conversation request the run recorded (served by the fake endpoint or uploaded), in order, with
    the fields of the pytest plugin's ``Call`` in snake_case: the request as sent (protocol, model, path, messages,
    system, prompt, prompt_length, tools, schema, temperature, top_p, max_tokens, the other params, stream, the
    redacted body), when it came (timestamp), what it got (response or error, duration_ms), how it was answered
    (answered_by), its key's place and fingerprint (key) and the validation failure it got (problem). Requests that
    are no conversation (embeddings, token counts) are left out. Any token reads it."""
    rows = RunEvent.objects.filter(run_id=run_id).order_by("seq").values_list("kind", "data", "timestamp")
    events = [{"kind": kind, "data": data, "timestamp": _instant(at)} for kind, data, at in rows]
    if not events and not Run.objects.filter(id=run_id).exists():
        return Status(404, {"detail": f"No run {run_id}"})
    calls = [call.as_record() for call in calls_from_events(events)]
    return {"run_id": run_id, "calls": calls}
