"""The coverage grid on a fresh install: it starts with the providers the harness serves (migration 0015 drops seed
003's others while they are as seeded, keeping any a team edited or waived), says what counts toward a cell (only CI
uploads: which tiers come from what), and lets a team register its own provider."""

from __future__ import annotations

import datetime
import importlib

import pytest
from django.apps import apps as django_apps

from runs_app.coverage.models import SERVED_PROVIDERS
from runs_app.models import Provider, Waiver
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

seed_003 = importlib.import_module("runs_app.migrations.0003_seed_providers")
served_only = importlib.import_module("runs_app.migrations.0015_served_providers")


def names() -> set[str]:
    return set(Provider.objects.values_list("name", flat=True))


def test_a_fresh_install_keeps_only_the_providers_the_harness_serves():
    Provider.objects.all().delete()
    seed_003.seed(django_apps, None)
    assert len(names()) == 23  # what 0003 seeds: every provider seed 003 lists
    served_only.drop_unserved(django_apps, None)
    assert names() == set(SERVED_PROVIDERS) == {"openai", "anthropic", "gemini", "azure", "bedrock", "vertex", "cohere"}
    assert set(served_only.SERVED) == set(SERVED_PROVIDERS)  # the migration's own copy says the same


def test_it_keeps_a_seeded_provider_a_team_edited_or_waived():
    Provider.objects.all().delete()
    seed_003.seed(django_apps, None)
    Provider.objects.filter(name="copilot").update(cassette_floor=2)
    Provider.objects.filter(name="venice").update(not_applicable={"cassettes": "no recordings allowed"})
    zai = Provider.objects.get(name="zai")
    Waiver.objects.create(provider=zai, obligation="cassettes", reason="later", expires_on=datetime.date(2099, 1, 1))
    served_only.drop_unserved(django_apps, None)
    assert names() == {*SERVED_PROVIDERS, "copilot", "venice", "zai"}


def test_reversing_it_registers_seed_003_s_others_again():
    Provider.objects.all().delete()
    seed_003.seed(django_apps, None)
    served_only.drop_unserved(django_apps, None)
    served_only.restore_unserved(django_apps, None)
    assert len(names()) == 23
    kimi = Provider.objects.get(name="kimi-for-coding")
    assert (kimi.onboarding, kimi.cassette_floor, kimi.required_tiers) == ("openai_compatible", 3, [])


def test_the_grid_says_what_counts_and_how_to_add_a_provider(admin_client):
    Provider.objects.all().delete()
    seed_003.seed(django_apps, None)
    served_only.drop_unserved(django_apps, None)
    html = admin_client.get("/coverage/").content.decode()
    assert "Only results a CI uploads count here." in html
    assert "Conversations played through this server's endpoints are runs" in html
    assert "come from JUnit XML uploaded to <code>POST /api/runs/{id}/junit</code>" in html
    assert "unit <code>provider_unit_checklist</code>" in html  # a tier's test-name pattern, from its TierRule
    assert "conformance <code>provider_streaming</code> or <code>provider_error_paths</code>" in html
    assert "<code>verify_&lt;provider&gt;_&lt;scenario&gt;.json</code>" in html
    assert "(openai, anthropic, gemini, azure, bedrock, vertex, cohere)" in html
    assert '<a href="/admin/runs_app/provider/add/">Register your own</a>' in html
    grid = html[html.index('<table class="coverage-grid">') :]
    assert grid.count('<th scope="row">') == 7 and "copilot" not in grid and "kimi" not in grid
    # The admin's grid says the same.
    assert (
        "Only results a CI uploads count here."
        in admin_client.get("/admin/runs_app/provider/coverage/").content.decode()
    )


def test_a_provider_a_team_registers_joins_the_grid(admin_client):
    response = admin_client.post(
        "/admin/runs_app/provider/add/",
        {
            "name": "acme-llm",
            "onboarding": "openai_compatible",
            "cassette_floor": "3",
            "required_scenarios": '["simple_text", "tool_call_single", "error_auth_401"]',
            "not_applicable": "{}",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    html = admin_client.get("/coverage/").content.decode()
    assert '<th scope="row">acme-llm<small>OpenAI-compatible preset</small></th>' in html


def test_a_user_who_is_not_staff_is_told_who_registers_providers(client):
    client.force_login(make_user("viewer"))
    html = client.get("/coverage/").content.decode()
    assert "A staff member registers a team's own" in html and "/admin/runs_app/provider/add/" not in html
