"""A JSON body sent with a form content type (multipart or URL-encoded) gets a JSON 400 in the protocol's error
format naming the content type, the same from daphne (as ``make run`` starts it, through harnessweb/serve.py) and
from uvicorn (``make serve-fast``); a JSON body still gets its answer from both."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from harnessweb.engine import wire
from tests.conftest import LiveServer

FORM_TYPES = ("multipart/form-data; boundary=x", "application/x-www-form-urlencoded")
MESSAGES = [{"role": "user", "content": "hi"}]
# Each protocol's path and a body it answers.
REQUESTS = {
    "openai": ("/v1/chat/completions", {"model": "m", "messages": MESSAGES}),
    "anthropic": ("/v1/messages", {"model": "m", "max_tokens": 16, "messages": MESSAGES}),
    "responses": ("/v1/responses", {"model": "m", "input": "hi"}),
    "completions": ("/v1/completions", {"model": "m", "prompt": "hi"}),
    "gemini": (
        "/v1beta/models/gemini-2.5-flash:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    ),
    "azure": ("/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", {"messages": MESSAGES}),
    "azure_completions": ("/openai/deployments/instruct/completions?api-version=2024-10-21", {"prompt": "hi"}),
    "cohere": ("/v2/chat", {"model": "command-a-03-2025", "messages": MESSAGES}),
    "bedrock": (
        "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
        {"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
    ),
    "bedrock_claude": (
        "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke",
        {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 16, "messages": MESSAGES},
    ),
    "vertex": (
        "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    ),
    "vertex_claude": (
        "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict",
        {"anthropic_version": "vertex-2023-10-16", "max_tokens": 16, "messages": MESSAGES},
    ),
    "harness": ("/harness/v1/generate", {"model": "m", "prompt": MESSAGES}),
    "ollama": ("/api/chat", {"model": "m", "messages": MESSAGES, "stream": False}),
}


def post(server: LiveServer, path: str, body: dict[str, Any], content_type: str) -> httpx2.Response:
    headers = {"content-type": content_type, "authorization": "Bearer sk-test-content-type"}
    return httpx2.post(f"{server.url}{path}", content=json.dumps(body), headers=headers, timeout=20)


def error_message(protocol: str, body: dict[str, Any]) -> str:
    """The message of an error in the protocol's own shape (the shape asserted on the way)."""
    if protocol in ("anthropic", "vertex_claude"):
        assert body["type"] == "error" and set(body) == {"type", "error", "request_id"}
        assert body["error"]["type"] == "invalid_request_error"
    elif protocol in ("gemini", "vertex"):
        assert set(body["error"]) == {"code", "message", "status"}
        assert (body["error"]["code"], body["error"]["status"]) == (400, "INVALID_ARGUMENT")
    elif protocol == "cohere":
        assert set(body) == {"id", "message"}
        return body["message"]
    elif protocol in ("bedrock", "bedrock_claude"):  # the exception is named in x-amzn-ErrorType
        assert set(body) == {"message"}
        return body["message"]
    elif protocol == "ollama":  # a string, not an object
        assert set(body) == {"error"}
        return body["error"]
    elif protocol == "harness":
        assert set(body["error"]) == {"message", "param", "requestId"}
    elif protocol in ("azure", "azure_completions"):
        assert body["error"]["code"] == "BadRequest" and set(body["error"]) == {"code", "message"}
    else:
        assert set(body["error"]) == {"message", "type", "param", "code"}
        assert body["error"]["type"] == "invalid_request_error"
    return body["error"]["message"]


def test_it_covers_every_protocol() -> None:
    assert set(REQUESTS) == set(wire.BY_NAME)


@pytest.mark.parametrize("content_type", FORM_TYPES)
@pytest.mark.parametrize("protocol", REQUESTS)
def test_it_refuses_a_json_body_sent_as_a_form_in_the_protocol_s_format(
    server: LiveServer, protocol: str, content_type: str
) -> None:
    path, body = REQUESTS[protocol]
    response = post(server, path, body, content_type)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/json")
    media_type = content_type.partition(";")[0]
    assert media_type in error_message(protocol, response.json())


@pytest.mark.parametrize("protocol", REQUESTS)
def test_it_still_answers_a_json_body(server: LiveServer, protocol: str, transactional_db: None) -> None:
    path, body = REQUESTS[protocol]
    response = post(server, path, body, "application/json")
    assert response.status_code == 200, response.text
    assert response.json()
