"""Loading scenario files (load_scenarios), exporting them (export_scenarios), and the shipped examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from harnessweb.engine import schemas
from harnessweb.engine.exchange import ChatRequest, Message
from harnessweb.engine.loader import ScenarioFileError, dump_scenario, read_scenario_files
from harnessweb.engine.playback import Catalog, decide
from scenarios_app.models import Scenario
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


# ---------------------------------------------------------------------------------------------------------------
# The examples


def test_it_finds_the_response_kinds_and_failure_statuses_in_the_schema() -> None:
    # Guards the introspection above: an empty set would make the coverage tests pass vacuously.
    assert len(RESPONSE_KINDS) == len(RESPONSE_MODELS)
    assert {"text", "tool-call", "final-report"} <= RESPONSE_KINDS
    assert {"timeout", "invalid_response", "network_error", "rate_limit", "model_error"} <= FAILURE_STATUSES


def test_it_ships_at_least_six_examples_each_one_scenario_in_a_file_named_after_its_id() -> None:
    assert len(EXAMPLE_FILES) >= 6
    for path in EXAMPLE_FILES:
        loaded = read_scenario_files([path])
        assert len(loaded) == 1, path
        scenario = loaded[0][1]
        assert path.stem == scenario.id
        assert len(scenario.description) > 40, f"{path}: describe what the scenario demonstrates"
        assert scenario.tags, f"{path}: give it tags"
        assert scenario.turns, path


def test_it_covers_every_response_kind_in_the_examples() -> None:
    assert {turn.response.kind for turn in all_turns()} == RESPONSE_KINDS


def test_it_covers_every_failure_status_in_the_examples() -> None:
    # A status only matters on a turn that actually fails first.
    assert {turn.failure_status for turn in all_turns() if turn.failures_before_success} == FAILURE_STATUSES


def test_it_keeps_example_timeouts_and_rate_limits_short() -> None:
    for turn in all_turns():
        if turn.failures_before_success and turn.failure_status in ("timeout", "rate_limit"):
            assert turn.failure_retry_after_ms is not None
            assert turn.failure_retry_after_ms <= 500


def test_it_shows_every_authoring_feature_in_the_examples() -> None:
    scenarios = example_scenarios()
    turns = all_turns()
    assert any(turn.response.reasoning for turn in turns)
    assert any(seg.signature for turn in turns for seg in turn.response.reasoning)
    assert any(turn.expected_tools for turn in turns)
    assert any(turn.expected_temperature is not None for turn in turns)
    assert any(s.system_prompt_must_include for s in scenarios)
    assert any(s.match is not None and s.priority > 0 for s in scenarios)
    assert any(s.pacing is not None for s in scenarios)
    assert any(
        isinstance(turn.response, schemas.FinalReportResponse) and turn.response.report_content_json is not None
        for turn in turns
    )


def test_it_has_an_example_written_with_the_seed_camelcase_names() -> None:
    seed_names = {"toolCalls", "assistantText", "failuresBeforeSuccess", "systemPromptMustInclude"}

    def keys(value: Any) -> set[str]:
        if isinstance(value, dict):
            return set(value) | {k for v in value.values() for k in keys(v)}
        if isinstance(value, list):
            return {k for v in value for k in keys(v)}
        return set()

    camel_files = [p for p in EXAMPLE_FILES if seed_names <= keys(json.loads(p.read_text(encoding="utf-8")))]
    assert camel_files


def test_it_plays_every_example_turn_through_the_engine_without_a_problem() -> None:
    scenarios = example_scenarios()
    catalog = Catalog.build(scenarios)
    for scenario in scenarios:
        # A request that meets every expectation the scenario states.
        tools = {tool for turn in scenario.turns for tool in turn.expected_tools}
        tools |= set(scenario.match.tools_include if scenario.match else [])
        fragments = list(scenario.system_prompt_must_include)
        if scenario.match and scenario.match.system_contains:
            fragments.append(scenario.match.system_contains)
        system = "\n".join(fragments)
        for step in scenario.turns:
            history = (Message("user", scenario.id),) + (Message("assistant", "…"), Message("user", "go on")) * (
                step.turn - 1
            )
            request = ChatRequest(
                protocol="openai",
                model="test-model",
                system=system,
                messages=history,
                tools=tuple(sorted(tools)),
                temperature=step.expected_temperature,
                top_p=step.expected_top_p,
                reasoning_enabled=step.expected_reasoning == "enabled",
            )
            decision = decide(catalog, request, header_scenario=scenario.id, pacing_enabled=False)
            assert decision.problem == "", f"{scenario.id} turn {step.turn}: {decision.problem}"
            assert decision.failures_before_success == step.failures_before_success
            assert decision.completes_run == (step.turn == scenario.last_turn)


@pytest.mark.parametrize(
    ("last_user", "tools", "expected"),
    [
        ("Hi, I'd like a refund for order A-10442.", ("lookup_order",), "support-refund-match"),
        ("Where is my parcel?", ("lookup_order",), "support-general-match"),
        ("I want my money back", (), "support-general-match"),
    ],
)
def test_it_selects_the_support_examples_by_match_rules_and_priority(
    last_user: str, tools: tuple[str, ...], expected: str
) -> None:
    request = ChatRequest(
        protocol="anthropic",
        model="claude-test",
        system="You are Acme's support triage agent. Be concise.",
        messages=(Message("user", last_user),),
        tools=tools,
    )
    decision = decide(Catalog.build(example_scenarios()), request, pacing_enabled=False)
    assert decision.scenario_id == expected


@pytest.mark.django_db
def test_it_loads_the_examples() -> None:
    output = load(EXAMPLES)
    ids = [scenario.id for scenario in example_scenarios()]
    assert sorted(Scenario.objects.values_list("id", flat=True)) == sorted(ids)
    for scenario_id in ids:
        assert f"created    {scenario_id}  (" in output
    assert f"{len(ids)} created, 0 updated, 0 unchanged" in output
    # Stored canonical: the camelCase example is stored with snake_case keys.
    for scenario in example_scenarios():
        assert Scenario.objects.get(id=scenario.id).data == scenario.canonical()
    assert "toolCalls" not in json.dumps(list(Scenario.objects.values_list("data", flat=True)))


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
