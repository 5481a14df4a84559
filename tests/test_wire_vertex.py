"""Vertex AI's two protocols, pure: Gemini's and Anthropic's at Vertex's paths (the model from the path, the routes
and their error formats), the Claude body's ``anthropic_version``, the bytes they send, and the bearer token keys
read."""

from __future__ import annotations

import orjson
import pytest

from harnessweb.engine import keys, respond, routes
from harnessweb.engine.exchange import Block, ChatRequest, Failure, Reply, Usage
from harnessweb.engine.wire import BY_NAME, anthropic, gemini, vertex, vertex_claude
from harnessweb.engine.wire.common import WireError

GEMINI_PATH = "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash"
CLAUDE_PATH = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514"
CONTENTS = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
MESSAGES = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
REPLY = Reply((Block(type="text", text="Sunny in Paris.", choice=0),), "stop", Usage(3, 4, 7), id_seed="vertex-test")


def read(path: str, body: dict, query: str = "") -> ChatRequest:
    route = routes.resolve("POST", path, {}, query)
    assert isinstance(route, routes.Route) and route.kind == "play"
    _, request = respond.read_request(route, orjson.dumps(body))
    assert isinstance(request, ChatRequest)
    return request


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
@pytest.mark.parametrize(
    ("method", "query", "stream", "framing"),
    [("generateContent", "", False, "json"), ("streamGenerateContent", "alt=sse", True, "sse")],
)
def test_it_reads_geminis_model_and_streaming_from_vertexs_path(version, method, query, stream, framing) -> None:
    path = f"{GEMINI_PATH.replace('/v1beta1/', f'/{version}/')}:{method}"
    request = read(path, CONTENTS, query)
    assert (request.protocol, request.model, request.stream, request.framing) == (
        "vertex",
        "gemini-2.5-flash",
        stream,
        framing,
    )
    assert request.messages[0].text == "hello" and routes.play_wire(path) is vertex


def test_it_reads_claudes_model_from_the_path_and_streaming_from_the_body() -> None:
    request = read(f"{CLAUDE_PATH}:rawPredict", MESSAGES)
    assert (request.protocol, request.model, request.stream) == ("vertex_claude", "claude-sonnet-4@20250514", False)
    streamed = read(f"{CLAUDE_PATH}:streamRawPredict", {**MESSAGES, "stream": True, "model": "ignored"})
    assert (streamed.model, streamed.stream) == ("claude-sonnet-4@20250514", True)
    assert routes.play_wire(f"{CLAUDE_PATH}:streamRawPredict") is vertex_claude


def test_it_refuses_a_claude_body_without_anthropic_version_naming_it() -> None:
    body = {key: value for key, value in MESSAGES.items() if key != "anthropic_version"}
    with pytest.raises(WireError) as caught:
        read(f"{CLAUDE_PATH}:rawPredict", body)
    assert (caught.value.param, caught.value.message) == ("anthropic_version", "anthropic_version: Field required")
    with pytest.raises(WireError, match="max_tokens: Field required"):  # the rest as Anthropic's parser reads it
        vertex_claude.parse_request({"anthropic_version": "vertex-2023-10-16", "messages": []})


def test_it_counts_claudes_tokens_at_vertexs_count_tokens_path() -> None:
    route = routes.resolve(
        "POST", "/v1/projects/p/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict", {}
    )
    assert isinstance(route, routes.Route) and (route.kind, route.wire) == ("count_tokens", vertex_claude)
    _, encoded = respond.read_request(route, orjson.dumps({**MESSAGES, "model": "claude-sonnet-4@20250514"}))
    assert orjson.loads(encoded.body) == {"input_tokens": 1}


def test_it_lists_vertexs_paths_and_answers_unserved_ones_in_each_publishers_format() -> None:
    assert "POST /v1/projects/{project}/locations/{location}/publishers/google/models/{id}:generateContent" in (
        routes.SERVED
    )
    assert "POST /v1/projects/{project}/locations/{location}/publishers/anthropic/models/{id}:rawPredict" in (
        routes.SERVED
    )
    google = routes.resolve("POST", f"{GEMINI_PATH}:predict", {})
    claude = routes.resolve("POST", f"{CLAUDE_PATH}:predict", {"anthropic-version": "x"})
    assert isinstance(google, routes.Refusal) and (google.status, google.wire) == (404, vertex)
    assert isinstance(claude, routes.Refusal) and (claude.status, claude.wire) == (404, vertex_claude)
    assert routes.is_provider_path("/v1beta1/projects/p/locations/l/endpoints/e:predict")
    assert BY_NAME["vertex"] is vertex and BY_NAME["vertex_claude"] is vertex_claude


def test_it_sends_geminis_and_anthropics_bytes_for_the_request() -> None:
    gemini_request = read(f"{GEMINI_PATH}:streamGenerateContent", CONTENTS, "alt=sse")
    assert vertex.encode_reply(REPLY, gemini_request) == gemini.encode_stream(REPLY, "gemini-2.5-flash")
    first = orjson.loads(vertex.encode_reply(REPLY, gemini_request).frames[0].removeprefix(b"data: "))
    assert first["modelVersion"] == "gemini-2.5-flash" and first["candidates"][0]["content"]["role"] == "model"
    claude_request = read(f"{CLAUDE_PATH}:rawPredict", MESSAGES)
    message = orjson.loads(vertex_claude.encode_reply(REPLY, claude_request).body)
    assert message["model"] == "claude-sonnet-4@20250514" and message["content"] == [
        {"type": "text", "text": "Sunny in Paris."}
    ]
    assert vertex_claude.encode_reply(REPLY, claude_request) == anthropic.encode_message(REPLY, claude_request.model)


def test_it_sends_failures_in_googles_format_for_gemini_and_anthropics_for_claude() -> None:
    failure = Failure(status="rate_limit", message="Quota exceeded", retryable=True, retry_after_ms=1500)
    google = vertex.encode_failure(failure, "req_1")
    assert google.status == 429 and orjson.loads(google.body) == {
        "error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}
    }
    assert (b"retry-after", b"2") in google.headers
    claude = vertex_claude.encode_failure(failure, "req_1")
    assert claude.status == 429 and orjson.loads(claude.body) == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Quota exceeded"},
        "request_id": "req_1",
    }
    overloaded = Failure(status="overloaded", message="busy", retryable=True, retry_after_ms=None)
    assert vertex_claude.encode_failure(overloaded).status == 529 and vertex.encode_failure(overloaded).status == 503


@pytest.mark.parametrize("protocol", ["vertex", "vertex_claude"])
def test_it_reads_the_key_from_the_bearer_token_only(protocol: str) -> None:
    missing = keys.refusal(protocol, {})
    assert missing is not None and missing[0] == 401 and "Expected OAuth 2 access token" in missing[1]
    assert keys.refusal(protocol, {"x-goog-api-key": "AIza-key"}) == missing  # an API key is not Vertex's token
    assert keys.refusal(protocol, {"authorization": "Bearer "}) == missing
    assert keys.refusal(protocol, {"authorization": "Bearer ya29.token"}) is None
    presented = keys.presented({"authorization": "Bearer ya29.token"})
    assert presented == keys.Key("authorization", keys.fingerprint("ya29.token"))


def test_it_answers_a_missing_token_in_each_publishers_401() -> None:
    status, message = keys.MISSING["vertex"]
    google = orjson.loads(vertex.encode_error(status, message).body)
    assert google["error"]["code"] == 401 and google["error"]["status"] == "UNAUTHENTICATED"
    claude = orjson.loads(vertex_claude.encode_error(status, message, request_id="req_2").body)
    assert claude["error"] == {"type": "authentication_error", "message": message}
