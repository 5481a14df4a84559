"""The editor's fields for the key a scenario expects (its fingerprint and place) and a turn's failure scope: they
round-trip through the form, the model's errors land beside them while typing, and the raw tab names the field."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client

from harnessweb.engine import keys
from harnessweb.engine.schemas import Scenario
from scenarios_app.editor import binding, fields, mapping, raw
from scenarios_app.models import Scenario as StoredScenario
from tests.conftest import make_scenario, make_user

FP = keys.fingerprint("sk-editor-key")
HTMX = {"HTTP_HX_REQUEST": "true"}


def make_data(**fields: Any) -> dict[str, Any]:
    turn = {
        "turn": 1,
        "failures_before_success": 2,
        "failure_status": "rate_limit",
        "failure_scope": {"protocol": ["openai", "azure"], "model": ["model-a"], "key_fingerprint": [FP]},
        "response": {"kind": "text", "assistant_text": "Scoped."},
    }
    data = {"id": "keyed-form", "expect_key": {"fingerprint": FP, "place": "authorization"}, "turns": [turn], **fields}
    return Scenario.model_validate(data).canonical()


def make_post(data: dict[str, Any]) -> dict[str, str]:
    return fields.flatten(mapping.scenario_to_state(data))


def test_it_round_trips_the_expected_key_and_the_failure_scope_through_the_form() -> None:
    canonical = make_data()
    post = make_post(canonical)
    assert post["expect_key_fingerprint"] == FP and post["expect_key_place"] == "authorization"
    assert post["turns-0-failure_scope_protocol"] == "openai, azure"
    assert post["turns-0-failure_scope_model"] == "model-a"
    assert post["turns-0-failure_scope_key_fingerprint"] == FP
    scenario, errors = mapping.validate_state(fields.parse_form(post))
    assert errors == {} and scenario is not None and scenario.canonical() == canonical
    assert mapping.form_problem(canonical) == ""


def test_empty_fields_leave_both_out() -> None:
    post = make_post(make_data())
    post.update({"expect_key_fingerprint": "", "expect_key_place": ""})
    post.update({f"turns-0-failure_scope_{f}": "" for f in fields.SCOPE_FIELDS})
    scenario, errors = mapping.validate_state(fields.parse_form(post))
    assert errors == {} and scenario is not None
    assert scenario.expect_key is None and scenario.turns[0].failure_scope is None


def test_it_puts_the_models_messages_beside_the_new_fields() -> None:
    post = make_post(make_data())
    post["expect_key_fingerprint"] = "sk-a-pasted-key"
    post["turns-0-failure_scope_protocol"] = "OpenAI"
    post["turns-0-failure_scope_key_fingerprint"] = f"{FP}, nope"
    scenario, errors = mapping.validate_state(fields.parse_form(post))
    assert scenario is None
    assert errors["expect_key_fingerprint"][0].startswith("Value error, must be a key's fingerprint")
    assert errors["turns-0-failure_scope_protocol"] == [
        "Value error, 'OpenAI' is no protocol name (openai, anthropic, responses, gemini, azure, …)"
    ]
    assert errors["turns-0-failure_scope_key_fingerprint"][0].startswith("Value error, must be a key's fingerprint")
    assert all("sk-a-pasted-key" not in m for messages in errors.values() for m in messages)
    bound = binding.bind(fields.parse_form(post), errors)
    assert bound["expect_key_fingerprint"].errors and bound["turns"][0]["failure_scope_protocol"].errors


def test_a_place_without_a_fingerprint_asks_for_the_fingerprint() -> None:
    post = make_post(make_data())
    post["expect_key_fingerprint"] = ""
    _, errors = mapping.validate_state(fields.parse_form(post))
    assert list(errors) == ["expect_key_fingerprint"]


@pytest.mark.parametrize(
    ("loc", "name"),
    [
        (("expect_key", "fingerprint"), "expect_key_fingerprint"),
        (("expect_key", "place"), "expect_key_place"),
        (("expect_key",), "expect_key_fingerprint"),
        (("turns", 0, "failure_scope", "model", 0), "turns-0-failure_scope_model"),
        (("turns", 2, "failure_scope", "protocol"), "turns-2-failure_scope_protocol"),
    ],
)
def test_it_maps_the_new_error_locations_to_their_fields(loc: tuple[Any, ...], name: str) -> None:
    assert mapping.error_field(loc) == name


def test_the_raw_tab_names_the_field() -> None:
    data = make_data()
    data["turns"][0]["failure_scope"]["region"] = ["eu"]
    data["expect_key"]["place"] = "cookie"
    assert sorted(raw.raw_errors(data)) == [
        "expect_key.place: Input should be 'x-api-key', 'authorization', 'api-key', 'x-goog-api-key' or '?key'",
        "turns.0.failure_scope.region: Extra inputs are not permitted",
    ]


@pytest.mark.django_db
def test_the_editor_shows_the_fields_and_validates_them_as_you_type() -> None:
    client = Client()
    client.force_login(make_user("author"))
    make_scenario("keyed-form", make_data()["turns"], expect_key={"fingerprint": FP})
    page = client.get("/scenarios/keyed-form/").content.decode()
    assert f'name="expect_key_fingerprint" value="{FP}"' in page
    assert 'name="turns-0-failure_scope_model" value="model-a"' in page
    assert '<option value="?key">?key</option>' in page
    assert "rate_limit × 2, scoped" in page
    post = {**make_post(make_data()), "original_id": "keyed-form", "mode": "form", "expect_key_fingerprint": "abc"}
    response = client.post("/scenarios/editor/validate/", post, **HTMX)
    match = re.search(r'id="err-expect_key_fingerprint"[^>]*>(.*?)</div>', response.content.decode(), re.S)
    assert match is not None and "must be a key's fingerprint" in html.unescape(match.group(1))
    assert StoredScenario.objects.get(id="keyed-form").data["expect_key"] == {"fingerprint": FP}
