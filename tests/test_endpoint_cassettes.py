"""Cassettes replayed through the fake endpoint: every real cassette of tests/fixtures/vcr, uploaded through the CI
API and named by ``X-Harness-Cassette``, reaches its official SDK (openai, anthropic, google-genai) byte for byte as
the provider sent it (status, headers with request ids, chunks); a request that matches no interaction is a 400 in
the protocol's format showing the closest recorded one; a scenario may name the cassette that answers it."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from harnessweb.engine import vcr
from tests.conftest import VCR_DIR, LiveServer, make_client, make_scenario, running_server, vcr_fixture, wait_for

CASSETTE_FILES = sorted(path.name for path in VCR_DIR.glob("*.json") if "interactions" in json.loads(path.read_text()))
# The recorded requests name a model the SDK warns about; that warning is about the recordings, not the endpoint.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


def load(name: str) -> dict[str, Any]:
    return json.loads((VCR_DIR / name).read_text())


def upload(name: str) -> None:
    """The cassette stored as CI stores it: through POST /api/cassettes."""
    response = make_client().post(
        "/cassettes",
        data=vcr_fixture(name),
        query_params={"name": name},
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code in (200, 201), response.content


def protocol_of(url: str) -> str | None:
    path = vcr.request_path(url)
    if path == "/v1/messages":
        return "anthropic"
    if path == "/v1/chat/completions":
        return "openai"
    if path.startswith(("/v1/models/", "/v1beta/models/")) and path.endswith(("generateContent", "GenerateContent")):
        return "gemini"
    if path.startswith("/openai/deployments/") and path.endswith("/chat/completions"):
        return "azure"
    return None


def first_url(name: str) -> str:
    return load(name)["interactions"][0]["request"]["url"]


SERVED = [name for name in CASSETTE_FILES if protocol_of(first_url(name)) is not None]


def test_it_serves_every_fixture_cassette():
    assert SERVED == CASSETTE_FILES and any(name.startswith("azure_") for name in SERVED)


def recorded_chunks(response: dict[str, Any]) -> list[bytes]:
    if response.get("body_chunks_base64") is not None:
        return [base64.b64decode(chunk) for chunk in response["body_chunks_base64"]]
    return [chunk.encode("utf-8") for chunk in response["body_chunks"]]


def answered_by(cassette: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The interaction that answers a recorded request: the first one it matches (an identical request recorded
    twice replays the first answer)."""
    index = vcr.find(cassette, request["method"], vcr.request_path(request["url"]), request.get("body"))
    assert index is not None
    return cassette["interactions"][index]


def stand_in_body(protocol: str) -> dict[str, Any]:
    """The body sent when the cassette recorded none (the hand-written ones): any body matches."""
    if protocol == "gemini":
        return {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True}


# -- the bytes -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SERVED)
def test_it_replays_every_recorded_response_byte_for_byte(harness_server, transactional_db, name):
    cassette = load(name)
    upload(name)
    with httpx2.Client(base_url=harness_server.url, timeout=20) as client:
        for request in (interaction["request"] for interaction in cassette["interactions"]):
            expected = answered_by(cassette, request)["response"]
            query = httpx2.URL(request["url"]).query.decode()
            body = request.get("body") or stand_in_body(protocol_of(request["url"]) or "")
            with client.stream(
                "POST",
                vcr.request_path(request["url"]) + (f"?{query}" if query else ""),
                json=body,
                headers={"X-Harness-Cassette": name.removesuffix(".json"), "X-API-Key": "sk-replay"},
            ) as response:
                received = b"".join(response.iter_raw())
            assert response.status_code == expected["status"]
            assert received == b"".join(recorded_chunks(expected))
            for header, value in vcr.sendable_headers(expected["headers"]):
                assert value.decode("latin-1") in response.headers.get_list(header.decode()), header
            assert "x-harness-run" not in response.headers


# -- through the official SDKs --------------------------------------------------------------------------------------


def outcome(call: Any) -> tuple[Any, ...]:
    """What an SDK makes of a response: the events it parsed, and the error it raised (type, status, body, request
    id) if any."""
    events: list[Any] = []
    try:
        result = call()
        if isinstance(result, (anthropic.Stream, openai.Stream)) or hasattr(result, "__next__"):
            for event in result:
                events.append(event.model_dump(exclude={"sdk_http_response"}))
        else:
            events.append(result.model_dump(exclude={"sdk_http_response"}))
    except (anthropic.APIError, openai.APIError) as exc:
        status = getattr(exc, "status_code", None)
        return events, type(exc).__name__, status, exc.body, getattr(exc, "request_id", None)
    return events, None


def recorded_client(sdk: Any, response: dict[str, Any]) -> Any:
    """The SDK's client answered by the recorded response itself, chunk by chunk (what the provider sent)."""
    headers = [(k, v) for k, v in response["headers"] if k.lower() not in vcr.CONNECTION_HEADERS]

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(response["status"], headers=headers, content=iter(recorded_chunks(response)))

    kwargs = {"api_key": "replay", "http_client": httpx2.Client(transport=httpx2.MockTransport(answer))}
    if sdk is anthropic:
        return anthropic.Anthropic(base_url="http://recording.invalid", max_retries=0, **kwargs)
    return openai.OpenAI(base_url="http://recording.invalid/v1", max_retries=0, **kwargs)


def anthropic_call(client: anthropic.Anthropic, body: dict[str, Any], name: str) -> Any:
    body = dict(body)
    extra = {key: body.pop(key) for key in ("temperature", "top_p") if key in body}
    headers = {"X-Harness-Cassette": name} if name else {}
    return lambda: client.messages.create(**body, extra_body=extra or None, extra_headers=headers)


def openai_call(client: openai.OpenAI, name: str) -> Any:
    headers = {"X-Harness-Cassette": name} if name else {}
    messages = [{"role": "user", "content": "hi"}]
    return lambda: client.chat.completions.create(
        model="gpt-4o-mini", messages=messages, stream=True, extra_headers=headers
    )


def azure_client(**options: Any) -> openai.AzureOpenAI:
    return openai.AzureOpenAI(api_key="sk-replay", api_version="2024-02-15-preview", azure_deployment="test-deployment",
                              max_retries=0, timeout=20, **options)  # fmt: skip


def gemini_outcome(client: genai.Client) -> tuple[Any, ...]:
    parts: list[Any] = []
    try:
        for chunk in client.models.generate_content_stream(model="gemini-1.5-flash", contents="hi"):
            for candidate in chunk.candidates or []:
                parts.extend(part.model_dump(exclude_none=True) for part in candidate.content.parts or [])
                if candidate.finish_reason:
                    parts.append(str(candidate.finish_reason.value))
    except genai_errors.APIError as exc:
        return parts, exc.code, exc.message
    return parts, None


def gemini_recorded(response: dict[str, Any]) -> tuple[Any, ...]:
    """What google-genai must make of the recorded response: its parts and finish reasons, or its error."""
    body = b"".join(recorded_chunks(response)).decode()
    if response["status"] >= 400:
        error = json.loads(body)["error"]
        return [], error["code"], error["message"]
    parts: list[Any] = []
    for line in body.splitlines():
        if line.startswith("data: "):
            for candidate in json.loads(line[len("data: ") :]).get("candidates", []):
                for part in candidate["content"].get("parts", []):
                    parts.append(types.Part.model_validate(part).model_dump(exclude_none=True))
                if candidate.get("finishReason"):
                    parts.append(candidate["finishReason"])
    return parts, None


@pytest.mark.parametrize("name", SERVED)
def test_it_hands_every_cassette_to_its_sdk_as_the_provider_sent_it(harness_server, transactional_db, name):
    cassette = load(name)
    protocol = protocol_of(cassette["interactions"][0]["request"]["url"])
    upload(name)
    for interaction in cassette["interactions"]:
        request, expected = interaction["request"], answered_by(cassette, interaction["request"])["response"]
        if protocol == "anthropic":
            ours = anthropic.Anthropic(base_url=harness_server.url, api_key="sk-replay", max_retries=0, timeout=20)
            got = outcome(anthropic_call(ours, request["body"], name))
            assert got == outcome(anthropic_call(recorded_client(anthropic, expected), request["body"], ""))
        elif protocol == "openai":
            ours = openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key="sk-replay", max_retries=0, timeout=20)
            got = outcome(openai_call(ours, name))
            assert got == outcome(openai_call(recorded_client(openai, expected), ""))
        elif protocol == "azure":  # the AzureOpenAI client, its deployment in the path and api-version in the query
            ours = azure_client(azure_endpoint=harness_server.url)
            got = outcome(openai_call(ours, name))
            recorded = azure_client(azure_endpoint="https://test-resource.openai.azure.com",
                                    http_client=recorded_client(openai, expected)._client)  # fmt: skip
            assert got == outcome(openai_call(recorded, ""))
        else:
            options = types.HttpOptions(
                base_url=harness_server.url,
                api_version="v1beta",
                headers={"X-Harness-Cassette": name},
                retry_options=types.HttpRetryOptions(attempts=1),
            )
            got = gemini_outcome(genai.Client(api_key="test-key", http_options=options))
            assert got == gemini_recorded(expected)
        assert got[0] or got[1] is not None  # the SDK saw something: events or an error


# -- what does not match --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def strict_server(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[LiveServer]:
    """A server with HARNESS_VCR_STRICT on: a request its cassette has no interaction for is refused."""
    env = {"HARNESS_PACING": "off", "HARNESS_VCR_STRICT": "1"}
    with running_server(tmp_path_factory.mktemp("strict"), env) as server:
        yield server


def test_it_refuses_a_request_no_interaction_matches_showing_the_closest(strict_server, transactional_db):
    upload("anthropic_extended_thinking.json")
    body = dict(load("anthropic_extended_thinking.json")["interactions"][4]["request"]["body"], max_tokens=1300)
    client = anthropic.Anthropic(base_url=strict_server.url, api_key="sk-replay", max_retries=0, timeout=20)
    with pytest.raises(anthropic.BadRequestError) as caught:
        anthropic_call(client, body, "anthropic_extended_thinking.json")()
    message = caught.value.body["error"]["message"]
    assert caught.value.body["type"] == "error"  # Anthropic's error format
    assert "No interaction of cassette 'anthropic_extended_thinking.json' (5 recorded)" in message
    assert '"max_tokens": 1300' in message
    assert "Closest recorded: #4 POST https://api.anthropic.com/v1/messages" in message
    assert "body.max_tokens: recorded 1280, sent 1300" in message


def test_it_matches_bodies_as_json_whatever_their_key_order_and_spacing(strict_server, transactional_db):
    upload("anthropic_simple_text.json")
    recorded = load("anthropic_simple_text.json")["interactions"][0]["request"]["body"]
    reordered = json.dumps(dict(reversed(list(recorded.items()))), indent=3).encode()
    headers = {"x-api-key": "sk-replay", "anthropic-version": "2023-06-01", "content-type": "application/json",
               "X-Harness-Cassette": "anthropic_simple_text"}  # fmt: skip
    response = httpx2.post(f"{strict_server.url}/v1/messages", content=reordered, headers=headers, timeout=20)
    assert response.status_code == 200


def test_it_refuses_a_request_no_interaction_matches_rather_than_leave_it_to_the_engine(oai, transactional_db):
    """Not strict (the default) too: a request that names a cassette gets it or an error, never the scenario's answer
    (only a scenario's own cassette falls back to the scenario)."""
    upload("anthropic_simple_text.json")
    make_scenario("past-the-tape", [{"turn": 1, "response": {"kind": "text", "assistant_text": "From the scenario."}}])
    with pytest.raises(openai.BadRequestError) as caught:
        oai.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "past-the-tape"}],
            extra_headers={"X-Harness-Cassette": "anthropic_simple_text"},
        )
    assert "No interaction of cassette 'anthropic_simple_text.json' (2 recorded)" in caught.value.body["message"]
    assert "path: recorded /v1/messages, sent /v1/chat/completions" in caught.value.body["message"]


def test_it_refuses_a_request_on_another_path_in_that_protocols_format(strict_server, transactional_db):
    upload("anthropic_simple_text.json")
    strict = openai.OpenAI(base_url=f"{strict_server.url}/v1", api_key="sk-strict", max_retries=0, timeout=20)
    with pytest.raises(openai.BadRequestError) as caught:
        strict.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"X-Harness-Cassette": "anthropic_simple_text"},
        )
    assert "path: recorded /v1/messages, sent /v1/chat/completions" in caught.value.body["message"]


def test_it_answers_a_cassette_not_stored_with_a_404_naming_it(oai, transactional_db):
    make_scenario("not-taped", [{"turn": 1, "response": {"kind": "text", "assistant_text": "From the scenario."}}])
    with pytest.raises(openai.NotFoundError) as caught:
        oai.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "not-taped"}],
            extra_headers={"X-Harness-Cassette": "nowhere"},
        )
    message = caught.value.body["message"]
    assert message.startswith("Cassette 'nowhere' is not stored: the server has none of that name")
    assert "manage.py load_cassettes DIR" in message and caught.value.body["param"] == "x-harness-cassette"


def test_a_scenario_s_own_cassette_not_stored_leaves_the_answer_to_the_scenario(oai, transactional_db):
    make_scenario(
        "taped-elsewhere",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": "From the scenario."}}],
        cassette="never_uploaded",
    )
    reply = oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "taped-elsewhere"}])
    assert reply.choices[0].message.content == "From the scenario."


def test_it_replays_the_cassette_a_scenario_names(oai, transactional_db):
    upload("openai_simple_text.json")
    make_scenario("taped", cassette="openai_simple_text")
    stream = oai.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        extra_headers={"X-Harness-Scenario": "taped"},
    )
    chunks = [chunk.model_dump() for chunk in stream]
    recorded = load("openai_simple_text.json")["interactions"][0]["response"]
    assert chunks == outcome(openai_call(recorded_client(openai, recorded), ""))[0]
    assert "".join(c["choices"][0]["delta"]["content"] or "" for c in chunks if c["choices"]) == "pong"

    from runs_app.models import Run

    run = wait_for(lambda: Run.objects.filter(scenario_id="taped", status="passed").first(), message="the run")
    response = run.events.get(kind="response")
    assert response.data == {"status": 200, "cassette": "openai_simple_text"}


def test_it_says_so_when_a_stored_cassette_is_not_one(oai, transactional_db):
    from runs_app.models import Cassette

    Cassette.objects.create(name="broken.json", provider="x", scenario="y", content=b"{}", digest="0" * 64, size=2)
    with pytest.raises(openai.BadRequestError) as caught:
        oai.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], extra_headers={"X-Harness-Cassette": "broken"}
        )
    assert caught.value.body["message"].startswith("Cassette 'broken.json' (#")
    assert "is stored but is not a VCR cassette" in caught.value.body["message"]
    assert caught.value.body["param"] == "x-harness-cassette"


def test_a_request_naming_a_cassette_must_carry_its_key_when_keys_must_arrive(harness_server, transactional_db):
    upload("openai_simple_text.json")
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    headers = {"X-Harness-Cassette": "openai_simple_text", "X-Harness-Require-Key": "1"}
    url = f"{harness_server.url}/v1/chat/completions"
    refused = httpx2.post(url, json=body, headers=headers, timeout=20)
    assert refused.status_code == 401
    assert refused.json()["error"]["message"].startswith("You didn't provide an API key.")
    misplaced = httpx2.post(url, json=body, headers={**headers, "x-api-key": "sk-replay"}, timeout=20)
    assert misplaced.status_code == 401  # a header OpenAI does not read
    replayed = httpx2.post(url, json=body, headers={**headers, "authorization": "Bearer sk-replay"}, timeout=20)
    assert replayed.status_code == 200 and replayed.content == b"".join(
        recorded_chunks(load("openai_simple_text.json")["interactions"][0]["response"])
    )
