"""OpenAI Chat Completions wire: error bodies, simulated failures and the models list."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from harnessweb.engine.exchange import Failure
from harnessweb.engine.wire.common import CREATED
from harnessweb.engine.wire.openai import encode_error, encode_failure, encode_models, malformed, parse_request
from tests.wire_openai_helpers import parse_sse

# ---------------------------------------------------------------------------------------------------------------
# Errors and simulated failures


def error_body(encoded: Any) -> dict[str, Any]:
    body = orjson.loads(encoded.body)
    assert list(body) == ["error"]
    return body["error"]


def test_it_shapes_errors_like_openai():
    encoded = encode_error(400, "messages must be a non-empty array", param="messages")
    assert encoded.status == 400
    assert dict(encoded.headers)[b"content-type"] == b"application/json"
    assert error_body(encoded) == {
        "message": "messages must be a non-empty array",
        "type": "invalid_request_error",
        "param": "messages",
        "code": None,
    }


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (404, "invalid_request_error"),
        (413, "invalid_request_error"),
        (429, "requests"),
        (500, "server_error"),
        (504, "timeout"),
        (418, "server_error"),
    ],
)
def test_it_types_errors_by_status(status, kind):
    assert error_body(encode_error(status, "x"))["type"] == kind


def make_failure(status: str = "model_error", **fields: Any) -> Failure:
    defaults: dict[str, Any] = {"message": "Simulated", "retryable": True, "retry_after_ms": None, "error": None}
    defaults.update(fields)
    return Failure(status=status, **defaults)


def test_it_encodes_a_rate_limit_with_retry_headers():
    encoded = encode_failure(make_failure("rate_limit", message="Rate limit exceeded (simulated)", retry_after_ms=1000))
    assert encoded.status == 429
    headers = dict(encoded.headers)
    assert headers[b"retry-after"] == b"1"
    assert headers[b"retry-after-ms"] == b"1000"
    assert b"x-should-retry" not in headers
    assert error_body(encoded) == {
        "message": "Rate limit exceeded (simulated)",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }


@pytest.mark.parametrize(
    ("ms", "seconds"),
    [(1, b"1"), (999, b"1"), (1000, b"1"), (1001, b"2"), (1500, b"2"), (2500, b"3"), (60000, b"60"), (0, b"0")],
)
def test_it_rounds_retry_after_up_to_whole_seconds_and_keeps_the_exact_milliseconds(ms, seconds):
    headers = dict(encode_failure(make_failure("rate_limit", retry_after_ms=ms)).headers)
    assert headers[b"retry-after"] == seconds
    assert headers[b"retry-after-ms"] == str(ms).encode()


def test_it_sends_no_retry_headers_without_a_retry_after():
    headers = dict(encode_failure(make_failure("model_error")).headers)
    assert b"retry-after" not in headers
    assert b"retry-after-ms" not in headers


@pytest.mark.parametrize(
    ("status", "retryable", "http", "code"),
    [
        ("model_error", True, 500, "model_error"),
        ("model_error", False, 400, "model_error"),
        ("timeout", True, 504, "timeout"),
        ("rate_limit", False, 429, "rate_limit_exceeded"),
    ],
)
def test_it_maps_failure_statuses_to_http(status, retryable, http, code):
    encoded = encode_failure(make_failure(status, retryable=retryable))
    assert encoded.status == http
    assert error_body(encoded)["code"] == code
    headers = dict(encoded.headers)
    if retryable:
        assert b"x-should-retry" not in headers
    else:
        assert headers[b"x-should-retry"] == b"false"


def test_it_merges_the_failure_error_into_the_error_object():
    failure = make_failure("model_error", message="boom", error={"code": "custom_code", "detail": {"n": 1}})
    assert error_body(encode_failure(failure)) == {
        "message": "boom",
        "type": "server_error",
        "param": None,
        "code": "custom_code",
        "detail": {"n": 1},
    }


@pytest.mark.parametrize("stream", [True, False])
def test_it_sends_a_malformed_body_that_really_does_not_parse(stream):
    encoded = malformed(stream)
    assert encoded.status == 200
    if not stream:
        assert dict(encoded.headers)[b"content-type"] == b"application/json"
        with pytest.raises(ValueError):
            json.loads(encoded.body)
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(encoded.body)
        return
    assert dict(encoded.headers)[b"content-type"] == b"text/event-stream; charset=utf-8"
    events = parse_sse(encoded.body)
    assert events[-1] == ("message", "[DONE]")
    for _, data in events[:-1]:
        with pytest.raises(ValueError):
            json.loads(data)


def test_it_lists_models():
    body = orjson.loads(encode_models(["a", "b"]).body)
    assert body == {
        "object": "list",
        "data": [
            {"id": "a", "object": "model", "created": CREATED, "owned_by": "harness"},
            {"id": "b", "object": "model", "created": CREATED, "owned_by": "harness"},
        ],
    }


@pytest.mark.parametrize(("effort", "enabled"), [("", False), ("none", False), (None, False), ("low", True)])
def test_it_reads_reasoning_effort(effort, enabled):
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "reasoning_effort": effort}
    assert parse_request(body).reasoning_enabled is enabled
