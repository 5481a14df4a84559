"""Provider test-obligation coverage: the seeded registry, cell states from JUnit cases and cassettes, the pages."""

from __future__ import annotations

import datetime
import hashlib
import importlib
import itertools
import json
import re
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import User

from runs_app.coverage import checks
from runs_app.coverage.attribution import DEFAULT_TIER_PATTERNS, Classifier
from runs_app.coverage.report import coverage_report, provider_coverage
from runs_app.models import Cassette, JUnitReport, Provider, Run, TierRule, Waiver
from runs_app.models import TestCaseResult as CaseResult  # an alias pytest does not try to collect
from tests.conftest import VCR_DIR, make_ci_run, make_user

seed_migration = importlib.import_module("runs_app.migrations.0003_seed_providers")

TODAY = datetime.date(2026, 6, 1)
NATIVES = {
    "anthropic": 3,
    "openai": 3,
    "gemini": 3,
    "cohere": 3,
    "azure": 1,
    "bedrock": 1,
    "vertex": 1,
    "copilot": 1,
    "gitlab": 1,
}
PRESETS = [
    "alibaba-cn",
    "kimi-for-coding",
    "minimax",
    "modelscope",
    "moonshotai-cn",
    "nebius",
    "ovhcloud",
    "scaleway",
    "sap_ai_core",
    "siliconflow",
    "upstage",
    "venice",
    "zai",
    "zhipuai-coding-plan",
]
SIX_SCENARIOS = [
    "simple_text",
    "tool_call_single",
    "unicode_text",
    "error_auth_401",
    "error_bad_request_400",
    "error_rate_limit_429",
]
_counter = itertools.count()


@pytest.fixture
def registry(db: None) -> None:
    """Seed 003's whole registry, as the seed_providers migration (0003) writes it. A fresh install keeps only the
    providers the harness serves (0015, tests/test_coverage_served.py); these tests attribute cases and cassettes
    against the whole registry, so its function puts every row back (it is idempotent). Tests on a live server
    (transactional_db) flush the database, migration data included, which this also repairs."""
    seed_migration.seed(django_apps, None)


def at(day: int, hour: int = 12) -> datetime.datetime:
    return datetime.datetime(2026, 5, day, hour, tzinfo=datetime.UTC)


def make_build(**fields: Any) -> Run:
    """A CI run of commit abc1234 on main, started on 1 May: the runs the grid reads its results from."""
    return make_ci_run(**{"name": "ci", "commit": "abc1234", "branch": "main", "started_at": at(1), **fields})


def make_case(run: Run, name: str, classname: str = "", outcome: str = "passed", **fields: Any) -> CaseResult:
    report, _ = JUnitReport.objects.get_or_create(run=run, digest=f"report-{run.pk}")
    return CaseResult.objects.create(report=report, run=run, name=name, classname=classname, outcome=outcome, **fields)


def make_cases(run: Run, provider: str, tier: str, outcomes: list[str]) -> list[CaseResult]:
    """Cases that say their provider and tier in their properties, as a CI that knows them uploads them; a tier the
    seed splits into checks gets one case per check in turn (the first ``len(outcomes)`` of them, round)."""
    covered = checks.names(tier) or ("case",)
    return [
        make_case(
            run,
            f"{tier}_{covered[i % len(covered)]}_{i}",
            "suite",
            outcome,
            properties={"provider": provider, "tier": tier},
        )  # fmt: skip
        for i, outcome in enumerate(outcomes)
    ]


ALL_UNIT = ["passed"] * 6  # a case for each of tier 1's six checks


# Each scenario's cassette is a real recording of it (tests/fixtures/vcr), so that it shows what its name claims.
_RECORDED = {
    "error_auth_401": "openai_auth_failure_401",
    "error_bad_request_400": "openai_bad_request_400",
    "error_rate_limit_429": "openai_rate_limit_429",
    "unicode_text": "openai_unicode_content",
}


def recording(scenario: str) -> dict[str, Any]:
    """A real cassette of a scenario (OpenAI's, or Anthropic's for the scenarios only it recorded)."""
    from runs_app.ci.cassettes import canonical_scenario

    name = _RECORDED.get(canonical_scenario(scenario), f"openai_{canonical_scenario(scenario)}")
    path = VCR_DIR / f"{name}.json"
    if not path.exists():
        path = VCR_DIR / f"anthropic_{canonical_scenario(scenario)}.json"
    return json.loads(path.read_text()) if path.exists() else {"interactions": []}


def make_cassette(provider: str, scenario: str, name: str | None = None, **fields: Any) -> Cassette:
    content = json.dumps({**recording(scenario), "test_name": f"{provider}/{scenario}/{next(_counter)}"}).encode()
    return Cassette.objects.create(
        name=name or f"verify_{provider}_{scenario}.json",
        provider=provider,
        scenario=scenario,
        content=content,
        digest=hashlib.sha256(content).hexdigest(),
        size=len(content),
        **fields,
    )


def make_waiver(provider: str, obligation: str, expires_on: datetime.date, reason: str = "vendor outage") -> Waiver:
    user, _ = User.objects.get_or_create(username="lead")
    return Waiver.objects.create(
        provider=Provider.objects.get(name=provider),
        obligation=obligation,
        reason=reason,
        expires_on=expires_on,
        created_by=user,
    )


def cells_of(name: str, today: datetime.date = TODAY) -> dict[str, dict[str, Any]]:
    report = coverage_report(today=today)
    return next(entry for entry in report["providers"] if entry["name"] == name)["cells"]


# -- the seeded registry -------------------------------------------------------------------------------------------


def test_it_seeds_every_native_provider_with_its_floor_all_tiers_and_six_scenarios(registry):
    natives = {p.name: p for p in Provider.objects.filter(onboarding="native")}
    assert {name: p.cassette_floor for name, p in natives.items()} == NATIVES
    for provider in natives.values():
        assert provider.required_tiers == ["unit", "contract", "conformance", "e2e"]
        assert provider.required_scenarios == SIX_SCENARIOS


def test_it_seeds_the_openai_compatible_presets_with_three_cassettes_and_no_tiers(registry):
    presets = list(Provider.objects.filter(onboarding="openai_compatible").order_by("name"))
    assert [p.name for p in presets] == sorted(PRESETS)
    for provider in presets:
        assert provider.required_tiers == []
        assert provider.cassette_floor == 3
        assert sorted(provider.required_scenarios) == ["error_auth_401", "simple_text", "tool_call_single"]


def test_it_seeds_tier_rules_matching_the_seed_test_files(registry):
    rules = {rule.tier: rule.patterns for rule in TierRule.objects.all()}
    # Error paths, a tier of their own since, take their default patterns (listed first, they win the tie).
    assert rules == {tier: patterns for tier, patterns in DEFAULT_TIER_PATTERNS.items() if tier != "error_paths"}
    assert rules["conformance"] == ["provider_streaming", "provider_error_paths"]


def test_it_removes_what_it_seeded_when_the_migration_is_reversed(registry):
    seed_migration.unseed(django_apps, None)
    assert not Provider.objects.filter(name__in=[*NATIVES, *PRESETS]).exists()
    assert not TierRule.objects.exists()
    seed_migration.seed(django_apps, None)
    assert Provider.objects.filter(name__in=[*NATIVES, *PRESETS]).count() == len(NATIVES) + len(PRESETS)


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


# -- attribution: properties first, then name patterns ---------------------------------------------------------------


def test_it_places_cases_without_properties_by_test_file_patterns_and_provider_words(registry):
    run = make_build()
    unit = make_case(run, "checklist_anthropic_auth_key_flows_through", "pi_agent_rust::provider_unit_checklist")
    contract = make_case(run, "anthropic_simple_text", "pi_agent_rust::provider_native_contract")
    streaming = make_case(run, "anthropic::simple_text", "pi_agent_rust::provider_streaming")
    errors = make_case(run, "anthropic_http_500", "pi_agent_rust::provider_error_paths", "failed")
    e2e = make_case(run, "anthropic_agent_turn", "pi_agent_rust::e2e_agent_loop")
    make_case(run, "checklist_all_native_providers_have_identity", "pi_agent_rust::provider_unit_checklist")
    make_case(run, "anthropic_something", "pi_agent_rust::unrelated")

    cells = cells_of("anthropic")

    assert cells["unit"]["evidence"]["test_case_ids"] == [unit.pk]
    assert cells["contract"]["evidence"]["test_case_ids"] == [contract.pk]
    # Error paths are a tier of their own; the failed case is the http_500 check's.
    assert cells["conformance"]["evidence"]["test_case_ids"] == [streaming.pk]
    assert cells["error_paths"]["evidence"]["test_case_ids"] == [errors.pk]
    assert cells["error_paths"]["state"] == "failing"
    assert cells["error_paths"]["checks"][0] == {"check": "http_500", "state": "failing", "passed": 0, "failed": 1}
    assert [row["check"] for row in cells["unit"]["checks"] if row["state"] == "passing"] == ["identity", "auth"]
    assert cells["e2e"]["evidence"]["test_case_ids"] == [e2e.pk]


def test_it_prefers_properties_and_columns_to_name_patterns(registry):
    run = make_build()
    by_property = make_case(
        run, "provider_native_contract::anthropic_x", properties={"provider": "openai", "tier": "e2e"}
    )
    by_column = make_case(run, "whatever", provider="OpenAI", tier="Unit")
    as_pairs = make_case(run, "openai_pairs", properties=[{"name": "tier", "value": "error_paths"}])
    cells = cells_of("openai")
    assert cells["e2e"]["evidence"]["test_case_ids"] == [by_property.pk]
    assert cells["unit"]["evidence"]["test_case_ids"] == [by_column.pk]
    assert cells["error_paths"]["evidence"]["test_case_ids"] == [as_pairs.pk]
    assert cells_of("anthropic")["contract"]["state"] == "missing"


def test_it_finds_provider_names_as_whole_words_leftmost_first():
    classifier = Classifier(["azure", "openai", "zai", "zhipuai-coding-plan", "kimi-for-coding"], DEFAULT_TIER_PATTERNS)

    def attribute(text: str) -> tuple[str | None, str | None]:
        classname, _, name = text.rpartition("::")
        return classifier.attribute(name=name, classname=classname)

    assert attribute("provider_streaming::azure::azure_openai_simple_text") == ("azure", "conformance")
    assert attribute("provider_streaming::kimi_for_coding_simple_text") == ("kimi-for-coding", "conformance")
    assert attribute("provider_streaming::zhipuai_coding_plan_simple_text") == ("zhipuai-coding-plan", "conformance")
    assert attribute("provider_streaming::zhipuai_simple_text") == (None, "conformance")
    assert attribute("provider_streaming::openaiish_simple") == (None, "conformance")
    # The earliest tier pattern wins: the classname names the test file.
    assert attribute("e2e_agent::provider_streaming_openai") == ("openai", "e2e")
    assert attribute("provider_streaming::test_e2e_openai") == ("openai", "conformance")
    assert attribute("tests.test_e2e_openai") == ("openai", "e2e")
    assert attribute("cases::openai_thing") == ("openai", None)


def test_it_follows_the_tier_rules_stored_in_the_database(registry):
    TierRule.objects.filter(tier="contract").update(patterns=["wire_contract"])
    TierRule.objects.filter(tier="unit").update(patterns=["[unclosed"])  # a bad pattern is skipped, not a crash
    run = make_build()
    case = make_case(run, "openai_wire_contract_shape")
    make_case(run, "openai_simple", "provider_native_contract")
    cells = cells_of("openai")
    assert cells["contract"]["evidence"]["test_case_ids"] == [case.pk]
    assert cells["unit"]["state"] == "missing"


def test_it_computes_the_whole_grid_in_a_handful_of_queries(registry, django_assert_max_num_queries):
    for day, provider in enumerate(["anthropic", "openai", "gemini", "cohere", "azure"], start=1):
        for attempt in range(3):
            run = make_build(commit=f"{provider}-{attempt}", started_at=at(day, hour=attempt))
            for tier in ("unit", "contract", "conformance", "e2e"):
                outcomes = ["failed" if attempt == 0 else "passed"] + ["passed"] * 5
                make_cases(run, provider, tier, outcomes)
            make_case(run, f"{provider}::simple_text", "provider_streaming")
        make_cassette(provider, "simple_text")
        make_waiver(provider, "e2e", TODAY)
    make_cassette("zai", "simple_text")
    with django_assert_max_num_queries(6):
        report = coverage_report(today=TODAY)
    states = {entry["name"]: entry["cells"]["unit"]["state"] for entry in report["providers"]}
    assert states["anthropic"] == states["azure"] == "passing"
    with django_assert_max_num_queries(7):
        provider_coverage(Provider.objects.get(name="anthropic"), today=TODAY)


# -- the pages -------------------------------------------------------------------------------------------------------


def test_it_sends_anonymous_visitors_to_the_admin_login(client, registry):
    response = client.get("/coverage/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/coverage/"
    assert client.get("/coverage/anthropic/unit/").status_code == 302


def test_it_draws_the_grid_with_counts_colours_and_hover_reasons(admin_client, registry):
    make_cases(
        make_build(commit="abc123", started_at=at(4)),
        "anthropic",
        "contract",
        ["passed", "failed", "passed", "failed", "passed"],
    )
    make_cases(make_build(commit="abc123", started_at=at(4)), "anthropic", "unit", ["passed"] * 6)
    response = admin_client.get("/coverage/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'title="2 of 5 contract tests failed in the latest run (commit abc123)"' in html
    assert 'title="All 6 unit tests passed in the latest run (commit abc123)"' in html
    assert 'title="No e2e test results for anthropic in any uploaded run"' in html
    assert 'class="cell state-failing"' in html and 'class="cell state-passing"' in html
    assert "3/5" in html and "6/6" in html
    assert 'href="/coverage/anthropic/contract/"' in html
    assert 'href="/coverage/kimi-for-coding/cassettes/"' in html
    # Works offline: every script and stylesheet is served by the app itself.
    assets = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', html)
    assert assets and all(a.startswith("/static/") for a in assets)


def test_it_shows_the_evidence_behind_a_cell(admin_client, registry):
    run = make_build(commit="deadbeef", started_at=at(7), branch="feature/x")
    make_case(
        run,
        "anthropic_tool_call",
        "provider_native_contract",
        "failed",
        message="expected ToolCallStart, got TextDelta",
        duration_s=0.25,
    )
    make_waiver("anthropic", "contract", TODAY + datetime.timedelta(days=400), "Tracked in PROJ-7")
    cassette = make_cassette("anthropic", "unicode_text")

    html = admin_client.get("/coverage/anthropic/contract/").content.decode()
    assert "anthropic_tool_call" in html
    assert "expected ToolCallStart, got TextDelta" in html
    assert "0.250 s" in html
    assert "deadbeef" in html and "feature/x" in html and "2026-05-07" in html
    assert "Tracked in PROJ-7" in html

    html = admin_client.get("/coverage/anthropic/cassettes/").content.decode()
    assert f'href="/admin/runs_app/cassette/{cassette.pk}/change/"' in html
    assert "verify_anthropic_unicode_text.json" in html and "unicode_text" in html


def test_it_answers_404_for_an_unknown_provider_or_obligation(admin_client, registry):
    assert admin_client.get("/coverage/nobody/unit/").status_code == 404
    assert admin_client.get("/coverage/anthropic/vibes/").status_code == 404


def test_it_escapes_what_uploads_and_the_admin_provide(admin_client, registry):
    make_case(
        make_build(),
        "<script>alert(1)</script>",
        "provider_native_contract",
        "failed",
        message="<img src=x onerror=alert(2)>",
        properties={"provider": "anthropic"},
    )
    make_waiver("anthropic", "contract", TODAY + datetime.timedelta(days=400), '"><script>alert(3)</script>')
    Provider.objects.create(name="<b>bold</b>", required_tiers=["unit"])

    grid = admin_client.get("/coverage/").content.decode()
    assert "<script>alert" not in grid and "<b>bold" not in grid
    assert "&lt;b&gt;bold&lt;/b&gt;" in grid
    assert "&quot;&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in grid

    evidence = admin_client.get("/coverage/anthropic/contract/").content.decode()
    assert "<script>alert" not in evidence and "<img" not in evidence
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in evidence
    assert "&lt;img src=x onerror=alert(2)&gt;" in evidence


def test_it_puts_the_same_grid_in_the_admin_for_staff_only(client, admin_client, registry):
    make_cases(make_build(commit="abc123", started_at=at(4)), "anthropic", "contract", ["passed", "failed"])
    # Mounted once, in ProviderAdmin; the shorter /admin/coverage/ leads there.
    assert admin_client.get("/admin/coverage/")["Location"] == "/admin/runs_app/provider/coverage/"
    for url in ("/admin/coverage/", "/admin/runs_app/provider/coverage/"):
        response = admin_client.get(url, follow=True)
        assert response.status_code == 200
        html = response.content.decode()
        assert "Provider test coverage" in html
        assert 'title="1 of 2 contract tests failed in the latest run (commit abc123)"' in html
        assert 'href="/coverage/anthropic/contract/"' in html
        assert client.get(url).status_code == 302

    user = make_user("viewer")
    client.force_login(user)
    for url in ("/admin/coverage/", "/admin/runs_app/provider/coverage/"):
        response = client.get(url, follow=True)
        assert response.redirect_chain[-1][1] == 302
        assert response.redirect_chain[-1][0].startswith("/admin/login/")


def test_it_counts_the_older_cassette_names_for_the_seed_scenarios(registry):
    for scenario in (
        "simple_text",
        "tool_call_single",
        "unicode_content",
        "auth_failure_401",
        "bad_request_400",
        "rate_limit_429",
    ):
        make_cassette("anthropic", scenario, name=f"anthropic_{scenario}.json")
    cell = provider_coverage(Provider.objects.get(name="anthropic"))["cells"]["cassettes"]
    assert cell["state"] == "passing" and cell["missing_scenarios"] == []
