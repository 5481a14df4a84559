"""The shipped examples, the schema's kinds and statuses, and file writers for the scenario loading tests
(tests/test_load_scenarios_*.py)."""

from __future__ import annotations

import json
import typing
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from harnessweb.engine import schemas
from harnessweb.engine.loader import read_scenario_files
from tests.conftest import ROOT

EXAMPLES = ROOT / "scenarios_app" / "examples"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.json"))
# Every value the schema allows, read from the schema itself so a new kind or status must get an example.
RESPONSE_MODELS = typing.get_args(typing.get_args(schemas.Response)[0])
RESPONSE_KINDS = {typing.get_args(model.model_fields["kind"].annotation)[0] for model in RESPONSE_MODELS}
FAILURE_STATUSES = set(typing.get_args(schemas.FailureStatus))


def scenario_data(scenario_id: str, text: str = "Hello.", **fields: Any) -> dict[str, Any]:
    return {"id": scenario_id, "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": text}}], **fields}


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def load(*paths: Path | str, **options: Any) -> str:
    out = StringIO()
    call_command("load_scenarios", *[str(p) for p in paths], stdout=out, **options)
    return out.getvalue()


def load_error(*paths: Path | str) -> str:
    with pytest.raises(CommandError) as caught:
        load(*paths)
    return str(caught.value)


def example_scenarios() -> list[schemas.Scenario]:
    return [scenario for _, scenario in read_scenario_files(EXAMPLE_FILES)]


def all_turns() -> list[schemas.ScenarioTurn]:
    return [turn for scenario in example_scenarios() for turn in scenario.turns]
