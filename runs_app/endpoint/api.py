"""The run-script router: ``PUT /api/runs/{id}/script`` configures what the requests of a named run get before any
scenario (the pytest plugin's ``set_response`` / ``set_error`` / ``use_scenario`` in server mode, or any test in any
language), ``GET`` reads it back with each entry's uses, ``DELETE`` forgets it. ``PUT /api/current-run`` names the
session run of a server a pytest session owns (``current.py``)."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Router
from ninja.errors import HttpError
from ninja.responses import Status

from harnessweb.apikit import ErrorOut, invalid, json_body_doc, read_json
from harnessweb.engine.configured import Answers
from runs_app.endpoint import current, scripts
from runs_app.models import RunScript

router = Router()
ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}
SCRIPT_EXAMPLE = {
    "scenario": "",
    "answers": [{"model": None, "text": "Hello"}, {"model": "gpt-4o", "json": {"found": True}}],
    "errors": [{"model": None, "kind": "rate_limit", "times": 1}],
}


def _out(row: RunScript) -> dict[str, Any]:
    return {"run_id": str(row.run_id), "scenario": row.scenario, **row.script}


@router.put(
    "/runs/{run_id}/script",
    response={200: dict[str, Any], **ERRORS},
    summary="Configure what a named run's requests get",
    openapi_extra=json_body_doc(SCRIPT_EXAMPLE),
)
def put_script(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """Answers (``text``, ``json`` or ``tool_calls``, optional ``model`` and ``reasoning``) come in order per model
    and the last one stays; errors (a failure ``kind``, ``times``: a number or "always") come first while they
    last; ``scenario`` names a scenario to play otherwise; ``expect_key`` (``{"fingerprint", "place"?}``) is the key
    every request of the run must carry, else its validation failure; ``chaos`` (``{"seed", "rate_limit",
    "server_error", "network_error", "malformed"}``, rates 0..1 adding up to at most 1) fails requests at random, the
    same ones for the same seed (``harnessweb.engine.chaos``). Replaces the run's script and its counts."""
    body = read_json(request)
    if not isinstance(body, dict):
        raise invalid(("body",), "must be an object with 'answers', 'errors' and 'scenario'")
    try:
        answers = Answers.from_data(body)
    except ValueError as exc:
        where, _, message = str(exc).partition(": ")
        raise invalid(("body", *where.split(".")), message) from None
    scenario = body.get("scenario") or ""
    if not isinstance(scenario, str) or len(scenario) > 100:
        raise invalid(("body", "scenario"), "must be a scenario id (a string of at most 100 characters)")
    return _out(scripts.store(run_id, answers, scenario))


@router.get("/runs/{run_id}/script", response={200: dict[str, Any], **ERRORS}, summary="A named run's script")
def get_script(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """The script with each entry's ``used`` count (a test's strict mode reads the unused ones)."""
    return _out(get_object_or_404(RunScript, run_id=run_id))


@router.delete("/runs/{run_id}/script", response={204: None, **ERRORS}, summary="Forget a named run's script")
def delete_script(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse | Status:
    get_object_or_404(RunScript, run_id=run_id).delete()
    return Status(204, None)


@router.put(
    "/current-run",
    response={200: dict[str, Any], **ERRORS, 409: ErrorOut},
    summary="Name the run that requests naming none belong to (a pytest session's own server)",
    openapi_extra=json_body_doc({"run_id": "5f0c6a1e-3b59-4d5e-9a63-0c2f4f1b7d10"}),
)
def put_current_run(request: HttpRequest) -> Any:
    """``run_id``: the run of the test running now (a UUID), or null when none is. Only a server started with
    ``HARNESS_SESSION_SERVER`` (the plugin's own) takes it; a shared server answers 409."""
    if not current.offered():
        message = (
            "This server is not a pytest session's own (HARNESS_SESSION_SERVER is off): each request names its run "
            "(X-Harness-Run, or an API key harness-run-<id>, as harness.env() gives)"
        )
        raise HttpError(409, message)
    body = read_json(request)
    if not isinstance(body, dict):
        raise invalid(("body",), 'must be an object: {"run_id": "<uuid>"} or {"run_id": null}')
    if "run_id" not in body:
        raise invalid(("body", "run_id"), "required: the run's id (a UUID), or null")
    raw = body["run_id"]
    try:
        run_id = None if raw is None else uuid.UUID(raw if isinstance(raw, str) else "-")
    except ValueError:
        raise invalid(("body", "run_id"), f"must be a UUID or null, not {str(raw)[:80]!r}") from None
    current.set_current(run_id)
    return {"run_id": str(run_id) if run_id else None}
