"""The key a scenario (or a test) expects, by fingerprint: the schema keeps a fingerprint and never a key, the
expectation names the place the key came and its fingerprint, the engine fails the turn on it like any other
expectation, and ``check_key`` does the same for a decision made without a scenario. Pure."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import ValidationError

from harnessweb.engine import keys
from harnessweb.engine.configured import Answers
from harnessweb.engine.exchange import ChatRequest
from harnessweb.engine.expectations import KEY_PROBLEM, expectations, key_expectations
from harnessweb.engine.playback import Catalog, check_key, decide
from harnessweb.engine.schemas import ExpectKey, KeyPlace, Scenario, format_validation_error
from harnessweb.engine.wire import anthropic as anthropic_wire
from harnessweb.engine.wire import openai as openai_wire

SECRET = "sk-test-expected-0123456789"
OTHER = "sk-test-other-9876543210"
FP = keys.fingerprint(SECRET)
OTHER_FP = keys.fingerprint(OTHER)


def chat(first_user: str = "keyed", **headers: str) -> ChatRequest:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": first_user}]}
    return keys.stamped(openai_wire.parse_request(body), headers)


def keyed_scenario(**expect_key: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "id": "keyed",
            "expect_key": expect_key,
            "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Keyed."}}],
        }
    )


def test_the_places_a_scenario_can_name_are_the_places_a_key_is_read() -> None:
    assert set(get_args(KeyPlace)) == set(keys.KEY_PLACES)


def test_stamped_puts_where_the_key_came_and_its_fingerprint_on_the_request() -> None:
    request = chat(authorization=f"Bearer {SECRET}")
    assert (request.key_place, request.key_fingerprint) == ("authorization", FP)
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    query = keys.stamped(anthropic_wire.parse_request(body), {}, SECRET)
    assert (query.key_place, query.key_fingerprint) == ("?key", FP)
    assert (chat().key_place, chat().key_fingerprint) == ("", "")


@pytest.mark.parametrize("value", [SECRET, "ABCDEF012345", "abc", FP + "0"])
def test_the_schema_keeps_a_fingerprint_never_a_key(value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        keyed_scenario(fingerprint=value)
    message = format_validation_error(caught.value)  # what the API, the editor and the loader show
    assert message.startswith("expect_key.fingerprint: Value error, must be a key's fingerprint, 12 hexadecimal")
    assert SECRET not in message


def test_the_schema_names_a_place_nobody_reads_a_key_from() -> None:
    with pytest.raises(ValidationError, match="expect_key.place"):
        keyed_scenario(fingerprint=FP, place="x-token")


def test_a_scenario_stores_its_expected_key_in_its_canonical_form() -> None:
    assert keyed_scenario(fingerprint=FP, place="authorization").canonical()["expect_key"] == {
        "fingerprint": FP,
        "place": "authorization",
    }
    assert "expect_key" not in Scenario(id="plain").canonical()


def test_the_right_key_meets_the_expectation() -> None:
    [row] = key_expectations(ExpectKey(fingerprint=FP), chat(authorization=f"Bearer {SECRET}"))
    assert (row.what, row.expected, row.actual, row.ok, row.problem) == (
        "API key",
        f"fingerprint {FP}",
        f"fingerprint {FP} in the authorization header",
        True,
        "",
    )


def test_another_key_fails_naming_its_header_and_fingerprint_never_the_key() -> None:
    [row] = key_expectations(ExpectKey(fingerprint=FP), chat(**{"x-api-key": OTHER}))
    assert not row.ok
    assert row.problem == (
        f"{KEY_PROBLEM} with fingerprint {FP} but the request carried the key with fingerprint {OTHER_FP} "
        "in the x-api-key header"
    )
    assert OTHER not in row.problem and SECRET not in row.problem


def test_a_missing_key_fails() -> None:
    [row] = key_expectations(ExpectKey(fingerprint=FP), chat())
    assert (row.actual, row.ok) == ("no key", False)
    assert row.problem == f"{KEY_PROBLEM} with fingerprint {FP} but the request carried no API key"


def test_the_right_key_in_the_wrong_place_fails_when_a_place_is_named() -> None:
    expected = ExpectKey(fingerprint=FP, place="authorization")
    [row] = key_expectations(expected, chat(**{"api-key": SECRET}))
    assert not row.ok
    assert row.problem.endswith(f"carried the key with fingerprint {FP} in the api-key header")
    assert "in the authorization header" in row.expected
    [query] = key_expectations(ExpectKey(fingerprint=FP, place="?key"), keys.stamped(chat(), {}, SECRET))
    assert query.ok and query.actual == f"fingerprint {FP} in the ?key query parameter"


def test_no_expected_key_is_no_row() -> None:
    assert key_expectations(None, chat()) == []


def test_the_engine_fails_the_turn_on_the_key_and_the_run_page_shows_the_row() -> None:
    scenario = keyed_scenario(fingerprint=FP)
    catalog = Catalog.build([scenario])
    good = decide(catalog, chat(authorization=f"Bearer {SECRET}"))
    assert (good.problem, good.reply.text) == ("", "Keyed.")
    bad_request = chat(authorization=f"Bearer {OTHER}")
    bad = decide(catalog, bad_request)
    assert bad.problem.startswith(KEY_PROBLEM) and f"fingerprint {OTHER_FP} in the authorization header" in bad.problem
    assert bad.reply.text == "Scenario validation failed."
    assert bad.failure is None and not bad.completes_run
    rows = expectations(scenario, scenario.turn(1), bad_request)
    assert [(r.what, r.ok) for r in rows] == [("API key", False)]


def test_check_key_turns_any_decision_into_the_validation_failure() -> None:
    catalog = Catalog.build([])
    lorem = decide(catalog, chat("no scenario"))
    expected = ExpectKey(fingerprint=FP)
    assert check_key(lorem, chat("no scenario", authorization=SECRET), expected, "k") is lorem
    assert check_key(lorem, chat("no scenario"), None, "k") is lorem
    failed = check_key(lorem, chat("no scenario", authorization=OTHER), expected, "k")
    assert failed.problem.startswith(KEY_PROBLEM) and failed.mode == "lorem"
    assert failed.reply.text == "Scenario validation failed."
    assert failed.reply.tool_calls[0]["name"] == "agent__final_report"
    assert failed.reply.usage.total_tokens > 0


def test_a_run_script_carries_the_expected_key_and_names_a_bad_one() -> None:
    answers = Answers()
    answers.expect_key = ExpectKey(fingerprint=FP, place="x-api-key")
    data = answers.to_data()
    assert data["expect_key"] == {"fingerprint": FP, "place": "x-api-key"}
    assert Answers.from_data(data).expect_key == answers.expect_key
    with pytest.raises(ValueError, match=r"^expect_key\.fingerprint: Value error, must be a key's fingerprint"):
        Answers.from_data({"expect_key": {"fingerprint": SECRET}})
