"""The calls router: ``POST /api/runs/{id}/calls`` records calls a test made outside the server (the pytest plugin's
in-process mode) as the run's events, in the shape the fake endpoint records its own (request, match, an injected
failure, response), so the run page shows them like any served conversation, their secrets redacted as the
endpoint's are."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router
from ninja.responses import Status
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harnessweb.apikit import ErrorOut, Instant, Str200, Text, invalid, invalid_from, json_body_doc, read_json
from harnessweb.engine.redaction import redact_json
from runs_app.ci.call_events import call_events
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
