"""Every failure kind on the protocols beyond Chat Completions and Messages (Responses, legacy completions, Gemini),
on the wire: the status and error shape a real provider sends, the held timeout, the cut stream, the unparseable 200,
and the answer once the failures are spent."""

from __future__ import annotations

import time

import httpx2
import orjson
import pytest

from tests.conftest import make_scenario

ANSWER = "Recovered after the failure."
# protocol: (path, body for a scenario id, streamed?, the text of a JSON answer)
PROTOCOLS = {
    "responses": (
        "/v1/responses",
        lambda sid, stream: {"model": "m", "input": sid, "stream": stream},
        lambda body: body["output"][0]["content"][0]["text"],
    ),
    "completions": (
        "/v1/completions",
        lambda sid, stream: {"model": "m", "prompt": sid, "stream": stream},
        lambda body: body["choices"][0]["text"],
    ),
    "gemini": (
        "/v1beta/models/gemini-2.5-flash:{method}",
        lambda sid, stream: {"contents": [{"role": "user", "parts": [{"text": sid}]}]},
        lambda body: body["candidates"][0]["content"]["parts"][0]["text"],
    ),
}


def post(
    server, protocol: str, scenario_id: str, *, stream: bool, api_key: str, timeout: float = 20
) -> httpx2.Response:
    path, body, _ = PROTOCOLS[protocol]
    path = path.format(method="streamGenerateContent" if stream else "generateContent")
    headers = {"authorization": f"Bearer {api_key}", "x-goog-api-key": api_key}
    return httpx2.post(f"{server.url}{path}", json=body(scenario_id, stream), headers=headers, timeout=20)


def make_failing(scenario_id: str, status: str, **fields) -> None:
    turn = {"turn": 1, "failures_before_success": 1, "failure_status": status, **fields}
    make_scenario(scenario_id, [{**turn, "response": {"kind": "text", "assistant_text": ANSWER}}])


def error_of(response: httpx2.Response) -> dict:
    error = response.json()["error"]
    return {"message": error["message"], "status": error.get("status"), "code": error.get("code")}


@pytest.fixture(params=sorted(PROTOCOLS))
def protocol(request) -> str:
    return request.param


def test_it_rate_limits_with_retry_after_then_answers(harness_server, api_key, transactional_db, protocol):
    make_failing(f"limit-{protocol}", "rate_limit", failure_retry_after_ms=1500, failure_message="Slow down")
    first = post(harness_server, protocol, f"limit-{protocol}", stream=False, api_key=api_key)
    assert (
        first.status_code == 429 and first.headers["retry-after"] == "2" and first.headers["retry-after-ms"] == "1500"
    )
    assert error_of(first)["message"] == "Slow down"
    if protocol == "gemini":
        assert error_of(first)["status"] == "RESOURCE_EXHAUSTED"
    second = post(harness_server, protocol, f"limit-{protocol}", stream=False, api_key=api_key)
    assert second.status_code == 200 and PROTOCOLS[protocol][2](second.json()) == ANSWER


def test_it_refuses_for_good_with_a_non_retryable_model_error(harness_server, api_key, transactional_db, protocol):
    make_failing(f"broken-{protocol}", "model_error", failure_retryable=False)
    response = post(harness_server, protocol, f"broken-{protocol}", stream=False, api_key=api_key)
    assert response.status_code == 400 and response.headers.get("x-should-retry", "false") == "false"


def test_it_holds_a_timeout_then_answers_504(harness_server, api_key, transactional_db, protocol):
    make_failing(f"slow-{protocol}", "timeout", failure_retry_after_ms=300)
    started = time.perf_counter()
    response = post(harness_server, protocol, f"slow-{protocol}", stream=True, api_key=api_key)
    assert response.status_code == 504 and time.perf_counter() - started >= 0.3


def test_it_cuts_a_stream_midway(harness_server, api_key, transactional_db, protocol):
    make_failing(f"cut-{protocol}", "network_error")
    with pytest.raises(httpx2.TransportError):
        post(harness_server, protocol, f"cut-{protocol}", stream=True, api_key=api_key)
    again = post(harness_server, protocol, f"cut-{protocol}", stream=True, api_key=api_key)
    assert again.status_code == 200 and ANSWER.split()[0] in again.text


def test_it_sends_a_200_no_client_can_parse(harness_server, api_key, transactional_db, protocol):
    make_failing(f"garbled-{protocol}", "invalid_response")
    response = post(harness_server, protocol, f"garbled-{protocol}", stream=False, api_key=api_key)
    assert response.status_code == 200
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(response.content)
