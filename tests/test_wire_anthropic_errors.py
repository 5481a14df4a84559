"""Anthropic Messages wire: error bodies, simulated failures and the models list."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from harnessweb.engine.exchange import Failure
from harnessweb.engine.wire.anthropic import encode_error, encode_failure, encode_models, malformed
from tests.wire_anthropic_helpers import parse_sse

# ---------------------------------------------------------------------------------------------------------------
# Errors and simulated failures


def error_body(encoded: Any) -> dict[str, Any]:
    body = orjson.loads(encoded.body)
    assert list(body) == ["type", "error", "request_id"]
    assert body["type"] == "error"
    return body


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (413, "request_too_large"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (504, "timeout_error"),
        (529, "overloaded_error"),
        (418, "api_error"),
    ],
)
def test_it_shapes_errors_like_anthropic_typed_by_status(status, kind):
    encoded = encode_error(status, "what went wrong", request_id="req_123")
    assert encoded.status == status
    assert dict(encoded.headers)[b"content-type"] == b"application/json"
    assert error_body(encoded) == {
        "type": "error",
        "error": {"type": kind, "message": "what went wrong"},
        "request_id": "req_123",
    }


def make_failure(status: str = "model_error", **fields: Any) -> Failure:
    defaults: dict[str, Any] = {"message": "Simulated", "retryable": True, "retry_after_ms": None, "error": None}
    defaults.update(fields)
    return Failure(status=status, **defaults)


def test_it_encodes_a_rate_limit_with_retry_headers():
    encoded = encode_failure(make_failure("rate_limit", message="Rate limit exceeded (simulated)", retry_after_ms=1500))
    assert encoded.status == 429
    headers = dict(encoded.headers)
    assert (headers[b"retry-after"], headers[b"retry-after-ms"]) == (b"2", b"1500")
    assert b"x-should-retry" not in headers
    assert error_body(encoded)["error"] == {"type": "rate_limit_error", "message": "Rate limit exceeded (simulated)"}


@pytest.mark.parametrize(
    ("status", "retryable", "http", "kind"),
    [
        ("model_error", True, 500, "api_error"),
        ("model_error", False, 400, "invalid_request_error"),
        ("timeout", True, 504, "timeout_error"),
        ("rate_limit", False, 429, "rate_limit_error"),
    ],
)
def test_it_maps_failure_statuses_to_http(status, retryable, http, kind):
    encoded = encode_failure(make_failure(status, retryable=retryable))
    assert encoded.status == http
    assert error_body(encoded)["error"]["type"] == kind
    headers = dict(encoded.headers)
    assert headers.get(b"x-should-retry") == (None if retryable else b"false")


def test_it_merges_the_failure_error_into_the_error_object():
    failure = make_failure("model_error", message="boom", error={"type": "overloaded_error", "detail": 1})
    assert error_body(encode_failure(failure))["error"] == {"type": "overloaded_error", "message": "boom", "detail": 1}


@pytest.mark.parametrize("stream", [True, False])
def test_it_sends_a_malformed_body_that_really_does_not_parse(stream):
    encoded = malformed(stream)
    assert encoded.status == 200
    if not stream:
        with pytest.raises(ValueError):
            json.loads(encoded.body)
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(encoded.body)
        return
    events = parse_sse(encoded.body)
    assert [name for name, _ in events] == ["message_start"]
    with pytest.raises(ValueError):
        json.loads(events[0][1])


def test_it_lists_models():
    body = orjson.loads(encode_models(["a", "b"]).body)
    assert body == {
        "data": [
            {"type": "model", "id": "a", "display_name": "a", "created_at": "2025-01-01T00:00:00Z"},
            {"type": "model", "id": "b", "display_name": "b", "created_at": "2025-01-01T00:00:00Z"},
        ],
        "has_more": False,
        "first_id": "a",
        "last_id": "b",
    }
    assert orjson.loads(encode_models([]).body) == {"data": [], "has_more": False, "first_id": None, "last_id": None}
