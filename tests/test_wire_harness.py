"""The harness's own protocol (the npm package's AI SDK provider): the AI SDK's prompt read into the neutral request,
the engine's decision as content parts, failures as data, errors naming the field."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
import pytest

from harnessweb.engine import respond, routes
from harnessweb.engine.exchange import Block, Failure, InvalidRequest, Reply, Usage, sign_thinking
from harnessweb.engine.playback import Catalog, decide, failure_of
from harnessweb.engine.schemas import Scenario
from harnessweb.engine.wire import BY_NAME, harness
from harnessweb.engine.wire.common import WireError

KEY = "harness-wire-test-key"
SEED_SCENARIO = {
    "id": "seed-000-flow",
    "systemPromptMustInclude": ["You are a test agent"],
    "turns": [
        {
            "turn": 1,
            "expectedTools": ["search"],
            "expectedTemperature": 0.2,
            "response": {
                "kind": "tool-call",
                "assistantText": "Searching.",
                "reasoning": [{"text": "I should search.", "providerMetadata": {"anthropic": {"signature": "sig-1"}}}],
                "toolCalls": [{"toolName": "search", "callId": "call-search", "arguments": {"q": "oslo"}}],
                "tokenUsage": {"inputTokens": 64, "outputTokens": 32, "totalTokens": 96},
            },
        },
        {
            "turn": 2,
            "failuresBeforeSuccess": 1,
            "failureThrows": True,
            "failureMessage": "boom",
            "response": {"kind": "final-report", "reportContent": "# Done", "reportFormat": "markdown"},
        },
    ],
}


def make_body(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "test-llm",
        "prompt": [
            {"role": "system", "content": "You are a test agent."},
            {"role": "user", "content": [{"type": "text", "text": "seed-000-flow"}]},
        ],
        "tools": [{"name": "search", "description": "Search", "input_schema": {"type": "object"}}],
        "temperature": 0.2,
    }
    body.update(fields)
    return body


def second_turn(signature: str | None = "sig-1") -> list[dict[str, Any]]:
    reasoning: dict[str, Any] = {"type": "reasoning", "text": "I should search."}
    if signature is not None:
        reasoning["providerOptions"] = {"anthropic": {"signature": signature}}
    return [
        *make_body()["prompt"],
        {
            "role": "assistant",
            "content": [
                reasoning,
                {"type": "text", "text": "Searching."},
                {"type": "tool-call", "toolCallId": "call-search", "toolName": "search", "input": {"q": "oslo"}},
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "call-search",
                    "toolName": "search",
                    "output": {"type": "json", "value": {"weather": "sunny"}},
                }
            ],
        },
    ]


def played(body: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    request = harness.parse_request(body)
    catalog = Catalog.build([Scenario.model_validate(SEED_SCENARIO)])
    decision = decide(catalog, request, signature_key=KEY)
    return decision, orjson.loads(harness.encode_reply(decision.reply, request).body)


def test_it_is_listed_and_routed_at_its_own_path() -> None:
    assert BY_NAME["harness"] is harness
    assert routes.play_wire("/harness/v1/generate") is harness
    assert routes.is_provider_path("/harness/v1/generate")
    refusal = routes.resolve("GET", "/harness/v1/generate", {})
    assert isinstance(refusal, routes.Refusal) and refusal.status == 405 and refusal.wire is harness


def test_it_reads_the_sdk_prompt_into_the_neutral_request() -> None:
    request = harness.parse_request(make_body(prompt=second_turn(), top_p=0.9, reasoning=True, stream=True))
    assert request.system == "You are a test agent."
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]
    assert request.first_user == "seed-000-flow" and request.turn == 2
    assert request.messages[1].text == "Searching."
    assert request.messages[1].call_ids == ("call-search",)
    assert [(t.text, t.signature) for t in request.messages[1].thinking] == [("I should search.", "sig-1")]
    assert request.messages[2].result_ids == ("call-search",) and request.messages[2].text == '{"weather":"sunny"}'
    assert (request.tools, request.temperature, request.top_p) == (("search",), 0.2, 0.9)
    assert request.reasoning_enabled and request.stream


def test_what_every_protocol_s_reader_takes_from_the_body() -> None:
    body = make_body(max_tokens=50, stop=["END"], tool_choice={"type": "tool", "name": "search"})
    route = routes.resolve("POST", harness.PATH, {})
    _, request = respond.read_request(route, orjson.dumps(body))
    assert (request.max_tokens, request.stop, request.forced_tool) == (50, ("END",), "search")
    assert request.tool_schemas == (("search", '{"type":"object"}'),)
    _, structured = respond.read_request(route, orjson.dumps(make_body(output_format={"schema": {"type": "object"}})))
    assert structured.schema_json == '{"type":"object"}'


def test_it_answers_seed_000_s_parts_reasoning_signed_tool_calls_with_ids() -> None:
    decision, body = played(make_body())
    assert decision.problem == ""
    assert body == {
        "id": body["id"],
        "model": "test-llm",
        "content": [
            {
                "type": "reasoning",
                "text": "I should search.",
                "providerMetadata": {"anthropic": {"signature": "sig-1"}},
            },
            {"type": "text", "text": "Searching."},
            {"type": "tool-call", "toolCallId": "call-search", "toolName": "search", "input": '{"q":"oslo"}'},
        ],
        "finishReason": "tool-calls",
        "usage": {"inputTokens": 64, "outputTokens": 32, "totalTokens": 96},
    }
    assert body["id"].startswith("gen_")


def test_the_final_report_is_seed_000_s_tool_call() -> None:
    decision, body = played(make_body(prompt=second_turn()))
    assert decision.failure is not None and decision.failures_before_success == 1
    report = body["content"][-1]
    assert (report["toolCallId"], report["toolName"]) == ("agent-final-report", "agent__final_report")
    assert orjson.loads(report["input"]) == {
        "status": "success",
        "report_format": "markdown",
        "report_content": "# Done",
    }


def test_reasoning_without_a_signature_is_left_out_and_a_tampered_one_refused() -> None:
    unsigned = harness.parse_request(make_body(prompt=second_turn(signature=None)))
    assert unsigned.messages[1].thinking == ()
    with pytest.raises(InvalidRequest, match=r"prompt\.2\.content\.0: Invalid `signature`"):
        played(make_body(prompt=second_turn(signature="forged")))
    signed = sign_thinking("I should search.", KEY)  # the engine's own signature is accepted too
    assert played(make_body(prompt=second_turn(signature=signed)))[0].problem == ""


def test_a_validation_failure_is_served_as_the_failure_report() -> None:
    decision, body = played(make_body(temperature=0.7))
    assert decision.problem == "Expected temperature 0.2 but received 0.7"
    report = orjson.loads(body["content"][-1]["input"])
    assert report["status"] == "failure" and "Expected temperature 0.2 but received 0.7" in report["report_content"]
    assert body["content"][0] == {"type": "text", "text": "Scenario validation failed."}


def test_a_thrown_failure_and_a_status_are_said_as_data_with_their_http_status() -> None:
    thrown = harness.encode_failure(failure_of("network_error", "boom", throws=True))
    assert thrown.status == 500
    assert orjson.loads(thrown.body) == {
        "status": "network_error",
        "message": "boom",
        "retryable": True,
        "retryAfterMs": None,
        "throws": True,
    }
    limited = harness.encode_failure(failure_of("rate_limit", retry_after_ms=2500))
    assert limited.status == 429 and (b"retry-after-ms", b"2500") in limited.headers
    assert orjson.loads(limited.body) == {
        "status": "rate_limit",
        "message": "Rate limit exceeded (simulated)",
        "retryable": True,
        "retryAfterMs": 2500,
        "throws": False,
    }


def test_seed_000_s_failure_throws_is_thrown_here_and_a_dropped_connection_elsewhere() -> None:
    decision, _ = played(make_body(prompt=second_turn()))
    assert decision.failure is not None and decision.failure.throws
    said = orjson.loads(harness.encode_failure(decision.failure).body)
    assert (said["status"], said["message"], said["throws"]) == ("network_error", "boom", True)
    openai = BY_NAME["openai"]
    request = openai.parse_request({"model": "m", "messages": [{"role": "user", "content": "seed-000-flow"}]})
    dropped = respond.failure_outgoing(openai, decision.failure, decision, request, "r", 30_000)
    assert dropped.drop_after is not None  # what a scripted network_error does on every HTTP protocol


def test_a_scripted_network_error_is_not_thrown() -> None:
    turn = {"turn": 1, "failuresBeforeSuccess": 1, "failureStatus": "network_error", "failureMessage": "cut"}
    scenario = Scenario.model_validate(
        {"id": "dropped", "turns": [turn | {"response": {"kind": "text", "assistantText": "x"}}]}
    )
    body = make_body(prompt=[{"role": "user", "content": [{"type": "text", "text": "dropped"}]}], tools=[])
    decision = decide(Catalog.build([scenario]), harness.parse_request(body), signature_key=KEY)
    assert decision.failure is not None and not decision.failure.throws
    said = orjson.loads(harness.encode_failure(decision.failure).body)
    assert (said["status"], said["message"], said["throws"]) == ("network_error", "cut", False)


def test_ai_sdk_7_s_reasoning_files_and_custom_parts_are_read_past() -> None:
    prompt = second_turn()
    prompt[2]["content"][:0] = [
        {"type": "reasoning-file", "mediaType": "image/png", "data": {"type": "data", "data": "iVBORw0K"}},
        {"type": "custom", "kind": "openai.compaction", "providerOptions": {"openai": {"id": "c1"}}},
    ]
    request = harness.parse_request(make_body(prompt=prompt))
    assert request.messages[1].text == "Searching." and request.messages[1].call_ids == ("call-search",)
    with pytest.raises(WireError, match=r"prompt\.1\.content\.0\.type: a user message has no 'custom' part"):
        harness.parse_request(make_body(prompt=[prompt[0], {"role": "user", "content": [prompt[2]["content"][1]]}]))


@pytest.mark.parametrize("kind", ["timeout", "network_error", "invalid_json_in_stream", "slow_first_byte"])
def test_failures_are_never_acted_out_on_the_wire(kind: str) -> None:
    reply = Reply((Block(type="text", text="hello"),), "stop", Usage(1, 1, 2))
    decision, _ = played(make_body())
    request = harness.parse_request(make_body())
    failure = Failure(kind, "m", False, None)
    out = respond.failure_outgoing(harness, failure, replace(decision, reply=reply), request, "r", 30_000)
    assert (out.hold_ms, out.drop_after, out.stall_ms) == (0, None, 0)
    assert orjson.loads(out.encoded.body)["status"] == kind


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "The request body must be a JSON object"),
        ({"prompt": []}, "model: Field required"),
        ({"model": "m", "prompt": []}, "prompt: at least one message is required"),
        ({"model": "m", "prompt": [{"role": "robot", "content": "x"}]}, "prompt.0.role: Input should be one of"),
        ({"model": "m", "prompt": [{"role": "system", "content": []}]}, "prompt.0.content: a system message's"),
        ({"model": "m", "prompt": [{"role": "user", "content": [{"type": "text"}]}]}, "prompt.0.content.0.text: Field"),
        (
            {"model": "m", "prompt": [{"role": "user", "content": [{"type": "tool-call"}]}]},
            "prompt.0.content.0.type: a user message has no 'tool-call' part",
        ),
        (
            {"model": "m", "prompt": [{"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c"}]}]},
            "prompt.0.content.0.output: Input should be an object with a type",
        ),
        ({"model": "m", "prompt": [{"role": "user", "content": "x"}], "tools": [{}]}, "tools.0.name: Field required"),
        ({"model": "m", "prompt": [{"role": "user", "content": "x"}], "top_p": "1"}, "top_p must be a number"),
    ],
)
def test_bad_requests_name_the_field(body: Any, message: str) -> None:
    with pytest.raises(WireError) as caught:
        harness.parse_request(body)
    assert caught.value.message.startswith(message)
    error = harness.encode_error(400, caught.value.message, param=caught.value.param, request_id="req_1")
    assert error.status == 400
    assert orjson.loads(error.body)["error"] == {
        "message": caught.value.message,
        "param": caught.value.param,
        "requestId": "req_1",
    }
