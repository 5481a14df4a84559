"""A cassette's bytes read and checked, and a cassette turned into a stored scenario (through ``Scenario.upsert``,
so the scenario's history keeps the import): what the admin's *Convert to scenario* button and
``manage.py import_cassette`` share."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from harnessweb.engine import schemas
from runs_app.ci.cassettes import CassetteFile, parse_cassette_name
from runs_app.ci.recordings import NothingToConvert, scenario_from_cassette
from runs_app.models import Provider
from scenarios_app.models import Scenario


class ConversionError(ValueError):
    """Why a cassette cannot be read or converted, in a sentence for the person who asked."""


def load_cassette(raw: bytes, name: str) -> dict[str, Any]:
    """The cassette's JSON, checked by the format's model; a ConversionError says what is wrong and where."""
    try:
        data = json.loads(raw)
    except UnicodeDecodeError as exc:
        raise ConversionError(f"{name} is not UTF-8: {exc}") from None
    except ValueError as exc:
        raise ConversionError(f"{name} is not JSON: {exc}") from None
    try:
        CassetteFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise ConversionError(f"{name} is not a VCR cassette: {problems}") from None
    return data


def convert(
    raw: bytes, name: str, scenario_id: str | None = None, *, user: Any = None
) -> tuple[Scenario, str, schemas.Scenario]:
    """Store the cassette as a scenario (id ``scenario_id``, else from its name); returns the row, "created",
    "updated" or "unchanged", and the scenario. Raises ConversionError, writing nothing."""
    data = load_cassette(raw, name)
    try:
        parsed = parse_cassette_name(name, Provider.objects.values_list("name", flat=True))
        scenario = scenario_from_cassette(data, name, scenario_id or None, provider=parsed[0] if parsed else "")
    except NothingToConvert as exc:
        raise ConversionError(f"Nothing to convert: {exc}") from None
    except ValidationError as exc:
        problems = schemas.format_validation_error(exc)
        raise ConversionError(f"The scenario made from {name} is not valid: {problems}") from None
    row, outcome = Scenario.upsert(scenario, user=user, note=f"imported from the cassette {name}")
    return row, outcome, scenario
