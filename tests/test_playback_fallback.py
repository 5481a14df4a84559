"""The engine without a scenario: the lorem fallback and instruction mode."""

from __future__ import annotations

import re
from typing import Any

import pytest

from harnessweb.engine.exchange import Block, ChatRequest, Decision, Message, sign_thinking
from harnessweb.engine.fallback import FALLBACK_INTERVAL_MS, INSTRUCTION_START, lorem, lorem_length, stable_hash
from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.wire import anthropic as anthropic_wire
from harnessweb.engine.wire import openai as openai_wire
from tests.playback_helpers import KEY, make_catalog, make_instruction, make_request, make_scenario

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
