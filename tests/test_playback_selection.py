"""The engine choosing a scenario (header, first user message, match rules) and the turn to play."""

from __future__ import annotations

from typing import Any

import pytest

from harnessweb.engine.exchange import ChatRequest, Message, ScenarioNotFound
from harnessweb.engine.playback import decide, select_scenario
from tests.playback_helpers import (
    make_catalog,
    make_conversation,
    make_decision,
    make_request,
    make_scenario,
    make_turn,
    report_arguments,
)

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
