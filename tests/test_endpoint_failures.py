"""Simulated failures through the official SDKs: each status as a real provider sends it, and the SDK's own retry."""

import time

import anthropic
import httpx2
import openai
import pytest

from tests.conftest import make_scenario, recorded_run

ANSWER = "Recovered after the failure."


def make_failing(scenario_id: str, status: str, failures: int = 1, **fields) -> None:
    make_scenario(
        scenario_id,
        [
            {
                "turn": 1,
                "failures_before_success": failures,
                "failure_status": status,
                "response": {"kind": "text", "assistant_text": ANSWER},
                **fields,
            }
        ],
    )


def openai_answer(client: openai.OpenAI, scenario_id: str, stream: bool):
    messages = [{"role": "user", "content": scenario_id}]
    if stream:
        raw = client.chat.completions.with_raw_response.create(model="m", messages=messages, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    else:
        raw = client.chat.completions.with_raw_response.create(model="m", messages=messages)
        text = raw.parse().choices[0].message.content
    return raw, text


def anthropic_answer(client: anthropic.Anthropic, scenario_id: str, stream: bool):
    kwargs = {"model": "claude", "max_tokens": 64, "messages": [{"role": "user", "content": scenario_id}]}
    if stream:
        raw = client.messages.with_raw_response.create(stream=True, **kwargs)
        text = "".join(e.delta.text for e in raw.parse() if e.type == "content_block_delta")
    else:
        raw = client.messages.with_raw_response.create(**kwargs)
        text = raw.parse().content[0].text
    return raw, text


ANSWERERS = {"openai": openai_answer, "anthropic": anthropic_answer}


@pytest.fixture(params=["openai", "anthropic"])
def protocol_client(request, oai, claude):
    return request.param, (oai if request.param == "openai" else claude)


# A stream cut after its 200 is not retried by the SDKs (they retry before returning the response): see
# test_it_cuts_a_stream_midway_and_serves_the_retry.
SDK_RETRIED = [
    (s, stream)
    for s in ("rate_limit", "model_error", "timeout", "network_error")
    for stream in (False, True)
    if not (s == "network_error" and stream)
]


@pytest.mark.parametrize(("status", "stream"), SDK_RETRIED)
def test_it_lets_the_sdk_retry_and_succeed(protocol_client, status, stream):
    protocol, client = protocol_client
    scenario_id = f"retry-{status}-{protocol}-{stream}"
    make_failing(scenario_id, status, failures=2, failure_retry_after_ms=100)
    raw, text = ANSWERERS[protocol](client, scenario_id, stream)
    assert text == ANSWER
    assert raw.retries_taken == 2
    run = recorded_run(raw.headers["x-harness-run"], status="passed")
    injected = list(run.events.filter(kind="failure_injected").values_list("data", flat=True))
    assert [(d["status"], d["attempt"], d["of"]) for d in injected] == [(status, 1, 2), (status, 2, 2)]


def test_it_sends_rate_limits_with_both_retry_headers(oai):
    make_failing("ratelimit-headers", "rate_limit", failure_retry_after_ms=1500)
    with pytest.raises(openai.RateLimitError) as caught:
        oai.with_options(max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "ratelimit-headers"}]
        )
    response = caught.value.response
    assert response.status_code == 429
    assert response.headers["retry-after"] == "2"
    assert response.headers["retry-after-ms"] == "1500"
    assert caught.value.body["code"] == "rate_limit_exceeded"


def test_it_honours_retry_after_in_the_sdk_wait(claude):
    make_failing("ratelimit-wait", "rate_limit", failure_retry_after_ms=600)
    started = time.monotonic()
    raw, text = anthropic_answer(claude, "ratelimit-wait", stream=False)
    assert text == ANSWER and raw.retries_taken == 1
    assert time.monotonic() - started >= 0.6


def test_it_makes_a_non_retryable_model_error_a_400_the_sdk_does_not_retry(claude):
    make_failing("fatal-model-error", "model_error", failure_retryable=False, failure_message="Model exploded")
    with pytest.raises(anthropic.BadRequestError) as caught:
        claude.messages.create(model="c", max_tokens=8, messages=[{"role": "user", "content": "fatal-model-error"}])
    assert caught.value.status_code == 400
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert caught.value.body["error"] == {"type": "invalid_request_error", "message": "Model exploded"}


def test_it_merges_the_authored_error_object_into_the_body(oai):
    make_failing("custom-error", "model_error", failure_error={"code": "context_length_exceeded", "param": "messages"})
    with pytest.raises(openai.InternalServerError) as caught:
        oai.with_options(max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "custom-error"}]
        )
    assert caught.value.body["code"] == "context_length_exceeded"
    assert caught.value.body["param"] == "messages"
    assert caught.value.body["type"] == "server_error"


def test_it_holds_a_timeout_without_a_byte_then_answers_504(oai):
    make_failing("slow-timeout", "timeout", failure_retry_after_ms=300)
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as caught:
        oai.with_options(max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "slow-timeout"}]
        )
    assert caught.value.status_code == 504
    assert time.monotonic() - started >= 0.3


def test_it_lets_a_client_timeout_fire_on_a_held_request(oai):
    make_failing("client-timeout", "timeout", failure_retry_after_ms=3000)
    with pytest.raises(openai.APITimeoutError):
        oai.with_options(max_retries=0, timeout=0.5).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "client-timeout"}]
        )


def test_it_cuts_a_stream_midway_and_serves_the_retry(protocol_client):
    protocol, client = protocol_client
    scenario_id = f"drop-stream-{protocol}"
    make_failing(scenario_id, "network_error")
    received = []
    # Mid-stream, the SDKs surface the transport's own error (httpx2) or wrap it.
    with pytest.raises((openai.APIConnectionError, anthropic.APIConnectionError, httpx2.RemoteProtocolError)):
        if protocol == "openai":
            stream = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": scenario_id}], stream=True
            )
        else:
            stream = client.messages.create(
                model="c", max_tokens=64, stream=True, messages=[{"role": "user", "content": scenario_id}]
            )
        received.extend(stream)
    assert received, "the client got part of the stream before the cut"
    raw, text = ANSWERERS[protocol](client, scenario_id, stream=True)  # the application's own retry
    assert text == ANSWER
    run = recorded_run(raw.headers["x-harness-run"], status="passed")
    kinds = list(run.events.values_list("kind", flat=True))
    assert kinds.count("failure_injected") == 1 and kinds.count("request") == 2


def test_it_drops_a_json_response_midway_and_the_sdk_retries(protocol_client):
    protocol, client = protocol_client
    scenario_id = f"drop-json-{protocol}"
    make_failing(scenario_id, "network_error", failures=3)
    with pytest.raises((openai.APIConnectionError, anthropic.APIConnectionError)):
        ANSWERERS[protocol](client, scenario_id, stream=False)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_it_answers_200_with_a_body_no_client_can_parse_for_invalid_response(protocol_client, stream):
    protocol, client = protocol_client
    scenario_id = f"garbled-{protocol}-{stream}"
    make_failing(scenario_id, "invalid_response")
    with pytest.raises(Exception) as caught:
        ANSWERERS[protocol](client.with_options(max_retries=0), scenario_id, stream)
    assert not isinstance(caught.value, (openai.APIStatusError, anthropic.APIStatusError))
    # The next attempt is the scripted success.
    _, text = ANSWERERS[protocol](client, scenario_id, stream)
    assert text == ANSWER


def test_it_gives_up_when_failures_outnumber_the_sdk_retries(oai):
    make_failing("hopeless", "model_error", failures=5, failure_retry_after_ms=50)
    with pytest.raises(openai.InternalServerError):
        oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "hopeless"}])
    # 1 try + 2 retries were all failures; the run is still waiting for its turn.
    raw = oai.with_options(max_retries=3).chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "hopeless"}]
    )
    assert raw.parse().choices[0].message.content == ANSWER
    assert raw.retries_taken == 2


def test_it_fails_a_run_whose_client_went_on_after_a_dropped_stream(oai):
    make_scenario(
        "skipped-turn",
        [
            {
                "turn": 1,
                "failures_before_success": 1,
                "failure_status": "network_error",
                "response": {"kind": "text", "assistant_text": "first"},
            },
            {"turn": 2, "response": {"kind": "text", "assistant_text": "second"}},
        ],
    )
    messages = [{"role": "user", "content": "skipped-turn"}]
    with pytest.raises((openai.APIConnectionError, httpx2.RemoteProtocolError)):
        list(oai.chat.completions.create(model="m", messages=messages, stream=True))
    # The application carries on as if turn 1 had been answered.
    messages += [{"role": "assistant", "content": "(nothing)"}, {"role": "user", "content": "go on"}]
    raw = oai.chat.completions.with_raw_response.create(model="m", messages=messages)
    assert raw.parse().choices[0].message.content == "second"
    run = recorded_run(raw.headers["x-harness-run"], status="failed")
    assert run.status_reason.startswith("Turn 1 never answered as scripted")
