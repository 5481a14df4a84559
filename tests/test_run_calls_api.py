"""``GET /api/runs/{id}/calls``: a run's calls read from its events by the core (harnessweb/engine/calls.py), with the
fields of the pytest plugin's ``Call``: what the official SDKs sent through the live server gives the same fields as
the plugin's server mode computed from the run's events and as the in-process plugin records for the same requests;
uploaded calls read back; requests that are no conversation left out; one query for the events; 404 and 401; the
OpenAPI page's summary and example."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from harnessweb.engine.calls import Call, calls_from_events
from harnessweb.engine.routes import RUN_HEADER
from harnessweb.testing.harness import Harness
from runs_app.ci.calls import EXAMPLE_CALL, RunCallsOut
from tests.conftest import LiveServer, make_client, make_token

TOOL_OPENAI = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
TOOL_ANTHROPIC = {
    "name": "get_time",
    "description": "The time in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
# What a request sent: the same whichever side of the wire records it.
REQUEST_FIELDS = [
    "protocol",
    "model",
    "path",
    "messages",
    "system",
    "prompt",
    "prompt_length",
    "tools",
    "schema",
    "temperature",
    "top_p",
    "max_tokens",
    "params",
    "stream",
    "body",
    "answered_by",
]


def make_calls(oai: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    """One OpenAI chat completion and one streamed Anthropic message, each with a system prompt and a tool."""
    oai.chat.completions.create(
        model="gpt-4o",
        messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "What is the weather in Paris?"},
        ],
        tools=[TOOL_OPENAI],  # type: ignore[list-item]
        temperature=0.2,
        top_p=0.9,
        max_tokens=50,
        seed=7,
    )
    events = claude.messages.create(
        model="claude-sonnet-4-6",
        max_tokens=40,
        system="Be brief.",
        messages=[{"role": "user", "content": "What time is it in Oslo?"}],
        tools=[TOOL_ANTHROPIC],  # type: ignore[list-item]
        stop_sequences=["END"],
        stream=True,
    )
    assert [event.type for event in events][-1] == "message_stop"


def test_it_gives_the_sdk_calls_of_a_run_with_the_plugin_s_fields(
    harness_server: LiveServer, api_key: str, transactional_db: None, harness: Harness
) -> None:
    run_id = str(uuid.uuid4())
    headers = {RUN_HEADER: run_id}
    oai = openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key=api_key, default_headers=headers, max_retries=0)
    claude = anthropic.Anthropic(base_url=harness_server.url, api_key=api_key, default_headers=headers, max_retries=0)
    make_calls(oai, claude)

    token = make_token("read")
    with httpx2.Client(base_url=f"{harness_server.url}/api", headers={"Authorization": f"Bearer {token}"}) as api:
        answer = api.get(f"/runs/{run_id}/calls")
        events = api.get(f"/runs/{run_id}").json()["events"]
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["run_id"] == run_id
    first, second = body["calls"]

    assert {k: first[k] for k in ("protocol", "model", "path", "system", "prompt", "prompt_length")} == {
        "protocol": "openai",
        "model": "gpt-4o",
        "path": "/v1/chat/completions",
        "system": "You are terse.",
        "prompt": "What is the weather in Paris?",
        "prompt_length": 29,
    }
    assert first["messages"] == [{"role": "user", "content": "What is the weather in Paris?"}]
    assert (first["tools"], first["temperature"], first["max_tokens"], first["stream"]) == (
        ["get_weather"],
        0.2,
        50,
        False,
    )
    assert first["params"] == {"seed": 7}
    assert first["response"]["text"] and first["error"] is None and first["duration_ms"] is not None
    assert first["key"]["fingerprint"] and api_key not in str(body)  # the key's fingerprint, never the key
    assert datetime.datetime.fromisoformat(first["timestamp"]) <= datetime.datetime.fromisoformat(second["timestamp"])

    assert (second["protocol"], second["model"], second["system"], second["prompt"]) == (
        "anthropic",
        "claude-sonnet-4-6",
        "Be brief.",
        "What time is it in Oslo?",
    )
    assert (second["tools"], second["params"], second["max_tokens"], second["stream"]) == (
        ["get_time"],
        {"stop_sequences": ["END"]},
        40,
        True,
    )
    assert second["body"]["system"] == "Be brief."

    # The same fields as the plugin's server mode computed from the run's events, and the plugin's Call has.
    assert body["calls"] == [call.as_record() for call in calls_from_events(events)]
    assert set(first) == set(Call.from_record(first).as_record())

    # The in-process plugin records the same requests with the same fields.
    make_calls(harness.openai_client(max_retries=0), harness.anthropic_client(max_retries=0))
    in_process = [call.as_record() for call in harness.calls]
    assert [{k: c[k] for k in REQUEST_FIELDS} for c in in_process] == [
        {k: c[k] for k in REQUEST_FIELDS} for c in body["calls"]
    ]


def uploaded(path: str, body: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"protocol": "openai", "path": path, "body": body, "timestamp": "2026-11-27T10:00:00Z", **fields}


@pytest.mark.django_db
def test_it_reads_uploaded_calls_back_with_one_query_for_the_events() -> None:
    run_id = make_client("write").post("/runs", json={"name": "uploads"}).json()["id"]
    conversation = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}], "temperature": 0.5}
    calls = [
        uploaded("/v1/chat/completions", conversation, answered_by="configured", response={"text": "hi"}),
        uploaded("/v1/embeddings", {"model": "text-embedding-3-small", "input": "x"}),  # no conversation
        uploaded("/v1/chat/completions", {"model": "gpt-4o", "messages": "not a list"}),  # no request a wire reads
        uploaded("/v1/chat/completions", conversation, error={"status": 429, "kind": "rate_limit", "message": "slow"}),
    ]
    assert make_client("write").post(f"/runs/{run_id}/calls", json={"calls": calls}).status_code == 201

    reader = make_client("read")
    with CaptureQueriesContext(connection) as queries:
        answer = reader.get(f"/runs/{run_id}/calls")
    assert answer.status_code == 200, answer.content
    assert len([q for q in queries.captured_queries if "runs_app_runevent" in q["sql"]]) == 1
    first, last = answer.json()["calls"]
    assert (first["prompt"], first["temperature"], first["answered_by"]) == ("hello", 0.5, "configured")
    assert first["response"] == {"text": "hi"} and first["error"] is None
    assert first["timestamp"] == "2026-11-27T10:00:00Z"
    assert last["response"] is None
    assert last["error"] == {"status": 429, "kind": "rate_limit", "message": "slow"}


@pytest.mark.django_db
def test_it_gives_a_run_without_requests_no_calls() -> None:
    run_id = make_client("write").post("/runs", json={"name": "empty"}).json()["id"]
    assert make_client("read").get(f"/runs/{run_id}/calls").json() == {"run_id": run_id, "calls": []}


@pytest.mark.django_db
def test_it_answers_404_for_an_unknown_run() -> None:
    unknown = uuid.uuid4()
    answer = make_client("read").get(f"/runs/{unknown}/calls")
    assert answer.status_code == 404
    assert answer.json()["detail"] == f"No run {unknown}"


@pytest.mark.django_db
def test_it_answers_401_without_a_token() -> None:
    from ninja.testing import TestClient

    from harnessweb.api import api

    run_id = make_client("write").post("/runs", json={"name": "private"}).json()["id"]
    answer = TestClient(api).get(f"/runs/{run_id}/calls")
    assert answer.status_code == 401
    assert "Bearer" in answer.json()["detail"]


def test_the_openapi_page_documents_it_with_an_example() -> None:
    from harnessweb.api import api

    schema = api.get_openapi_schema()
    operation = schema["paths"]["/api/runs/{run_id}/calls"]["get"]
    assert operation["summary"] == "A run's calls, as the pytest plugin's history has them"
    assert "answered_by" in operation["description"]
    ref = operation["responses"][200]["content"]["application/json"]["schema"]["$ref"]
    documented = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
    (example,) = documented["examples"]
    assert RunCallsOut.model_validate(example).calls[0].json_schema is None
    # The example names every field a call has, and only those.
    assert set(EXAMPLE_CALL) == set(Call.from_record(EXAMPLE_CALL).as_record())
    assert "schema" in schema["components"]["schemas"]["CallOut"]["properties"]
