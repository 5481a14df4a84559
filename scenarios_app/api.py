"""The scenarios_app REST router: list, read, upsert, delete and validate scenarios.

PUT is an idempotent upsert so that CI can sync a folder of scenario files on every build: an unchanged scenario
writes nothing and keeps its revision. Bodies are validated by the same pydantic model as the loader and the admin.
"""

import datetime as dt
from typing import Any, Literal

from django.db import transaction
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Path, Router, Schema
from ninja.pagination import paginate
from ninja.responses import Status
from pydantic import ValidationError as PydanticValidationError

from harnessweb.apikit import (
    SCOPE_MARK,
    ErrorOut,
    Page,
    ReadBearerToken,
    inline_schema,
    invalid,
    invalid_from,
    json_body_doc,
    read_json,
    unstorable_path,
)
from harnessweb.engine import schemas
from scenarios_app.models import Scenario

router = Router()

ScenarioId = Path(..., pattern=schemas.SLUG_PATTERN, description="The scenario's id (a slug)")
# The canonical (snake_case) form; the id may be left out of the body: the path gives it.
SCENARIO_BODY = json_body_doc(inline_schema(schemas.Scenario, by_alias=False, optional=["id"]))
Outcome = Literal["created", "updated", "unchanged"]


class ScenarioSummaryOut(Schema):
    id: str
    description: str
    tags: list[str]
    turns: int
    revision: int
    updated_at: dt.datetime

    @staticmethod
    def resolve_tags(obj: Scenario) -> list[str]:
        return obj.data.get("tags", [])

    @staticmethod
    def resolve_turns(obj: Scenario) -> int:
        return len(obj.data.get("turns", []))


class UpsertOut(Schema):
    id: str
    outcome: Outcome
    revision: int
    scenario: dict[str, Any]


class ValidateOut(Schema):
    ok: bool
    id: str
    # What a PUT of this body would do now.
    outcome: Outcome
    scenario: dict[str, Any]


def validated_scenario(request: HttpRequest, scenario_id: str) -> schemas.Scenario:
    """The body as a scenario, its id filled from the path when missing; 422 naming the field path otherwise."""
    data = read_json(request)
    if not isinstance(data, dict):
        raise invalid(("body",), "A scenario is a JSON object.", "dict_type")
    body_id = data.get("id")
    if body_id is None:
        data = {**data, "id": scenario_id}
    elif body_id != scenario_id:
        raise invalid(("body", "id"), f"{body_id!r} does not match the id in the path, {scenario_id!r}.")
    try:
        scenario = schemas.Scenario.model_validate(data)
    except PydanticValidationError as exc:
        raise invalid_from(exc, "body") from exc
    canonical = scenario.canonical()
    found = unstorable_path(canonical)
    if found:
        path, reason = found
        raise invalid(("body", *path), reason)
    return scenario


@router.get("", response=list[ScenarioSummaryOut], summary="List scenarios")
@paginate(Page)
def list_scenarios(request: HttpRequest) -> Any:
    return Scenario.objects.order_by("id")


@router.get("/{scenario_id}", response={200: dict[str, Any], 404: ErrorOut, 422: ErrorOut}, summary="A scenario")
def get_scenario(request: HttpRequest, scenario_id: str = ScenarioId) -> Any:
    """The scenario's canonical JSON, as a PUT takes it back."""
    return get_object_or_404(Scenario, id=scenario_id).data


@router.put(
    "/{scenario_id}",
    response={200: UpsertOut, 201: UpsertOut, 404: ErrorOut, 413: ErrorOut, 422: ErrorOut},
    summary="Create or update a scenario (idempotent)",
    openapi_extra=SCENARIO_BODY,
)
def put_scenario(request: HttpRequest, scenario_id: str = ScenarioId) -> Any:
    """201 when created; 200 when updated or unchanged (an unchanged scenario is not written: no new revision)."""
    scenario = validated_scenario(request, scenario_id)
    row, outcome = Scenario.upsert(scenario)
    body = {"id": row.id, "outcome": outcome, "revision": row.revision, "scenario": row.data}
    return Status(201 if outcome == "created" else 200, body)


@router.delete("/{scenario_id}", response={204: None, 404: ErrorOut, 422: ErrorOut}, summary="Delete a scenario")
def delete_scenario(request: HttpRequest, scenario_id: str = ScenarioId) -> Any:
    with transaction.atomic():
        get_object_or_404(Scenario.objects.select_for_update(), id=scenario_id).delete()
    return Status(204, None)


@router.post(
    "/{scenario_id}/validate",
    response={200: ValidateOut, 413: ErrorOut, 422: ErrorOut},
    summary="Validate a scenario without storing it",
    auth=ReadBearerToken(),
    # It writes nothing, so a read token may use it; the auth test reads this mark.
    openapi_extra={**SCENARIO_BODY, SCOPE_MARK: "read"},
)
def validate_scenario(request: HttpRequest, scenario_id: str = ScenarioId) -> Any:
    """200 with the canonical form and what a PUT would do; 422 with the errors by field path."""
    scenario = validated_scenario(request, scenario_id)
    canonical = scenario.canonical()
    stored = Scenario.objects.filter(id=scenario.id).values_list("data", flat=True).first()
    outcome = "created" if stored is None else ("unchanged" if stored == canonical else "updated")
    return {"ok": True, "id": scenario.id, "outcome": outcome, "scenario": canonical}
