"""The replies the engine builds from a turn (text, tool calls, final report, reasoning, usage, pacing) and the
thinking signatures it checks."""

from __future__ import annotations

import re
from typing import Any

import pytest

from harnessweb.engine.exchange import (
    FALLBACK_CHUNK_WORDS,
    Block,
    ChatRequest,
    InvalidRequest,
    Message,
    Thinking,
    sign_thinking,
)
from harnessweb.engine.playback import check_thinking_signatures, decide
from tests.playback_helpers import (
    KEY,
    make_catalog,
    make_decision,
    make_request,
    make_scenario,
    make_turn,
    report_arguments,
)

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
