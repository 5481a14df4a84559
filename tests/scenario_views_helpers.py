"""The logged-in author and the builders shared by the scenario page tests (tests/test_scenario_views_*.py)."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from harnessweb.engine.schemas import Scenario as ScenarioSchema
from scenarios_app.editor import fields, mapping
from tests.conftest import make_scenario, make_user

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(name="user")
def user_fixture() -> User:
    return make_user("author")


@pytest.fixture(name="client")
def client_fixture(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def make_tool_scenario(scenario_id: str = "weather", **fields: Any) -> ScenarioSchema:
    """A stored two-turn scenario: a tool call with expectations, then a text answer after one rate limit."""
    return make_scenario(
        scenario_id,
        turns=[
            {
                "turn": 1,
                "expected_tools": ["get_weather"],
                "expected_temperature": 0.2,
                "response": {
                    "kind": "tool-call",
                    "assistant_text": "Checking.",
                    "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Paris"}}],
                },
            },
            {
                "turn": 2,
                "failures_before_success": 1,
                "failure_status": "rate_limit",
                "failure_retry_after_ms": 200,
                "response": {"kind": "text", "assistant_text": "Sunny.", "reasoning": [{"text": "It said sunny."}]},
            },
        ],
        **fields,
    )


def editor_post(data: dict[str, Any], original_id: str = "", **extra: str) -> dict[str, str]:
    """The editor form's post for scenario data (form tab)."""
    post = fields.flatten(mapping.scenario_to_state(data))
    post.update(original_id=original_id, mode="form", **extra)
    return post


def new_data(scenario_id: str = "fresh", text: str = "Hello.") -> dict[str, Any]:
    return ScenarioSchema.model_validate(
        {"id": scenario_id, "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": text}}]}
    ).canonical()


def error_slot(content: bytes, name: str) -> str:
    """The text of a field's error slot in a rendered page or partial."""
    match = re.search(rf'<div class="field-errors" id="err-{re.escape(name)}"[^>]*>(.*?)</div>', content.decode(), re.S)
    assert match, f"no error slot for {name}"
    return html.unescape(re.sub(r"<[^>]+>", " ", match.group(1))).strip()
