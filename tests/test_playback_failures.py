"""The engine checking a turn's expectations (validations) and playing its simulated failures."""

from __future__ import annotations

import pytest

from harnessweb.engine.exchange import Failure
from tests.playback_helpers import assert_harness_error, make_decision, make_scenario, make_turn

# ---------------------------------------------------------------------------------------------------------------
# Validations


def test_it_fails_when_the_system_prompt_lacks_required_fragments():
    scenario = make_scenario("demo", system_prompt_must_include=["alpha", "beta", "gamma"])
    decision = make_decision(scenario, system="has alpha only")
    assert_harness_error(decision, "System prompt missing: beta, gamma")


def test_it_passes_when_the_system_prompt_holds_every_fragment():
    scenario = make_scenario("demo", system_prompt_must_include=["alpha", "beta"])
    decision = make_decision(scenario, system="beta then alpha")
    assert decision.problem == ""
    assert decision.completes_run is True


def test_it_checks_the_system_prompt_before_the_turn_exists():
    scenario = make_scenario("demo", system_prompt_must_include=["needed"])
    decision = make_decision(scenario, 5)
    assert_harness_error(decision, "System prompt missing: needed")


def test_it_fails_when_expected_tools_are_missing():
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["search", "fetch", "write"])])
    decision = make_decision(scenario, tools=("fetch",))
    assert_harness_error(decision, "Expected tools not available: search, write")


def test_it_compares_expected_tools_with_sanitised_names():
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["web.search", "fs/read"])])
    assert make_decision(scenario, tools=("web_search", "fs_read")).problem == ""
    assert make_decision(scenario, tools=("web.search", "fs/read")).problem == ""


def test_it_exempts_agent_tools_from_the_expected_tools():
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["agent__final_report", "agent__other", "search"])])
    assert make_decision(scenario, tools=("search",)).problem == ""
    assert_harness_error(make_decision(scenario), "Expected tools not available: search")


def test_it_skips_the_tool_check_with_allow_missing_tools():
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["search"], allow_missing_tools=True)])
    assert make_decision(scenario).problem == ""


@pytest.mark.parametrize(
    ("field", "request_field", "label"),
    [("expected_temperature", "temperature", "temperature"), ("expected_top_p", "top_p", "topP")],
)
def test_it_validates_sampling_values_within_a_tolerance(field, request_field, label):
    scenario = make_scenario("demo", [make_turn(1, **{field: 0.7})])
    assert make_decision(scenario, **{request_field: 0.7}).problem == ""
    assert make_decision(scenario, **{request_field: 0.7 + 5e-7}).problem == ""
    assert make_decision(scenario, **{request_field: 0.7 - 5e-7}).problem == ""
    assert_harness_error(
        make_decision(scenario, **{request_field: 0.7 + 2e-6}), f"Expected {label} 0.7 but received {0.7 + 2e-6}"
    )
    assert_harness_error(make_decision(scenario, **{request_field: 0.2}), f"Expected {label} 0.7 but received 0.2")


@pytest.mark.parametrize(("field", "label"), [("expected_temperature", "temperature"), ("expected_top_p", "topP")])
def test_it_fails_when_an_expected_sampling_value_is_absent(field, label):
    scenario = make_scenario("demo", [make_turn(1, **{field: 0.5})])
    assert_harness_error(make_decision(scenario), f"Expected {label} 0.5 but received undefined")


def test_it_ignores_sampling_values_the_turn_does_not_expect():
    scenario = make_scenario("demo")
    assert make_decision(scenario, temperature=1.7, top_p=0.1).problem == ""


def test_it_validates_expected_reasoning_enabled():
    scenario = make_scenario("demo", [make_turn(1, expected_reasoning="enabled")])
    assert make_decision(scenario, reasoning_enabled=True).problem == ""
    assert_harness_error(make_decision(scenario), "Expected reasoning to remain enabled")


def test_it_validates_expected_reasoning_disabled():
    scenario = make_scenario("demo", [make_turn(1, expected_reasoning="disabled")])
    assert make_decision(scenario).problem == ""
    assert_harness_error(make_decision(scenario, reasoning_enabled=True), "Expected reasoning to be disabled")


def test_it_reports_the_first_failing_validation_tools_then_temperature_then_top_p_then_reasoning():
    fields = {"expected_temperature": 0.1, "expected_top_p": 0.2, "expected_reasoning": "enabled"}
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["t"], **fields)])
    assert make_decision(scenario).problem == "Expected tools not available: t"
    assert make_decision(scenario, tools=("t",)).problem == "Expected temperature 0.1 but received undefined"
    assert make_decision(scenario, tools=("t",), temperature=0.1).problem == "Expected topP 0.2 but received undefined"
    got = make_decision(scenario, tools=("t",), temperature=0.1, top_p=0.2).problem
    assert got == "Expected reasoning to remain enabled"
    assert make_decision(scenario, tools=("t",), temperature=0.1, top_p=0.2, reasoning_enabled=True).problem == ""


def test_it_does_not_simulate_failures_on_a_failed_validation():
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["t"], failures_before_success=2)])
    decision = make_decision(scenario)
    assert decision.problem
    assert decision.failure is None
    assert decision.failures_before_success == 0


# ---------------------------------------------------------------------------------------------------------------
# Simulated failures


def test_it_carries_a_model_error_failure_with_defaults():
    scenario = make_scenario("demo", [make_turn(1, failures_before_success=2)])
    decision = make_decision(scenario)
    assert decision.failures_before_success == 2
    assert decision.failure == Failure(
        status="model_error", message="Simulated model error", retryable=True, retry_after_ms=None, error=None
    )
    assert decision.reply.text == "turn 1 text"
    assert decision.problem == ""


@pytest.mark.parametrize(
    ("status", "message", "retry_after_ms"),
    [
        ("timeout", "Simulated timeout", None),
        ("invalid_response", "Simulated invalid response", None),
        ("network_error", "Simulated network error", None),
        ("rate_limit", "Rate limit exceeded (simulated)", 1000),
        ("model_error", "Simulated model error", None),
    ],
)
def test_it_gives_each_failure_status_its_default_message(status, message, retry_after_ms):
    scenario = make_scenario("demo", [make_turn(1, failures_before_success=1, failure_status=status)])
    failure = make_decision(scenario).failure
    assert failure == Failure(status=status, message=message, retryable=True, retry_after_ms=retry_after_ms)


def test_it_carries_the_authored_failure_fields():
    turn = make_turn(
        1,
        failures_before_success=3,
        failure_status="rate_limit",
        failure_message="slow down",
        failure_retryable=False,
        failure_retry_after_ms=2500,
        failure_error={"code": "custom"},
    )
    decision = make_decision(make_scenario("demo", [turn]))
    assert decision.failures_before_success == 3
    assert decision.failure == Failure("rate_limit", "slow down", False, 2500, {"code": "custom"})


def test_it_keeps_an_authored_zero_retry_after_for_rate_limits():
    turn = make_turn(1, failures_before_success=1, failure_status="rate_limit", failure_retry_after_ms=0)
    assert make_decision(make_scenario("demo", [turn])).failure.retry_after_ms == 0


def test_it_has_no_failure_without_failures_before_success():
    turn = make_turn(1, failure_status="rate_limit", failure_message="unused")
    decision = make_decision(make_scenario("demo", [turn]))
    assert decision.failure is None
    assert decision.failures_before_success == 0


def test_it_plays_the_seed_failure_throws_as_a_thrown_network_error():
    turn = {"turn": 1, "response": {"kind": "text", "assistantText": "x"}, "failuresBeforeSuccess": 1}
    turn |= {"failureThrows": True, "failureStatus": "rate_limit", "failureMessage": "boom"}
    failure = make_decision(make_scenario("demo", [turn])).failure
    assert failure == Failure("network_error", "boom", True, None, throws=True)
    unnamed = make_decision(make_scenario("demo", [turn | {"failureMessage": None}])).failure
    assert unnamed is not None and unnamed.message == "Simulated failure"  # the seed's own default
    scripted = make_decision(make_scenario("demo", [turn | {"failureThrows": False}])).failure
    assert scripted == Failure("rate_limit", "boom", True, 1000)


def test_it_completes_the_run_on_the_last_turn_even_with_failures_first():
    decision = make_decision(make_scenario("demo", [make_turn(1, failures_before_success=1)]))
    assert decision.completes_run is True
