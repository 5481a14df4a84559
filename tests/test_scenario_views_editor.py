"""The scenario editor through the Django test client, as a logged-in user: the form, its validation as you
type, saving, and the raw JSON/YAML tab."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from django.contrib.auth.models import User
from django.test import Client

from scenarios_app.editor import fields, raw
from scenarios_app.models import Scenario, ScenarioVersion
from tests.conftest import make_scenario
from tests.scenario_views_helpers import HTMX, editor_post, error_slot, make_tool_scenario, new_data
from tests.scenario_views_helpers import client_fixture as client_fixture  # a fixture: pytest finds it by name
from tests.scenario_views_helpers import user_fixture as user_fixture  # a fixture: pytest finds it by name

pytestmark = pytest.mark.django_db


# -- the editor ---------------------------------------------------------------------------------------------------


def test_it_opens_a_stored_scenario_in_the_form_with_its_values(client: Client) -> None:
    make_tool_scenario()

    response = client.get("/scenarios/weather/")

    assert response.status_code == 200
    assert response.context["mode"] == "form"
    content = response.content.decode()
    assert 'name="turns-0-tool_calls-0-tool_name" value="get_weather"' in content
    assert 'name="id" value="weather"' in content
    assert "readonly" in content
    assert 'id="preview-sse"' in content


def test_it_opens_a_scenario_the_form_cannot_show_on_the_raw_tab(client: Client) -> None:
    make_scenario("odd", tags=["a,b"])

    response = client.get("/scenarios/odd/")

    assert response.context["mode"] == "raw"
    assert "list item" in response.context["notice"]
    assert json.loads(response.context["raw_text"])["tags"] == ["a,b"]


def test_it_opens_stored_data_that_no_longer_validates_as_raw_text_with_the_errors(client: Client) -> None:
    make_scenario("stale")
    Scenario.objects.filter(id="stale").update(data={"id": "stale", "turns": [{"turn": 1}]})  # bypassing save()

    response = client.get("/scenarios/stale/")

    assert response.status_code == 200
    assert response.context["mode"] == "raw"
    assert response.context["raw_errors"] == ["turns.0.response: Field required"]
    assert "does not validate" in response.context["notice"]


@pytest.mark.backends
def test_it_refuses_text_the_database_cannot_store_beside_its_field(client: Client) -> None:
    post = editor_post(new_data(text="nul \x00 here"))

    response = client.post("/scenarios/editor/save/", post, **HTMX)

    assert response.status_code == 422
    assert "NUL" in error_slot(response.content, "turns-0-assistant_text")
    assert not Scenario.objects.exists()


def test_it_refuses_raw_text_that_renames_a_stored_scenario(client: Client) -> None:
    make_scenario("keep")

    response = client.post(
        "/scenarios/editor/save/",
        {"original_id": "keep", "mode": "raw", "raw_format": "json", "raw": json.dumps(new_data("other"))},
        **HTMX,
    )

    assert response.status_code == 422
    assert "to make 'other' from it, clone it" in response.context["raw_errors"][0]
    assert not Scenario.objects.filter(id="other").exists()


def test_it_validates_as_you_type_with_errors_beside_their_fields(client: Client) -> None:
    post = editor_post(new_data())
    post["id"] = "has space"
    post["turns-0-expected_temperature"] = "hot"

    response = client.post("/scenarios/editor/validate/", post, **HTMX)

    assert response.status_code == 200
    assert "String should match pattern" in error_slot(response.content, "id")
    assert error_slot(response.content, "turns-0-expected_temperature") == (
        "Input should be a valid number, unable to parse string as a number"
    )
    assert error_slot(response.content, "description") == ""  # sent empty, so a fixed error clears
    assert 'id="err-id" hx-swap-oob="true"' in response.content.decode()
    assert "2 problems" in response.content.decode()
    assert not Scenario.objects.exists()


def test_it_reports_a_valid_form_and_whether_it_differs_from_the_stored_one(client: Client) -> None:
    data = make_tool_scenario().canonical()

    same = client.post("/scenarios/editor/validate/", editor_post(data, "weather"), **HTMX)
    changed = client.post("/scenarios/editor/validate/", editor_post({**data, "description": "new"}, "weather"), **HTMX)

    assert "Valid · no unsaved changes" in same.content.decode()
    assert "Valid · unsaved changes" in changed.content.decode()


def test_it_says_beside_the_id_that_a_new_scenario_id_is_taken(client: Client) -> None:
    make_scenario("taken")

    response = client.post("/scenarios/editor/validate/", editor_post(new_data("taken")), **HTMX)

    assert "already exists" in error_slot(response.content, "id")


def test_it_saves_a_valid_new_scenario_as_version_one(client: Client, user: User) -> None:
    response = client.post("/scenarios/editor/save/", editor_post(new_data(), version_note="first draft"))

    assert response.status_code == 302
    assert response["Location"] == "/scenarios/fresh/"
    row = Scenario.objects.get(id="fresh")
    assert row.data == new_data()
    version = row.versions.get()
    assert (version.number, version.saved_by, version.note, version.data) == (1, user, "first draft", row.data)


def test_it_answers_an_htmx_save_with_a_redirect_header(client: Client) -> None:
    response = client.post("/scenarios/editor/save/", editor_post(new_data()), **HTMX)

    assert response.status_code == 200
    assert response["HX-Redirect"] == "/scenarios/fresh/"


def test_it_refuses_an_invalid_save_with_the_errors_and_writes_nothing(client: Client) -> None:
    post = editor_post(new_data())
    post["turns-0-kind"] = "tool-call"  # with a blank tool call row

    partial = client.post("/scenarios/editor/save/", post, **HTMX)
    page = client.post("/scenarios/editor/save/", post)

    assert partial.status_code == 422
    assert partial.templates[0].name == "scenarios_app/editor_panel.html"
    assert error_slot(partial.content, "turns-0-tool_calls-0-tool_name") == "String should have at least 1 character"
    assert page.status_code == 422
    assert b"<html" in page.content
    assert not Scenario.objects.exists()
    assert not ScenarioVersion.objects.exists()


def test_it_keeps_the_stored_id_when_editing(client: Client) -> None:
    data = make_tool_scenario().canonical()
    post = editor_post({**data, "description": "edited"}, "weather")
    post["id"] = "renamed"  # the field is read-only; cloning makes another id

    client.post("/scenarios/editor/save/", post)

    assert Scenario.objects.get(id="weather").description == "edited"
    assert not Scenario.objects.filter(id="renamed").exists()


def test_it_refuses_to_overwrite_a_save_made_elsewhere(client: Client) -> None:
    data = make_tool_scenario().canonical()
    opened = Scenario.objects.get(id="weather").revision
    make_tool_scenario(description="saved by someone else")

    response = client.post(
        "/scenarios/editor/save/", editor_post({**data, "description": "mine"}, "weather", base_revision=str(opened))
    )

    assert response.status_code == 422
    assert "saved elsewhere" in error_slot(response.content, fields.ALL)
    assert Scenario.objects.get(id="weather").description == "saved by someone else"


def test_it_edits_turns_without_losing_what_was_typed(client: Client) -> None:
    data = make_tool_scenario().canonical()
    post = editor_post(data, "weather", op="move_down", turn="0")
    post["turns-0-assistant_text"] = "typed but not saved"

    response = client.post("/scenarios/editor/turns/", post, **HTMX)

    form = response.context["form"]
    assert [t["kind"].value for t in form["turns"]] == ["text", "tool-call"]
    assert form["turns"][1]["assistant_text"].value == "typed but not saved"
    assert [t["turn"].value for t in form["turns"]] == ["1", "2"]
    assert Scenario.objects.get(id="weather").data == data


def test_it_autofocuses_the_new_id_on_the_page_but_not_in_a_re_rendered_panel(client: Client) -> None:
    page = client.get("/scenarios/new/")
    panel = client.post("/scenarios/editor/turns/", editor_post(new_data(), op="add_turn"), **HTMX)

    assert re.search(r'<input id="f-id"[^>]*autofocus', page.content.decode())
    assert 'id="f-id"' in panel.content.decode()
    assert "autofocus" not in panel.content.decode()


def test_it_refuses_an_unknown_turn_operation(client: Client) -> None:
    response = client.post("/scenarios/editor/turns/", editor_post(new_data(), op="explode"), **HTMX)

    assert response.status_code == 400


# -- the raw tab --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_it_round_trips_the_form_through_the_raw_tab(client: Client, fmt: str) -> None:
    data = make_tool_scenario().canonical()

    to_raw = client.post("/scenarios/editor/panel/", editor_post(data, "weather", to=fmt), **HTMX)
    raw_text = to_raw.context["raw_text"]
    assert raw.from_raw(raw_text, fmt) == data
    assert to_raw.context["mode"] == "raw"

    edited = raw.to_raw({**data, "description": "from raw"}, fmt)
    back = client.post(
        "/scenarios/editor/panel/",
        {"original_id": "weather", "mode": "raw", "raw_format": fmt, "raw": edited, "to": "form"},
        **HTMX,
    )
    assert back.context["mode"] == "form"
    assert back.context["form"]["description"].value == "from raw"
    assert 'name="turns-0-tool_calls-0-tool_name" value="get_weather"' in back.content.decode()


def test_it_switches_raw_json_to_yaml(client: Client) -> None:
    data = new_data()

    response = client.post(
        "/scenarios/editor/panel/",
        {"mode": "raw", "raw_format": "json", "raw": raw.to_raw(data, "json"), "to": "yaml"},
        **HTMX,
    )

    assert response.context["raw_format"] == "yaml"
    assert yaml.safe_load(response.context["raw_text"]) == data


def test_it_keeps_invalid_raw_text_with_its_line_and_field_errors(client: Client) -> None:
    broken = client.post(
        "/scenarios/editor/panel/",
        {"mode": "raw", "raw_format": "json", "raw": '{"id": "x",\n  "turns": [}', "to": "form"},
        **HTMX,
    )
    no_answer = "id: x\nturns:\n- turn: 1\n  response: {kind: text}\n"
    invalid = client.post(
        "/scenarios/editor/panel/", {"mode": "raw", "raw_format": "yaml", "raw": no_answer, "to": "form"}, **HTMX
    )

    assert broken.context["mode"] == "raw"
    assert "line 2, column 13: invalid JSON" in broken.context["raw_errors"][0]
    assert broken.context["raw_text"] == '{"id": "x",\n  "turns": [}'
    assert invalid.context["mode"] == "raw"
    assert invalid.context["raw_errors"] == ["turns.0.response.text.assistant_text: Field required"]


def test_it_validates_and_saves_from_the_raw_tab(client: Client) -> None:
    yaml_text = raw.to_raw(new_data("from-yaml"), "yaml")
    validation = client.post(
        "/scenarios/editor/validate/", {"mode": "raw", "raw_format": "yaml", "raw": "id: [\n"}, **HTMX
    )
    saved = client.post("/scenarios/editor/save/", {"mode": "raw", "raw_format": "yaml", "raw": yaml_text})

    assert 'id="raw-errors" hx-swap-oob="true"' in validation.content.decode()
    assert "invalid YAML" in validation.content.decode()
    assert saved.status_code == 302
    assert Scenario.objects.get(id="from-yaml").data == new_data("from-yaml")
