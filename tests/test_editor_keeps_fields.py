"""The editor form keeps every field of a scenario, shown or not: a scenario saved through the form unchanged is
stored unchanged. The sample sets every field the schema has (checked by walking the schema), so a field added later
without editor support fails here."""

from __future__ import annotations

import base64
import struct
import zlib
from html.parser import HTMLParser
from typing import Any, get_args

import pytest
from django.test import Client
from pydantic import BaseModel

from harnessweb.engine import schemas
from scenarios_app.editor import binding, fields, kept, mapping
from scenarios_app.models import Scenario
from tests.conftest import make_scenario
from tests.scenario_views_helpers import HTMX, editor_post, error_slot
from tests.scenario_views_helpers import client_fixture as client_fixture  # a fixture: pytest finds it by name
from tests.scenario_views_helpers import user_fixture as user_fixture  # a fixture: pytest finds it by name

pytestmark = pytest.mark.django_db

FINGERPRINT = "0123456789ab"


def _png() -> str:
    """A 1×1 PNG as base64: a turn's image fixture."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    data = (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\x00")) + chunk(b"IEND", b"")
    )
    return base64.b64encode(data).decode()


AUDIO = base64.b64encode(bytes(range(16))).decode()


def _extras(tag: str) -> dict[str, Any]:
    """What every response kind can carry besides its own answer."""
    return {
        "reasoning": [
            {"text": f"{tag} thinking", "signature": f"sig-{tag}", "provider_metadata": {"openai": {"id": tag}}},
            {"text": "", "redacted_data": f"opaque-{tag}"},
        ],
        "provider_metadata": {"openai": {"item": tag}},
    }


# Every turn field, on the first turn; the other turns cover the other response kinds.
FULL_TURN: dict[str, Any] = {
    "turn": 1,
    "response": {"kind": "text", "assistant_text": "Hi.", **_extras("text")},
    "expected_tools": ["search"],
    "allow_missing_tools": True,
    "ignore_tool_choice": True,
    "expected_temperature": 0.2,
    "expected_top_p": 0.9,
    "expected_reasoning": "enabled",
    "expect": {
        "last_message_contains": "weather",
        "last_message_regex": "wea+ther",
        "tool_calls_answered": True,
        "min_earlier_messages": 2,
        "system_prompt_must_include": ["Be brief."],
    },
    "failures_before_success": 1,
    "failure_status": "rate_limit",
    "failure_throws": True,
    "failure_http_status": 429,
    "failure_message": "Slow down.",
    "failure_retryable": False,
    "failure_retry_after_ms": 100,
    "failure_error": {"code": "busy"},
    "failure_scope": {"protocol": ["openai"], "model": ["gpt-x"], "key_fingerprint": [FINGERPRINT]},
    "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
    "finish_reason": "stop",
    "audio": AUDIO,
    "transcript": "Hi.",
    "input_transcript": "Hello?",
    "image": _png(),
}
FULL: dict[str, Any] = {
    "id": "every-field",
    "description": "Sets every field.",
    "tags": ["a", "b"],
    "system_prompt_must_include": ["Be brief."],
    "pacing": {"chunk_words": 3, "interval_ms": 10},
    "match": {
        "model": "gpt-x",
        "system_contains": "brief",
        "first_user_contains": "hi",
        "first_user_regex": "^hi",
        "last_user_contains": "bye",
        "last_user_regex": "bye$",
        "tools_include": ["search"],
    },
    "priority": 2,
    "turns": [
        FULL_TURN,
        {
            "turn": 2,
            "response": {
                "kind": "tool-call",
                "assistant_text": "Looking.",
                "tool_calls": [
                    {"tool_name": "search", "arguments": {"q": "x"}, "call_id": "call_1", "assistant_text": "On it."}
                ],
                **_extras("tool"),
            },
        },
        {
            "turn": 3,
            "response": {
                "kind": "final-report",
                "report_content": "Done.",
                "report_format": "html",
                "report_content_json": {"ok": True},
                "status": "partial",
                "assistant_text": "Report:",
                **_extras("report"),
            },
        },
        {"turn": 4, "response": {"kind": "structured", "data": {"answer": 42}, **_extras("data")}},
    ],
    "embeddings": [{"input": "a", "vector": [0.1, 0.2]}, {"input": "b", "same_as": "a"}],
    "cassette": "recorded",
    "require_key": True,
    "expect_key": {"fingerprint": FINGERPRINT, "place": "x-api-key"},
    "default_usage": "seed",
    "mcp": {"servers": {"docs": {"tools": [{"name": "search"}]}}, "closed_world": True},
    "batch": {"status": "expired", "message": "Too late.", "answered": 1},
    "rate_limit": {"requests": 5},
}

RESPONSES = (schemas.TextResponse, schemas.ToolCallResponse, schemas.FinalReportResponse, schemas.StructuredResponse)
# The form's fields at the levels it maps one by one; the rest of a level is kept whole (scenarios_app.editor.kept).
SHOWN: dict[type[BaseModel], frozenset[str]] = {
    schemas.Scenario: kept.SCENARIO_SHOWN,
    schemas.ScenarioTurn: kept.TURN_SHOWN,
    schemas.ReasoningSegment: kept.REASONING_SHOWN,
    **dict.fromkeys(RESPONSES, kept.RESPONSE_SHOWN),
}


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def schema_fields() -> set[tuple[str, str]]:
    """(model, field) for every field of the scenario schema down to the levels the form keeps whole."""
    found: set[tuple[str, str]] = set()
    todo: list[type[BaseModel]] = [schemas.Scenario]
    seen: set[type[BaseModel]] = set()
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            if info.exclude:  # accepted on input, never stored
                continue
            found.add((model.__name__, name))
            if model not in SHOWN or name in SHOWN[model]:  # a field kept whole keeps what it holds
                todo.extend(_models_in(info.annotation))
    return found


def _set_fields(value: Any, found: set[tuple[str, str]]) -> None:
    """(model, field) for every field holding something other than its default, anywhere in ``value``."""
    if isinstance(value, BaseModel):
        for name, info in type(value).model_fields.items():
            field_value = getattr(value, name)
            if info.is_required() or field_value != info.get_default(call_default_factory=True):
                found.add((type(value).__name__, name))
            _set_fields(field_value, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _set_fields(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _set_fields(item, found)


def test_the_sample_sets_every_field_of_the_schema() -> None:
    found: set[tuple[str, str]] = set()
    _set_fields(schemas.Scenario.model_validate(FULL), found)

    missing = sorted(schema_fields() - found)

    assert not missing, f"set these in FULL (and check the editor keeps them): {missing}"


def test_the_form_state_maps_back_to_the_same_data() -> None:
    data = schemas.Scenario.model_validate(FULL).canonical()

    state = fields.parse_form(fields.flatten(mapping.scenario_to_state(data)))
    scenario, errors = mapping.validate_state(state)

    assert errors == {}
    assert scenario is not None and scenario.canonical() == data


def test_saving_through_the_form_unchanged_stores_the_scenario_unchanged(client: Client) -> None:
    make_scenario(**FULL)
    row = Scenario.objects.get(id="every-field")
    before = row.data

    response = client.post(
        "/scenarios/editor/save/", editor_post(before, "every-field", base_revision=str(row.revision)), **HTMX
    )

    assert response.status_code == 200 and "HX-Redirect" in response.headers
    row.refresh_from_db()
    assert row.data == before
    assert row.versions.count() == 1  # nothing changed, so no new version


class _FormReader(HTMLParser):
    """The fields a browser posts for a rendered page: inputs (checked boxes only), textareas, selected options."""

    def __init__(self) -> None:
        super().__init__()
        self.data: dict[str, str] = {}
        self._textarea: str | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {key: value or "" for key, value in attrs}
        name = a.get("name", "")
        if tag == "input" and name and (a.get("type") != "checkbox" or "checked" in a):
            self.data[name] = a.get("value", "on" if a.get("type") == "checkbox" else "")
        elif tag == "textarea" and name:
            self._textarea = name
            self.data[name] = ""
        elif tag == "select" and name:
            self._select = name
            self.data.setdefault(name, "")
        elif tag == "option" and self._select and "selected" in a:
            self.data[self._select] = a.get("value", "")

    def handle_data(self, text: str) -> None:
        if self._textarea:
            self.data[self._textarea] += text

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea" and self._textarea:
            # Browsers drop the line break that follows <textarea>.
            self.data[self._textarea] = self.data[self._textarea].removeprefix("\n")
            self._textarea = None
        elif tag == "select":
            self._select = None


def _posted_page(content: bytes) -> dict[str, str]:
    reader = _FormReader()
    reader.feed(content.decode())
    return reader.data


def _realtime_turns() -> list[dict[str, Any]]:
    """Turns holding the fields a card has no input for: Realtime's audio and transcripts, an image fixture."""
    second = {
        "turn": 2,
        "response": {"kind": "text", "assistant_text": "Here."},
        "image": FULL_TURN["image"],
        "finish_reason": "stop",
    }
    first = {
        "turn": 1,
        "response": {"kind": "text", "assistant_text": "Hi."},
        **{name: FULL_TURN[name] for name in ("audio", "transcript", "input_transcript")},
    }
    return [first, second]


def test_the_form_opens_turns_with_unshown_fields_and_says_which_it_keeps(client: Client) -> None:
    make_scenario("spoken", turns=_realtime_turns())

    response = client.get("/scenarios/spoken/")

    assert response.context["mode"] == "form"
    content = response.content.decode()
    assert "Kept as stored, edited on the raw tab: audio, input_transcript, transcript" in content
    assert "Kept as stored, edited on the raw tab: image" in content


def test_the_form_of_a_scenario_without_such_fields_says_nothing_about_them(client: Client) -> None:
    make_scenario("plain")

    response = client.get("/scenarios/plain/")

    assert response.context["mode"] == "form"
    assert "Kept as stored" not in response.content.decode()


def test_the_rendered_form_posted_back_keeps_them_and_applies_the_edits(client: Client) -> None:
    make_scenario("spoken", turns=_realtime_turns())
    before = Scenario.objects.get(id="spoken").data
    post = _posted_page(client.get("/scenarios/spoken/").content)
    post["turns-0-assistant_text"] = "Hello there."  # edited
    post["turns-1-finish_reason"] = ""  # cleared: a field the form shows and the author emptied stays empty

    response = client.post("/scenarios/editor/save/", post, **HTMX)

    assert response.status_code == 200 and "HX-Redirect" in response.headers
    after = Scenario.objects.get(id="spoken").data
    first, second = after["turns"]
    assert first["response"]["assistant_text"] == "Hello there."
    assert {k: first[k] for k in ("audio", "transcript", "input_transcript")} == {
        k: before["turns"][0][k] for k in ("audio", "transcript", "input_transcript")
    }
    assert second["image"] == before["turns"][1]["image"]
    assert "finish_reason" not in second


def test_a_field_the_form_shows_is_never_taken_from_the_kept_ones() -> None:
    state = mapping.scenario_to_state(schemas.Scenario.model_validate(FULL).canonical())
    state["turns"][0]["kept"] = '{"finish_reason": "length", "transcript": "Kept."}'
    state["turns"][0]["finish_reason"] = ""

    data, errors = mapping.state_to_data(state)

    assert errors == {}
    assert "finish_reason" not in data["turns"][0] and data["turns"][0]["transcript"] == "Kept."


def test_kept_fields_move_with_their_card() -> None:
    state = mapping.scenario_to_state(
        schemas.Scenario.model_validate({"id": "s", "turns": _realtime_turns()}).canonical()
    )

    moved = binding.apply_op(state, "move_down", 0)
    copied = binding.apply_op(state, "duplicate_turn", 1)
    added = binding.apply_op(state, "add_turn")

    moved_turns = mapping.state_to_data(moved)[0]["turns"]
    assert (moved_turns[0]["image"], moved_turns[1]["audio"]) == (FULL_TURN["image"], AUDIO)
    assert [turn.get("image") for turn in mapping.state_to_data(copied)[0]["turns"]] == [
        None,
        *[FULL_TURN["image"]] * 2,
    ]
    new_turn = mapping.state_to_data(added)[0]["turns"][2]
    assert not {"audio", "transcript", "input_transcript", "image"} & set(new_turn)  # a new card keeps nothing


def test_a_changed_kept_field_is_refused_with_a_message_not_dropped(client: Client) -> None:
    make_scenario("spoken", turns=_realtime_turns())
    post = _posted_page(client.get("/scenarios/spoken/").content)
    post["turns-0-kept"] = "[not json"

    response = client.post("/scenarios/editor/save/", post, **HTMX)

    assert response.status_code == 422
    assert "kept from the stored scenario" in error_slot(response.content, "turns-0")
    assert Scenario.objects.get(id="spoken").data["turns"][0]["audio"] == AUDIO
