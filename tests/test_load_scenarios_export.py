"""Exporting stored scenarios (export_scenarios, dump_scenario) as canonical files that load back unchanged."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from harnessweb.engine import schemas
from harnessweb.engine.loader import dump_scenario
from scenarios_app.models import Scenario
from tests.load_scenarios_helpers import EXAMPLES, load, write_json

# ---------------------------------------------------------------------------------------------------------------
# export_scenarios and dump_scenario


@pytest.mark.django_db
def test_it_round_trips_export_then_load_unchanged(tmp_path: Path) -> None:
    load(EXAMPLES)
    revisions = dict(Scenario.objects.values_list("id", "revision"))
    out = StringIO()
    call_command("export_scenarios", str(tmp_path / "exported" / "deeper"), stdout=out)
    exported = sorted((tmp_path / "exported" / "deeper").glob("*.json"))
    assert f"Exported {len(revisions)} scenarios" in out.getvalue()
    assert [p.stem for p in exported] == sorted(revisions)

    output = load(tmp_path / "exported")
    assert f"0 created, 0 updated, {len(revisions)} unchanged" in output
    assert all(line.startswith("unchanged") for line in output.splitlines()[:-1])
    assert dict(Scenario.objects.values_list("id", "revision")) == revisions


@pytest.mark.django_db
def test_it_exports_a_camelcase_seed_file_as_canonical_snake_case(tmp_path: Path) -> None:
    seed = {
        "id": "seed-style",
        "description": "From the TypeScript harness",
        "systemPromptMustInclude": ["You are a test agent"],
        "turns": [
            {
                "turn": 1,
                "expectedTools": ["search"],
                "failuresBeforeSuccess": 1,
                "failureThrows": True,
                "response": {
                    "kind": "tool-call",
                    "assistantText": "Searching.",
                    "toolCalls": [{"toolName": "search", "arguments": {"q": "harness"}}],
                    "tokenUsage": {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10},
                    "finishReason": "tool-calls",
                },
            },
            {
                "turn": 2,
                "response": {
                    "kind": "final-report",
                    "reportContent": "# Done",
                    "reportFormat": "markdown",
                    "reasoning": [{"text": "wrap up", "providerMetadata": {"anthropic": {"signature": "sig"}}}],
                },
            },
        ],
    }
    load(write_json(tmp_path / "in" / "seed.json", seed))
    call_command("export_scenarios", str(tmp_path / "out"), stdout=StringIO())
    text = (tmp_path / "out" / "seed-style.json").read_text(encoding="utf-8")
    exported = json.loads(text)
    assert exported["system_prompt_must_include"] == ["You are a test agent"]
    first, second = exported["turns"]
    assert first["failure_throws"] is True
    assert first["usage"] == {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
    assert first["finish_reason"] == "tool-calls"
    assert first["response"]["tool_calls"] == [{"tool_name": "search", "arguments": {"q": "harness"}}]
    assert second["response"]["reasoning"] == [{"text": "wrap up", "signature": "sig"}]
    for camel in ("systemPromptMustInclude", "toolCalls", "assistantText", "tokenUsage", "failureThrows"):
        assert camel not in text
    assert "unchanged  seed-style" in load(tmp_path / "out")


def test_it_dumps_pretty_canonical_json_in_model_order() -> None:
    scenario = schemas.Scenario.model_validate(
        {"turns": [{"turn": 1, "response": {"kind": "text", "assistantText": "Ça va ?"}}], "id": "dump", "tags": ["t"]}
    )
    text = dump_scenario(scenario)
    assert text.endswith("}\n")
    assert text.startswith('{\n  "id": "dump",\n  "description": "",\n  "tags": [\n    "t"\n  ],')
    assert "Ça va ?" in text
    assert list(json.loads(text)) == [k for k in schemas.Scenario.model_fields if k in scenario.canonical()]
    assert dump_scenario(schemas.Scenario.model_validate_json(text)) == text


@pytest.mark.django_db
def test_it_exports_nothing_but_an_empty_folder_when_no_scenarios_are_stored(tmp_path: Path) -> None:
    out = StringIO()
    call_command("export_scenarios", str(tmp_path / "none"), stdout=out)
    assert "Exported 0 scenarios" in out.getvalue()
    assert list((tmp_path / "none").iterdir()) == []


def test_it_refuses_to_export_into_a_file(tmp_path: Path) -> None:
    target = tmp_path / "file.json"
    target.write_text("{}", encoding="utf-8")
    with pytest.raises(CommandError, match="is not a directory"):
        call_command("export_scenarios", str(target), stdout=StringIO())
