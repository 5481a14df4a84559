"""Every failure kind a turn can script (seed 003's error paths), served by the real server and met by the official
Python SDKs with their defaults (retries off, so that one failure is one call): what each raises is measured here,
and the README's failure table is the same table (a row that drifts from what the SDKs do fails this test)."""

from __future__ import annotations

import re
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import types
from google.oauth2.credentials import Credentials

from harnessweb.engine.configured import FAILURE_KINDS
from tests.conftest import docs_text, make_scenario

ANSWER = "Scripted answer, whole."
HOLD_MS = 400  # timeout's hold and slow_first_byte's stall
CLIENT_TIMEOUT_S = {"timeout": 0.2, "slow_first_byte": 5.0}

# kind -> (what the client sees, then for openai, anthropic and google-genai what a call raises: "X" for both ways,
# "X / Y" for a plain call / a streamed one; "answer" when the call returns the whole answer without raising,
# "answer, garbled" with U+FFFD in it, "answer, cut" with part of it missing).
TABLE: dict[str, tuple[str, str, str, str]] = {
    "rate_limit": (
        "429 with `Retry-After` (seconds, rounded up) and `retry-after-ms` (exact; default 1000)",
        "RateLimitError", "RateLimitError", "ClientError",
    ),
    "model_error": (
        "500 when `failure_retryable` (default; Gemini: 503), else 400 with `x-should-retry: false`",
        "InternalServerError", "InternalServerError", "ServerError",
    ),
    "auth_error": ("401", "AuthenticationError", "AuthenticationError", "ClientError"),
    "permission_error": ("403", "PermissionDeniedError", "PermissionDeniedError", "ClientError"),
    "not_found": ("404", "NotFoundError", "NotFoundError", "ClientError"),
    "bad_request": ("400", "BadRequestError", "BadRequestError", "ClientError"),
    "request_too_large": ("413", "APIStatusError", "ContentTooLargeError", "ClientError"),
    "server_error": ("500", "InternalServerError", "InternalServerError", "ServerError"),
    "bad_gateway": ("502", "InternalServerError", "InternalServerError", "ServerError"),
    "unavailable": ("503", "InternalServerError", "ServiceUnavailableError", "ServerError"),
    "overloaded": (
        "529 `overloaded_error` on Anthropic, 503 on the others",
        "InternalServerError", "OverloadedError", "ServerError",
    ),
    "timeout": (
        "nothing for `failure_retry_after_ms` (default 30 s), then 504 (here: a client timeout shorter than that)",
        "APITimeoutError", "APITimeoutError", "ReadTimeout",
    ),
    "network_error": (
        "the connection cut midway (mid-stream when streaming)",
        "APIConnectionError", "APIConnectionError / RemoteProtocolError", "RemoteProtocolError",
    ),
    "invalid_response": ("200 with a body no client can parse", "JSONDecodeError", "JSONDecodeError",
                         "JSONDecodeError / UnknownApiResponseError"),
    "wrong_content_type": ("200, the answer as `text/plain`", "answer", "answer", "answer"),
    "missing_content_type": ("200, the answer with no `Content-Type`", "answer", "answer", "answer"),
    "invalid_json_in_stream": (
        "200, a data line in the middle that is not JSON (a plain call: a body that is not JSON)",
        "JSONDecodeError", "JSONDecodeError", "JSONDecodeError / UnknownApiResponseError",
    ),
    "invalid_utf8": (
        "200, bytes that are not UTF-8 in the middle of the text",
        "UnicodeDecodeError", "UnicodeDecodeError", "answer, garbled",
    ),
    "truncated_stream": (
        "200, the stream ends cleanly without its terminator (no `[DONE]`, `message_stop`, "
        "`response.completed`); a plain call's JSON body cut short",
        "JSONDecodeError / answer", "JSONDecodeError / answer", "JSONDecodeError / answer, cut",
    ),
    "slow_first_byte": (
        "the status line and headers at once (from daphne as `make run` serves it, and from uvicorn), then nothing "
        "for `failure_retry_after_ms` (default 5 s), then the answer (a read timeout shorter than that raises the "
        "SDK's timeout error)",
        "answer", "answer", "answer",
    ),
}  # fmt: skip
SDKS = ("openai", "anthropic", "google-genai")


def expected(kind: str, sdk: str, stream: bool) -> str:
    cell = TABLE[kind][1 + SDKS.index(sdk)]
    plain, _, streamed = cell.partition(" / ")
    return (streamed or plain) if stream else plain


def readme_row(kind: str) -> str:
    return f"| `{kind}` | {' | '.join(TABLE[kind])} |"


def test_it_covers_every_failure_kind() -> None:
    assert set(TABLE) == set(FAILURE_KINDS)


def test_it_keeps_the_readme_table_the_same_as_the_measured_one() -> None:
    readme = docs_text()
    missing = [kind for kind in TABLE if readme_row(kind) not in readme]
    assert not missing, "README rows differ for: " + ", ".join(missing) + "\n" + "\n".join(map(readme_row, missing))


def call(sdk: str, url: str, scenario: str, stream: bool, timeout: float, vertex: bool = False) -> str:
    """One call through an official SDK, with retries off: ``answer`` or the name of what it raised (``vertex``:
    through its Vertex AI client, ``AnthropicVertex`` or google-genai with ``vertexai=True``)."""
    headers = {"X-Harness-Scenario": scenario}
    messages = [{"role": "user", "content": "hello"}]
    try:
        if sdk == "openai":
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0, timeout=timeout,
                                   default_headers=headers)  # fmt: skip
            if stream:
                chunks = client.chat.completions.create(model="m", messages=messages, stream=True)
                text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            else:
                text = client.chat.completions.create(model="m", messages=messages).choices[0].message.content
        elif sdk == "anthropic":
            given: dict[str, Any] = {"max_retries": 0, "timeout": timeout, "default_headers": headers}
            client = (anthropic.AnthropicVertex(region="us-east5", project_id="p", access_token="t",
                                                base_url=f"{url}/v1", **given)
                      if vertex else anthropic.Anthropic(base_url=url, api_key="k", **given))  # fmt: skip
            request: dict[str, Any] = {"model": "m", "max_tokens": 1024, "messages": messages}
            if stream:
                with client.messages.stream(**request) as events:
                    text = events.get_final_message().content[0].text
            else:
                text = client.messages.create(**request).content[0].text
        else:
            options = types.HttpOptions(base_url=url, timeout=int(timeout * 1000), headers=headers)
            client = (genai.Client(vertexai=True, project="p", location="us-central1",
                                   credentials=Credentials(token="t"), http_options=options)
                      if vertex else genai.Client(api_key="k", http_options=options))  # fmt: skip
            if stream:
                text = "".join(c.text or "" for c in client.models.generate_content_stream(model="g", contents="hello"))
            else:
                text = client.models.generate_content(model="g", contents="hello").text
    except Exception as exc:  # noqa: BLE001 - what the SDK raises is the measurement
        return type(exc).__name__
    if text == ANSWER:
        return "answer"
    return "answer, garbled" if "\ufffd" in text else "answer, cut"


def failing(kind: str, prefix: str = "fails") -> str:
    """A scenario whose turn always fails with this kind (held or stalled for ``HOLD_MS``), and its id."""
    scenario = f"{prefix}-{kind.replace('_', '-')}"
    turn = {"turn": 1, "failures_before_success": "always", "failure_status": kind,
            "response": {"kind": "text", "assistant_text": ANSWER}}  # fmt: skip
    if kind in CLIENT_TIMEOUT_S:
        turn["failure_retry_after_ms"] = HOLD_MS
    make_scenario(scenario, [turn])
    return scenario


@pytest.mark.parametrize("kind", sorted(TABLE))
def test_it_serves_each_failure_kind_as_the_table_says(harness_server, transactional_db, kind: str) -> None:
    scenario = failing(kind)
    measured = {
        (sdk, stream): call(sdk, harness_server.url, scenario, stream, CLIENT_TIMEOUT_S.get(kind, 10.0))
        for sdk in SDKS
        for stream in (False, True)
    }
    wanted = {(sdk, stream): expected(kind, sdk, stream) for sdk in SDKS for stream in (False, True)}
    assert measured == wanted


def test_it_sends_each_provider_error_in_the_protocols_shape(harness_server, transactional_db) -> None:
    make_scenario("overloaded", [{"turn": 1, "failures_before_success": 1, "failure_status": "overloaded",
                                  "response": {"kind": "text", "assistant_text": "Scripted answer."}}])  # fmt: skip
    body = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "overloaded"}]}
    first = httpx2.post(f"{harness_server.url}/v1/messages", json=body, headers={"x-api-key": "k"})
    assert first.status_code == 529
    assert first.json()["error"] == {
        "type": "overloaded_error",
        "message": "The API is temporarily overloaded (simulated)",
    }
    second = httpx2.post(f"{harness_server.url}/v1/messages", json=body, headers={"x-api-key": "k"})
    assert second.status_code == 200 and second.json()["content"][0]["text"] == "Scripted answer."
    make_scenario("auth", [{"turn": 1, "failures_before_success": "always", "failure_status": "auth_error",
                            "response": {"kind": "text", "assistant_text": "never"}}])  # fmt: skip
    chat = {"model": "m", "messages": [{"role": "user", "content": "auth"}]}
    for _ in range(3):  # always
        denied = httpx2.post(f"{harness_server.url}/v1/chat/completions", json=chat)
        assert denied.status_code == 401
        assert denied.json()["error"]["type"] == "invalid_request_error"
        assert denied.json()["error"]["code"] == "invalid_api_key"
    gemini = httpx2.post(
        f"{harness_server.url}/v1beta/models/g:generateContent",
        json={"contents": [{"role": "user", "parts": [{"text": "auth"}]}]},
        headers={"x-goog-api-key": "k"},
    )
    assert gemini.status_code == 401 and gemini.json()["error"]["status"] == "UNAUTHENTICATED"


def test_it_sends_any_other_http_status_a_turn_names(harness_server, transactional_db) -> None:
    make_scenario("teapot", [{"turn": 1, "failures_before_success": 1, "failure_http_status": 418,
                              "failure_message": "I am a teapot",
                              "response": {"kind": "text", "assistant_text": "Tea."}}])  # fmt: skip
    client = openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "teapot"}])
    assert caught.value.status_code == 418 and "I am a teapot" in str(caught.value)


@pytest.mark.parametrize("kind", ["invalid_json_in_stream", "invalid_utf8", "truncated_stream", "wrong_content_type"])
def test_it_breaks_the_stream_the_way_the_kind_says(harness_server, transactional_db, kind: str) -> None:
    text = "one two three four five six seven eight nine ten eleven twelve"
    make_scenario("broken", [{"turn": 1, "failures_before_success": 1, "failure_status": kind,
                              "response": {"kind": "text", "assistant_text": text}}])  # fmt: skip
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "broken"}]}
    first = httpx2.post(f"{harness_server.url}/v1/chat/completions", json=body)
    raw = first.content
    lines = [line for line in raw.split(b"\n") if line.startswith(b"data: ")]
    if kind == "invalid_utf8":
        assert b"\xff\xfe" in raw
        with pytest.raises(UnicodeDecodeError):
            raw.decode("utf-8")
    elif kind == "invalid_json_in_stream":
        bad = [line for line in lines if line != b"data: [DONE]" and not re.fullmatch(rb"data: \{.*\}", line)]
        assert len(bad) == 1 and lines[-1] == b"data: [DONE]"
    elif kind == "wrong_content_type":
        assert first.headers["content-type"] == "text/plain; charset=utf-8" and lines[-1] == b"data: [DONE]"
    elif kind == "truncated_stream":
        assert lines[-1] != b"data: [DONE]" and b'"finish_reason":"stop"' in lines[-1]
    again = httpx2.post(f"{harness_server.url}/v1/chat/completions", json=body)
    assert again.content.endswith(b"data: [DONE]\n\n") and again.headers["content-type"].startswith("text/event-stream")
