"""The run-script router: ``PUT /api/runs/{id}/script`` configures what the requests of a named run get before any
scenario (the pytest plugin's ``set_response`` / ``set_error`` / ``use_scenario`` in server mode, or any test in any
language), ``GET`` reads it back with each entry's uses, ``DELETE`` forgets it."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Router
from ninja.responses import Status

from harnessweb.apikit import ErrorOut, invalid, json_body_doc, read_json
from harnessweb.engine.configured import Answers
from runs_app.endpoint import scripts
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
    every request of the run must carry, else its validation failure. Replaces the run's script and its counts."""
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
