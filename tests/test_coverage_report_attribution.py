"""Provider test-obligation coverage: which provider and tier a JUnit case counts for (properties first, then
name patterns), in a handful of queries."""

from __future__ import annotations

from runs_app.coverage.attribution import DEFAULT_TIER_PATTERNS, Classifier
from runs_app.coverage.report import coverage_report, provider_coverage
from runs_app.models import Provider, TierRule
from tests.coverage_report_helpers import (
    TODAY,
    at,
    cells_of,
    make_build,
    make_case,
    make_cases,
    make_cassette,
    make_waiver,
)
from tests.coverage_report_helpers import registry_fixture as registry_fixture  # a fixture: pytest finds it by name

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
