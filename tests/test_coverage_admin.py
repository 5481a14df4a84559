"""Providers and waivers in the admin as a staff user: the coverage columns, the grid mounted there, who waived."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from runs_app.coverage import admin as coverage_admin
from runs_app.models import Provider, Waiver
from tests.conftest import changelist, text

pytestmark = pytest.mark.django_db


# -- providers -------------------------------------------------------------------------------------------------------


def test_it_shows_in_the_coverage_columns_what_a_new_provider_still_misses(staff_client: Client) -> None:
    Provider.objects.create(name="acme", required_tiers=["unit"], cassette_floor=0)
    response = staff_client.get(changelist("runs_app_provider"))
    assert response.status_code == 200
    body = text(response)
    assert ">missing<" in body and ">not applicable<" in body
    for obligation in ("unit", "contract", "conformance", "e2e", "cassettes"):
        assert f'class="column-coverage_{obligation}"' in body
        assert f'href="/coverage/acme/{obligation}/"' in body


def test_it_computes_the_coverage_columns_once_per_page(staff_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def coverage_report() -> dict[str, Any]:
        calls.append(1)
        cells = {
            "unit": {"state": "passing", "reason": "12 tests <b>passing</b>", "commit": "abc"},
            "e2e": {"state": "waived", "reason": "no key", "expires_on": "2099-01-01"},
            "cassettes": {"state": "missing", "reason": "3 of 6 scenarios"},
        }
        providers = [{"name": "acme", "cells": cells}, {"name": "zeta", "cells": {}}]
        return {"obligations": ["unit", "e2e", "cassettes"], "providers": providers}

    monkeypatch.setattr(coverage_admin, "coverage_report", coverage_report)
    Provider.objects.create(name="acme")
    Provider.objects.create(name="zeta")
    body = text(staff_client.get(changelist("runs_app_provider")))
    assert len(calls) == 1
    assert ">passing<" in body and ">waived<" in body and ">missing<" in body
    assert "12 tests &lt;b&gt;passing&lt;/b&gt; · latest: abc" in body
    assert "3 of 6 scenarios" in body


def test_it_links_the_provider_list_to_the_coverage_grid_mounted_in_the_admin(staff_client: Client) -> None:
    url = reverse("admin:runs_app_coverage")
    assert url == "/admin/runs_app/provider/coverage/"
    assert staff_client.get(url).status_code == 200
    assert f'href="{url}"' in text(staff_client.get(changelist("runs_app_provider")))
    assert Client().get(url).status_code == 302  # staff only


def test_it_takes_a_providers_required_tiers_as_checkboxes(staff_client: Client) -> None:
    """A native provider owes every tier: the ones left unticked need their reason."""
    form = {
        "name": "acme",
        "onboarding": "native",
        "required_tiers": ["unit", "e2e"],
        "cassette_floor": 3,
        "required_scenarios": '["simple_text"]',
        "not_applicable": "{}",
    }
    refused = staff_client.post(reverse("admin:runs_app_provider_add"), form)
    assert refused.status_code == 200 and not Provider.objects.filter(name="acme").exists()
    assert "give the reason contract, conformance does not apply" in text(refused)
    reasons = '{"contract": "no public API contract", "conformance": "no streaming"}'
    staff_client.post(reverse("admin:runs_app_provider_add"), {**form, "not_applicable": reasons})
    provider = Provider.objects.get(name="acme")
    assert provider.required_tiers == ["unit", "e2e"] and provider.required_scenarios == ["simple_text"]
    assert provider.not_applicable == {"contract": "no public API contract", "conformance": "no streaming"}


def test_a_new_provider_starts_owing_every_tier(staff_client: Client) -> None:
    page = text(staff_client.get(reverse("admin:runs_app_provider_add")))
    for tier in ("unit", "contract", "conformance", "e2e"):
        assert re.search(rf'value="{tier}"[^>]*checked', page), tier


# -- waivers ---------------------------------------------------------------------------------------------------------


def test_it_records_who_created_a_waiver(staff_client: Client, staff: User) -> None:
    provider = Provider.objects.create(name="acme")
    response = staff_client.post(
        reverse("admin:runs_app_waiver_add"),
        {"provider": provider.pk, "obligation": "e2e", "reason": "no API key yet", "expires_on": "2099-01-01"},
    )
    assert response.status_code == 302
    waiver = Waiver.objects.get()
    assert waiver.created_by == staff and waiver.expires_on == dt.date(2099, 1, 1)
