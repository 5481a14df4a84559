# Seeds the provider registry and the default tier rules from shared/seeds/003 (provider test obligations).
#
# The values are written out here rather than imported from runs_app so that this migration keeps meaning what it
# meant when it ran, whatever the app's constants become later.

from django.db import migrations

TIERS = ["unit", "contract", "conformance", "e2e"]
NATIVE_SCENARIOS = [
    "simple_text",
    "tool_call_single",
    "unicode_text",
    "error_auth_401",
    "error_bad_request_400",
    "error_rate_limit_429",
]
# The seed's "VCR Coverage Floor (per provider)" table.
NATIVE_FLOORS = {
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
# OpenAI-compatible presets route through the shared OpenAI provider: only their three cassettes are required.
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
PRESET_SCENARIOS = ["simple_text", "error_auth_401", "tool_call_single"]
PRESET_FLOOR = 3

# Regular expressions searched (case-insensitively) in "classname::name" of a JUnit case that carries no tier
# property; the test files of the seed. provider_error_paths counts toward conformance: the seed lists it as its own
# tier 3, but the registry has four tiers and both files check a provider's streaming behaviour against VCR
# cassettes (error paths are the failure half of the same conformance).
# e2e: the seed's tests/e2e_*.rs; "e2e_" at the start of a name or after any separator (::, ., /, _), so
# "e2e_agent::turn", "tests.e2e_loop" and "test_e2e_anthropic" count and "sine2e_x" does not.
TIER_PATTERNS = {
    "unit": ["provider_unit_checklist"],
    "contract": ["provider_native_contract"],
    "conformance": ["provider_streaming", "provider_error_paths"],
    "e2e": ["(?<![a-z0-9])e2e_"],
}


def seed(apps, schema_editor):
    Provider = apps.get_model("runs_app", "Provider")
    TierRule = apps.get_model("runs_app", "TierRule")
    for name, floor in NATIVE_FLOORS.items():
        Provider.objects.get_or_create(
            name=name,
            defaults={
                "onboarding": "native",
                "required_tiers": TIERS,
                "cassette_floor": floor,
                "required_scenarios": NATIVE_SCENARIOS,
            },
        )
    for name in PRESETS:
        Provider.objects.get_or_create(
            name=name,
            defaults={
                "onboarding": "openai_compatible",
                "required_tiers": [],
                "cassette_floor": PRESET_FLOOR,
                "required_scenarios": PRESET_SCENARIOS,
            },
        )
    for tier, patterns in TIER_PATTERNS.items():
        TierRule.objects.get_or_create(tier=tier, defaults={"patterns": patterns})


def unseed(apps, schema_editor):
    Provider = apps.get_model("runs_app", "Provider")
    TierRule = apps.get_model("runs_app", "TierRule")
    Provider.objects.filter(name__in=[*NATIVE_FLOORS, *PRESETS]).delete()
    TierRule.objects.filter(tier__in=list(TIER_PATTERNS)).delete()


class Migration(migrations.Migration):

    dependencies = [
        ('runs_app', '0002_ci_uploads_and_obligations'),
    ]

    operations = [
        migrations.RunPython(seed, unseed),
    ]
