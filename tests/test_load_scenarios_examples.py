"""The shipped example scenarios: every response kind and failure status covered, each one played through the
engine, and loaded by load_scenarios."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harnessweb.engine import schemas
from harnessweb.engine.exchange import ChatRequest, Message
from harnessweb.engine.loader import read_scenario_files
from harnessweb.engine.playback import Catalog, decide
from scenarios_app.models import Scenario
from tests.load_scenarios_helpers import (
    EXAMPLE_FILES,
    EXAMPLES,
    FAILURE_STATUSES,
    RESPONSE_KINDS,
    RESPONSE_MODELS,
    all_turns,
    example_scenarios,
    load,
)

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
