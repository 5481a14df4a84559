"""The editor's field for a ``structured`` turn's data: a JSON textarea that round-trips through the form, shows for
a structured turn only, flags bad JSON and a missing value beside itself as it is typed (in a real browser too),
saves the data as JSON, and previews it as the JSON text."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client
from playwright.sync_api import expect

from harnessweb.engine.schemas import Scenario
from scenarios_app.editor import fields, mapping
from scenarios_app.editor.preview import build_preview
from scenarios_app.models import Scenario as StoredScenario
from tests.conftest import make_user

HTMX = {"HTTP_HX_REQUEST": "true"}
DATA = {"name": "Alice", "age": 30, "languages": ["en", "nb"], "nickname": None}


def make_data() -> dict[str, Any]:
    turns = [{"turn": 1, "response": {"kind": "structured", "data": DATA}}]
    return Scenario.model_validate({"id": "structured-form", "turns": turns}).canonical()


def make_post(data: dict[str, Any]) -> dict[str, str]:
    return fields.flatten(mapping.scenario_to_state(data))


def field_error(page: str, name: str) -> str:
    match = re.search(rf'id="err-{name}"[^>]*>(.*?)</div>', page, re.S)
    assert match is not None, f"no error slot for {name}"
    return html.unescape(match.group(1))


def test_it_round_trips_the_data_through_the_form() -> None:
    canonical = make_data()
    post = make_post(canonical)
    assert post["turns-0-kind"] == "structured" and '"nickname": null' in post["turns-0-data"]
    scenario, errors = mapping.validate_state(fields.parse_form(post))
    assert errors == {} and scenario is not None and scenario.canonical() == canonical
    assert mapping.form_problem(canonical) == ""


def test_it_leaves_the_other_kinds_fields_out_and_the_data_out_of_theirs() -> None:
    post = make_post(make_data())
    post["turns-0-assistant_text"] = "left over from a text turn"
    scenario, errors = mapping.validate_state(fields.parse_form(post))
    assert errors == {} and scenario is not None and scenario.turns[0].response.data == DATA
    post["turns-0-kind"] = "text"
    scenario, errors = mapping.validate_state(fields.parse_form(post))
    assert errors == {} and scenario is not None and scenario.turns[0].response.kind == "text"


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ('{"name": ', "Invalid JSON: Expecting value (line 1, column 10)"),
        ("", "Field required"),
        ('"Alice"', "Value error, must be a JSON object (or an array), the answer's data"),
    ],
)
def test_it_puts_the_problems_beside_the_data_field(typed: str, message: str) -> None:
    post = {**make_post(make_data()), "turns-0-data": typed}
    scenario, errors = mapping.validate_state(fields.parse_form(post))
    assert scenario is None and errors == {"turns-0-data": [message]}


@pytest.mark.django_db
def test_the_editor_shows_validates_and_saves_the_data() -> None:
    client = Client()
    client.force_login(make_user("author"))
    page = client.get("/scenarios/new/").content.decode()
    assert '<option value="structured">structured</option>' in page and 'name="turns-0-data"' in page
    post = {**make_post(make_data()), "original_id": "", "mode": "form"}
    post["turns-0-data"] = '{"name": "Alice",}'
    response = client.post("/scenarios/editor/validate/", post, **HTMX).content.decode()
    assert "Invalid JSON" in field_error(response, "turns-0-data")
    assert "1 problem: nothing can be saved" in response
    assert client.post("/scenarios/editor/save/", post).status_code == 422
    post["turns-0-data"] = '{"name": "Alice", "age": 30}'
    assert client.post("/scenarios/editor/save/", post).status_code == 302
    stored = StoredScenario.objects.get(id="structured-form").data["turns"][0]["response"]
    assert stored == {"kind": "structured", "data": {"name": "Alice", "age": 30}, "reasoning": []}
    page = client.get("/scenarios/structured-form/").content.decode()
    assert '<option value="structured" selected>' in page and "&quot;age&quot;: 30" in page


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_the_preview_shows_the_data_as_the_json_text(protocol: str) -> None:
    shown = build_preview(Scenario.model_validate(make_data()), 1, protocol)
    assert shown.problem == "" and '\\"name\\": \\"Alice\\"' in shown.sse


def test_the_data_field_shows_for_a_structured_turn_and_is_checked_as_typed(
    admin_page: Any, harness_server: Any
) -> None:
    page = admin_page
    page.goto(f"{harness_server.url}/scenarios/new/")
    page.fill("#f-id", "browser-structured")
    expect(page.locator("#f-turns-0-data")).to_be_hidden()
    page.select_option("#f-turns-0-kind", "structured")
    expect(page.locator("#f-turns-0-data")).to_be_visible()
    expect(page.locator("#f-turns-0-assistant_text")).to_be_hidden()
    page.fill("#f-turns-0-data", '{"name": }')
    expect(page.locator("#err-turns-0-data")).to_contain_text("Invalid JSON: Expecting value (line 1, column 10)")
    page.fill("#f-turns-0-data", '{"name": "Alice"}')
    expect(page.locator("#err-turns-0-data")).to_be_empty()
    expect(page.locator("#validation")).to_contain_text("Valid")
