"""The scenario schema: aliases, the seed's legacy fields, and the validation errors authors see."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from harnessweb.engine.schemas import Scenario, format_validation_error


def text_turn(number: int = 1, **fields: Any) -> dict[str, Any]:
    return {"turn": number, "response": {"kind": "text", "assistant_text": "Hello."}, **fields}


def errors_of(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        Scenario.model_validate(data)
    return format_validation_error(caught.value, source="scenario.json: ")


def test_it_accepts_camelcase_aliases_and_snake_case_names_alike() -> None:
    snake = {
        "id": "alias-demo",
        "system_prompt_must_include": ["You are helpful"],
        "turns": [
            {
                "turn": 1,
                "expected_tools": ["search"],
                "allow_missing_tools": True,
                "expected_temperature": 0.3,
                "expected_top_p": 0.8,
                "failures_before_success": 1,
                "failure_status": "rate_limit",
                "failure_retry_after_ms": 100,
                "response": {
                    "kind": "tool-call",
                    "assistant_text": "Searching.",
                    "tool_calls": [{"tool_name": "search", "call_id": "c1", "arguments": {"q": "x"}}],
                },
            }
        ],
    }
    camel = {
        "id": "alias-demo",
        "systemPromptMustInclude": ["You are helpful"],
        "turns": [
            {
                "turn": 1,
                "expectedTools": ["search"],
                "allowMissingTools": True,
                "expectedTemperature": 0.3,
                "expectedTopP": 0.8,
                "failuresBeforeSuccess": 1,
                "failureStatus": "rate_limit",
                "failureRetryAfterMs": 100,
                "response": {
                    "kind": "tool-call",
                    "assistantText": "Searching.",
                    "toolCalls": [{"toolName": "search", "callId": "c1", "arguments": {"q": "x"}}],
                },
            }
        ],
    }
    assert Scenario.model_validate(camel) == Scenario.model_validate(snake)
    assert Scenario.model_validate(camel).turns[0].expected_top_p == 0.8


def test_it_folds_the_seed_token_usage_and_finish_reason_kept_on_the_response() -> None:
    scenario = Scenario.model_validate(
        {
            "id": "seed-usage",
            "turns": [
                {
                    "turn": 1,
                    "response": {
                        "kind": "text",
                        "assistantText": "Done.",
                        "tokenUsage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
                        "finishReason": "length",
                    },
                }
            ],
        }
    )
    turn = scenario.turns[0]
    assert (turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.total_tokens) == (10, 5, 15)
    assert turn.finish_reason == "length"
    assert "tokenUsage" not in str(scenario.canonical())


def test_it_reads_token_usage_given_on_the_turn() -> None:
    scenario = Scenario.model_validate(
        {"id": "turn-usage", "turns": [text_turn(tokenUsage={"inputTokens": 1, "outputTokens": 2, "totalTokens": 3})]}
    )
    assert scenario.turns[0].usage.total_tokens == 3


def test_it_leaves_usage_to_be_counted_unless_set() -> None:
    assert Scenario.model_validate({"id": "defaults", "turns": [text_turn()]}).turns[0].usage is None
    usage = Scenario.model_validate({"id": "partial", "turns": [text_turn(usage={"outputTokens": 5})]}).turns[0].usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (None, 5, None)


def test_it_reads_failure_throws_as_its_own_setting_beside_the_status() -> None:
    scenario = Scenario.model_validate(
        {
            "id": "throws",
            "turns": [
                text_turn(1, failuresBeforeSuccess=2, failureThrows=True, failureStatus="rate_limit"),
                text_turn(2, failures_before_success=1, failure_throws=True),
                text_turn(3, failuresBeforeSuccess=1, failureThrows=False, failureStatus="timeout"),
            ],
        }
    )
    assert [(t.failure_throws, t.failure_status) for t in scenario.turns] == [
        (True, "rate_limit"),
        (True, "model_error"),
        (None, "timeout"),
    ]
    canonical = scenario.canonical()
    assert [t.get("failure_throws") for t in canonical["turns"]] == [True, True, None]  # false is left out
    assert Scenario.model_validate(canonical) == scenario
    assert "failure_throws: Input should be a valid boolean" in errors_of(
        {"id": "bad", "turns": [text_turn(failureThrows="sometimes")]}
    )


def test_it_reads_the_signature_from_anthropic_provider_metadata() -> None:
    scenario = Scenario.model_validate(
        {
            "id": "signed",
            "turns": [
                {
                    "turn": 1,
                    "response": {
                        "kind": "text",
                        "assistantText": "Answer.",
                        "reasoning": [
                            {"text": "signed thought", "providerMetadata": {"anthropic": {"signature": "sig-1"}}},
                            {"text": "plain thought"},
                            {"text": "explicit wins", "signature": "own", "providerMetadata": {"anthropic": {}}},
                        ],
                    },
                }
            ],
        }
    )
    segments = scenario.turns[0].response.reasoning
    assert [(s.text, s.signature) for s in segments] == [
        ("signed thought", "sig-1"),
        ("plain thought", None),
        ("explicit wins", "own"),
    ]


def test_it_rejects_a_non_mapping_anthropic_provider_metadata_as_a_validation_error() -> None:
    reasoning = [{"text": "t", "providerMetadata": {"anthropic": "not-a-mapping"}}]
    message = errors_of(
        {
            "id": "bad-meta",
            "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "x", "reasoning": reasoning}}],
        }
    )
    assert "turns.0.response.text.reasoning.0" in message and "providerMetadata must be an object" in message


def test_it_rejects_duplicate_turn_numbers() -> None:
    message = errors_of({"id": "twice", "turns": [text_turn(1), text_turn(2), text_turn(1)]})
    assert "scenario.json: turns: " in message
    assert "turn 1 is defined twice" in message


def test_it_sorts_turns_by_number() -> None:
    scenario = Scenario.model_validate({"id": "unordered", "turns": [text_turn(3), text_turn(1), text_turn(2)]})
    assert [t.turn for t in scenario.turns] == [1, 2, 3]
    assert scenario.last_turn == 3
    assert scenario.turn(2) is scenario.turns[1]
    assert scenario.turn(4) is None


def test_it_rejects_turn_zero() -> None:
    assert "turns.0.turn: " in errors_of({"id": "zero", "turns": [text_turn(0)]})


@pytest.mark.parametrize("field", ["first_user_regex", "last_user_regex", "lastUserRegex"])
def test_it_rejects_a_bad_regex_in_match(field: str) -> None:
    message = errors_of({"id": "bad-regex", "match": {field: "(unclosed"}, "turns": [text_turn()]})
    snake = "last_user_regex" if field == "lastUserRegex" else field
    assert f"scenario.json: match.{snake}: " in message
    assert "not a valid regular expression" in message


def test_it_accepts_a_valid_regex_in_match() -> None:
    scenario = Scenario.model_validate(
        {"id": "good-regex", "match": {"lastUserRegex": r"(?i)\brefund\b"}, "priority": 5, "turns": [text_turn()]}
    )
    assert scenario.match is not None
    assert scenario.match.last_user_regex == r"(?i)\brefund\b"
    assert scenario.priority == 5


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"id": "x", "colour": "blue", "turns": []}, "colour"),
        ({"id": "x", "turns": [text_turn(retries=3)]}, "turns.0.retries"),
        ({"id": "x", "pacing": {"chunk_words": 2, "speed": 9}}, "pacing.speed"),
        (
            {"id": "x", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "a", "tone": "warm"}}]},
            "turns.0.response.text.tone",
        ),
    ],
)
def test_it_rejects_an_unknown_field_naming_it(data: dict[str, Any], path: str) -> None:
    message = errors_of(data)
    assert f"scenario.json: {path}: Extra inputs are not permitted" in message


@pytest.mark.parametrize("scenario_id", ["weather-tool-call", "a", "A1", "v1.2_final-draft", "x" * 100])
def test_it_accepts_slug_ids(scenario_id: str) -> None:
    assert Scenario.model_validate({"id": scenario_id}).id == scenario_id


@pytest.mark.parametrize("scenario_id", ["", "-leading-dash", ".hidden", "has space", "slash/id", "é", "x" * 101])
def test_it_rejects_ids_that_are_not_slugs(scenario_id: str) -> None:
    assert "scenario.json: id: String should match pattern" in errors_of({"id": scenario_id})


def test_it_names_the_missing_field_inside_a_response() -> None:
    message = errors_of({"id": "missing", "turns": [{"turn": 1, "response": {"kind": "text"}}]})
    assert message.startswith("scenario.json: turns.0.response")
    assert "assistant_text: Field required" in message


def test_it_rejects_an_unknown_response_kind() -> None:
    message = errors_of({"id": "kind", "turns": [{"turn": 1, "response": {"kind": "image", "url": "x"}}]})
    assert "scenario.json: turns.0.response: " in message
    assert "'image'" in message


def test_it_rejects_an_unknown_failure_status() -> None:
    message = errors_of({"id": "status", "turns": [text_turn(failure_status="server_on_fire")]})
    assert "scenario.json: turns.0.failure_status: " in message


def test_it_requires_at_least_one_tool_call() -> None:
    message = errors_of({"id": "no-calls", "turns": [{"turn": 1, "response": {"kind": "tool-call", "tool_calls": []}}]})
    assert "turns.0.response.tool-call.tool_calls: " in message


def test_it_lists_every_error_one_per_line() -> None:
    message = errors_of({"id": "bad id", "priority": "high", "turns": [text_turn(0)]})
    lines = message.splitlines()
    assert len(lines) == 3
    assert all(line.startswith("scenario.json: ") for line in lines)


def test_it_gives_a_canonical_snake_case_form_that_validates_back_to_the_same_scenario() -> None:
    scenario = Scenario.model_validate(
        {
            "id": "canonical",
            "pacing": {"chunkWords": 2, "intervalMs": 10},
            "turns": [
                {
                    "turn": 1,
                    "failuresBeforeSuccess": 1,
                    "response": {"kind": "tool-call", "toolCalls": [{"toolName": "t", "arguments": {"a": None}}]},
                }
            ],
        }
    )
    canonical = scenario.canonical()
    assert canonical["pacing"] == {"chunk_words": 2, "interval_ms": 10}
    assert canonical["turns"][0]["response"]["tool_calls"][0]["tool_name"] == "t"
    # None inside free-form arguments is data, not an unset field: it must survive.
    assert canonical["turns"][0]["response"]["tool_calls"][0]["arguments"] == {"a": None}
    assert "call_id" not in canonical["turns"][0]["response"]["tool_calls"][0]
    assert Scenario.model_validate(canonical) == scenario


@pytest.mark.parametrize(
    "pin",
    [
        {"input": "x"},
        {"input": "x", "vector": [1.0], "same_as": "y"},
        {"input": "", "same_as": "y"},
        {"input": "x", "vector": []},
    ],
)
def test_it_refuses_an_embedding_pin_without_exactly_one_source(pin) -> None:
    with pytest.raises(ValidationError):
        Scenario.model_validate({"id": "pins", "embeddings": [pin]})


def test_it_keeps_embedding_pins_in_the_canonical_form() -> None:
    scenario = Scenario.model_validate({"id": "pins", "embeddings": [{"input": "doc", "sameAs": "query"}]})
    assert scenario.canonical()["embeddings"] == [{"input": "doc", "same_as": "query"}]


def test_it_lets_a_scenario_name_the_cassette_that_answers_it():
    assert Scenario.model_validate({"id": "taped", "cassette": "openai_simple_text"}).canonical() == {
        "id": "taped",
        "description": "",
        "tags": [],
        "system_prompt_must_include": [],
        "priority": 0,
        "turns": [],
        "embeddings": [],
        "cassette": "openai_simple_text",
    }
    assert "cassette" not in Scenario.model_validate({"id": "plain"}).canonical()
    with pytest.raises(ValidationError):
        Scenario.model_validate({"id": "taped", "cassette": ""})
