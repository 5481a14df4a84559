"""Loading scenario files (load_scenarios): JSON and YAML, folders, and every bad file refused by name and
field with nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harnessweb.engine import schemas
from harnessweb.engine.loader import ScenarioFileError, read_scenario_files
from scenarios_app.models import Scenario
from tests.conftest import ROOT
from tests.load_scenarios_helpers import load, load_error, scenario_data, write_json

# ---------------------------------------------------------------------------------------------------------------
# load_scenarios


@pytest.mark.django_db
def test_it_reports_created_updated_and_unchanged(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", scenario_data("alpha"))
    write_json(tmp_path / "b.json", scenario_data("beta"))
    assert "2 created, 0 updated, 0 unchanged" in load(tmp_path)

    write_json(tmp_path / "b.json", scenario_data("beta", "Changed.", description="Now different"))
    output = load(tmp_path, replace=True)
    assert f"unchanged  alpha  ({tmp_path / 'a.json'})" in output
    assert f"updated    beta  ({tmp_path / 'b.json'})" in output
    assert "0 created, 1 updated, 1 unchanged" in output
    row = Scenario.objects.get(id="beta")
    assert row.description == "Now different"
    assert row.revision == 2
    assert Scenario.objects.get(id="alpha").revision == 1


@pytest.mark.django_db
def test_it_refuses_a_bad_file_naming_file_and_field_and_writes_nothing(tmp_path: Path) -> None:
    write_json(tmp_path / "good.json", scenario_data("good-one"))
    bad = write_json(
        tmp_path / "nested" / "bad.json",
        {"id": "bad-one", "turns": [{"turn": 1, "response": {"kind": "tool-call", "tool_calls": [{"arguments": {}}]}}]},
    )
    message = load_error(tmp_path / "good.json", bad)
    assert f"{bad}: turns.0.response.tool-call.tool_calls.0.tool_name: Field required" in message
    assert not Scenario.objects.exists()
    # The same when the bad file is found inside a folder.
    assert str(bad) in load_error(tmp_path)
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_it_names_an_unknown_field(tmp_path: Path) -> None:
    path = write_json(tmp_path / "typo.json", scenario_data("typo", descripton="misspelt"))
    assert f"{path}: descripton: Extra inputs are not permitted" in load_error(path)


@pytest.mark.django_db
def test_it_rolls_back_every_write_when_one_fails_midway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_json(tmp_path / "1.json", scenario_data("first"))
    write_json(tmp_path / "2.json", scenario_data("second"))
    real_upsert = Scenario.upsert

    def failing_upsert(scenario: schemas.Scenario, **kwargs: Any) -> Any:
        if scenario.id == "second":
            raise RuntimeError("database went away")
        return real_upsert(scenario, **kwargs)

    monkeypatch.setattr(Scenario, "upsert", failing_upsert)
    with pytest.raises(RuntimeError):
        load(tmp_path)
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_it_gives_the_line_of_a_json_syntax_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "id": "broken",\n  "turns": [\n    {"turn": 1,}\n  ]\n}\n', encoding="utf-8")
    message = load_error(path)
    assert message.startswith(f"{path}: line 4, column")
    assert "invalid JSON" in message


@pytest.mark.django_db
def test_it_gives_the_line_of_a_yaml_syntax_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("id: broken\nturns:\n  - turn: 1\n    response: {kind: text, assistant_text: [oops}\n")
    message = load_error(path)
    assert message.startswith(f"{path}: line 4, column")
    assert "invalid YAML" in message


@pytest.mark.django_db
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_it_refuses_duplicate_keys_in_one_object(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"dupe{suffix}"
    if suffix == ".json":
        path.write_text('{"id": "dupe", "description": "one", "description": "two"}', encoding="utf-8")
    else:
        path.write_text("id: dupe\ndescription: one\ndescription: two\n", encoding="utf-8")
    message = load_error(path)
    assert str(path) in message
    assert "duplicate key 'description'" in message
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_it_loads_yaml_files_with_either_suffix(tmp_path: Path) -> None:
    (tmp_path / "weather.yaml").write_text(
        """\
id: yaml-weather
description: Written in YAML
tags: [yaml]
turns:
  - turn: 1
    expected_tools: [get_weather]
    response:
      kind: tool-call
      tool_calls:
        - tool_name: get_weather
          arguments: {city: Oslo}
  - turn: 2
    response:
      kind: text
      assistant_text: |
        Cold and clear in Oslo.
""",
        encoding="utf-8",
    )
    (tmp_path / "short.yml").write_text("id: yml-file\nturns: []\n", encoding="utf-8")
    output = load(tmp_path)
    assert "2 created" in output
    scenario = Scenario.objects.get(id="yaml-weather").to_schema()
    assert scenario.turns[0].response.tool_calls[0].arguments == {"city": "Oslo"}
    assert scenario.turns[1].response.assistant_text == "Cold and clear in Oslo.\n"
    assert Scenario.objects.filter(id="yml-file").exists()


@pytest.mark.django_db
def test_it_keeps_yaml_merge_keys_working(tmp_path: Path) -> None:
    (tmp_path / "merged.yaml").write_text(
        """\
- &base
  id: merge-base
  description: shared
  turns: [{turn: 1, response: {kind: text, assistant_text: base}}]
- <<: *base
  id: merge-child
""",
        encoding="utf-8",
    )
    load(tmp_path)
    assert Scenario.objects.get(id="merge-child").description == "shared"


@pytest.mark.django_db
def test_it_loads_a_list_of_scenarios_from_one_file(tmp_path: Path) -> None:
    path = write_json(tmp_path / "many.json", [scenario_data("one"), scenario_data("two"), scenario_data("three")])
    output = load(path)
    assert "3 scenarios from 1 file: 3 created" in output
    assert sorted(Scenario.objects.values_list("id", flat=True)) == ["one", "three", "two"]
    # Output follows the file's order, not alphabetical order.
    assert output.index("one") < output.index("two") < output.index("three")


@pytest.mark.django_db
def test_it_names_the_list_entry_that_is_wrong(tmp_path: Path) -> None:
    path = write_json(tmp_path / "many.json", [scenario_data("ok"), {"id": "broken", "turns": [{"turn": 1}]}, 7])
    message = load_error(path)
    assert f"{path}: [1] turns.0.response: Field required" in message
    assert f"{path}: [2] expected a scenario object, found int" in message
    assert not Scenario.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("", "the file is empty"),
        ("# only a comment\n", "holds no scenario"),
        ("[]", "the list holds no scenarios"),
        ('"just a string"', "expected a scenario object or a list of them, found str"),
    ],
)
def test_it_refuses_files_without_scenarios(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / ("file.yaml" if content.startswith("#") else "file.json")
    path.write_text(content, encoding="utf-8")
    message = load_error(path)
    assert message.startswith(f"{path}: ")
    assert problem in message


@pytest.mark.django_db
def test_it_refuses_a_duplicate_id_across_files_naming_both(tmp_path: Path) -> None:
    first = write_json(tmp_path / "a" / "first.json", scenario_data("same-id"))
    second = write_json(tmp_path / "b" / "second.yaml", scenario_data("same-id", "Other."))
    message = load_error(tmp_path)
    assert "'same-id'" in message
    assert str(first) in message
    assert str(second) in message
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_it_refuses_a_duplicate_id_inside_one_file(tmp_path: Path) -> None:
    path = write_json(tmp_path / "many.json", [scenario_data("twin"), scenario_data("twin")])
    assert f"'twin' is defined twice in {path}" in load_error(path)


@pytest.mark.django_db
def test_it_reads_a_file_given_twice_only_once(tmp_path: Path) -> None:
    path = write_json(tmp_path / "one.json", scenario_data("only-once"))
    assert "1 scenario from 1 file: 1 created" in load(path, tmp_path, str(path))


@pytest.mark.django_db
def test_it_refuses_a_missing_path_and_writes_nothing(tmp_path: Path) -> None:
    good = write_json(tmp_path / "good.json", scenario_data("good"))
    missing = tmp_path / "nowhere"
    message = load_error(good, missing)
    assert f"{missing}: no such file or directory" in message
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_it_refuses_a_file_with_another_suffix_and_an_empty_folder(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("{}", encoding="utf-8")
    assert f"{other}: not a scenario file" in load_error(other)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert f"{empty}: no scenario files" in load_error(empty)


def test_it_reads_folders_recursively_in_sorted_order_skipping_hidden_files(tmp_path: Path) -> None:
    write_json(tmp_path / "b.json", scenario_data("b-top"))
    write_json(tmp_path / "a" / "z.json", scenario_data("a-z"))
    write_json(tmp_path / "a" / "c.json", scenario_data("a-c"))
    (tmp_path / "a" / "y.yml").write_text("id: a-y\n", encoding="utf-8")
    (tmp_path / "a" / "readme.md").write_text("not a scenario", encoding="utf-8")
    write_json(tmp_path / ".git" / "x.json", {"not": "a scenario"})
    write_json(tmp_path / "a" / ".backup.json", {"not": "a scenario"})
    loaded = read_scenario_files([tmp_path])
    assert [scenario.id for _, scenario in loaded] == ["a-c", "a-y", "a-z", "b-top"]
    assert read_scenario_files([tmp_path]) == loaded


def test_it_reports_a_validator_crash_as_a_file_error(tmp_path: Path) -> None:
    reasoning = [{"text": "t", "providerMetadata": {"anthropic": "not-a-mapping"}}]
    path = write_json(
        tmp_path / "meta.json",
        {
            "id": "meta",
            "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "x", "reasoning": reasoning}}],
        },
    )
    with pytest.raises(ScenarioFileError) as caught:
        read_scenario_files([path])
    assert str(caught.value).startswith(f"{path}: ")


@pytest.mark.django_db
def test_it_writes_nothing_on_a_dry_run(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", scenario_data("dry"))
    output = load(tmp_path, dry_run=True)
    assert "created    dry" in output
    assert "Dry run, nothing written" in output
    assert not Scenario.objects.exists()


def test_it_exits_with_status_1_and_the_message_from_the_command_line(tmp_path: Path) -> None:
    bad = write_json(tmp_path / "bad.json", {"id": "has space"})
    env = {
        **os.environ,
        "SQLITE_PATH": str(tmp_path / "unused.sqlite3"),
        "DJANGO_SETTINGS_MODULE": "harnessweb.settings",
    }
    env.pop("DATABASE_URL", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "load_scenarios", str(bad)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert f"{bad}: id: String should match pattern" in result.stderr
