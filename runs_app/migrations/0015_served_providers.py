# The coverage grid starts with the providers this harness serves. 0003 seeded all 23 of seed 003's registry
# (copilot, gitlab and 14 OpenAI-compatible presets among them), which on a fresh install is a wall of "missing"
# cells for providers nobody here tests. A seeded provider the harness does not serve goes, but only while it is
# exactly as 0003 left it (same kind, tiers, floor and scenarios, nothing marked not applicable, no waiver): one a
# team edited or waived is its own now and stays. A team registers its own providers in the admin.
#
# Written out here rather than imported, as 0003 does, so that this keeps meaning what it meant when it ran.

from django.db import migrations

SERVED = ["openai", "anthropic", "gemini", "azure", "bedrock", "vertex", "cohere"]
TIERS = ["unit", "contract", "conformance", "e2e"]
NATIVE_SCENARIOS = [
    "simple_text",
    "tool_call_single",
    "unicode_text",
    "error_auth_401",
    "error_bad_request_400",
    "error_rate_limit_429",
]
PRESET_SCENARIOS = ["simple_text", "error_auth_401", "tool_call_single"]
# What 0003 seeded for the providers the harness does not serve: name -> (onboarding, tiers, floor, scenarios).
UNSERVED_SEEDS = {
    "copilot": ("native", TIERS, 1, NATIVE_SCENARIOS),
    "gitlab": ("native", TIERS, 1, NATIVE_SCENARIOS),
    **{
        name: ("openai_compatible", [], 3, PRESET_SCENARIOS)
        for name in [
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
    },
}


def as_seeded(provider, seed) -> bool:
    onboarding, tiers, floor, scenarios = seed
    return (
        provider.onboarding == onboarding
        and sorted(provider.required_tiers or []) == sorted(tiers)
        and provider.cassette_floor == floor
        and sorted(provider.required_scenarios or []) == sorted(scenarios)
        and not provider.not_applicable
        and not provider.waivers.exists()
    )


def drop_unserved(apps, schema_editor):
    Provider = apps.get_model("runs_app", "Provider")
    for provider in Provider.objects.filter(name__in=list(UNSERVED_SEEDS)):
        if as_seeded(provider, UNSERVED_SEEDS[provider.name]):
            provider.delete()


def restore_unserved(apps, schema_editor):
    Provider = apps.get_model("runs_app", "Provider")
    for name, (onboarding, tiers, floor, scenarios) in UNSERVED_SEEDS.items():
        Provider.objects.get_or_create(
            name=name,
            defaults={
                "onboarding": onboarding,
                "required_tiers": tiers,
                "cassette_floor": floor,
                "required_scenarios": scenarios,
            },
        )


class Migration(migrations.Migration):
    dependencies = [
        ("runs_app", "0014_run_closed_abandoned"),
    ]

    operations = [
        migrations.RunPython(drop_unserved, restore_unserved),
    ]
