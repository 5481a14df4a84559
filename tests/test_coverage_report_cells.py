"""Provider test-obligation coverage: the report, each cell's state from JUnit cases, cassettes and waivers."""

from __future__ import annotations

import datetime
import json

from runs_app.coverage.report import coverage_report
from runs_app.models import Provider
from tests.coverage_report_helpers import (
    ALL_UNIT,
    NATIVES,
    PRESETS,
    SIX_SCENARIOS,
    TODAY,
    at,
    cells_of,
    make_build,
    make_cases,
    make_cassette,
    make_waiver,
)
from tests.coverage_report_helpers import registry_fixture as registry_fixture  # a fixture: pytest finds it by name

# -- the report ----------------------------------------------------------------------------------------------------


def test_it_reports_every_provider_and_obligation_in_the_documented_shape(registry):
    report = coverage_report(today=TODAY)
    assert set(report) == {"obligations", "generated_at", "providers"}
    assert report["obligations"] == ["unit", "contract", "error_paths", "conformance", "e2e", "cassettes"]
    datetime.datetime.fromisoformat(report["generated_at"])
    assert {entry["name"] for entry in report["providers"]} >= {*NATIVES, *PRESETS}
    entry = next(entry for entry in report["providers"] if entry["name"] == "anthropic")
    assert set(entry) == {"name", "onboarding", "cells"}
    assert list(entry["cells"]) == report["obligations"]
    keys = {"state", "reason", "passed", "failed", "total", "commit", "date", "waiver", "evidence"}
    assert set(entry["cells"]["unit"]) == keys | {"checks"}
    assert set(entry["cells"]["cassettes"]) == keys | {"count", "floor", "missing_scenarios", "scenarios", "misfits"}
    assert set(entry["cells"]["unit"]["evidence"]) == {"test_case_ids", "cassette_ids"}
    assert json.loads(json.dumps(report)) == report


def test_it_shows_passing_failing_missing_waived_and_an_expired_waiver_for_one_provider(registry):
    run = make_build(commit="abc123def456789", started_at=at(10))
    unit = make_cases(run, "anthropic", "unit", ["passed", "passed", "passed"])
    contract = make_cases(run, "anthropic", "contract", ["passed", "failed", "passed", "error", "passed"])
    make_cases(run, "anthropic", "conformance", ["passed", "failed"])
    cassette = make_cassette("anthropic", "simple_text", commit="c0ffee")
    make_waiver("anthropic", "contract", TODAY + datetime.timedelta(days=30), "Upstream SDK bug #12")
    make_waiver("anthropic", "conformance", TODAY - datetime.timedelta(days=1))

    cells = cells_of("anthropic")

    # Three passing unit tests cover three of tier 1's six checks: the obligation is not met.
    assert cells["unit"]["state"] == "failing"
    assert (cells["unit"]["passed"], cells["unit"]["failed"], cells["unit"]["total"]) == (3, 0, 3)
    assert cells["unit"]["evidence"]["test_case_ids"] == [case.pk for case in unit]
    assert cells["unit"]["commit"] == "abc123def456789"
    assert cells["unit"]["date"] == at(10).isoformat()
    assert cells["unit"]["reason"] == (
        "all 3 unit tests passed in the latest run (commit abc123def456), "
        "but no passing test covers endpoint, tool_serialization, vcr_fixtures"
    )
    assert [(row["check"], row["state"]) for row in cells["unit"]["checks"]] == [
        ("identity", "passing"), ("request_mapping", "passing"), ("auth", "passing"),
        ("endpoint", "missing"), ("tool_serialization", "missing"), ("vcr_fixtures", "missing"),
    ]  # fmt: skip

    # Waived: the counts and the reason stay those of the failure underneath.
    assert cells["contract"]["state"] == "waived"
    assert (cells["contract"]["passed"], cells["contract"]["failed"], cells["contract"]["total"]) == (3, 2, 5)
    assert cells["contract"]["reason"] == (
        "2 of 5 contract tests failed in the latest run (commit abc123def456) (1 with an error)"
    )
    assert cells["contract"]["waiver"] == {"reason": "Upstream SDK bug #12", "expires_on": "2026-07-01", "by": "lead"}
    assert sorted(cells["contract"]["evidence"]["test_case_ids"]) == sorted(case.pk for case in contract)

    # An expired waiver is ignored, and said so.
    assert cells["conformance"]["state"] == "failing"
    assert cells["conformance"]["waiver"] is None
    assert cells["conformance"]["reason"].startswith("1 of 2 conformance tests failed")
    assert cells["conformance"]["reason"].endswith("(a waiver expired on 2026-05-31)")

    assert cells["e2e"]["state"] == "missing"
    assert cells["e2e"]["reason"] == "no e2e test results for anthropic in any uploaded run"
    assert cells["e2e"]["date"] is None

    assert cells["cassettes"]["state"] == "failing"
    assert (cells["cassettes"]["count"], cells["cassettes"]["floor"]) == (1, 3)
    assert cells["cassettes"]["missing_scenarios"] == sorted(set(SIX_SCENARIOS) - {"simple_text"})
    assert cells["cassettes"]["reason"] == (
        "no cassette for error_auth_401, error_bad_request_400, error_rate_limit_429, tool_call_single, "
        "unicode_text (1 of floor 3)"
    )
    assert cells["cassettes"]["evidence"]["cassette_ids"] == [cassette.pk]
    assert cells["cassettes"]["commit"] == "c0ffee"


def test_it_waives_a_missing_cell_until_the_day_the_waiver_expires(registry):
    make_waiver("bedrock", "e2e", TODAY)
    assert cells_of("bedrock", TODAY)["e2e"]["state"] == "waived"
    next_day = cells_of("bedrock", TODAY + datetime.timedelta(days=1))["e2e"]
    assert next_day["state"] == "missing"
    assert next_day["reason"].endswith("(a waiver expired on 2026-06-01)")


def test_it_leaves_a_passing_cell_passing_whatever_its_waiver(registry):
    make_cases(make_build(), "openai", "unit", ALL_UNIT)
    make_waiver("openai", "unit", TODAY + datetime.timedelta(days=3))
    cell = cells_of("openai")["unit"]
    assert cell["state"] == "passing"
    assert cell["waiver"] is None


def test_it_takes_the_latest_run_so_a_failure_fixed_later_passes(registry):
    old = make_build(commit="old", started_at=at(1))
    make_cases(old, "gemini", "contract", ["failed", "failed"])
    new = make_build(commit="new", started_at=at(2))
    fixed = make_cases(new, "gemini", "contract", ["passed"] * 4)
    cell = cells_of("gemini")["contract"]
    assert cell["state"] == "passing"
    assert cell["commit"] == "new"
    assert cell["evidence"]["test_case_ids"] == [case.pk for case in fixed]


def test_it_takes_the_latest_run_so_a_later_failure_fails(registry):
    make_cases(make_build(commit="old", started_at=at(1)), "gemini", "e2e", ["passed"])
    make_cases(make_build(commit="new", started_at=at(3)), "gemini", "e2e", ["passed", "failed"])
    cell = cells_of("gemini")["e2e"]
    assert cell["state"] == "failing"
    assert (cell["passed"], cell["failed"], cell["total"], cell["commit"]) == (1, 1, 2, "new")


def test_it_takes_each_tier_from_its_own_latest_run(registry):
    make_cases(make_build(commit="unit-run", started_at=at(1)), "cohere", "unit", ALL_UNIT)
    make_cases(make_build(commit="contract-run", started_at=at(2)), "cohere", "contract", ["failed"])
    cells = cells_of("cohere")
    assert (cells["unit"]["state"], cells["unit"]["commit"]) == ("passing", "unit-run")
    assert (cells["contract"]["state"], cells["contract"]["commit"]) == ("failing", "contract-run")


def test_it_counts_flaky_as_passing_and_says_so(registry):
    make_cases(make_build(), "cohere", "e2e", ["passed", "flaky", "skipped"])
    cell = cells_of("cohere")["e2e"]
    assert cell["state"] == "passing"
    assert (cell["passed"], cell["failed"], cell["total"]) == (2, 0, 3)
    assert "2 of 3 e2e tests passed and 1 skipped" in cell["reason"]
    assert "1 flaky (failed, then passed on a rerun)" in cell["reason"]


def test_it_calls_a_tier_with_only_skipped_tests_missing(registry):
    make_cases(make_build(), "vertex", "e2e", ["skipped", "skipped"])
    cell = cells_of("vertex")["e2e"]
    assert cell["state"] == "missing"
    assert cell["reason"].startswith("all 2 e2e tests for vertex were skipped in the latest run")


def test_it_needs_only_three_cassettes_from_an_openai_compatible_preset(registry):
    for scenario in ("simple_text", "error_auth_401", "tool_call_single"):
        make_cassette("kimi-for-coding", scenario)
    cells = cells_of("kimi-for-coding")
    assert [cells[tier]["state"] for tier in ("unit", "contract", "conformance", "e2e")] == ["not_applicable"] * 4
    assert "OpenAI-compatible preset" in cells["unit"]["reason"]
    assert cells["cassettes"]["state"] == "passing"
    assert (cells["cassettes"]["count"], cells["cassettes"]["floor"], cells["cassettes"]["missing_scenarios"]) == (
        3,
        3,
        [],
    )
    assert (cells["cassettes"]["passed"], cells["cassettes"]["total"]) == (3, 3)


def test_it_fails_a_preset_short_of_its_floor_and_misses_one_without_cassettes(registry):
    make_cassette("nebius", "simple_text")
    make_cassette("nebius", "error_auth_401")
    cell = cells_of("nebius")["cassettes"]
    assert cell["state"] == "failing"
    assert cell["reason"] == "no cassette for tool_call_single (2 of floor 3)"
    missing = cells_of("venice")["cassettes"]
    assert missing["state"] == "missing"
    assert missing["count"] == 0


def test_it_counts_a_scenario_uploaded_twice_once_and_shows_the_latest(registry):
    make_cassette("upstage", "simple_text")
    newer = make_cassette("upstage", "simple_text", name="verify_upstage_simple_text.json")
    cell = cells_of("upstage")["cassettes"]
    assert cell["count"] == 1
    assert cell["evidence"]["cassette_ids"] == [newer.pk]


def test_it_reads_the_cassette_name_again_when_its_provider_is_not_registered(registry):
    # A naive split of verify_sap_ai_core_simple_text.json gives provider "sap".
    make_cassette("sap", "ai_core_simple_text", name="verify_sap_ai_core_simple_text.json")
    make_cassette("sap", "ai_core_error_auth_401", name="sap_ai_core_error_auth_401.json")
    cell = cells_of("sap_ai_core")["cassettes"]
    assert cell["count"] == 2
    assert cell["missing_scenarios"] == ["tool_call_single"]


def test_it_marks_obligations_a_provider_does_not_require_not_applicable(registry):
    Provider.objects.create(name="tinyllm", required_tiers=["unit"], cassette_floor=0, required_scenarios=[])
    cells = cells_of("tinyllm")
    assert cells["unit"]["state"] == "missing"
    assert [cells[o]["state"] for o in ("contract", "conformance", "e2e", "cassettes")] == ["not_applicable"] * 4
