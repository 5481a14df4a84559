"""Loading scenario files again never undoes what somebody saved: a stored scenario that differs from its file is
kept and said so (``make run`` re-loading the examples), ``--replace`` and ``restore_examples`` write the file's as a
new version, the history keeping the rest."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from harnessweb.engine import schemas
from harnessweb.engine.loader import read_scenario_files
from scenarios_app.models import Scenario, ScenarioVersion
from tests.conftest import ROOT, make_user

EXAMPLES = ROOT / "scenarios_app" / "examples"
WEATHER = EXAMPLES / "weather-tool-call.json"


def run(command: str, *args: Any, **options: Any) -> str:
    out = StringIO()
    call_command(command, *[str(a) for a in args], stdout=out, **options)
    return out.getvalue()


def shipped(path: Path) -> dict[str, Any]:
    return read_scenario_files([path])[0][1].canonical()


def edit_in_the_dashboard(scenario_id: str, text: str) -> dict[str, Any]:
    """Save a changed scenario as the editor does (Scenario.upsert by a user); returns the saved data."""
    data = Scenario.objects.get(id=scenario_id).data
    data["turns"][-1]["response"]["assistant_text"] = text
    Scenario.upsert(schemas.Scenario.model_validate(data), user=make_user("editor"), note="my wording")
    return Scenario.objects.get(id=scenario_id).data


def versions(scenario_id: str) -> list[tuple[int, str]]:
    return list(
        ScenarioVersion.objects.filter(scenario_id=scenario_id).order_by("number").values_list("number", "note")
    )


@pytest.mark.django_db
def test_it_keeps_an_example_edited_in_the_dashboard_when_make_run_loads_the_examples_again() -> None:
    run("load_scenarios", "scenarios_app/examples")  # the Makefile's line, relative to the checkout
    edited = edit_in_the_dashboard("weather-tool-call", "My own final answer.")
    assert edited != shipped(WEATHER)

    output = run("load_scenarios", "scenarios_app/examples")

    assert Scenario.objects.get(id="weather-tool-call").data == edited
    assert [number for number, _ in versions("weather-tool-call")] == [1, 2]
    line = next(line for line in output.splitlines() if "weather-tool-call" in line)
    assert line.startswith("kept       weather-tool-call  (scenarios_app/examples/weather-tool-call.json): ")
    assert "v2, saved " in line and "by editor" in line
    assert line.endswith("take the file's with: manage.py restore_examples weather-tool-call")
    assert "updated    " not in output
    assert ", 1 kept as stored (they differ from their files)" in output
    # The others are as shipped and stay so.
    assert f"0 created, 0 updated, {len(list(EXAMPLES.glob('*.json'))) - 1} unchanged" in output


@pytest.mark.django_db
def test_it_keeps_a_scenario_created_in_the_dashboard_under_an_example_s_id() -> None:
    mine = {"id": "extract-contact", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Mine."}}]}
    Scenario.upsert(schemas.Scenario.model_validate(mine), user=make_user("author"))
    output = run("load_scenarios", EXAMPLES)
    assert "kept       extract-contact" in output
    assert Scenario.objects.get(id="extract-contact").to_schema().turns[0].response.assistant_text == "Mine."


@pytest.mark.django_db
def test_it_restores_an_edited_example_as_a_new_version_keeping_the_edit_in_the_history() -> None:
    run("load_scenarios", EXAMPLES)
    edited = edit_in_the_dashboard("weather-tool-call", "My own final answer.")

    output = run("restore_examples", "weather-tool-call")

    assert "restored   weather-tool-call (now v3; the earlier versions are in its history)" in output
    assert "Restored 1 of 1 example(s)" in output
    assert Scenario.objects.get(id="weather-tool-call").data == shipped(WEATHER)
    history = ScenarioVersion.objects.filter(scenario_id="weather-tool-call").order_by("number")
    assert [v.data for v in history] == [shipped(WEATHER), edited, shipped(WEATHER)]
    assert history.last().note == f"restored the example {WEATHER}"
    # Loading the examples again finds it as shipped.
    assert "unchanged  weather-tool-call" in run("load_scenarios", EXAMPLES)
    assert "unchanged  weather-tool-call" in run("restore_examples", "weather-tool-call")


@pytest.mark.django_db
def test_it_restores_every_example_with_all_creating_the_missing_ones() -> None:
    run("load_scenarios", EXAMPLES)
    edit_in_the_dashboard("weather-tool-call", "Edited.")
    Scenario.objects.filter(id="extract-contact").delete()
    output = run("restore_examples", all=True)
    assert "restored   weather-tool-call" in output and "created    extract-contact" in output
    for path in EXAMPLES.glob("*.json"):
        scenario = shipped(path)
        assert Scenario.objects.get(id=scenario["id"]).data == scenario


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "options", "problem"),
    [
        ((), {}, "Name the examples to restore, or --all (not both). Examples: "),
        (("weather-tool-call",), {"all": True}, "Name the examples to restore, or --all (not both)"),
        (("no-such-example",), {}, "No example named no-such-example. Examples: "),
    ],
)
def test_it_refuses_to_restore_without_a_clear_choice_and_writes_nothing(
    args: tuple[str, ...], options: dict[str, Any], problem: str
) -> None:
    with pytest.raises(CommandError) as caught:
        run("restore_examples", *args, **options)
    assert problem in str(caught.value)
    assert "weather-tool-call" in str(caught.value)  # the ids it knows
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_it_keeps_a_user_file_s_scenario_edited_since_it_was_loaded_unless_replace(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    first = {"id": "mine", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "One."}}]}
    path.write_text(json.dumps(first), encoding="utf-8")
    assert "created    mine" in run("load_scenarios", path)
    edited = edit_in_the_dashboard("mine", "Edited in the dashboard.")
    first["turns"][0]["response"]["assistant_text"] = "Two."
    path.write_text(json.dumps(first), encoding="utf-8")

    kept = run("load_scenarios", path)
    assert f"take the file's with: manage.py load_scenarios --replace {path}" in kept
    assert Scenario.objects.get(id="mine").data == edited
    dry = run("load_scenarios", path, replace=True, dry_run=True)
    assert "updated    mine" in dry and Scenario.objects.get(id="mine").data == edited

    replaced = run("load_scenarios", path, replace=True)
    assert "updated    mine" in replaced and "0 created, 1 updated, 0 unchanged" in replaced
    assert Scenario.objects.get(id="mine").to_schema().turns[0].response.assistant_text == "Two."
    assert versions("mine") == [(1, f"loaded from {path}"), (2, "my wording"), (3, f"loaded from {path}")]
