"""The scenario engine: selection, turns, validations, failures, signatures, instruction mode and the lorem fallback."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest

from harnessweb.engine.exchange import (
    FALLBACK_CHUNK_WORDS,
    Block,
    ChatRequest,
    Decision,
    Failure,
    InvalidRequest,
    Message,
    ScenarioNotFound,
    Thinking,
    sanitize_tool_name,
    short_id,
    sign_thinking,
    word_chunks,
)
from harnessweb.engine.fallback import (
    FALLBACK_INTERVAL_MS,
    INSTRUCTION_END,
    INSTRUCTION_START,
    LOREM_WORDS,
    lorem,
    lorem_length,
    stable_hash,
)
from harnessweb.engine.playback import (
    FINAL_REPORT_CALL_ID,
    FINAL_REPORT_TOOL,
    Catalog,
    check_thinking_signatures,
    decide,
    select_scenario,
)
from harnessweb.engine.schemas import Scenario
from harnessweb.engine.wire import anthropic as anthropic_wire
from harnessweb.engine.wire import openai as openai_wire

KEY = "test-signature-key"


def make_turn(turn: int = 1, response: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    if response is None:
        response = {"kind": "text", "assistant_text": f"turn {turn} text"}
    return {"turn": turn, "response": response, **fields}


def make_scenario(scenario_id: str = "demo", turns: list[dict[str, Any]] | None = None, **fields: Any) -> Scenario:
    if turns is None:
        turns = [make_turn(1)]
    return Scenario.model_validate({"id": scenario_id, "turns": turns, **fields})


def make_catalog(*scenarios: Scenario) -> Catalog:
    return Catalog.build(list(scenarios))


def make_request(*messages: str | Message, **fields: Any) -> ChatRequest:
    """A request; plain strings are user messages."""
    built = tuple(Message(role="user", text=m) if isinstance(m, str) else m for m in messages)
    return ChatRequest(
        protocol=fields.pop("protocol", "openai"), model=fields.pop("model", "m"), messages=built, **fields
    )


def make_conversation(first_user: str, answered: int = 0, **fields: Any) -> ChatRequest:
    """The first user message followed by ``answered`` assistant/user exchanges: the request for turn answered+1."""
    messages: list[str | Message] = [first_user]
    for n in range(answered):
        messages += [Message(role="assistant", text=f"answer {n + 1}"), "go on"]
    return make_request(*messages, **fields)


def make_decision(scenario: Scenario, answered: int = 0, **fields: Any) -> Decision:
    pacing_enabled = fields.pop("pacing_enabled", True)
    request = make_conversation(scenario.id, answered, **fields)
    return decide(make_catalog(scenario), request, pacing_enabled=pacing_enabled, signature_key=KEY)


def make_instruction(data: Any) -> str:
    body = data if isinstance(data, str) else orjson.dumps(data).decode()
    return f"{INSTRUCTION_START}{body}{INSTRUCTION_END}"


def report_arguments(decision: Decision) -> dict[str, Any]:
    calls = [b for b in decision.reply.blocks if b.type == "tool_call" and b.name == FINAL_REPORT_TOOL]
    assert len(calls) == 1
    assert calls[0].call_id == FINAL_REPORT_CALL_ID
    return orjson.loads(calls[0].arguments)


def assert_harness_error(decision: Decision, message: str) -> None:
    assert decision.problem == message
    assert decision.failure is None
    assert decision.failures_before_success == 0
    assert decision.completes_run is False
    assert decision.reply.text == "Scenario validation failed."
    assert decision.reply.finish == "tool_calls"
    assert report_arguments(decision) == {
        "status": "failure",
        "report_format": "markdown",
        "report_content": f"# Test Harness Error\n\n{message}",
    }


# ---------------------------------------------------------------------------------------------------------------
# Helpers: hashing, chunking, names


def test_it_pins_stable_hash_to_fnv1a_signed_32_bit_values():
    # These values define lorem lengths across releases: they must never change.
    assert stable_hash("") == -2128831035  # 0x811C9DC5
    assert stable_hash("a") == -468965076  # 0xE40C292C
    assert stable_hash("foobar") == -1080231576  # 0xBF9CF968
    assert stable_hash("hello") == 1335831723
    assert stable_hash("héllo") == 1252296000


def test_it_keeps_stable_hash_within_signed_32_bits():
    for text in ["", "x", "hello world", "ünïcödé ✓", "a" * 1000]:
        assert -(2**31) <= stable_hash(text) < 2**31


def test_it_computes_lorem_length_from_the_stable_hash():
    assert lorem_length("foobar") == 5 + 1080231576 % 496 == 125
    assert lorem_length("hello") == 64
    assert lorem_length("") == 32
    for text in ["", "a", "hello", "x" * 50, "Reason: y"]:
        assert 5 <= lorem_length(text) <= 500


def test_it_repeats_the_lorem_word_list_when_more_words_are_needed():
    words = lorem(len(LOREM_WORDS) + 3).split(" ")
    assert words[:5] == ["lorem", "ipsum", "dolor", "sit", "amet"]
    assert words[len(LOREM_WORDS) :] == ["lorem", "ipsum", "dolor"]
    assert lorem(0) == ""
    assert lorem(1) == "lorem"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "one",
        "one two three four five six seven",
        "   leading spaces",
        "trailing spaces   ",
        "   ",
        "\n",
        "many   spaces\tand\ttabs  between   words",
        "line one\nline two\n\nline four\n",
        "\n\nReason: think hard\n",
        "ünïcödé wörds — with dashes ✓ and 中文 字符 and emoji 🎉🎉",
        "non\u00a0breaking\u00a0spaces and\u2003em spaces",
        "\r\nwindows\r\nline endings\r\n",
    ],
)
@pytest.mark.parametrize("words", [1, 2, 5, 1000])
def test_it_splits_word_chunks_that_join_back_to_the_exact_text(text, words):
    chunks = word_chunks(text, words)
    assert "".join(chunks) == text
    assert all(chunks)
    for chunk in chunks[:-1]:
        assert len(chunk.split()) == words
    if chunks:
        assert 0 < len(chunks[-1].split()) <= words or not text.split()


def test_it_keeps_leading_whitespace_with_the_following_word_and_trailing_with_the_last():
    assert word_chunks("  a  b\n\nc d e f g  ", 2) == ["  a  b", "\n\nc d", " e f", " g  "]
    assert word_chunks("", 5) == []
    assert word_chunks("   ", 5) == ["   "]


def test_it_sanitises_tool_names_to_provider_characters():
    assert sanitize_tool_name("web.search") == "web_search"
    assert sanitize_tool_name("  fs/read file  ") == "fs_read_file"
    assert sanitize_tool_name("ok_name-1") == "ok_name-1"
    assert sanitize_tool_name("tööl") == "t__l"


def test_it_derives_short_ids_deterministically():
    assert short_id("seed") == short_id("seed")
    assert re.fullmatch(r"[0-9a-f]{24}", short_id("seed"))
    assert short_id("seed") != short_id("seed2")
    assert len(short_id("seed", 8)) == 8


def test_it_signs_thinking_deterministically_per_text_and_key():
    signature = sign_thinking("thought", KEY)
    assert signature == sign_thinking("thought", KEY)
    assert signature != sign_thinking("thought!", KEY)
    assert signature != sign_thinking("thought", "other-key")
    assert re.fullmatch(r"[A-Za-z0-9+/]{43}=", signature)


# ---------------------------------------------------------------------------------------------------------------
# Scenario selection


def test_it_selects_by_header_id_before_anything_else():
    header = make_scenario("by-header")
    by_message = make_scenario("by-message")
    matcher = make_scenario("matcher", match={}, priority=100)
    catalog = make_catalog(header, by_message, matcher)
    scenario, how = select_scenario(catalog, make_request("by-message"), "by-header")
    assert (scenario, how) == (header, "header")


def test_it_raises_scenario_not_found_for_an_unknown_header_id():
    catalog = make_catalog(make_scenario("demo"))
    with pytest.raises(ScenarioNotFound, match="nope"):
        select_scenario(catalog, make_request("demo"), "nope")
    with pytest.raises(ScenarioNotFound):
        decide(catalog, make_request("demo"), header_scenario="nope")


def test_it_ignores_an_empty_header_id():
    demo = make_scenario("demo")
    assert select_scenario(make_catalog(demo), make_request("demo"), "") == (demo, "first user message")


def test_it_selects_by_the_first_user_message_trimmed():
    demo = make_scenario("demo")
    catalog = make_catalog(demo, make_scenario("other"))
    assert select_scenario(catalog, make_request("  demo \n"), None) == (demo, "first user message")
    request = make_request("demo", Message(role="assistant", text="x"), "other")
    assert select_scenario(catalog, request, None) == (demo, "first user message")


def test_it_does_not_select_by_a_first_user_message_that_only_contains_the_id():
    catalog = make_catalog(make_scenario("demo"))
    assert select_scenario(catalog, make_request("run demo please"), None) == (None, "")


def test_it_prefers_the_first_user_id_over_match_rules():
    demo = make_scenario("demo")
    matcher = make_scenario("matcher", match={"first_user_contains": "demo"}, priority=100)
    assert select_scenario(make_catalog(demo, matcher), make_request("demo"), None) == (demo, "first user message")


@pytest.mark.parametrize(
    ("rules", "matching", "not_matching"),
    [
        ({"model": "gpt-x"}, {"model": "gpt-x"}, {"model": "gpt-x-mini"}),
        ({"system_contains": "You are Bob"}, {"system": "Hi. You are Bob."}, {"system": "You are Alice"}),
        ({"first_user_contains": "weather"}, {"messages": ["the weather?", "thanks"]}, {"messages": ["hi", "weather"]}),
        ({"first_user_regex": r"^order #\d+$"}, {"messages": ["order #12"]}, {"messages": ["order #x"]}),
        ({"last_user_contains": "bye"}, {"messages": ["hi", "bye now"]}, {"messages": ["bye", "hi"]}),
        ({"last_user_regex": r"\bstop\b"}, {"messages": ["x", "please stop"]}, {"messages": ["stop", "nonstop"]}),
        ({"tools_include": ["search", "fetch"]}, {"tools": ("fetch", "x", "search")}, {"tools": ("search",)}),
    ],
)
def test_it_selects_by_each_match_rule(rules, matching, not_matching):
    scenario = make_scenario("matcher", match=rules)
    catalog = make_catalog(scenario)

    def request(fields: dict[str, Any]) -> ChatRequest:
        fields = dict(fields)
        messages = fields.pop("messages", ["unrelated"])
        built: list[str | Message] = []
        for n, text in enumerate(messages):
            if n:
                built.append(Message(role="assistant", text="a"))
            built.append(text)
        return make_request(*built, **fields)

    assert select_scenario(catalog, request(matching), None) == (scenario, "match rules")
    assert select_scenario(catalog, request(not_matching), None) == (None, "")


def test_it_requires_every_given_match_rule_to_hold():
    scenario = make_scenario("matcher", match={"model": "m1", "system_contains": "sys", "last_user_contains": "go"})
    catalog = make_catalog(scenario)
    assert select_scenario(catalog, make_request("go", model="m1", system="sys"), None)[0] == scenario
    assert select_scenario(catalog, make_request("go", model="m2", system="sys"), None)[0] is None
    assert select_scenario(catalog, make_request("go", model="m1", system="x"), None)[0] is None
    assert select_scenario(catalog, make_request("no", model="m1", system="sys"), None)[0] is None


def test_it_matches_everything_with_empty_match_rules():
    scenario = make_scenario("catch-all", match={})
    assert select_scenario(make_catalog(scenario), make_request("anything"), None) == (scenario, "match rules")


def test_it_compares_tools_include_with_sanitised_names():
    scenario = make_scenario("matcher", match={"tools_include": ["web.search", " fs/read "]})
    catalog = make_catalog(scenario)
    assert select_scenario(catalog, make_request("x", tools=("web_search", "fs_read")), None)[0] == scenario
    assert select_scenario(catalog, make_request("x", tools=("web.search", "fs/read")), None)[0] == scenario
    assert select_scenario(catalog, make_request("x", tools=("web_search",)), None)[0] is None


def test_it_orders_matchers_by_priority_then_smaller_id():
    low = make_scenario("a-low", match={}, priority=0)
    high_b = make_scenario("b-high", match={}, priority=5)
    high_c = make_scenario("c-high", match={}, priority=5)
    catalog = make_catalog(low, high_c, high_b)
    assert [s.id for s in catalog.matchers] == ["b-high", "c-high", "a-low"]
    assert select_scenario(catalog, make_request("x"), None) == (high_b, "match rules")
    negative = make_scenario("0-negative", match={}, priority=-1)
    assert make_catalog(negative, low).matchers[0] == low


def test_it_leaves_scenarios_without_match_rules_out_of_the_matchers():
    plain = make_scenario("plain")
    catalog = make_catalog(plain, make_scenario("matcher", match={"model": "z"}))
    assert [s.id for s in catalog.matchers] == ["matcher"]
    assert catalog.by_id["plain"] == plain
    assert select_scenario(catalog, make_request("x"), None) == (None, "")


def test_it_records_how_the_scenario_was_chosen_in_the_notes():
    scenario = make_scenario("matcher", match={})
    decision = decide(make_catalog(scenario), make_request("x"))
    assert decision.notes == ("scenario matcher chosen by match rules",)
    decision = decide(make_catalog(scenario), make_request("x"), header_scenario="matcher")
    assert decision.notes == ("scenario matcher chosen by header",)


# ---------------------------------------------------------------------------------------------------------------
# Turns


def test_it_counts_the_turn_as_assistant_messages_plus_one():
    assert make_request("demo").turn == 1
    assert make_conversation("demo", 3).turn == 4
    tool = Message(role="tool", text="result")
    request = make_request("demo", Message(role="assistant"), tool, Message(role="assistant"), tool)
    assert request.turn == 3


def test_it_plays_each_scripted_turn_in_order():
    scenario = make_scenario("demo", [make_turn(1), make_turn(2), make_turn(3)])
    for answered in range(3):
        decision = make_decision(scenario, answered)
        assert decision.mode == "scenario"
        assert decision.scenario_id == "demo"
        assert decision.turn == answered + 1
        assert decision.reply.text == f"turn {answered + 1} text"
        assert decision.problem == ""


def test_it_completes_the_run_only_on_the_last_scripted_turn():
    scenario = make_scenario("demo", [make_turn(1), make_turn(2)])
    assert make_decision(scenario, 0).completes_run is False
    assert make_decision(scenario, 1).completes_run is True
    assert make_decision(scenario, 2).completes_run is False


def test_it_answers_an_undefined_turn_with_the_scenario_mismatch_final_report():
    scenario = make_scenario("demo", [make_turn(1), make_turn(2)])
    decision = make_decision(scenario, 2)
    assert decision.mode == "scenario"
    assert decision.turn == 3
    assert decision.problem == "Scenario demo defines no turn 3 (it has 2 turns)"
    assert decision.completes_run is False
    assert decision.failure is None
    assert [b.type for b in decision.reply.blocks] == ["text", "tool_call"]
    assert decision.reply.text == "Encountered scenario mismatch."
    assert decision.reply.finish == "tool_calls"
    assert report_arguments(decision) == {
        "status": "failure",
        "report_format": "markdown",
        "report_content": "# Scenario Failure\n\nScenario demo defines no turn 3 (it has 2 turns)",
    }


def test_it_treats_a_gap_in_the_turns_as_a_mismatch():
    scenario = make_scenario("gappy", [make_turn(1), make_turn(3)])
    assert make_decision(scenario, 1).problem == "Scenario gappy defines no turn 2 (it has 2 turns)"
    assert make_decision(scenario, 2).reply.text == "turn 3 text"


def test_it_answers_a_scenario_without_turns_with_a_mismatch():
    decision = make_decision(make_scenario("empty", []), 0)
    assert decision.problem == "Scenario empty defines no turn 1 (it has 0 turns)"


# ---------------------------------------------------------------------------------------------------------------
# Validations


def test_it_fails_when_the_system_prompt_lacks_required_fragments():
    scenario = make_scenario("demo", system_prompt_must_include=["alpha", "beta", "gamma"])
    decision = make_decision(scenario, system="has alpha only")
    assert_harness_error(decision, "System prompt missing: beta, gamma")


def test_it_passes_when_the_system_prompt_holds_every_fragment():
    scenario = make_scenario("demo", system_prompt_must_include=["alpha", "beta"])
    decision = make_decision(scenario, system="beta then alpha")
    assert decision.problem == ""
    assert decision.completes_run is True


def test_it_checks_the_system_prompt_before_the_turn_exists():
    scenario = make_scenario("demo", system_prompt_must_include=["needed"])
    decision = make_decision(scenario, 5)
    assert_harness_error(decision, "System prompt missing: needed")


def test_it_fails_when_expected_tools_are_missing():
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["search", "fetch", "write"])])
    decision = make_decision(scenario, tools=("fetch",))
    assert_harness_error(decision, "Expected tools not available: search, write")


def test_it_compares_expected_tools_with_sanitised_names():
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["web.search", "fs/read"])])
    assert make_decision(scenario, tools=("web_search", "fs_read")).problem == ""
    assert make_decision(scenario, tools=("web.search", "fs/read")).problem == ""


def test_it_exempts_agent_tools_from_the_expected_tools():
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["agent__final_report", "agent__other", "search"])])
    assert make_decision(scenario, tools=("search",)).problem == ""
    assert_harness_error(make_decision(scenario), "Expected tools not available: search")


def test_it_skips_the_tool_check_with_allow_missing_tools():
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["search"], allow_missing_tools=True)])
    assert make_decision(scenario).problem == ""


@pytest.mark.parametrize(
    ("field", "request_field", "label"),
    [("expected_temperature", "temperature", "temperature"), ("expected_top_p", "top_p", "topP")],
)
def test_it_validates_sampling_values_within_a_tolerance(field, request_field, label):
    scenario = make_scenario("demo", [make_turn(1, **{field: 0.7})])
    assert make_decision(scenario, **{request_field: 0.7}).problem == ""
    assert make_decision(scenario, **{request_field: 0.7 + 5e-7}).problem == ""
    assert make_decision(scenario, **{request_field: 0.7 - 5e-7}).problem == ""
    assert_harness_error(
        make_decision(scenario, **{request_field: 0.7 + 2e-6}), f"Expected {label} 0.7 but received {0.7 + 2e-6}"
    )
    assert_harness_error(make_decision(scenario, **{request_field: 0.2}), f"Expected {label} 0.7 but received 0.2")


@pytest.mark.parametrize(("field", "label"), [("expected_temperature", "temperature"), ("expected_top_p", "topP")])
def test_it_fails_when_an_expected_sampling_value_is_absent(field, label):
    scenario = make_scenario("demo", [make_turn(1, **{field: 0.5})])
    assert_harness_error(make_decision(scenario), f"Expected {label} 0.5 but received undefined")


def test_it_ignores_sampling_values_the_turn_does_not_expect():
    scenario = make_scenario("demo")
    assert make_decision(scenario, temperature=1.7, top_p=0.1).problem == ""


def test_it_validates_expected_reasoning_enabled():
    scenario = make_scenario("demo", [make_turn(1, expected_reasoning="enabled")])
    assert make_decision(scenario, reasoning_enabled=True).problem == ""
    assert_harness_error(make_decision(scenario), "Expected reasoning to remain enabled")


def test_it_validates_expected_reasoning_disabled():
    scenario = make_scenario("demo", [make_turn(1, expected_reasoning="disabled")])
    assert make_decision(scenario).problem == ""
    assert_harness_error(make_decision(scenario, reasoning_enabled=True), "Expected reasoning to be disabled")


def test_it_reports_the_first_failing_validation_tools_then_temperature_then_top_p_then_reasoning():
    fields = {"expected_temperature": 0.1, "expected_top_p": 0.2, "expected_reasoning": "enabled"}
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["t"], **fields)])
    assert make_decision(scenario).problem == "Expected tools not available: t"
    assert make_decision(scenario, tools=("t",)).problem == "Expected temperature 0.1 but received undefined"
    assert make_decision(scenario, tools=("t",), temperature=0.1).problem == "Expected topP 0.2 but received undefined"
    got = make_decision(scenario, tools=("t",), temperature=0.1, top_p=0.2).problem
    assert got == "Expected reasoning to remain enabled"
    assert make_decision(scenario, tools=("t",), temperature=0.1, top_p=0.2, reasoning_enabled=True).problem == ""


def test_it_does_not_simulate_failures_on_a_failed_validation():
    scenario = make_scenario("demo", [make_turn(1, expected_tools=["t"], failures_before_success=2)])
    decision = make_decision(scenario)
    assert decision.problem
    assert decision.failure is None
    assert decision.failures_before_success == 0


# ---------------------------------------------------------------------------------------------------------------
# Simulated failures


def test_it_carries_a_model_error_failure_with_defaults():
    scenario = make_scenario("demo", [make_turn(1, failures_before_success=2)])
    decision = make_decision(scenario)
    assert decision.failures_before_success == 2
    assert decision.failure == Failure(
        status="model_error", message="Simulated model error", retryable=True, retry_after_ms=None, error=None
    )
    assert decision.reply.text == "turn 1 text"
    assert decision.problem == ""


@pytest.mark.parametrize(
    ("status", "message", "retry_after_ms"),
    [
        ("timeout", "Simulated timeout", None),
        ("invalid_response", "Simulated invalid response", None),
        ("network_error", "Simulated network error", None),
        ("rate_limit", "Rate limit exceeded (simulated)", 1000),
        ("model_error", "Simulated model error", None),
    ],
)
def test_it_gives_each_failure_status_its_default_message(status, message, retry_after_ms):
    scenario = make_scenario("demo", [make_turn(1, failures_before_success=1, failure_status=status)])
    failure = make_decision(scenario).failure
    assert failure == Failure(status=status, message=message, retryable=True, retry_after_ms=retry_after_ms)


def test_it_carries_the_authored_failure_fields():
    turn = make_turn(
        1,
        failures_before_success=3,
        failure_status="rate_limit",
        failure_message="slow down",
        failure_retryable=False,
        failure_retry_after_ms=2500,
        failure_error={"code": "custom"},
    )
    decision = make_decision(make_scenario("demo", [turn]))
    assert decision.failures_before_success == 3
    assert decision.failure == Failure("rate_limit", "slow down", False, 2500, {"code": "custom"})


def test_it_keeps_an_authored_zero_retry_after_for_rate_limits():
    turn = make_turn(1, failures_before_success=1, failure_status="rate_limit", failure_retry_after_ms=0)
    assert make_decision(make_scenario("demo", [turn])).failure.retry_after_ms == 0


def test_it_has_no_failure_without_failures_before_success():
    turn = make_turn(1, failure_status="rate_limit", failure_message="unused")
    decision = make_decision(make_scenario("demo", [turn]))
    assert decision.failure is None
    assert decision.failures_before_success == 0


def test_it_plays_the_seed_failure_throws_as_a_thrown_network_error():
    turn = {"turn": 1, "response": {"kind": "text", "assistantText": "x"}, "failuresBeforeSuccess": 1}
    turn |= {"failureThrows": True, "failureStatus": "rate_limit", "failureMessage": "boom"}
    failure = make_decision(make_scenario("demo", [turn])).failure
    assert failure == Failure("network_error", "boom", True, None, throws=True)
    unnamed = make_decision(make_scenario("demo", [turn | {"failureMessage": None}])).failure
    assert unnamed is not None and unnamed.message == "Simulated failure"  # the seed's own default
    scripted = make_decision(make_scenario("demo", [turn | {"failureThrows": False}])).failure
    assert scripted == Failure("rate_limit", "boom", True, 1000)


def test_it_completes_the_run_on_the_last_turn_even_with_failures_first():
    decision = make_decision(make_scenario("demo", [make_turn(1, failures_before_success=1)]))
    assert decision.completes_run is True


# ---------------------------------------------------------------------------------------------------------------
# Responses


def test_it_builds_a_text_reply_with_its_usage_counted():
    decision = make_decision(make_scenario("demo", [make_turn(1, {"kind": "text", "assistant_text": "Hello."})]))
    assert decision.reply.blocks == (Block(type="text", text="Hello."),)
    assert decision.reply.finish == "stop"
    # The prompt is the scenario id (one token); "Hello." is two tokens (a word and a full stop).
    assert (decision.reply.usage.input_tokens, decision.reply.usage.output_tokens) == (1, 2)
    assert decision.reply.usage.total_tokens == 3
    assert decision.reply.id_seed == "demo:1"


def test_it_keeps_the_usage_counts_a_turn_sets_and_counts_the_others():
    turn = make_turn(1, {"kind": "text", "assistant_text": "Hello there."}, usage={"input_tokens": 500})
    decision = make_decision(make_scenario("demo", [turn]))
    assert vars(decision.reply.usage) == {"input_tokens": 500, "output_tokens": 3, "total_tokens": 503}
    turn = make_turn(1, {"kind": "text", "assistant_text": "Hi"}, usage={"input_tokens": 64, "output_tokens": 32,
                                                                        "total_tokens": 96})  # fmt: skip
    assert vars(make_decision(make_scenario("demo", [turn])).reply.usage) == {
        "input_tokens": 64, "output_tokens": 32, "total_tokens": 96,
    }  # fmt: skip


def test_it_builds_tool_calls_with_authored_ids_verbatim_and_derived_ids_deterministic():
    response = {
        "kind": "tool-call",
        "assistant_text": "Let me look.",
        "tool_calls": [
            {"tool_name": "search", "arguments": {"q": "x", "n": 2}, "call_id": "my-call-1"},
            {"tool_name": "fetch", "arguments": {"url": "u"}, "assistant_text": "And fetch."},
            {"tool_name": "noop"},
        ],
    }
    scenario = make_scenario("demo", [make_turn(1, response)])
    blocks = make_decision(scenario).reply.blocks
    assert [(b.type, b.text) for b in blocks] == [
        ("text", "Let me look."),
        ("tool_call", ""),
        ("text", "And fetch."),
        ("tool_call", ""),
        ("tool_call", ""),
    ]
    search, fetch, noop = (b for b in blocks if b.type == "tool_call")
    assert (search.call_id, search.derived_id, search.name, search.arguments) == (
        "my-call-1",
        False,
        "search",
        '{"q":"x","n":2}',
    )
    assert (fetch.name, fetch.arguments, fetch.derived_id) == ("fetch", '{"url":"u"}', True)
    assert (noop.name, noop.arguments, noop.derived_id) == ("noop", "{}", True)
    assert re.fullmatch(r"call_[0-9a-f]{24}", fetch.call_id)
    assert fetch.call_id != noop.call_id
    assert make_decision(scenario).reply.blocks == blocks
    assert make_decision(scenario).reply.finish == "tool_calls"


def test_it_derives_different_call_ids_for_different_scenarios_and_turns():
    response = {"kind": "tool-call", "tool_calls": [{"tool_name": "t"}]}
    two_turns = make_scenario("demo", [make_turn(1, response), make_turn(2, response)])
    other = make_scenario("other", [make_turn(1, response)])
    ids = {
        make_decision(two_turns, 0).reply.tool_calls[0]["id"],
        make_decision(two_turns, 1).reply.tool_calls[0]["id"],
        make_decision(other, 0).reply.tool_calls[0]["id"],
    }
    assert len(ids) == 3


def test_it_builds_the_final_report_tool_call_arguments_in_order():
    response = {
        "kind": "final-report",
        "report_content": "# Done",
        "report_format": "json",
        "report_content_json": {"ok": True, "items": [1, 2]},
        "status": "partial",
        "assistant_text": "Reporting.",
    }
    decision = make_decision(make_scenario("demo", [make_turn(1, response)]))
    text, call = decision.reply.blocks
    assert text == Block(type="text", text="Reporting.")
    assert (call.call_id, call.name, call.derived_id) == ("agent-final-report", "agent__final_report", False)
    assert call.arguments == (
        '{"status":"partial","report_format":"json","report_content":"# Done","content_json":{"ok":true,"items":[1,2]}}'
    )
    assert decision.reply.finish == "tool_calls"


def test_it_defaults_the_final_report_to_success_markdown_without_content_json():
    decision = make_decision(make_scenario("demo", [make_turn(1, {"kind": "final-report", "report_content": "r"})]))
    assert [b.type for b in decision.reply.blocks] == ["tool_call"]
    assert report_arguments(decision) == {"status": "success", "report_format": "markdown", "report_content": "r"}


def test_it_puts_reasoning_first_with_authored_or_derived_signatures():
    response = {
        "kind": "tool-call",
        "assistant_text": "text",
        "tool_calls": [{"tool_name": "t"}],
        "reasoning": [{"text": "first thought", "signature": "authored-sig"}, {"text": "second thought"}],
    }
    blocks = make_decision(make_scenario("demo", [make_turn(1, response)])).reply.blocks
    assert [b.type for b in blocks] == ["reasoning", "reasoning", "text", "tool_call"]
    assert (blocks[0].text, blocks[0].signature) == ("first thought", "authored-sig")
    assert (blocks[1].text, blocks[1].signature) == ("second thought", sign_thinking("second thought", KEY))


def test_it_reads_the_seed_signature_from_provider_metadata():
    reasoning = [{"text": "r", "providerMetadata": {"anthropic": {"signature": "SIG"}}}]
    turn = make_turn(1, {"kind": "text", "assistantText": "a", "reasoning": reasoning})
    block = make_decision(make_scenario("demo", [turn])).reply.blocks[0]
    assert (block.type, block.text, block.signature) == ("reasoning", "r", "SIG")


@pytest.mark.parametrize(
    ("authored", "kind", "finish"),
    [
        (None, "text", "stop"),
        (None, "tool-call", "tool_calls"),
        ("end_turn", "text", "stop"),
        ("max_tokens", "text", "length"),
        ("length", "tool-call", "length"),
        ("tool_use", "text", "tool_calls"),
        ("tool-calls", "text", "tool_calls"),
        ("unknown-reason", "tool-call", "tool_calls"),
    ],
)
def test_it_maps_the_authored_finish_reason(authored, kind, finish):
    if kind == "text":
        response: dict[str, Any] = {"kind": "text", "assistant_text": "a"}
    else:
        response = {"kind": "tool-call", "tool_calls": [{"tool_name": "t"}]}
    fields = {"finish_reason": authored} if authored else {}
    assert make_decision(make_scenario("demo", [make_turn(1, response, **fields)])).reply.finish == finish


def test_it_takes_usage_from_the_turn_and_the_seed_token_usage():
    turn = make_turn(1, usage={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3})
    usage = make_decision(make_scenario("demo", [turn])).reply.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (1, 2, 3)
    seed_turn = {"turn": 1, "response": {"kind": "text", "assistantText": "a", "tokenUsage": {"inputTokens": 7}}}
    usage = make_decision(make_scenario("demo", [seed_turn])).reply.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (7, 1, 8)  # "a" is one token


def test_it_takes_pacing_from_the_scenario():
    scenario = make_scenario("demo", pacing={"chunk_words": 2, "interval_ms": 40})
    reply = make_decision(scenario).reply
    assert (reply.chunk_words, reply.interval_ms) == (2, 40)
    reply = make_decision(scenario, pacing_enabled=False).reply
    assert (reply.chunk_words, reply.interval_ms) == (2, 0)


def test_it_streams_scenarios_without_pacing_unpaced_in_five_word_chunks():
    reply = make_decision(make_scenario("demo")).reply
    assert (reply.chunk_words, reply.interval_ms) == (FALLBACK_CHUNK_WORDS, 0)


# ---------------------------------------------------------------------------------------------------------------
# Thinking signatures


def make_thinking_request(text: str, signature: str | None, first_user: str = "demo") -> ChatRequest:
    thinking = (Thinking(text=text, signature=signature, where="messages.1.content.0"),)
    return make_request(
        first_user, Message(role="assistant", text="a", thinking=thinking), "go on", protocol="anthropic"
    )


def test_it_refuses_a_thinking_block_without_its_signature():
    for signature in (None, ""):
        request = make_thinking_request("thought", signature)
        with pytest.raises(InvalidRequest, match=re.escape("messages.1.content.0.signature: Field required")):
            check_thinking_signatures(request, None, KEY)
        with pytest.raises(InvalidRequest, match=re.escape("messages.1.content.0.signature")):
            decide(make_catalog(), request, signature_key=KEY)


def test_it_refuses_an_altered_thinking_signature():
    signature = sign_thinking("thought", KEY)
    for text, sig in [("thought", signature[:-2] + "x="), ("thought!", signature), ("thought", "authored-sig")]:
        with pytest.raises(InvalidRequest, match=re.escape("messages.1.content.0: Invalid `signature` in `thinking`")):
            check_thinking_signatures(make_thinking_request(text, sig), None, KEY)


def test_it_refuses_a_signature_made_with_another_key():
    request = make_thinking_request("thought", sign_thinking("thought", "other"))
    with pytest.raises(InvalidRequest):
        check_thinking_signatures(request, None, KEY)


def test_it_accepts_derived_signatures():
    check_thinking_signatures(make_thinking_request("thought", sign_thinking("thought", KEY)), None, KEY)


def test_it_accepts_the_authored_signature_of_the_selected_scenario_only():
    turn = make_turn(1, {"kind": "text", "assistant_text": "a", "reasoning": [{"text": "t", "signature": "authored"}]})
    scenario = make_scenario("demo", [turn, make_turn(2)])
    check_thinking_signatures(make_thinking_request("t", "authored"), scenario, KEY)
    with pytest.raises(InvalidRequest):
        check_thinking_signatures(make_thinking_request("other text", "authored"), scenario, KEY)
    with pytest.raises(InvalidRequest):
        check_thinking_signatures(make_thinking_request("t", "authored"), None, KEY)
    decision = decide(make_catalog(scenario), make_thinking_request("t", "authored"), signature_key=KEY)
    assert decision.turn == 2 and decision.problem == ""


def test_it_accepts_the_signatures_it_gave_back_on_the_next_turn():
    response = {"kind": "tool-call", "tool_calls": [{"tool_name": "t"}], "reasoning": [{"text": "plan"}]}
    scenario = make_scenario("demo", [make_turn(1, response), make_turn(2)])
    first = make_decision(scenario).reply.blocks[0]
    request = make_thinking_request(first.text, first.signature)
    assert decide(make_catalog(scenario), request, signature_key=KEY).reply.text == "turn 2 text"


# ---------------------------------------------------------------------------------------------------------------
# The lorem fallback


def lorem_decision(*messages: str | Message, pacing_enabled: bool = True, **fields: Any) -> Decision:
    return decide(make_catalog(), make_request(*messages, **fields), pacing_enabled=pacing_enabled, signature_key=KEY)


@pytest.mark.parametrize("message", ["hello", "foobar", "a much longer question about the weather", "ünïcödé ✓"])
def test_it_answers_unknown_prompts_with_lorem_of_the_hashed_length_and_the_echo(message):
    decision = lorem_decision(message)
    assert decision.mode == "lorem"
    assert decision.scenario_id == ""
    assert decision.notes == ("lorem fallback",)
    assert decision.problem == ""
    assert decision.failure is None
    (block,) = decision.reply.blocks
    assert block.type == "text"
    assert block.text == f"{lorem(lorem_length(message))} {message}"
    assert len(block.text.split()) == 5 + abs(stable_hash(message)) % 496 + len(message.split())
    assert decision.reply.finish == "stop"


def test_it_uses_the_last_user_message_for_lorem():
    decision = lorem_decision("first", Message(role="assistant", text="x"), "second")
    assert decision.reply.text == f"{lorem(lorem_length('second'))} second"
    assert decision.turn == 2


def test_it_gives_lorem_without_echo_when_there_is_no_user_message():
    decision = lorem_decision(Message(role="tool", text="result"))
    assert decision.reply.text == lorem(lorem_length(""))


def test_it_adds_a_reasoning_block_when_the_message_has_a_reason_tail():
    message = "What now?\nReason: think it through"
    decision = lorem_decision(message)
    reasoning, text = decision.reply.blocks
    expected = f"{lorem(lorem_length(message))} {message}"
    assert (reasoning.type, reasoning.text, reasoning.signature) == (
        "reasoning",
        expected,
        sign_thinking(expected, KEY),
    )
    assert (text.type, text.text) == ("text", expected)


def test_it_needs_the_newline_before_reason():
    assert [b.type for b in lorem_decision("Reason: no newline").reply.blocks] == ["text"]


def test_it_paces_lorem_in_five_word_chunks_at_100_ms_unless_pacing_is_disabled():
    reply = lorem_decision("hello").reply
    assert (reply.chunk_words, reply.interval_ms) == (5, FALLBACK_INTERVAL_MS) == (5, 100)
    reply = lorem_decision("hello", pacing_enabled=False).reply
    assert (reply.chunk_words, reply.interval_ms) == (5, 0)


def test_it_counts_lorem_usage_in_words():
    decision = lorem_decision("hello there", system="be brief")
    usage = decision.reply.usage
    assert usage.input_tokens == 4
    assert usage.output_tokens == lorem_length("hello there") + 2
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens


def test_it_returns_the_same_lorem_reply_for_the_same_message():
    first = lorem_decision("same message")
    second = lorem_decision("same message")
    assert first == second
    assert first.reply.id_seed == second.reply.id_seed
    assert lorem_decision("other message").reply.text != first.reply.text
    assert lorem_decision("other message").reply.id_seed != first.reply.id_seed


def make_wire_request(protocol: str, message: str, stream: bool) -> ChatRequest:
    messages = [{"role": "user", "content": message}]
    if protocol == "openai":
        body = {"model": "m", "messages": messages, "stream": stream, "stream_options": {"include_usage": True}}
        return openai_wire.parse_request(body)
    return anthropic_wire.parse_request({"model": "m", "max_tokens": 100, "messages": messages, "stream": stream})


def encode_uncached(protocol: str, decision: Decision, request: ChatRequest) -> bytes:
    if protocol == "openai":
        if request.stream:
            return openai_wire.encode_stream.__wrapped__(decision.reply, request.model, request.include_usage).body
        return openai_wire.encode_completion.__wrapped__(decision.reply, request.model).body
    if request.stream:
        return anthropic_wire.encode_stream.__wrapped__(decision.reply, request.model).body
    return anthropic_wire.encode_message.__wrapped__(decision.reply, request.model).body


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [True, False])
def test_it_encodes_lorem_byte_for_byte_the_same_for_the_same_request(protocol, stream):
    def encoded(message: str) -> bytes:
        request = make_wire_request(protocol, message, stream)
        return encode_uncached(protocol, decide(make_catalog(), request, signature_key=KEY), request)

    message = "Tell me something\nReason: because"
    assert encoded(message) == encoded(message)
    assert encoded(message) != encoded("Tell me something else\nReason: because")


# ---------------------------------------------------------------------------------------------------------------
# Instruction mode


def test_it_follows_an_instruction_block_for_text_with_reasoning_and_id_message():
    message = make_instruction(
        {"id_message": "ID-42", "reasoning": {"length": 3}, "messages": [{"text_message": {"length": 7}}]}
    )
    decision = lorem_decision(message)
    assert decision.mode == "instruction"
    assert decision.notes == ("instruction block",)
    reasoning, text = decision.reply.blocks
    assert reasoning.type == "reasoning"
    assert reasoning.text == "ID-42 lorem ipsum dolor ID-42"
    assert reasoning.signature == sign_thinking(reasoning.text, KEY)
    assert text.type == "text"
    assert text.text == f"ID-42 {lorem(7)} ID-42"
    assert (reasoning.choice, text.choice) == (0, 0)
    assert decision.reply.finish == "stop"


def test_it_does_not_count_a_multi_word_id_message_in_lengths():
    message = make_instruction({"id_message": "run 7 marker", "messages": [{"text_message": {"length": 4}}]})
    (text,) = lorem_decision(message).reply.blocks
    assert text.text.startswith("run 7 marker ") and text.text.endswith(" run 7 marker")
    assert len(text.text.split()) == 4 + 2 * 3


@pytest.mark.parametrize("length", [0, 1, 5, 70, 499])
def test_it_gives_text_messages_their_exact_word_count(length):
    (text,) = lorem_decision(make_instruction({"messages": [{"text_message": {"length": length}}]})).reply.blocks
    assert len(text.text.split()) == length
    assert text.text == lorem(length)


def test_it_ignores_text_outside_the_instruction_block():
    block = make_instruction({"messages": [{"text_message": {"length": 3}}]})
    plain = lorem_decision(block).reply.blocks
    wrapped = lorem_decision(f"Some words before.\n{block}\nand after").reply.blocks
    assert plain == wrapped == (Block(type="text", text="lorem ipsum dolor"),)


def test_it_gives_each_instruction_message_its_own_choice_index():
    message = make_instruction(
        {
            "reasoning": {"length": 2},
            "messages": [
                {"text_message": {"length": 2}},
                {"tool_call": [{"name": "get_weather", "args": {"city": "Paris"}}, {"name": "no_args"}]},
                {"text_message": {"length": 1}},
            ],
        }
    )
    decision = lorem_decision(message)
    assert [(b.type, b.choice) for b in decision.reply.blocks] == [
        ("reasoning", 0),
        ("text", 0),
        ("tool_call", 1),
        ("tool_call", 1),
        ("reasoning", 2),
        ("text", 2),
    ]
    weather, no_args = decision.reply.blocks[2:4]
    assert (weather.name, weather.arguments, weather.derived_id) == ("get_weather", '{"city":"Paris"}', True)
    assert (no_args.name, no_args.arguments) == ("no_args", "{}")
    assert re.fullmatch(r"call_[0-9a-f]{24}", weather.call_id)
    assert weather.call_id != no_args.call_id
    assert decision.reply.finish == "tool_calls"
    assert lorem_decision(message) == decision


def test_it_paces_instruction_replies_like_lorem():
    message = make_instruction({"messages": [{"text_message": {"length": 3}}]})
    assert lorem_decision(message).reply.interval_ms == 100
    assert lorem_decision(message, pacing_enabled=False).reply.interval_ms == 0
    assert lorem_decision(message).reply.chunk_words == 5


def test_it_reads_the_instruction_from_the_last_user_message_only():
    block = make_instruction({"messages": [{"text_message": {"length": 3}}]})
    decision = lorem_decision(block, Message(role="assistant", text="x"), "plain")
    assert decision.mode == "lorem"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("{not json", "instruction block is not valid JSON: "),
        ("[]", "instruction block needs a non-empty messages array"),
        ('{"messages": []}', "instruction block needs a non-empty messages array"),
        ('{"messages": {"text_message": {"length": 1}}}', "instruction block needs a non-empty messages array"),
        ('{"messages": [{"text_message": {"length": "3"}}]}', "instruction messages[0] is neither text_message"),
        ('{"messages": [{"text_message": {"length": -1}}]}', "instruction messages[0] is neither text_message"),
        ('{"messages": [{"text_message": {"length": 1}}, {"other": 1}]}', "instruction messages[1] is neither"),
        ('{"messages": [{"tool_call": [{"args": {}}]}]}', "instruction messages[0] is neither text_message"),
        ('{"messages": [{"tool_call": [{"name": "t", "args": [1]}]}]}', "instruction messages[0] is neither"),
        ('{"messages": [{"tool_call": {"name": "t"}}]}', "instruction messages[0] is neither text_message"),
        ('{"reasoning": 3, "messages": [{"text_message": {"length": 1}}]}', "instruction reasoning must be"),
        ('{"reasoning": {}, "messages": [{"text_message": {"length": 1}}]}', "instruction reasoning must be"),
    ],
)
def test_it_falls_back_to_lorem_with_a_note_when_the_instruction_is_invalid(body, why):
    message = make_instruction(body)
    decision = lorem_decision(message)
    assert decision.mode == "lorem"
    assert decision.notes[0] == "lorem fallback"
    assert len(decision.notes) == 2
    assert decision.notes[1].startswith(f"instruction block ignored: {why}")
    assert decision.reply.text == f"{lorem(lorem_length(message))} {message}"


def test_it_falls_back_to_lorem_when_the_instruction_has_no_end_marker():
    message = INSTRUCTION_START + '{"messages": [{"text_message": {"length": 1}}]}'
    decision = lorem_decision(message)
    assert decision.mode == "lorem"
    assert decision.notes == ("lorem fallback", "instruction block ignored: instruction block has no end marker")


def test_it_prefers_a_selected_scenario_over_an_instruction_block():
    block = make_instruction({"messages": [{"text_message": {"length": 3}}]})
    scenario = make_scenario("matcher", match={"last_user_contains": "instruction_start"})
    assert decide(make_catalog(scenario), make_request(block)).mode == "scenario"


@pytest.mark.parametrize(
    "instruction",
    [
        '{"messages": [{"tool_call": []}]}',
        '{"messages": [{"text_message": {"length": true}}]}',
        '{"messages": [{"text_message": {"length": -1}}]}',
        '{"reasoning": {"length": -3}, "messages": [{"text_message": {"length": 2}}]}',
    ],
)
def test_it_falls_back_to_lorem_for_instructions_with_impossible_lengths_or_no_calls(instruction):
    request = ChatRequest(
        protocol="openai",
        model="m",
        messages=(Message(role="user", text=f"<|instruction_start|>{instruction}<|instruction_end|>"),),
    )
    decision = decide(Catalog.build([]), request)
    assert decision.mode == "lorem"
    assert any(note.startswith("instruction block ignored") for note in decision.notes)


def test_it_raises_instead_of_lorem_when_an_unmatched_request_asks_for_an_error() -> None:
    from harnessweb.engine.exchange import NothingMatched

    request = make_request("what now?")
    with pytest.raises(NothingMatched, match="the first user message 'what now\\?' is no scenario id"):
        decide(make_catalog(), request, unmatched_error=True)
    assert decide(make_catalog(), request).mode == "lorem"
