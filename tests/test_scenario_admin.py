"""Scenarios in the admin as a staff user: stored from their JSON data, validated by the schema, the id kept."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from scenarios_app.models import Scenario
from tests.conftest import change_url, changelist, text

pytestmark = pytest.mark.django_db


SCENARIO = {
    "id": "hello",
    "description": "says hello",
    "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hi"}}],
}


def test_it_creates_a_scenario_from_data_with_the_id_inside(staff_client: Client) -> None:
    response = staff_client.post(reverse("admin:scenarios_app_scenario_add"), {"data": json.dumps(SCENARIO)})
    assert response.status_code == 302
    scenario = Scenario.objects.get()
    assert scenario.id == "hello" and scenario.description == "says hello"
    listing = text(staff_client.get(changelist("scenarios_app_scenario")))
    assert "says hello" in listing
    assert response.status_code == 302


def test_it_refuses_invalid_data_naming_the_field(staff_client: Client) -> None:
    bad = {**SCENARIO, "turns": [{"turn": 1, "response": {"kind": "text"}}]}
    response = staff_client.post(reverse("admin:scenarios_app_scenario_add"), {"data": json.dumps(bad)})
    assert response.status_code == 200
    assert "turns.0.response.text.assistant_text: Field required" in text(response)
    assert not Scenario.objects.exists()


def test_it_refuses_malformed_json(staff_client: Client) -> None:
    response = staff_client.post(reverse("admin:scenarios_app_scenario_add"), {"data": '{"id": "x",'})
    assert "Not valid JSON" in text(response) and "line 1" in text(response)
    assert not Scenario.objects.exists()


def test_it_validates_an_edit_and_keeps_the_id(staff_client: Client) -> None:
    staff_client.post(reverse("admin:scenarios_app_scenario_add"), {"data": json.dumps(SCENARIO)})
    url = change_url(Scenario.objects.get())
    page = text(staff_client.get(url))
    assert "&quot;assistant_text&quot;: &quot;Hi&quot;" in page  # pretty JSON in the textarea
    renamed = staff_client.post(url, {"data": json.dumps({**SCENARIO, "id": "other"})})
    assert "this scenario is &#x27;hello&#x27;" in text(renamed)
    invalid = staff_client.post(url, {"data": json.dumps({**SCENARIO, "priority": "high"})})
    assert "priority: Input should be a valid integer" in text(invalid)
    changed = staff_client.post(url, {"data": json.dumps({**SCENARIO, "description": "updated"})})
    assert changed.status_code == 302
    assert Scenario.objects.get().description == "updated" and Scenario.objects.count() == 1


def test_it_refuses_a_duplicate_id_on_add(staff_client: Client) -> None:
    staff_client.post(reverse("admin:scenarios_app_scenario_add"), {"data": json.dumps(SCENARIO)})
    response = staff_client.post(
        reverse("admin:scenarios_app_scenario_add"), {"data": json.dumps({**SCENARIO, "description": "x"})}
    )
    assert "already exists" in text(response)
    assert Scenario.objects.get().description == "says hello"
