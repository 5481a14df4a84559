"""Every kind of turn through the official SDKs, streaming and not, on both protocols."""

import json

import httpx2
import pytest

from tests.conftest import make_scenario, recorded_run

WEATHER_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}
CLAUDE_WEATHER_TOOL = {"name": "get_weather", "input_schema": {"type": "object", "properties": {}}}
AGENT_TURNS = [
    {
        "turn": 1,
        "response": {
            "kind": "tool-call",
            "assistant_text": "Checking the weather.",
            "reasoning": [{"text": "The user wants the weather in Paris; call the tool."}],
            "tool_calls": [
                {"tool_name": "get_weather", "arguments": {"city": "Paris", "units": "metric"}, "call_id": "call_w1"},
                {"tool_name": "get_weather", "arguments": {"city": "Lyon"}},
            ],
        },
    },
    {"turn": 2, "response": {"kind": "text", "assistant_text": "Paris: 18 °C and sunny. Lyon: 21 °C."}},
    {
        "turn": 3,
        "response": {
            "kind": "final-report",
            "report_content": "# Weather\n\nParis 18 °C, Lyon 21 °C.",
            "report_format": "markdown",
            "report_content_json": {"paris": 18, "lyon": 21},
        },
    },
]


def test_it_plays_every_kind_through_openai_without_streaming(oai):
    make_scenario("agent-openai", AGENT_TURNS)
    messages = [{"role": "user", "content": "agent-openai"}]
    first = oai.chat.completions.create(model="gpt-test", messages=messages, tools=[WEATHER_TOOL])
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    assert message.content == "Checking the weather."
    assert [c.id for c in message.tool_calls][0] == "call_w1"
    assert json.loads(message.tool_calls[0].function.arguments) == {"city": "Paris", "units": "metric"}
    assert message.tool_calls[1].id.startswith("call_") and message.tool_calls[1].id != "call_w1"
    assert message.model_extra["reasoning"] == "The user wants the weather in Paris; call the tool."
    messages.append(message.model_dump(exclude_none=True))
    for call in message.tool_calls:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
    second = oai.chat.completions.create(model="gpt-test", messages=messages)
    assert second.choices[0].message.content == "Paris: 18 °C and sunny. Lyon: 21 °C."
    assert second.choices[0].finish_reason == "stop"
    assert (second.usage.prompt_tokens, second.usage.completion_tokens, second.usage.total_tokens) == (
        9,
        14,
        23,
    )  # counted
    messages += [second.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "report"}]
    third = oai.chat.completions.with_raw_response.create(model="gpt-test", messages=messages)
    report = third.parse().choices[0].message.tool_calls[0]
    assert report.function.name == "agent__final_report"
    assert json.loads(report.function.arguments) == {
        "status": "success",
        "report_format": "markdown",
        "report_content": "# Weather\n\nParis 18 °C, Lyon 21 °C.",
        "content_json": {"paris": 18, "lyon": 21},
    }
    run = recorded_run(third.headers["x-harness-run"], status="passed")
    assert run.turns_served == [1, 2, 3]
    assert run.scenario_id == "agent-openai" and run.protocol == "openai"


def test_it_streams_every_kind_through_openai(oai):
    make_scenario("agent-openai-stream", AGENT_TURNS)
    messages = [{"role": "user", "content": "agent-openai-stream"}]
    with oai.chat.completions.stream(model="gpt-test", messages=messages, tools=[WEATHER_TOOL]) as stream:
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert message.content == "Checking the weather."
    assert [c.function.name for c in message.tool_calls] == ["get_weather", "get_weather"]
    assert json.loads(message.tool_calls[1].function.arguments) == {"city": "Lyon"}
    assert final.choices[0].finish_reason == "tool_calls"
    messages.append(
        {
            "role": "assistant",
            "content": message.content,
            "tool_calls": [c.model_dump(include={"id", "type", "function"}) for c in message.tool_calls],
        }
    )
    chunks = list(
        oai.chat.completions.create(
            model="gpt-test", messages=messages, stream=True, stream_options={"include_usage": True}
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "Paris: 18 °C and sunny. Lyon: 21 °C."
    )
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 23
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_it_plays_every_kind_through_anthropic_without_streaming(claude):
    make_scenario("agent-claude", AGENT_TURNS)
    messages = [{"role": "user", "content": "agent-claude"}]
    first = claude.messages.create(
        model="claude-test",
        max_tokens=512,
        messages=messages,
        tools=[CLAUDE_WEATHER_TOOL],
        thinking={"type": "enabled", "budget_tokens": 256},
    )
    assert [b.type for b in first.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert first.stop_reason == "tool_use"
    assert first.content[0].signature
    assert first.content[2].id == "call_w1" and first.content[2].input == {"city": "Paris", "units": "metric"}
    assert first.content[3].id.startswith("toolu_")
    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]})
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": b.id, "content": "sunny"}
                for b in first.content
                if b.type == "tool_use"
            ],
        }
    )
    second = claude.messages.create(model="claude-test", max_tokens=512, messages=messages)
    assert second.content[0].text == "Paris: 18 °C and sunny. Lyon: 21 °C." and second.stop_reason == "end_turn"
    messages += [{"role": "assistant", "content": second.content[0].text}, {"role": "user", "content": "report"}]
    third = claude.messages.create(model="claude-test", max_tokens=512, messages=messages)
    assert third.content[0].name == "agent__final_report" and third.content[0].input["status"] == "success"


def test_it_streams_every_kind_through_anthropic(claude):
    make_scenario("agent-claude-stream", AGENT_TURNS)
    messages = [{"role": "user", "content": "agent-claude-stream"}]
    with claude.messages.stream(
        model="claude-test", max_tokens=512, messages=messages, tools=[CLAUDE_WEATHER_TOOL]
    ) as stream:
        events = [e.type for e in stream]
        final = stream.get_final_message()
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert final.content[0].thinking == "The user wants the weather in Paris; call the tool."
    assert final.content[3].input == {"city": "Lyon"}
    assert final.usage.output_tokens == 42  # counted: thinking, text and arguments
    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in final.content]})
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": b.id, "content": "ok"}
                for b in final.content
                if b.type == "tool_use"
            ],
        }
    )
    with claude.messages.stream(model="claude-test", max_tokens=512, messages=messages) as stream:
        assert stream.get_final_text() == "Paris: 18 °C and sunny. Lyon: 21 °C."


def test_it_refuses_a_thinking_block_sent_back_without_or_with_an_altered_signature(claude):
    make_scenario("signed", AGENT_TURNS)
    messages = [{"role": "user", "content": "signed"}]
    first = claude.messages.create(model="c", max_tokens=64, messages=messages, tools=[CLAUDE_WEATHER_TOOL])
    blocks = [b.model_dump(exclude_none=True) for b in first.content]
    results = [
        {"type": "tool_result", "tool_use_id": b["id"], "content": "ok"} for b in blocks if b["type"] == "tool_use"
    ]
    for tampered, expected in [
        ({**blocks[0], "signature": blocks[0]["signature"][:-4] + "AAA="}, "Invalid `signature`"),
        ({k: v for k, v in blocks[0].items() if k != "signature"}, "messages.1.content.0.signature: Field required"),
    ]:
        with pytest.raises(Exception) as caught:
            claude.messages.create(
                model="c",
                max_tokens=64,
                messages=[
                    *messages,
                    {"role": "assistant", "content": [tampered, *blocks[1:]]},
                    {"role": "user", "content": results},
                ],
            )
        assert caught.value.status_code == 400
        assert caught.value.body["error"]["type"] == "invalid_request_error"
        assert expected in caught.value.body["error"]["message"]


@pytest.mark.parametrize(
    ("turn", "request_fields", "problem"),
    [
        ({"expected_tools": ["get_weather", "agent__final_report"]}, {}, "Expected tools not available: get_weather"),
        ({"expected_temperature": 0.2}, {"temperature": 0.7}, "Expected temperature 0.2 but received 0.7"),
        ({"expected_top_p": 0.9}, {"top_p": 0.5}, "Expected topP 0.9 but received 0.5"),
        ({"expected_reasoning": "enabled"}, {}, "Expected reasoning to remain enabled"),
        ({"expected_reasoning": "disabled"}, {"reasoning_effort": "high"}, "Expected reasoning to be disabled"),
    ],
)
def test_it_reports_each_validation_failure_as_a_failure_final_report(oai, turn, request_fields, problem):
    scenario_id = f"validate-{abs(hash(problem))}"
    make_scenario(scenario_id, [{"turn": 1, "response": {"kind": "text", "assistant_text": "ok"}, **turn}])
    raw = oai.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": scenario_id}], **request_fields
    )
    message = raw.parse().choices[0].message
    assert message.content == "Scenario validation failed."
    arguments = json.loads(message.tool_calls[0].function.arguments)
    assert arguments["status"] == "failure"
    assert arguments["report_content"] == f"# Test Harness Error\n\n{problem}"
    run = recorded_run(raw.headers["x-harness-run"], status="failed")
    assert run.status_reason == problem


def test_it_reads_anthropic_temperature_and_thinking_from_the_body(claude):
    make_scenario(
        "claude-params",
        [
            {
                "turn": 1,
                "expected_temperature": 0.3,
                "expected_top_p": 0.8,
                "expected_reasoning": "enabled",
                "response": {"kind": "text", "assistant_text": "params ok"},
            }
        ],
    )
    message = claude.messages.create(
        model="c",
        max_tokens=64,
        messages=[{"role": "user", "content": "claude-params"}],
        thinking={"type": "adaptive"},
        extra_body={"temperature": 0.3, "top_p": 0.8},
    )
    assert message.content[0].text == "params ok"


def test_it_fails_the_run_when_the_system_prompt_misses_a_fragment(claude):
    make_scenario("needs-system", system_prompt_must_include=["You are Harness", "Be brief"])
    raw = claude.messages.with_raw_response.create(
        model="c", max_tokens=64, system="You are Harness.", messages=[{"role": "user", "content": "needs-system"}]
    )
    report = raw.parse().content[1]
    assert report.input["report_content"] == "# Test Harness Error\n\nSystem prompt missing: Be brief"
    assert recorded_run(raw.headers["x-harness-run"], status="failed").status_reason.startswith("System prompt")


def test_it_answers_a_turn_the_scenario_lacks_with_the_mismatch_report(oai):
    make_scenario("one-turn")
    messages = [
        {"role": "user", "content": "one-turn"},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "again"},
    ]
    raw = oai.chat.completions.with_raw_response.create(model="m", messages=messages)
    message = raw.parse().choices[0].message
    assert message.content == "Encountered scenario mismatch."
    assert json.loads(message.tool_calls[0].function.arguments)["report_content"].startswith("# Scenario Failure\n\n")
    assert recorded_run(raw.headers["x-harness-run"], status="failed")


def test_it_selects_by_header_and_by_match_rules(oai):
    make_scenario("by-header", [{"turn": 1, "response": {"kind": "text", "assistant_text": "from header"}}])
    make_scenario(
        "by-rules-low",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": "low"}}],
        match={"system_contains": "support bot"},
    )
    make_scenario(
        "by-rules-high",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": "high"}}],
        match={"system_contains": "support bot", "last_user_regex": "refund"},
        priority=5,
    )
    messages = [{"role": "system", "content": "You are a support bot."}, {"role": "user", "content": "I want a refund"}]
    assert oai.chat.completions.create(model="m", messages=messages).choices[0].message.content == "high"
    other = [messages[0], {"role": "user", "content": "hello"}]
    assert oai.chat.completions.create(model="m", messages=other).choices[0].message.content == "low"
    headed = oai.chat.completions.create(
        model="m", messages=messages, extra_headers={"X-Harness-Scenario": "by-header"}
    )
    assert headed.choices[0].message.content == "from header"


def test_it_answers_404_naming_an_unknown_scenario_header(oai, claude):
    import anthropic
    import openai

    with pytest.raises(openai.NotFoundError) as caught:
        oai.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            extra_headers={"X-Harness-Scenario": "no-such-scenario"},
        )
    assert "no-such-scenario" in caught.value.body["message"]
    with pytest.raises(anthropic.NotFoundError) as caught:
        claude.messages.create(
            model="m",
            max_tokens=5,
            messages=[{"role": "user", "content": "x"}],
            extra_headers={"X-Harness-Scenario": "no-such-scenario"},
        )
    assert caught.value.body["error"]["type"] == "not_found_error"


def test_it_lists_the_scenarios_as_models_in_either_format(oai, claude):
    make_scenario("model-a")
    make_scenario("model-b")
    assert {"model-a", "model-b"} <= {m.id for m in oai.models.list()}
    assert {"model-a", "model-b"} <= {m.id for m in claude.models.list()}


def test_it_serves_a_scenario_saved_by_another_process_from_the_next_request(oai, harness_server):
    make_scenario("edited", [{"turn": 1, "response": {"kind": "text", "assistant_text": "version one"}}])
    ask = {"model": "m", "messages": [{"role": "user", "content": "edited"}]}
    assert oai.chat.completions.create(**ask).choices[0].message.content == "version one"
    make_scenario("edited", [{"turn": 1, "response": {"kind": "text", "assistant_text": "version two"}}])
    assert oai.chat.completions.create(**ask).choices[0].message.content == "version two"


def test_it_streams_paced_chunks_over_time(paced_server, transactional_db):
    import time

    make_scenario(
        "paced",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": " ".join(["word"] * 12)}}],
        pacing={"chunk_words": 3, "interval_ms": 120},
    )
    arrivals = []
    with httpx2.stream(
        "POST",
        f"{paced_server.url}/v1/chat/completions",
        json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "paced"}]},
        timeout=10,
    ) as response:
        for line in response.iter_lines():
            if line.startswith("data: {") and '"content":"' in line and '"content":""' not in line:
                arrivals.append(time.monotonic())
    assert len(arrivals) == 4
    assert arrivals[-1] - arrivals[0] >= 3 * 0.12 * 0.9
