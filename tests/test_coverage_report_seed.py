"""Provider test-obligation coverage: the registry the seed_providers migration writes, and takes back."""

from __future__ import annotations

from django.apps import apps as django_apps

from runs_app.coverage.attribution import DEFAULT_TIER_PATTERNS
from runs_app.models import Provider, TierRule
from tests.coverage_report_helpers import NATIVES, PRESETS, SIX_SCENARIOS, seed_migration
from tests.coverage_report_helpers import registry_fixture as registry_fixture  # a fixture: pytest finds it by name

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
