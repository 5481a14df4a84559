"""The scenario editor's preview: the bytes the encoder sends for the turn being edited."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario as ScenarioSchema
from harnessweb.engine.wire import anthropic as anthropic_wire
from harnessweb.engine.wire import openai as openai_wire
from scenarios_app.editor.preview import try_body
from tests.scenario_views_helpers import HTMX, editor_post, make_tool_scenario, new_data
from tests.scenario_views_helpers import client_fixture as client_fixture  # a fixture: pytest finds it by name
from tests.scenario_views_helpers import user_fixture as user_fixture  # a fixture: pytest finds it by name

pytestmark = pytest.mark.django_db


# -- preview ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("protocol", "wire"), [("openai", openai_wire), ("anthropic", anthropic_wire)])
def test_it_previews_exactly_the_bytes_the_encoder_sends(client: Client, protocol: str, wire: Any) -> None:
    scenario = make_tool_scenario()
    post = editor_post(scenario.canonical(), "weather", preview_turn="1", preview_protocol=protocol)

    response = client.post("/scenarios/editor/preview/", post, **HTMX)

    request = wire.parse_request(try_body(scenario, 1, protocol))
    decision = decide(
        Catalog.build([scenario]), request, header_scenario="weather", signature_key=settings.HARNESS_SIGNATURE_KEY
    )
    expected = wire.encode_reply(decision.reply, request).body.decode()
    shown = re.search(r'<pre class="sse" id="preview-sse">(.*?)</pre>', response.content.decode(), re.S).group(1)
    assert html.unescape(shown) == expected
    assert decision.problem == ""  # the built request meets the turn's expectations
    assert "get_weather" in expected
    assert b"data-try-it" in response.content


def test_it_builds_a_request_that_meets_the_turns_expectations() -> None:
    scenario = ScenarioSchema.model_validate(
        {
            "id": "strict",
            "system_prompt_must_include": ["You are strict"],
            "turns": [
                {"turn": 1, "response": {"kind": "text", "assistant_text": "one"}},
                {
                    "turn": 2,
                    "expected_tools": ["a", "b"],
                    "expected_temperature": 0.3,
                    "expected_top_p": 0.9,
                    "expected_reasoning": "enabled",
                    "response": {"kind": "text", "assistant_text": "two"},
                },
            ],
        }
    )

    for protocol, wire in (("openai", openai_wire), ("anthropic", anthropic_wire)):
        body = try_body(scenario, 2, protocol)
        request = wire.parse_request(body)
        decision = decide(Catalog.build([scenario]), request)
        assert body["stream"] is True
        assert request.turn == 2
        assert request.first_user == "strict"
        assert decision.problem == ""
        assert decision.reply.text == "two"


def test_it_previews_unsaved_edits_and_the_simulated_failure_first(client: Client) -> None:
    data = make_tool_scenario().canonical()
    post = editor_post(data, "weather", preview_turn="2", preview_protocol="openai")
    post["turns-1-assistant_text"] = "Edited answer."

    response = client.post("/scenarios/editor/preview/", post, **HTMX)

    content = html.unescape(response.content.decode())
    assert "Edited answer." in content
    assert "from your unsaved edits" in content
    assert "HTTP 429" in content
    assert "retry-after-ms: 200" in content


def test_it_previews_nothing_while_the_form_is_invalid(client: Client) -> None:
    post = editor_post(new_data(), preview_turn="1")
    post["id"] = ""

    response = client.post("/scenarios/editor/preview/", post, **HTMX)

    assert response.context["invalid"] is True
    assert b"preview-sse" not in response.content
