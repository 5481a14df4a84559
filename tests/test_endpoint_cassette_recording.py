"""Cassettes recorded through the fake endpoint, with the harness itself as the real provider: a request with
``X-Harness-Record`` (or ``X-Harness-Cassette`` in record and auto modes) is forwarded upstream, streamed back
unchanged, stored as a cassette with its secrets redacted, then replayed byte for byte; the modes and strictness as
seed 003's VCR_MODE and VCR_STRICT."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import types

from harnessweb.engine.redaction import marker
from tests.conftest import LiveServer, make_scenario, running_server, wait_for


def upstream_env(upstream: LiveServer, **more: str) -> dict[str, str]:
    return {
        "HARNESS_PACING": "off",
        "HARNESS_UPSTREAM_OPENAI_URL": upstream.url,
        "HARNESS_UPSTREAM_ANTHROPIC_URL": upstream.url,
        "HARNESS_UPSTREAM_GEMINI_URL": upstream.url,
        **more,
    }


def serve(tmp_path_factory: Any, env: dict[str, str]) -> Iterator[LiveServer]:
    with running_server(tmp_path_factory.mktemp("vcr"), env) as server:
        yield server


@pytest.fixture(scope="module")
def recording_server(harness_server: LiveServer, tmp_path_factory: Any) -> Iterator[LiveServer]:
    """Playback mode, strict, recording forwarded to ``harness_server`` as the real provider."""
    yield from serve(tmp_path_factory, upstream_env(harness_server, HARNESS_VCR_STRICT="1"))


@pytest.fixture(scope="module")
def auto_server(harness_server: LiveServer, tmp_path_factory: Any) -> Iterator[LiveServer]:
    yield from serve(tmp_path_factory, upstream_env(harness_server, HARNESS_VCR_MODE="auto"))


@pytest.fixture(scope="module")
def record_server(harness_server: LiveServer, tmp_path_factory: Any) -> Iterator[LiveServer]:
    yield from serve(tmp_path_factory, upstream_env(harness_server, HARNESS_VCR_MODE="record"))


def stored(name: str) -> dict[str, Any]:
    """The newest cassette of that name. It is stored before the response's end, which an SDK that stops reading at
    the stream's last event (openai's ``[DONE]``) may not wait for: hence the wait."""
    from runs_app.models import Cassette

    def newest() -> Cassette | None:
        return Cassette.objects.filter(name=name).order_by("-uploaded_at", "-id").first()

    return json.loads(bytes(wait_for(newest, message=f"cassette {name}").content))


def raw(server: LiveServer, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any, bytes]:
    with (
        httpx2.Client(base_url=server.url, timeout=20) as client,
        client.stream("POST", path, json=body, headers=headers) as response,
    ):
        return response.status_code, response.headers, b"".join(response.iter_raw())


def chat_body(scenario: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-test", "messages": [{"role": "user", "content": scenario}], "stream": stream}
    return body


TEXT = "Recorded through the harness, word by word."


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_it_records_an_openai_exchange_and_replays_it_byte_for_byte(
    harness_server, recording_server, transactional_db, stream
):
    make_scenario("taped-openai", [{"turn": 1, "response": {"kind": "text", "assistant_text": TEXT}}])
    name = f"verify_openai_recorded_{uuid.uuid4().hex[:8]}"
    key = "sk-secret-key-that-must-not-stay"
    client = openai.OpenAI(base_url=f"{recording_server.url}/v1", api_key=key, max_retries=0, timeout=20)
    messages = [{"role": "user", "content": "taped-openai"}]
    record = {"X-Harness-Record": name}
    if stream:
        chunks = list(
            client.chat.completions.create(model="gpt-test", messages=messages, stream=True, extra_headers=record)
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        text = (
            client.chat.completions.create(model="gpt-test", messages=messages, extra_headers=record)
            .choices[0]
            .message.content
        )
    assert text == TEXT

    cassette = stored(f"{name}.json")
    (interaction,) = cassette["interactions"]
    assert interaction["request"]["url"] == f"{harness_server.url}/v1/chat/completions"
    assert ["authorization", f"Bearer {marker(key)}"] in interaction["request"]["headers"]
    assert interaction["request"]["body"]["messages"] == messages
    assert key not in json.dumps(cassette)
    assert interaction["response"]["status"] == 200
    recorded = b"".join(chunk.encode() for chunk in interaction["response"]["body_chunks"])
    # Chunk by chunk as they arrived: the upstream sends an unpaced stream's frames before its last in one write,
    # then its last once the response's events are committed.
    assert len(interaction["response"]["body_chunks"]) >= (2 if stream else 1)

    # Replayed by the playback server (strict or not), from the same database: the bytes recorded, the request id too.
    body = {"model": "gpt-test", "messages": messages, **({"stream": True} if stream else {})}
    for server in (harness_server, recording_server):
        status, headers, replayed = raw(server, "/v1/chat/completions", body, {"X-Harness-Cassette": name})
        assert (status, replayed) == (200, recorded)
        request_id = {k.lower(): v for k, v in interaction["response"]["headers"]}["x-request-id"]
        assert headers["x-request-id"] == request_id
    replay = openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key="other", max_retries=0, timeout=20)
    if stream:
        again = replay.chat.completions.create(
            model="gpt-test", messages=messages, stream=True, extra_headers={"X-Harness-Cassette": name}
        )
        assert [c.model_dump() for c in again] == [c.model_dump() for c in chunks]
    else:
        again = replay.chat.completions.create(
            model="gpt-test", messages=messages, extra_headers={"X-Harness-Cassette": name}
        )
        assert again.choices[0].message.content == TEXT


def test_it_records_an_anthropic_stream_through_the_sdk(harness_server, recording_server, transactional_db):
    make_scenario("taped-claude", [{"turn": 1, "response": {"kind": "text", "assistant_text": TEXT}}])
    name = f"anthropic_recorded_{uuid.uuid4().hex[:8]}.json"
    recorder = anthropic.Anthropic(base_url=recording_server.url, api_key="sk-ant-secret", max_retries=0, timeout=20)
    request = {"model": "claude-test", "max_tokens": 200, "messages": [{"role": "user", "content": "taped-claude"}]}
    with recorder.messages.stream(**request, extra_headers={"X-Harness-Record": name}) as stream:
        events = [event.model_dump() for event in stream]
        assert stream.get_final_text() == TEXT

    cassette = stored(name)
    headers = cassette["interactions"][0]["request"]["headers"]
    assert ["authorization", f"Bearer {marker('sk-ant-secret')}"] in headers  # anthropic 2.x: a bearer token
    assert "sk-ant-secret" not in json.dumps(cassette)
    assert not any(name.startswith("x-harness-") for name, _ in headers)

    player = anthropic.Anthropic(base_url=harness_server.url, api_key="sk-other", max_retries=0, timeout=20)
    with player.messages.stream(**request, extra_headers={"X-Harness-Cassette": name}) as stream:
        assert [event.model_dump() for event in stream] == events


def test_it_records_gemini_with_the_key_in_the_query_redacted(harness_server, recording_server, transactional_db):
    make_scenario("taped-gemini", [{"turn": 1, "response": {"kind": "text", "assistant_text": TEXT}}])
    name = f"gemini_recorded_{uuid.uuid4().hex[:8]}"
    path = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse&key=AIza-secret"
    body = {"contents": [{"role": "user", "parts": [{"text": "taped-gemini"}]}]}
    status, _, recorded = raw(recording_server, path, body, {"X-Harness-Record": name, "Cookie": "session=abc"})
    assert status == 200
    assert b"Recorded" in recorded

    cassette = stored(f"{name}.json")
    request = cassette["interactions"][0]["request"]
    key = marker("AIza-secret")
    assert request["url"].endswith(f"/v1beta/models/gemini-test:streamGenerateContent?alt=sse&key={key}")
    assert ["cookie", marker("session=abc")] in request["headers"]
    assert "AIza-secret" not in json.dumps(cassette) and "session=abc" not in json.dumps(cassette)

    options = types.HttpOptions(base_url=harness_server.url, api_version="v1beta", headers={"X-Harness-Cassette": name})
    client = genai.Client(api_key="another", http_options=options)
    text = "".join(
        chunk.text or ""
        for chunk in client.models.generate_content_stream(model="gemini-test", contents="taped-gemini")
    )
    assert text == TEXT


def test_it_records_an_upstream_error_as_it_came(harness_server, recording_server, transactional_db):
    name = f"openai_recorded_error_{uuid.uuid4().hex[:8]}"
    status, headers, body = raw(recording_server, "/v1/chat/completions", {"model": "m"}, {"X-Harness-Record": name})
    assert status == 400  # the provider refuses a body without messages
    response = stored(f"{name}.json")["interactions"][0]["response"]
    assert response["status"] == 400
    assert "".join(response["body_chunks"]).encode() == body

    client = openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key="sk-x", max_retries=0, timeout=20)
    with pytest.raises(openai.BadRequestError) as caught:
        client.post(
            "/chat/completions", body={"model": "m"}, cast_to=object, options={"headers": {"X-Harness-Cassette": name}}
        )
    assert caught.value.body == json.loads(body)["error"]
    assert caught.value.request_id == headers["x-request-id"]


def test_it_asks_for_the_upstream_address_when_none_is_set(oai, transactional_db):
    with pytest.raises(openai.BadRequestError) as caught:
        oai.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], extra_headers={"X-Harness-Record": "somewhere"}
        )
    assert "set HARNESS_UPSTREAM_OPENAI_URL" in caught.value.body["message"]
    assert caught.value.body["param"] == "x-harness-record"


def test_it_refuses_a_missing_cassette_when_strict(recording_server, transactional_db):
    client = openai.OpenAI(base_url=f"{recording_server.url}/v1", api_key="sk-x", max_retries=0, timeout=20)
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], extra_headers={"X-Harness-Cassette": "never-taped"}
        )
    assert "Cassette 'never-taped' is not stored: the server has none of that name" in caught.value.body["message"]


def test_it_records_then_replays_in_auto_mode(auto_server, transactional_db):
    make_scenario("taped-auto", [{"turn": 1, "response": {"kind": "text", "assistant_text": TEXT}}])
    name = f"openai_auto_{uuid.uuid4().hex[:8]}"
    headers = {"X-Harness-Cassette": name}
    first = raw(auto_server, "/v1/chat/completions", chat_body("taped-auto", True), headers)
    second = raw(auto_server, "/v1/chat/completions", chat_body("taped-auto", True), headers)
    assert first[0] == second[0] == 200
    assert first[2] == second[2]  # the same bytes, ids included: the second was replayed
    assert first[1]["x-request-id"] == second[1]["x-request-id"]
    assert len(stored(f"{name}.json")["interactions"]) == 1

    # A request the cassette has not recorded falls through to the provider and joins the cassette.
    third = raw(auto_server, "/v1/chat/completions", chat_body("taped-auto", False), headers)
    assert third[0] == 200 and third[1]["x-request-id"] != first[1]["x-request-id"]
    assert [i["request"]["body"]["stream"] for i in stored(f"{name}.json")["interactions"]] == [True, False]


def test_it_records_again_in_record_mode(record_server, transactional_db):
    make_scenario("taped-record", [{"turn": 1, "response": {"kind": "text", "assistant_text": TEXT}}])
    name = f"openai_again_{uuid.uuid4().hex[:8]}"
    headers = {"X-Harness-Cassette": name}
    first = raw(record_server, "/v1/chat/completions", chat_body("taped-record", True), headers)
    second = raw(record_server, "/v1/chat/completions", chat_body("taped-record", True), headers)
    assert first[1]["x-request-id"] != second[1]["x-request-id"]  # both came from the provider
    (interaction,) = stored(f"{name}.json")["interactions"]  # the same request recorded again replaces its answer
    assert dict(interaction["response"]["headers"])["x-request-id"] == second[1]["x-request-id"]


@pytest.fixture(scope="module")
def paced_recording_server(paced_server: LiveServer, tmp_path_factory: Any) -> Iterator[LiveServer]:
    """Recording forwarded to a provider that paces its stream."""
    yield from serve(tmp_path_factory, upstream_env(paced_server))


def test_it_streams_the_answer_on_as_it_arrives_while_recording(paced_recording_server, transactional_db):
    import time

    make_scenario(
        "taped-paced",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": " ".join(["word"] * 12)}}],
        pacing={"chunk_words": 3, "interval_ms": 150},
    )
    name = f"openai_paced_{uuid.uuid4().hex[:8]}"
    arrivals = []
    with httpx2.stream(
        "POST",
        f"{paced_recording_server.url}/v1/chat/completions",
        json=chat_body("taped-paced", True),
        headers={"X-Harness-Record": name},
        timeout=10,
    ) as response:
        for line in response.iter_lines():
            if line.startswith("data: {") and '"content":"' in line and '"content":""' not in line:
                arrivals.append(time.monotonic())
    assert len(arrivals) == 4
    assert arrivals[-1] - arrivals[0] >= 3 * 0.15 * 0.9  # not held back until the provider finished
    chunks = stored(f"{name}.json")["interactions"][0]["response"]["body_chunks"]
    assert sum('"content":"' in chunk and '"content":""' not in chunk for chunk in chunks) == 4
