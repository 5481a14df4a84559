"""The editor form mapped onto the pydantic scenario, both ways, and pydantic error locations onto field names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harnessweb.engine.loader import ScenarioFileError
from harnessweb.engine.schemas import Scenario
from scenarios_app.editor import binding, fields, mapping, raw

EXAMPLES = Path(__file__).resolve().parent.parent / "scenarios_app" / "examples"


def make_data(**fields: Any) -> dict[str, Any]:
    """A canonical scenario: two turns (text with reasoning, then a tool call), plus any field given."""
    data = {
        "id": "forms-demo",
        "turns": [
            {
                "turn": 1,
                "expected_tools": ["search", "fetch"],
                "expected_temperature": 0.2,
                "response": {
                    "kind": "text",
                    "assistant_text": "Line one.\nLine two.",
                    "reasoning": [{"text": "Think first.", "signature": "sig-1"}],
                },
            },
            {
                "turn": 2,
                "failures_before_success": 2,
                "failure_status": "rate_limit",
                "failure_retry_after_ms": 250,
                "failure_error": {"code": "slow_down"},
                "response": {
                    "kind": "tool-call",
                    "tool_calls": [{"tool_name": "search", "call_id": "call_1", "arguments": {"q": "x", "n": 2}}],
                },
            },
        ],
        **fields,
    }
    return Scenario.model_validate(data).canonical()


def make_post(data: dict[str, Any]) -> dict[str, str]:
    """What the browser posts for a scenario's form."""
    return fields.flatten(mapping.scenario_to_state(data))


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.stem)
def test_it_round_trips_every_example_through_the_form(path: Path) -> None:
    canonical = Scenario.model_validate(json.loads(path.read_text())).canonical()

    scenario, errors = mapping.validate_state(fields.parse_form(make_post(canonical)))

    assert errors == {}
    assert scenario is not None
    assert scenario.canonical() == canonical
    assert mapping.form_problem(canonical) == ""


def test_it_round_trips_pacing_match_and_final_reports() -> None:
    canonical = make_data(
        description="Multi\nline",
        tags=["a", "b c"],
        system_prompt_must_include=["You are, in short, helpful", "Second"],
        pacing={"chunk_words": 3, "interval_ms": 40},
        match={"system_contains": "helpful", "tools_include": ["search"], "first_user_regex": "^hi"},
        priority=5,
        turns=[
            {
                "turn": 1,
                "expected_reasoning": "enabled",
                "allow_missing_tools": True,
                "failure_retryable": False,
                "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
                "finish_reason": "length",
                "response": {
                    "kind": "final-report",
                    "report_content": "# Done",
                    "report_format": "markdown",
                    "report_content_json": {"ok": True, "n": [1, 2.5]},
                    "status": "partial",
                    "assistant_text": "Filing.",
                },
            }
        ],
    )

    scenario, errors = mapping.validate_state(fields.parse_form(make_post(canonical)))

    assert errors == {}
    assert scenario.canonical() == canonical


def test_it_round_trips_a_thrown_failure_through_its_checkbox() -> None:
    thrown = {"turn": 1, "failures_before_success": 1, "failure_throws": True, "failure_message": "boom"}
    canonical = make_data(turns=[thrown | {"response": {"kind": "text", "assistant_text": "Recovered."}}])
    posted = make_post(canonical)
    assert posted["turns-0-failure_throws"] == "on"

    scenario, errors = mapping.validate_state(fields.parse_form(posted))

    assert errors == {}
    assert scenario.canonical() == canonical
    del posted["turns-0-failure_throws"]  # unchecked: not thrown
    assert mapping.validate_state(fields.parse_form(posted))[0].turns[0].failure_throws is None


def test_it_reads_flat_names_into_nested_state() -> None:
    state = fields.parse_form(
        {
            "id": "x",
            "pacing_enabled": "on",
            "pacing-chunk_words": "4",
            "turns-0-kind": "tool-call",
            "turns-0-tool_calls-1-tool_name": "b",
            "turns-0-tool_calls-0-tool_name": "a",
            "turns-0-reasoning-0-text": "r\r\nr",
            "turns-0-failure_retryable": "on",
        }
    )

    assert state["pacing_enabled"] is True
    assert state["match_enabled"] is False
    assert state["pacing"]["chunk_words"] == "4"
    turn = state["turns"][0]
    assert [c["tool_name"] for c in turn["tool_calls"]] == ["a", "b"]
    assert turn["reasoning"][0]["text"] == "r\nr"  # a textarea's CRLF is the LF the author typed
    assert turn["failure_retryable"] is True
    assert turn["allow_missing_tools"] is False


def test_it_maps_model_to_initial_form_values() -> None:
    state = mapping.scenario_to_state(make_data(tags=["x", "y"]))

    assert state["tags"] == "x, y"
    assert state["pacing_enabled"] is False
    first, second = state["turns"]
    assert first["expected_tools"] == "search, fetch"
    assert first["expected_temperature"] == "0.2"
    assert first["assistant_text"] == "Line one.\nLine two."
    assert first["reasoning"] == [{"text": "Think first.", "signature": "sig-1", "kept": ""}]
    assert first["tool_calls"] == [mapping.blank_tool_call()]  # ready if the kind is switched to tool-call
    assert first["usage"] == {"input_tokens": "", "output_tokens": "", "total_tokens": ""}  # counted
    assert json.loads(second["tool_calls"][0]["arguments"]) == {"q": "x", "n": 2}
    assert json.loads(second["failure_error"]) == {"code": "slow_down"}
    assert second["failure_retry_after_ms"] == "250"


def test_it_leaves_out_fields_of_kinds_the_turn_did_not_choose() -> None:
    post = make_post(make_data())
    post["turns-0-tool_calls-0-arguments"] = "{not json"  # hidden under a text turn: ignored

    data, errors = mapping.state_to_data(fields.parse_form(post))

    assert errors == {}
    assert "tool_calls" not in data["turns"][0]["response"]


def test_it_leaves_empty_optional_fields_to_the_model_defaults() -> None:
    blank = make_post(make_data())
    for name in ("input_tokens", "output_tokens", "total_tokens"):
        blank[f"turns-0-usage-{name}"] = ""
    assert mapping.validate_state(fields.parse_form(blank))[0].turns[0].usage is None

    post = make_post(make_data())
    post["turns-1-failure_retry_after_ms"] = ""
    post["turns-1-usage-input_tokens"] = ""
    post["turns-1-tool_calls-0-call_id"] = ""

    scenario, errors = mapping.validate_state(fields.parse_form(post))

    turn = scenario.turns[1]
    assert turn.failure_retry_after_ms is None
    assert turn.usage is None  # counted
    post["turns-0-usage-input_tokens"] = ""
    post["turns-0-usage-output_tokens"] = "2"
    usage = mapping.validate_state(fields.parse_form(post))[0].turns[0].usage
    assert (usage.input_tokens, usage.output_tokens) == (None, 2)  # the empty count is counted
    assert turn.response.tool_calls[0].call_id is None


@pytest.mark.parametrize(
    ("loc", "name"),
    [
        ((), fields.ALL),
        (("id",), "id"),
        (("tags", 2), "tags"),
        (("system_prompt_must_include", 0), "system_prompt_must_include"),
        (("pacing", "chunk_words"), "pacing-chunk_words"),
        (("match", "first_user_regex"), "match-first_user_regex"),
        (("match", "tools_include", 1), "match-tools_include"),
        (("turns",), "turns"),
        (("turns", 0), "turns-0"),
        (("turns", 1, "turn"), "turns-1-turn"),
        (("turns", 0, "response"), "turns-0-kind"),
        (("turns", 0, "response", "text", "assistant_text"), "turns-0-assistant_text"),
        (("turns", 0, "response", "tool-call", "tool_calls"), "turns-0-tool_calls"),
        (("turns", 0, "response", "tool-call", "tool_calls", 1, "tool_name"), "turns-0-tool_calls-1-tool_name"),
        (("turns", 0, "response", "tool-call", "tool_calls", 0, "arguments", "k"), "turns-0-tool_calls-0-arguments"),
        (("turns", 2, "response", "final-report", "status"), "turns-2-status"),
        (("turns", 0, "response", "text", "reasoning", 1, "text"), "turns-0-reasoning-1-text"),
        (("turns", 0, "response", "text", "reasoning", 1), "turns-0-reasoning-1"),
        (("turns", 0, "usage", "input_tokens"), "turns-0-usage-input_tokens"),
        (("turns", 0, "expected_tools", 0), "turns-0-expected_tools"),
        (("turns", 0, "failure_error"), "turns-0-failure_error"),
    ],
)
def test_it_maps_error_locations_to_field_names(loc: tuple[Any, ...], name: str) -> None:
    assert mapping.error_field(loc) == name


def test_it_puts_the_models_messages_beside_their_fields() -> None:
    post = make_post(make_data())
    post["id"] = "bad id"
    post["turns-0-expected_temperature"] = "warm"
    post["turns-1-kind"] = "tool-call"
    post["turns-1-tool_calls-0-tool_name"] = ""
    post["turns-1-failure_status"] = "meltdown"
    post["pacing_enabled"] = "on"
    post["pacing-chunk_words"] = "0"

    scenario, errors = mapping.validate_state(fields.parse_form(post))

    assert scenario is None
    assert errors["id"] == ["String should match pattern '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'"]
    assert errors["turns-0-expected_temperature"] == [
        "Input should be a valid number, unable to parse string as a number"
    ]
    assert errors["turns-1-tool_calls-0-tool_name"] == ["String should have at least 1 character"]
    assert errors["turns-1-failure_status"][0].startswith("Input should be 'timeout'")
    assert errors["pacing-chunk_words"] == ["Input should be greater than or equal to 1"]


def test_it_reports_json_syntax_beside_the_json_field_instead_of_the_type_error() -> None:
    post = make_post(make_data())
    post["turns-1-tool_calls-0-arguments"] = '{"q": }'

    scenario, errors = mapping.validate_state(fields.parse_form(post))

    assert scenario is None
    assert errors == {"turns-1-tool_calls-0-arguments": ["Invalid JSON: Expecting value (line 1, column 7)"]}


def test_it_reports_a_json_value_of_the_wrong_type_with_the_models_message() -> None:
    post = make_post(make_data())
    post["turns-1-tool_calls-0-arguments"] = "[1, 2]"

    _, errors = mapping.validate_state(fields.parse_form(post))

    assert errors == {"turns-1-tool_calls-0-arguments": ["Input should be a valid dictionary"]}


def test_it_puts_list_level_errors_on_the_list() -> None:
    post = make_post(make_data())
    post["turns-1-turn"] = "1"
    post["turns-1-kind"] = "tool-call"

    _, errors = mapping.validate_state(fields.parse_form(post))

    assert errors == {"turns": ["Value error, turn 1 is defined twice"]}


def test_it_needs_a_tool_call_for_a_tool_call_turn() -> None:
    state = fields.parse_form(make_post(make_data()))
    state = binding.apply_op(state, "remove_tool_call", 1, 0)

    _, errors = mapping.validate_state(state)

    assert errors == {"turns-1-tool_calls": ["List should have at least 1 item after validation, not 0"]}


def test_it_binds_values_and_errors_for_the_templates() -> None:
    state = fields.parse_form(make_post(make_data()))

    bound = binding.bind(state, {"turns-1-tool_calls-0-tool_name": ["bad"], fields.ALL: ["whole"]})

    field = bound["turns"][1]["tool_calls"][0]["tool_name"]
    assert (field.name, field.value, field.errors) == ("turns-1-tool_calls-0-tool_name", "search", ("bad",))
    assert field.id == "f-turns-1-tool_calls-0-tool_name"
    assert field.error_id == "err-turns-1-tool_calls-0-tool_name"
    assert bound["errors"].errors == ("whole",)
    assert bound["error_count"] == 2
    assert {f.name for f in bound["all"]} == set(mapping.field_names(state))


def test_it_sends_errors_of_unknown_places_to_the_nearest_slot() -> None:
    post = make_post(make_data())
    post["turns-0-reasoning-0-text"] = "ok"

    names = mapping.field_names(fields.parse_form(post))

    assert "turns-0-reasoning-0" in names
    assert mapping._nearest("turns-0-reasoning-0-nope", set(names)) == "turns-0-reasoning-0"
    assert mapping._nearest("elsewhere", set(names)) == fields.ALL


def test_it_adds_moves_duplicates_and_removes_turns_renumbering_them() -> None:
    state = fields.parse_form(make_post(make_data()))
    first_text = state["turns"][0]["assistant_text"]

    moved = binding.apply_op(state, "move_down", 0)
    assert [t["turn"] for t in moved["turns"]] == ["1", "2"]
    assert moved["turns"][1]["assistant_text"] == first_text
    assert moved["turns"][0]["kind"] == "tool-call"

    duplicated = binding.apply_op(moved, "duplicate_turn", 0)
    assert [t["turn"] for t in duplicated["turns"]] == ["1", "2", "3"]
    assert duplicated["turns"][1]["tool_calls"] == duplicated["turns"][0]["tool_calls"]

    added = binding.apply_op(duplicated, "add_turn")
    assert added["turns"][3]["turn"] == "4"
    assert added["turns"][3]["kind"] == "text"

    removed = binding.apply_op(added, "remove_turn", 0)
    assert [t["turn"] for t in removed["turns"]] == ["1", "2", "3"]
    assert state["turns"][0]["assistant_text"] == first_text  # the input state is left alone

    assert binding.apply_op(state, "move_up", 0) == state
    assert binding.apply_op(state, "remove_turn", 9) == state


def test_it_adds_and_removes_tool_calls_and_reasoning_segments() -> None:
    state = fields.parse_form(make_post(make_data()))

    state = binding.apply_op(state, "add_tool_call", 1)
    state = binding.apply_op(state, "add_reasoning", 1)
    assert len(state["turns"][1]["tool_calls"]) == 2
    assert state["turns"][1]["reasoning"] == [mapping.blank_reasoning()]

    state = binding.apply_op(state, "remove_tool_call", 1, 0)
    state = binding.apply_op(state, "remove_reasoning", 1, 0)
    assert state["turns"][1]["tool_calls"] == [mapping.blank_tool_call()]
    assert state["turns"][1]["reasoning"] == []


def test_it_refuses_an_unknown_operation() -> None:
    with pytest.raises(ValueError, match="unknown editor operation"):
        binding.apply_op(mapping.new_scenario_state(), "explode")


def test_it_starts_a_new_scenario_with_one_empty_text_turn() -> None:
    state = mapping.new_scenario_state()

    assert state["id"] == ""
    assert len(state["turns"]) == 1
    _, errors = mapping.validate_state(state)
    assert list(errors) == ["id"]


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"tags": ["a,b"]}, "list item"),
        ({"system_prompt_must_include": ["two\nlines"]}, "list item"),
        ({"match": {"system_contains": "a\nb"}}, "match-system_contains holds a line break"),
        ({"description": "carriage\rreturn"}, "carriage return"),
    ],
)
def test_it_says_when_the_form_cannot_show_a_scenario_unchanged(fields: dict[str, Any], why: str) -> None:
    assert why in mapping.form_problem(make_data(**fields))


def test_it_round_trips_raw_json_and_yaml() -> None:
    data = make_data(description="two\nlines", tags=["yes", "on"])

    for fmt in fields.RAW_FORMATS:
        assert raw.from_raw(raw.to_raw(data, fmt), fmt) == data
    assert "description: |-\n  two\n  lines" in raw.to_raw(data, "yaml")


def test_it_names_the_line_of_a_raw_syntax_error() -> None:
    with pytest.raises(ScenarioFileError, match=r"line 2, column 1: invalid JSON"):
        raw.from_raw('{"id": "x",\n}', "json")
    with pytest.raises(ScenarioFileError, match=r"line 2, column 1: invalid YAML"):
        raw.from_raw("id: x\n- oops\n", "yaml")


def test_it_names_the_field_path_of_raw_validation_errors() -> None:
    assert raw.raw_errors({"id": "x", "turns": [{"turn": 1, "response": {"kind": "text"}}]}) == [
        "turns.0.response.text.assistant_text: Field required"
    ]
    assert raw.raw_errors(["not", "an", "object"]) == ["expected a scenario object, found list"]
    assert raw.raw_errors(make_data()) == []


def test_it_keeps_a_scenario_with_embedding_pins_on_the_raw_tab() -> None:
    data = make_data()
    data["embeddings"] = [{"input": "doc", "same_as": "query"}]
    assert mapping.form_problem(data) == "its embedding pins are edited on the raw tab"


def test_it_keeps_a_scenario_that_names_a_cassette_on_the_raw_tab() -> None:
    data = make_data()
    data["cassette"] = "verify_openai_simple_text.json"
    assert mapping.form_problem(data) == "the cassette it replays is named on the raw tab"
