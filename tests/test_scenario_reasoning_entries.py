"""Reasoning entries as the TypeScript harness writes them (seed 000): ``type: "reasoning"``, provider metadata of
any provider (kept), redacted thinking (``redactedData``), ``reasoningContent`` in its three shapes and provider
metadata on the response; loaded unchanged, served as ``redacted_thinking`` on Anthropic and left out elsewhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from harnessweb.engine import wire
from harnessweb.engine.exchange import ChatRequest, Message, Reply
from harnessweb.engine.loader import dump_scenario, read_scenario_files, scenarios_in_text
from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario, format_validation_error
from harnessweb.engine.wire import anthropic as anthropic_wire
from harnessweb.engine.wire.common import WireError
from scenarios_app.editor import mapping
from tests.conftest import make_scenario
from tests.sse import parse_sse

OPENAI_META = {"itemId": "rs_123", "reasoningEncryptedContent": None}
# A scenario file as the TypeScript harness writes it: camelCase, every reasoning shape its provider reads.
TS_SCENARIO: dict[str, Any] = {
    "id": "ts-reasoning",
    "turns": [
        {
            "turn": 1,
            "response": {
                "kind": "tool-call",
                "assistantText": "Looking it up.",
                "reasoning": [
                    {
                        "type": "reasoning",
                        "text": "I should search.",
                        "providerMetadata": {"openai": OPENAI_META, "anthropic": {"signature": "sig-ts-1"}},
                    },
                    {
                        "type": "reasoning",
                        "text": "",
                        "providerMetadata": {"anthropic": {"redactedData": "REDACTED-A"}},
                    },
                    {"type": "reasoning", "redactedData": "REDACTED-B"},
                ],
                "toolCalls": [{"toolName": "search", "arguments": {"q": "x"}, "callId": "call_s1"}],
                "providerMetadata": {"openai": {"responseId": "resp_1"}},
            },
        },
        {"turn": 2, "response": {"kind": "text", "assistantText": "Done.", "reasoningContent": "One string."}},
        {
            "turn": 3,
            "response": {
                "kind": "text",
                "assistantText": "Again.",
                "reasoningContent": [
                    "first",
                    {"type": "reasoning", "text": "second", "providerMetadata": {"anthropic": {"signature": "sig-3"}}},
                ],
            },
        },
        {
            "turn": 4,
            "response": {
                "kind": "final-report",
                "reportContent": "# Report",
                "reasoning": [{"text": "listed first"}],
                "reasoningContent": {"type": "reasoning", "text": "object form"},
            },
        },
    ],
}


def segments(scenario: Scenario, turn: int) -> list[tuple[str, str | None, str | None]]:
    return [(s.text, s.signature, s.redacted_data) for s in scenario.turn(turn).response.reasoning]


def errors_of(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        Scenario.model_validate(data)
    return format_validation_error(caught.value)


def with_first_entry(**entry: Any) -> dict[str, Any]:
    """The TypeScript scenario with its first reasoning entry replaced."""
    data = json.loads(json.dumps(TS_SCENARIO))
    data["turns"][0]["response"]["reasoning"][0] = entry
    return data


def turn_one_reply(protocol: str) -> Reply:
    scenario = Scenario.model_validate(TS_SCENARIO)
    request = ChatRequest(protocol=protocol, model="m", messages=(Message(role="user", text="ts-reasoning"),))
    return decide(Catalog.build([scenario]), request, signature_key="k").reply


# -- the schema and the loader ---------------------------------------------------------------------------------


def test_it_loads_every_typescript_reasoning_shape_through_the_loader(tmp_path: Path) -> None:
    path = tmp_path / "ts-reasoning.json"
    path.write_text(json.dumps(TS_SCENARIO), encoding="utf-8")

    [(_, scenario)] = read_scenario_files([path])

    assert scenario == Scenario.model_validate(TS_SCENARIO)
    assert segments(scenario, 1) == [
        ("I should search.", "sig-ts-1", None),
        ("", None, "REDACTED-A"),
        ("", None, "REDACTED-B"),
    ]
    first = scenario.turn(1).response
    # The Anthropic values are read into their fields; what is left of the metadata is kept as written.
    assert [s.provider_metadata for s in first.reasoning] == [{"openai": OPENAI_META}, None, None]
    assert first.provider_metadata == {"openai": {"responseId": "resp_1"}}
    assert segments(scenario, 2) == [("One string.", None, None)]
    assert segments(scenario, 3) == [("first", None, None), ("second", "sig-3", None)]
    assert segments(scenario, 4) == [("listed first", None, None), ("object form", None, None)]


def test_it_keeps_provider_metadata_through_canonical_json_and_a_file_round_trip() -> None:
    scenario = Scenario.model_validate(TS_SCENARIO)
    canonical = scenario.canonical()

    response = canonical["turns"][0]["response"]
    assert response["provider_metadata"] == {"openai": {"responseId": "resp_1"}}
    assert response["reasoning"][0] == {
        "text": "I should search.",
        "signature": "sig-ts-1",
        "provider_metadata": {"openai": OPENAI_META},
    }
    assert response["reasoning"][2] == {"text": "", "redacted_data": "REDACTED-B"}
    assert "type" not in json.dumps(canonical["turns"][0]["response"]["reasoning"])
    assert "reasoning_content" not in json.dumps(canonical) and "reasoningContent" not in json.dumps(canonical)
    assert Scenario.model_validate(canonical).canonical() == canonical
    [again] = scenarios_in_text(Path("exported.json"), dump_scenario(scenario))
    assert again.canonical() == canonical


def test_it_keeps_anthropic_metadata_it_does_not_read_into_a_field() -> None:
    meta = {"anthropic": {"signature": "from-metadata", "cacheControl": {"type": "ephemeral"}}, "google": {}}
    data = with_first_entry(text="t", signature="explicit", providerMetadata=meta)

    segment = Scenario.model_validate(data).canonical()["turns"][0]["response"]["reasoning"][0]

    # The explicit signature wins, and the one it overrode stays in the metadata rather than being lost.
    assert segment == {"text": "t", "signature": "explicit", "provider_metadata": meta}
    seed_style = with_first_entry(text="t", providerMetadata={"anthropic": {"signature": "s"}})
    assert Scenario.model_validate(seed_style).canonical()["turns"][0]["response"]["reasoning"][0] == {
        "text": "t",
        "signature": "s",
    }


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"type": "reasoning", "text": "t", "signatur": "x"}, "reasoning.0.signatur"),
        ({"type": "reasoning", "text": "t", "redactedDat": "x"}, "reasoning.0.redactedDat"),
        ({"type": "thinking", "text": "t"}, "reasoning.0.type"),
        ({"type": "reasoning"}, "reasoning.0.text"),
    ],
)
def test_it_still_refuses_a_typo_or_another_type_naming_the_field(entry: dict[str, Any], field: str) -> None:
    message = errors_of(with_first_entry(**entry))

    assert f"turns.0.response.tool-call.{field}:" in message


def test_it_still_refuses_a_typo_beside_reasoning_content_naming_it() -> None:
    data = json.loads(json.dumps(TS_SCENARIO))
    data["turns"][1]["response"]["reasoningContnet"] = "typo"

    assert "turns.1.response.text.reasoningContnet: Extra inputs are not permitted" in errors_of(data)


def test_it_refuses_provider_metadata_that_is_not_an_object_of_objects() -> None:
    message = errors_of(with_first_entry(text="t", providerMetadata={"openai": "flat"}))

    assert "turns.0.response.tool-call.reasoning.0" in message and "providerMetadata must be an object" in message


# -- the engine and the encoders -------------------------------------------------------------------------------


def test_it_builds_redacted_reasoning_blocks_without_text_or_signature() -> None:
    reply = turn_one_reply("anthropic")

    reasoning = [b for b in reply.blocks if b.type == "reasoning"]
    assert [(b.text, b.signature, b.redacted) for b in reasoning] == [
        ("I should search.", "sig-ts-1", ""),
        ("", "", "REDACTED-A"),
        ("", "", "REDACTED-B"),
    ]
    assert reply.reasoning == "I should search."


def test_it_streams_redacted_thinking_whole_in_its_block_start_with_no_deltas() -> None:
    encoded = anthropic_wire.encode_stream(turn_one_reply("anthropic"), "claude-test")
    events = [(name, json.loads(data)) for name, data in parse_sse(encoded.frames)]

    of_block = [(name, data) for name, data in events if data.get("index") == 1]
    assert of_block == [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "redacted_thinking", "data": "REDACTED-A"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    ]
    # The redacted blocks add no chunk of their own: the frames of blocks 1 and 2 carry no piece.
    assert not [p for p in encoded.pieces if p is not None and p.block in (1, 2)]


# Claude on Vertex AI and on Bedrock speaks Anthropic's Messages, redacted thinking too; the harness's own protocol
# gives it as the AI SDK's Anthropic provider does (providerMetadata.anthropic.redactedData), as seed 000 reads it.
ANTHROPICS = ("anthropic", "vertex_claude", "bedrock_claude", "harness")


@pytest.mark.parametrize("protocol", [w.PROTOCOL for w in wire.WIRES if w.PROTOCOL not in ANTHROPICS])
@pytest.mark.parametrize("stream", [False, True])
def test_it_leaves_redacted_thinking_out_of_every_other_protocol(protocol: str, stream: bool) -> None:
    module = wire.BY_NAME[protocol]
    request = ChatRequest(protocol=protocol, model="m", stream=stream, framing="sse")

    body = module.encode_reply(turn_one_reply(protocol), request).body

    assert b"REDACTED" not in body
    if protocol not in ("completions", "azure_completions"):  # legacy completions carry text only
        assert b"I should search." in body


def test_it_gives_gemini_and_responses_no_empty_reasoning_in_place_of_redacted_thinking() -> None:
    gemini = json.loads(wire.BY_NAME["gemini"].encode_reply(turn_one_reply("gemini"), ChatRequest("gemini", "m")).body)
    parts = gemini["candidates"][0]["content"]["parts"]
    assert [p.get("thought", False) for p in parts] == [True, False, False]

    responses = wire.BY_NAME["responses"]
    request = ChatRequest("responses", "m")
    output = json.loads(responses.encode_reply(turn_one_reply("responses"), request).body)["output"]
    assert [item["type"] for item in output] == ["reasoning", "message", "function_call"]


def test_it_parses_a_redacted_thinking_block_sent_back_and_needs_its_data() -> None:
    def body(block: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": "c",
            "max_tokens": 8,
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [block, {"type": "text", "text": "ok"}]},
                {"role": "user", "content": "more"},
            ],
        }

    request = anthropic_wire.parse_request(body({"type": "redacted_thinking", "data": "REDACTED-A"}))
    assert request.messages[1].text == "ok" and request.messages[1].thinking == ()

    with pytest.raises(WireError) as caught:
        anthropic_wire.parse_request(body({"type": "redacted_thinking"}))
    assert caught.value.param == "messages.1.content.0.data"
    assert caught.value.message == "messages.1.content.0.data: Field required"


# -- the editor ------------------------------------------------------------------------------------------------


def test_it_keeps_a_scenario_with_provider_metadata_or_redacted_thinking_on_the_raw_tab() -> None:
    expected = "its provider metadata and redacted thinking are edited on the raw tab"
    assert mapping.form_problem(Scenario.model_validate(TS_SCENARIO).canonical()) == expected

    for entry in ({"text": "", "redactedData": "R"}, {"text": "t", "providerMetadata": {"openai": {}}}):
        data = {
            "id": "x",
            "turns": [{"turn": 1, "response": {"kind": "text", "assistantText": "A", "reasoning": [entry]}}],
        }
        assert mapping.form_problem(Scenario.model_validate(data).canonical()) == expected
    data = {
        "id": "x",
        "turns": [{"turn": 1, "response": {"kind": "text", "assistantText": "A", "providerMetadata": {}}}],
    }
    assert mapping.form_problem(Scenario.model_validate(data).canonical()) == expected


# -- through the official SDKs against the real app ----------------------------------------------------------


def tool_results(content: list[Any]) -> dict[str, Any]:
    results = [
        {"type": "tool_result", "tool_use_id": b.id, "content": "found"} for b in content if b.type == "tool_use"
    ]
    return {"role": "user", "content": results}


def test_it_serves_redacted_thinking_through_anthropic_and_takes_it_back(claude) -> None:
    make_scenario("ts-reasoning", TS_SCENARIO["turns"])
    messages: list[dict[str, Any]] = [{"role": "user", "content": "ts-reasoning"}]
    thinking = {"type": "enabled", "budget_tokens": 256}

    first = claude.messages.create(model="claude-test", max_tokens=512, messages=messages, thinking=thinking)

    assert [b.type for b in first.content] == ["thinking", "redacted_thinking", "redacted_thinking", "text", "tool_use"]
    assert (first.content[0].thinking, first.content[0].signature) == ("I should search.", "sig-ts-1")
    assert [first.content[1].data, first.content[2].data] == ["REDACTED-A", "REDACTED-B"]
    sent_back = [b.model_dump(exclude_none=True) for b in first.content]
    messages += [{"role": "assistant", "content": sent_back}, tool_results(first.content)]
    second = claude.messages.create(model="claude-test", max_tokens=512, messages=messages, thinking=thinking)
    assert [b.type for b in second.content] == ["thinking", "text"]
    assert second.content[1].text == "Done."

    without_data = [b if b["type"] != "redacted_thinking" else {"type": "redacted_thinking"} for b in sent_back]
    with pytest.raises(Exception) as caught:
        claude.messages.create(
            model="claude-test",
            max_tokens=512,
            messages=[messages[0], {"role": "assistant", "content": without_data}, messages[2]],
        )
    assert caught.value.status_code == 400
    assert "messages.1.content.1.data: Field required" in caught.value.body["error"]["message"]


def test_it_streams_redacted_thinking_through_anthropic_and_takes_it_back(claude) -> None:
    make_scenario("ts-reasoning", TS_SCENARIO["turns"])
    messages: list[dict[str, Any]] = [{"role": "user", "content": "ts-reasoning"}]

    with claude.messages.stream(model="claude-test", max_tokens=512, messages=messages) as stream:
        events = [(e.type, getattr(e, "index", None)) for e in stream]
        final = stream.get_final_message()

    assert [b.type for b in final.content] == ["thinking", "redacted_thinking", "redacted_thinking", "text", "tool_use"]
    assert final.content[0].signature == "sig-ts-1"
    assert [final.content[1].data, final.content[2].data] == ["REDACTED-A", "REDACTED-B"]
    assert [name for name, index in events if index == 1] == ["content_block_start", "content_block_stop"]
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in final.content]},
        tool_results(final.content),
    ]
    with claude.messages.stream(model="claude-test", max_tokens=512, messages=messages) as stream:
        assert stream.get_final_text() == "Done."


def test_it_leaves_redacted_thinking_out_through_openai(oai) -> None:
    make_scenario("ts-reasoning", TS_SCENARIO["turns"])
    messages = [{"role": "user", "content": "ts-reasoning"}]

    completion = oai.chat.completions.create(model="gpt-test", messages=messages)
    chunks = list(oai.chat.completions.create(model="gpt-test", messages=messages, stream=True))
    response = oai.responses.create(model="gpt-test", input="ts-reasoning")

    message = completion.choices[0].message
    assert message.to_dict()["reasoning"] == "I should search."
    assert message.tool_calls[0].id == "call_s1"
    assert "REDACTED" not in completion.to_json()
    streamed = "".join(c.choices[0].delta.to_dict().get("reasoning", "") for c in chunks if c.choices)
    assert streamed == "I should search."
    assert not any("REDACTED" in c.to_json() for c in chunks)
    assert [item.type for item in response.output] == ["reasoning", "message", "function_call"]
    assert "REDACTED" not in response.to_json()
