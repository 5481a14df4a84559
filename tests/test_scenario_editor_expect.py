"""The editor's fields for a turn's ``expect`` block (the conversation the client sent): they round-trip through the
form, a block that checks nothing is left out, a bad regular expression is flagged beside its field as it is typed,
the raw tab names the field path, and saving stores the block."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client

from harnessweb.engine.schemas import Scenario
from scenarios_app.editor import binding, fields, mapping, raw
from scenarios_app.editor.preview import build_preview
from scenarios_app.models import Scenario as StoredScenario
from tests.conftest import make_user

HTMX = {"HTTP_HX_REQUEST": "true"}
EXPECT = {
    "last_message_contains": "21 °C",
    "last_message_regex": r"\d+ ?°C",
    "tool_calls_answered": True,
    "min_earlier_messages": 2,
    "system_prompt_must_include": ["You are a weather bot", "Answer in Celsius, always"],
}


def make_data(expect: dict[str, Any] | None = None) -> dict[str, Any]:
    turns = [
        {"turn": 1, "response": {"kind": "tool-call", "tool_calls": [{"tool_name": "get_weather"}]}},
        {"turn": 2, "response": {"kind": "text", "assistant_text": "21 °C."}, "expect": expect or EXPECT},
    ]
    return Scenario.model_validate({"id": "expect-form", "turns": turns}).canonical()


def make_post(data: dict[str, Any]) -> dict[str, str]:
    return fields.flatten(mapping.scenario_to_state(data))


def test_it_round_trips_the_block_through_the_form() -> None:
    canonical = make_data()
    post = make_post(canonical)
    assert post["turns-1-expect_last_message_contains"] == "21 °C"
    assert post["turns-1-expect_last_message_regex"] == r"\d+ ?°C"
    assert post["turns-1-expect_tool_calls_answered"] == "on"
    assert post["turns-1-expect_min_earlier_messages"] == "2"
    assert post["turns-1-expect_system_prompt_must_include"] == "You are a weather bot\nAnswer in Celsius, always"
    assert "turns-0-expect_tool_calls_answered" not in post and post["turns-0-expect_last_message_regex"] == ""
    scenario, errors = mapping.validate_state(fields.parse_form(post))
    assert errors == {} and scenario is not None and scenario.canonical() == canonical
    assert mapping.form_problem(canonical) == ""


def test_a_block_that_checks_nothing_is_left_out() -> None:
    post = make_post(make_data())
    post.update({f"turns-1-expect_{f}": "" for f in ("last_message_contains", "last_message_regex")})
    post.update({"turns-1-expect_min_earlier_messages": "", "turns-1-expect_system_prompt_must_include": ""})
    del post["turns-1-expect_tool_calls_answered"]
    scenario, errors = mapping.validate_state(fields.parse_form(post))
    assert errors == {} and scenario is not None and scenario.turns[1].expect is None
    # Written by hand, an empty block reads the same: one canonical form, which the form shows unchanged.
    empty = make_data({"tool_calls_answered": False})
    assert "expect" not in empty["turns"][1] and mapping.form_problem(empty) == ""


def test_it_puts_the_models_messages_beside_the_fields() -> None:
    post = make_post(make_data())
    post["turns-1-expect_last_message_regex"] = "(unclosed"
    post["turns-1-expect_min_earlier_messages"] = "-1"
    scenario, errors = mapping.validate_state(fields.parse_form(post))
    assert scenario is None
    assert errors["turns-1-expect_last_message_regex"] == [
        "Value error, not a valid regular expression: missing ), unterminated subpattern at position 0"
    ]
    assert errors["turns-1-expect_min_earlier_messages"] == ["Input should be greater than or equal to 1"]
    bound = binding.bind(fields.parse_form(post), errors)
    assert bound["turns"][1]["expect_last_message_regex"].errors


@pytest.mark.parametrize(
    ("loc", "name"),
    [
        (("turns", 1, "expect", "last_message_regex"), "turns-1-expect_last_message_regex"),
        (("turns", 0, "expect", "system_prompt_must_include", 1), "turns-0-expect_system_prompt_must_include"),
        (("turns", 3, "expect"), "turns-3-expect"),
    ],
)
def test_it_maps_the_error_locations_to_their_fields(loc: tuple[Any, ...], name: str) -> None:
    assert mapping.error_field(loc) == name


def test_the_raw_tab_names_the_field_path() -> None:
    data = make_data()
    data["turns"][1]["expect"]["last_message_regex"] = "[a-"
    data["turns"][1]["expect"]["last_user_contains"] = "x"
    assert sorted(raw.raw_errors(data)) == [
        "turns.1.expect.last_message_regex: Value error, not a valid regular expression: unterminated character set "
        "at position 0",
        "turns.1.expect.last_user_contains: Extra inputs are not permitted",
    ]


@pytest.mark.django_db
def test_the_editor_shows_validates_and_saves_the_block() -> None:
    client = Client()
    client.force_login(make_user("author"))
    page = client.get("/scenarios/new/").content.decode()
    assert 'name="turns-0-expect_last_message_regex"' in page
    post = {**make_post(make_data()), "original_id": "", "mode": "form"}
    post["turns-1-expect_last_message_regex"] = "°C<("
    response = client.post("/scenarios/editor/validate/", post, **HTMX).content.decode()
    match = re.search(r'id="err-turns-1-expect_last_message_regex"[^>]*>(.*?)</div>', response, re.S)
    assert match is not None and "not a valid regular expression" in html.unescape(match.group(1))
    assert "1 problem: nothing can be saved" in response
    assert client.post("/scenarios/editor/save/", post).status_code == 422
    assert not StoredScenario.objects.filter(id="expect-form").exists()
    post["turns-1-expect_last_message_regex"] = r"\d+ ?°C"
    assert client.post("/scenarios/editor/save/", post).status_code == 302
    assert StoredScenario.objects.get(id="expect-form").data["turns"][1]["expect"] == EXPECT
    page = client.get("/scenarios/expect-form/").content.decode()
    assert 'name="turns-1-expect_min_earlier_messages" value="2"' in page
    assert 'name="turns-1-expect_tool_calls_answered" checked' in page


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_the_preview_sends_a_conversation_that_meets_the_block(protocol: str) -> None:
    expect = {"last_message_contains": "21 °C", "min_earlier_messages": 5, "system_prompt_must_include": ["bot"]}
    scenario = Scenario.model_validate(make_data(expect))
    shown = build_preview(scenario, 2, protocol)
    assert shown.problem == ""
    assert "21 °C." in shown.sse
    # A pattern is the author's to meet: the preview says it is not.
    unmet = Scenario.model_validate(make_data({"last_message_regex": "^Fahrenheit"}))
    assert build_preview(unmet, 2, protocol).problem.startswith("Expected the last user or tool message to match")
