"""Amazon Bedrock through its official clients against the real server: boto3's ``bedrock-runtime`` (Converse and
ConverseStream, boto3 parsing the event stream itself) with ``endpoint_url``, and ``anthropic.AnthropicBedrock``
(InvokeModel and InvokeModelWithResponseStream). Fake credentials: the SigV4 signature is checked for its shape,
never verified."""

from __future__ import annotations

import uuid

import anthropic
import boto3
import httpx2
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EventStreamError

from harnessweb.engine.keys import fingerprint
from tests.conftest import make_client, make_scenario, recorded_run, wait_for

MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
WEATHER = {"toolSpec": {"name": "get_weather", "inputSchema": {"json": {"type": "object",
           "properties": {"city": {"type": "string"}}}}}}  # fmt: skip
TURNS = [
    {
        "turn": 1,
        "expected_tools": ["get_weather"],
        "response": {
            "kind": "tool-call",
            "reasoning": [{"text": "I should look it up."}],
            "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Paris"}}],
        },
    },
    {"turn": 2, "response": {"kind": "text", "assistant_text": "It is sunny in Paris."}},
]


@pytest.fixture
def access_key() -> str:
    # Each test its own access key: conversations (and their attempt counters) never leak between tests.
    return f"AKIA{uuid.uuid4().hex[:16].upper()}"


@pytest.fixture
def runtime(harness_server, access_key, transactional_db):
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=harness_server.url,
        region_name="us-east-1",
        aws_access_key_id=access_key,
        aws_secret_access_key="fake-secret-key",
        config=Config(retries={"total_max_attempts": 1}),  # no retry: each failure reaches the test
    )


@pytest.fixture
def claude(harness_server, access_key, transactional_db) -> anthropic.AnthropicBedrock:
    return anthropic.AnthropicBedrock(aws_access_key=access_key, aws_secret_key="fake-secret-key",
                                      aws_region="us-east-1", base_url=harness_server.url, max_retries=0)  # fmt: skip


def user(text: str) -> dict:
    return {"role": "user", "content": [{"text": text}]}


def test_it_answers_converse_with_a_scenario_turn(runtime, access_key):
    from runs_app.models import Run

    make_scenario("bedrock-hello", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello from Bedrock."}}])
    response = runtime.converse(modelId=MODEL, messages=[user("bedrock-hello")], inferenceConfig={"maxTokens": 50})
    assert response["output"]["message"] == {"role": "assistant", "content": [{"text": "Hello from Bedrock."}]}
    assert response["stopReason"] == "end_turn" and response["usage"]["outputTokens"] == 4
    run_id = response["ResponseMetadata"]["HTTPHeaders"]["x-harness-run"]
    run = recorded_run(run_id, status="passed", events=4)
    request = run.events.get(kind="request").data
    assert run.protocol == "bedrock" and request["path"] == f"/model/{MODEL}/converse"
    assert request["key"] == {"place": "authorization", "fingerprint": fingerprint(access_key)}
    assert Run.objects.get(id=run_id).scenario_id == "bedrock-hello"
    arn = f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.{MODEL}"  # boto3 sends its slash as %2F
    assert runtime.converse(modelId=arn, messages=[user("bedrock-hello")])["stopReason"] == "end_turn"


def test_it_streams_converse_events_boto3_parses_itself(runtime):
    make_scenario("bedrock-stream", [{"turn": 1, "response": {"kind": "text",
                  "assistant_text": "one two three four five six seven"}}])  # fmt: skip
    response = runtime.converse_stream(modelId=MODEL, messages=[user("bedrock-stream")])
    events = list(response["stream"])
    assert list(events[0]) == ["messageStart"] and list(events[-2]) == ["messageStop"]
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e)
    assert text == "one two three four five six seven"
    assert sum("contentBlockDelta" in e for e in events) == 2  # five words a chunk
    assert events[-1]["metadata"]["usage"]["totalTokens"] == events[-1]["metadata"]["usage"]["inputTokens"] + 7


def test_it_cuts_the_answer_at_max_tokens_and_stop_sequences(runtime):
    make_scenario("bedrock-long", [{"turn": 1, "response": {"kind": "text", "assistant_text": "one two three four"}}])
    cut = runtime.converse(modelId=MODEL, messages=[user("bedrock-long")], inferenceConfig={"maxTokens": 2})
    assert cut["stopReason"] == "max_tokens" and cut["output"]["message"]["content"] == [{"text": "one two"}]
    stopped = runtime.converse_stream(modelId=MODEL, messages=[user("bedrock-long")],
                                      inferenceConfig={"stopSequences": ["three"]})  # fmt: skip
    events = list(stopped["stream"])
    assert "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e) == "one two "
    assert events[-2]["messageStop"]["stopReason"] == "stop_sequence"


def test_it_plays_tools_reasoning_and_a_tool_result_in_one_run(runtime):
    make_scenario("bedrock-weather", TURNS)
    tools = {"tools": [WEATHER]}
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    first = runtime.converse(modelId=MODEL, messages=[user("bedrock-weather")], toolConfig=tools,
                             additionalModelRequestFields=thinking)  # fmt: skip
    content = first["output"]["message"]["content"]
    reasoning, use = content[0]["reasoningContent"]["reasoningText"], content[1]["toolUse"]
    assert reasoning["text"] == "I should look it up." and reasoning["signature"]
    assert (use["name"], use["input"]) == ("get_weather", {"city": "Paris"}) and first["stopReason"] == "tool_use"
    result = {"toolResult": {"toolUseId": use["toolUseId"], "content": [{"json": {"sky": "clear"}}]}}
    history = [user("bedrock-weather"), first["output"]["message"], {"role": "user", "content": [result]}]
    second = runtime.converse(modelId=MODEL, messages=history, toolConfig=tools, additionalModelRequestFields=thinking)
    assert second["output"]["message"]["content"] == [{"text": "It is sunny in Paris."}]
    run = recorded_run(second["ResponseMetadata"]["HTTPHeaders"]["x-harness-run"], status="passed", events=8)
    assert run.events.filter(kind="response").count() == 2
    # A reasoning block sent back with its signature altered is refused, as Claude on Bedrock refuses it.
    reasoning["signature"] = "forged"
    with pytest.raises(ClientError) as caught:
        runtime.converse(modelId=MODEL, messages=history, toolConfig=tools, additionalModelRequestFields=thinking)
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert "Invalid `signature`" in caught.value.response["Error"]["Message"]


def test_it_streams_a_tool_call_with_reasoning(runtime):
    make_scenario("bedrock-weather-stream", TURNS)
    response = runtime.converse_stream(modelId=MODEL, messages=[user("bedrock-weather-stream")],
                                       toolConfig={"tools": [WEATHER]})  # fmt: skip
    events = list(response["stream"])
    start = next(e["contentBlockStart"] for e in events if "contentBlockStart" in e)
    assert start["start"]["toolUse"]["name"] == "get_weather" and start["contentBlockIndex"] == 1
    deltas = [e["contentBlockDelta"]["delta"] for e in events if "contentBlockDelta" in e]
    assert "".join(d["toolUse"]["input"] for d in deltas if "toolUse" in d) == '{"city":"Paris"}'
    assert "".join(d["reasoningContent"].get("text", "") for d in deltas if "reasoningContent" in d) == (
        "I should look it up."
    )
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"
    # The run's answer made again as bytes and summarised (the API's stream summary), and exported as a cassette.
    run_id = response["ResponseMetadata"]["HTTPHeaders"]["x-harness-run"]
    recorded_run(run_id, events=4)
    summary = make_client("read").get(f"/runs/{run_id}/stream-summary").json()["responses"][0]["summary"]
    assert (summary["protocol"], summary["stop_reason"], summary["thinking"]) == ("bedrock", "tool_use",
                                                                                   "I should look it up.")  # fmt: skip
    assert summary["tool_calls"][0]["name"] == "get_weather" and summary["has_done"]
    cassette = make_client("read").get(f"/runs/{run_id}/cassette").json()
    assert cassette["interactions"][0]["response"]["body_chunks_base64"]  # the binary frames, base64


def test_it_sends_a_scripted_failure_as_boto3s_exception_then_the_answer(runtime):
    make_scenario("bedrock-limited", [{"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit",
                  "failure_message": "Too many requests, please wait before trying again.",
                  "response": {"kind": "text", "assistant_text": "Later."}}])  # fmt: skip
    with pytest.raises(runtime.exceptions.ThrottlingException) as caught:
        runtime.converse(modelId=MODEL, messages=[user("bedrock-limited")])
    error = caught.value.response
    assert error["Error"] == {"Code": "ThrottlingException",
                              "Message": "Too many requests, please wait before trying again."}  # fmt: skip
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 429
    assert runtime.converse(modelId=MODEL, messages=[user("bedrock-limited")])["output"]["message"]["content"] == [
        {"text": "Later."}
    ]


def test_it_sends_a_streamed_failure_as_an_exception_event(runtime):
    make_scenario("bedrock-stream-limited", [{"turn": 1, "failures_before_success": 1,
                  "failure_status": "rate_limit", "failure_message": "Too many tokens, please wait.",
                  "response": {"kind": "text", "assistant_text": "Streamed later."}}])  # fmt: skip
    response = runtime.converse_stream(modelId=MODEL, messages=[user("bedrock-stream-limited")])
    with pytest.raises(EventStreamError) as caught:
        list(response["stream"])
    assert caught.value.response["Error"] == {"Code": "throttlingException", "Message": "Too many tokens, please wait."}
    again = runtime.converse_stream(modelId=MODEL, messages=[user("bedrock-stream-limited")])
    events = list(again["stream"])
    assert "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e) == (
        "Streamed later."
    )


def test_it_refuses_a_missing_signature_when_keys_must_arrive(runtime, harness_server):
    def require(request, **kwargs) -> None:
        request.headers["X-Harness-Require-Key"] = "1"

    runtime.meta.events.register("before-sign.bedrock-runtime.*", require)
    answered = runtime.converse(modelId=MODEL, messages=[user("a signed request goes through")])
    assert answered["output"]["message"]["content"][0]["text"].endswith("a signed request goes through")
    body = {"messages": [user("unsigned")]}
    response = httpx2.post(f"{harness_server.url}/model/{MODEL}/converse", json=body, timeout=20,
                           headers={"X-Harness-Require-Key": "1", "x-api-key": "in-the-wrong-header"})  # fmt: skip
    assert response.status_code == 403 and response.json() == {"message": "Missing Authentication Token"}
    assert response.headers["x-amzn-errortype"].startswith("MissingAuthenticationTokenException:")


def test_it_answers_an_unserved_bedrock_path_in_bedrocks_format(harness_server, transactional_db):
    response = httpx2.post(f"{harness_server.url}/model/{MODEL}/apply-guardrail", json={}, timeout=20)
    assert response.status_code == 404 and response.headers["x-amzn-errortype"].startswith("ResourceNotFoundException")
    assert "Nothing is served at POST /model/" in response.json()["message"]


def test_anthropic_bedrock_creates_and_streams_a_message(claude):
    make_scenario("bedrock-claude", [{"turn": 1, "response": {"kind": "text",
                  "assistant_text": "Claude on Bedrock says hi to you."}}])  # fmt: skip
    message = claude.messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "bedrock-claude"}]
    )
    assert message.content[0].text == "Claude on Bedrock says hi to you." and message.model == MODEL
    assert message.stop_reason == "end_turn"
    with claude.messages.stream(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "bedrock-claude"}]
    ) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(pieces) == "Claude on Bedrock says hi to you." and len(pieces) == 2
    assert final.usage.output_tokens == message.usage.output_tokens
    streamed = claude.messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "bedrock-claude"}], stream=True
    )
    kinds = [event.type for event in streamed]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"


def test_anthropic_bedrock_gets_bedrocks_errors(claude):
    from runs_app.models import Run

    make_scenario("bedrock-claude-limited", [{"turn": 1, "failures_before_success": 1,
                  "failure_status": "rate_limit", "response": {"kind": "text", "assistant_text": "ok"}}])  # fmt: skip
    with pytest.raises(anthropic.RateLimitError) as caught:
        claude.messages.create(
            model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "bedrock-claude-limited"}]
        )
    assert caught.value.response.headers["x-amzn-errortype"].startswith("ThrottlingException:")
    assert caught.value.body == {"message": "Rate limit exceeded (simulated)"}
    run = wait_for(lambda: Run.objects.filter(scenario_id="bedrock-claude-limited").first(), message="the run")
    assert run.protocol == "bedrock_claude"
    # Streamed, the failure is an exception event: the SDK reads it as the stream's error event and raises.
    make_scenario("bedrock-claude-stream-limited", [{"turn": 1, "failures_before_success": 1,
                  "failure_status": "overloaded", "response": {"kind": "text", "assistant_text": "ok"}}])  # fmt: skip
    messages = [{"role": "user", "content": "bedrock-claude-stream-limited"}]
    with pytest.raises(anthropic.APIStatusError) as streamed:
        list(claude.messages.create(model=MODEL, max_tokens=8, messages=messages, stream=True))
    assert streamed.value.body["error"] == {"type": "serviceUnavailableException",
                                            "message": "The API is temporarily overloaded (simulated)"}  # fmt: skip
    assert claude.messages.create(model=MODEL, max_tokens=8, messages=messages).content[0].text == "ok"


def test_the_run_page_shows_a_converse_run_and_how_boto3_retried(
    harness_server, access_key, transactional_db, admin_client
):
    make_scenario("bedrock-page", [{"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit",
                  "failure_retry_after_ms": 100,
                  "response": {"kind": "text", "assistant_text": "After a retry."}}])  # fmt: skip
    retrying = boto3.client("bedrock-runtime", endpoint_url=harness_server.url, region_name="us-east-1",
                            aws_access_key_id=access_key, aws_secret_access_key="fake-secret-key",
                            config=Config(retries={"mode": "standard", "total_max_attempts": 3}))  # fmt: skip
    response = retrying.converse(modelId=MODEL, system=[{"text": "Be brief."}], messages=[user("bedrock-page")],
                                 toolConfig={"tools": [WEATHER]})  # fmt: skip
    assert response["output"]["message"]["content"] == [{"text": "After a retry."}]
    assert response["ResponseMetadata"]["RetryAttempts"] == 1  # boto3 retried the ThrottlingException itself
    run = recorded_run(response["ResponseMetadata"]["HTTPHeaders"]["x-harness-run"], status="passed", events=7)
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    resilience = html[html.index('id="run-resilience"') : html.index("<h2>Timeline</h2>")]
    assert "rate_limit" in resilience and "then-ok" in resilience
    # Converse's blocks shown as the parts they are: the system prompt and the user's text, the tool by its name.
    assert '<div class="part part-text"><pre>Be brief.</pre></div>' in html
    assert '<div class="part part-text"><pre>bedrock-page</pre></div>' in html and "get_weather" in html
    assert f"authorization, fingerprint {fingerprint(access_key)}" in html and access_key not in html


async def test_the_async_anthropic_bedrock_client_streams_too(harness_server, access_key, transactional_db):
    client = anthropic.AsyncAnthropicBedrock(aws_access_key=access_key, aws_secret_key="fake-secret-key",
                                             aws_region="us-east-1", base_url=harness_server.url)  # fmt: skip
    stream = await client.messages.create(
        model=MODEL, max_tokens=4096, messages=[{"role": "user", "content": "Say hi"}], stream=True
    )
    text = "".join(
        [e.delta.text async for e in stream if e.type == "content_block_delta" and e.delta.type == "text_delta"]
    )
    assert text.endswith("Say hi")  # the lorem and its echo


def test_the_request_panel_shows_converse_blocks_as_parts(transactional_db):
    from runs_app.live.panels import request_panel
    from runs_app.models import RunEvent

    body = {
        "system": [{"text": "Be brief."}],
        "messages": [
            user("weather?"),
            {"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "Look.", "signature": "s"}}},
                {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"json": {"sky": "clear"}}]}}]},
        ],
        "toolConfig": {"tools": [WEATHER]},
    }  # fmt: skip
    panel = request_panel(RunEvent(seq=1, kind="request", data={"path": f"/model/{MODEL}/converse", "body": body}))
    parts = [(m["role"], [(p["kind"], p["title"], p["text"]) for p in m["parts"]]) for m in panel["messages"]]
    assert parts == [
        ("system", [("text", "", "Be brief.")]),
        ("user", [("text", "", "weather?")]),
        ("assistant", [("reasoning", "thinking", "Look."), ("tool_call", "get_weather", "{}")]),
        ("user", [("tool_result", "t1", '{\n  "sky": "clear"\n}')]),
    ]
    assert [t["name"] for t in panel["tools"]] == ["get_weather"] and '"toolConfig"' in panel["json"]
