"""Secrets never stay, swept end to end: real-looking keys (Anthropic, OpenAI project, Google, AWS) written into every
field a request can carry (secret and other headers, the query, the system prompt, messages, tool definitions, tool
call arguments and results) on every protocol the route table serves (``wire.WIRES``, so a protocol added later is
swept too), played plain and streamed through the running server and recorded as cassettes through a recording
server, then uploaded as a trace log, a cassette, JUnit output and a test's calls; the database (every table, every
column), the cassette store, the servers' logs and every page and API answer of those runs are searched for the
raw keys: found nowhere."""

from __future__ import annotations

import json
import secrets
import string
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
from django.db import connection

from harnessweb.engine import wire
from harnessweb.engine.redaction import fingerprint
from runs_app.endpoint.cassette_replay import upstream_provider
from runs_app.models import TraceLog
from tests.conftest import LiveServer, make_client, running_server


def _random(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


ANTHROPIC = "sk-ant-api03-" + _random(40)
OPENAI = "sk-proj-" + _random(48)
GOOGLE = "AIza" + _random(35)
AWS = "AKIA" + _random(16, string.ascii_uppercase + string.digits)
KEYS = {"anthropic": ANTHROPIC, "openai": OPENAI, "google": GOOGLE, "aws": AWS}

SYSTEM = f"You are careful. Never print {ANTHROPIC} or {OPENAI}."
USER = f"Call the lookup with {GOOGLE} and {AWS}, then say sk words."
ARGS = {"anthropic": ANTHROPIC, "aws": AWS, "nested": [{"openai": OPENAI}]}
RESULT = f"lookup said {GOOGLE}"
TOOL = f"Looks a key up ({OPENAI})"
SCHEMA = {"type": "object", "properties": {"key": {"type": "string", "description": ANTHROPIC}}}


def _openai_chat(model: str | None) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": json.dumps(ARGS)}}
    body: dict[str, Any] = {
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": RESULT},
            {"role": "user", "content": USER},
        ],
        "tools": [{"type": "function", "function": {"name": "lookup", "description": TOOL, "parameters": SCHEMA}}],
        "user": ANTHROPIC,
    }
    return {"model": model, **body} if model else body


def _anthropic(extra: dict[str, Any]) -> dict[str, Any]:
    return {
        **extra,
        "max_tokens": 64,
        "system": SYSTEM,
        "messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": ARGS}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": RESULT},
                    {"type": "text", "text": USER},
                ],
            },
        ],
        "tools": [{"name": "lookup", "description": TOOL, "input_schema": SCHEMA}],
        "metadata": {"user_id": OPENAI},
    }


def _gemini() -> dict[str, Any]:
    return {
        "systemInstruction": {"parts": [{"text": SYSTEM}]},
        "contents": [
            {"role": "user", "parts": [{"text": "first"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "lookup", "args": ARGS}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "lookup", "response": {"result": RESULT}}}, {"text": USER}],
            },
        ],
        "tools": [{"functionDeclarations": [{"name": "lookup", "description": TOOL, "parameters": SCHEMA}]}],
    }


def _responses() -> dict[str, Any]:
    return {
        "model": "gpt-sweep",
        "instructions": SYSTEM,
        "input": [
            {"role": "user", "content": "first"},
            {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": json.dumps(ARGS)},
            {"type": "function_call_output", "call_id": "call_1", "output": RESULT},
            {"role": "user", "content": USER},
        ],
        "tools": [{"type": "function", "name": "lookup", "description": TOOL, "parameters": SCHEMA}],
        "store": True,
    }


def _completions(model: str | None) -> dict[str, Any]:
    body = {"prompt": f"{SYSTEM}\n{json.dumps(ARGS)}\n{RESULT}\n{USER}", "user": ANTHROPIC, "max_tokens": 64}
    return {"model": model, **body} if model else body


def _cohere() -> dict[str, Any]:
    body = _openai_chat("command-r-sweep")
    body.pop("user")
    return body


def _bedrock() -> dict[str, Any]:
    return {
        "system": [{"text": SYSTEM}],
        "messages": [
            {"role": "user", "content": [{"text": "first"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "lookup", "input": ARGS}}]},
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "t1", "content": [{"text": RESULT}]}},
                    {"text": USER},
                ],
            },
        ],
        "toolConfig": {
            "tools": [{"toolSpec": {"name": "lookup", "description": TOOL, "inputSchema": {"json": SCHEMA}}}]
        },
    }


def _harness() -> dict[str, Any]:
    call = {"type": "tool-call", "toolCallId": "call_1", "toolName": "lookup", "input": ARGS}
    result = {
        "type": "tool-result",
        "toolCallId": "call_1",
        "toolName": "lookup",
        "output": {"type": "text", "value": RESULT},
    }
    return {
        "model": "harness-sweep",
        "prompt": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": [{"type": "text", "text": "first"}]},
            {"role": "assistant", "content": [call]},
            {"role": "tool", "content": [result]},
            {"role": "user", "content": [{"type": "text", "text": USER}]},
        ],
        "tools": [{"name": "lookup", "description": TOOL, "input_schema": SCHEMA}],
    }


def _ollama() -> dict[str, Any]:
    return {
        "model": "llama-sweep",
        "stream": False,  # Ollama streams unless told not to
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "lookup", "arguments": ARGS}}]},
            {"role": "tool", "content": RESULT, "tool_name": "lookup"},
            {"role": "user", "content": USER},
        ],
        "tools": [{"type": "function", "function": {"name": "lookup", "description": TOOL, "parameters": SCHEMA}}],
    }


# A body per protocol, each carrying the keys in every field it has. A protocol added to the route table without
# one here fails the sweep (test_every_served_protocol_has_a_body): add its body.
BODIES: dict[str, Callable[[], dict[str, Any]]] = {
    "openai": lambda: _openai_chat("gpt-sweep"),
    "azure": lambda: _openai_chat(None),
    "anthropic": lambda: _anthropic({"model": "claude-sweep"}),
    "vertex_claude": lambda: _anthropic({"anthropic_version": "vertex-2023-10-16"}),
    "bedrock_claude": lambda: _anthropic({"anthropic_version": "bedrock-2023-05-31"}),
    "responses": _responses,
    "completions": lambda: _completions("gpt-sweep-instruct"),
    "azure_completions": lambda: _completions(None),
    "gemini": _gemini,
    "vertex": _gemini,
    "cohere": _cohere,
    "bedrock": _bedrock,
    "harness": _harness,
    "ollama": _ollama,
}
# How a protocol whose path says it asks for a stream (the rest say it with "stream": true in the body).
STREAMED_PATHS = {
    ":generateContent": ":streamGenerateContent",
    ":rawPredict": ":streamRawPredict",
    "/converse": "/converse-stream",
    "/invoke": "/invoke-with-response-stream",
}
QUERY = (
    f"key={GOOGLE}&api-key={OPENAI}&api_key={ANTHROPIC}&access_token={OPENAI}&token={ANTHROPIC}&sig={GOOGLE}"
    f"&X-Amz-Signature={AWS}&X-Amz-Credential={AWS}%2F20261124%2Fus-east-1%2Fbedrock%2Faws4_request"
    f"&X-Amz-Security-Token={ANTHROPIC}&api-version=2024-10-21"
)


def headers(run: str) -> dict[str, str]:
    return {
        "authorization": f"Bearer {OPENAI}",
        "x-api-key": ANTHROPIC,
        "api-key": OPENAI,
        "x-goog-api-key": GOOGLE,
        "x-amz-security-token": AWS,
        "cookie": f"session={ANTHROPIC}",
        "user-agent": f"sweep/1.0 ({AWS})",
        "x-custom-trace": f"{GOOGLE};{ANTHROPIC}",
        "anthropic-version": "2023-06-01",
        "x-harness-run": run,
    }


def request_of(module: Any, stream: bool) -> tuple[str, dict[str, Any]]:
    """The path (placeholders filled, the query's keys after it) and body of one request on a protocol."""
    path = module.PATH
    for name in ("{model}", "{deployment}", "{modelId}", "{project}", "{location}"):
        path = path.replace(name, f"sweep-{name.strip('{}').lower()}")
    body = BODIES[module.PROTOCOL]()
    if stream:
        streamed = next((path.replace(a, b) for a, b in STREAMED_PATHS.items() if path.endswith(a)), None)
        if streamed is not None:
            path = streamed + ("?alt=sse&" if ":stream" in streamed else "?")
        else:
            body["stream"] = True
            path += "?"
    else:
        path += "?"
    return path + QUERY, body


def send(server: LiveServer, path: str, body: dict[str, Any], extra: dict[str, str]) -> tuple[int, bytes]:
    with (
        httpx2.Client(base_url=server.url, timeout=30) as client,
        client.stream("POST", path, json=body, headers=extra) as response,
    ):
        return response.status_code, b"".join(response.iter_raw())


@pytest.fixture(scope="module")
def recording_server(harness_server: LiveServer, tmp_path_factory: Any) -> Iterator[LiveServer]:
    """Recording every protocol's requests with the harness itself as each real provider."""
    upstreams = {
        f"HARNESS_UPSTREAM_{upstream_provider(m.PROTOCOL).upper()}_URL": harness_server.url for m in wire.WIRES
    }
    with running_server(tmp_path_factory.mktemp("sweep"), {"HARNESS_PACING": "off", **upstreams}) as server:
        yield server


def found_in(text: str) -> list[str]:
    return [name for name, key in KEYS.items() if key in text]


def database_leaks() -> list[str]:
    """Every row of every table, every column, searched for the raw keys (bytes decoded)."""
    leaks = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                values = [
                    bytes(v).decode("utf-8", "replace") if isinstance(v, bytes | memoryview) else str(v) for v in row
                ]
                leaks += [f"{table}: {name}" for name in found_in(" ".join(values))]
    return leaks


def test_every_served_protocol_has_a_body() -> None:
    assert {m.PROTOCOL for m in wire.WIRES} <= BODIES.keys()


def test_no_key_written_into_any_request_on_any_protocol_stays_anywhere(
    harness_server: LiveServer, recording_server: LiveServer, transactional_db: None, admin_client: Any
) -> None:
    runs: dict[str, str] = {}
    echoed = set()
    for module in wire.WIRES:
        runs[module.PROTOCOL] = run = str(uuid.uuid4())
        for stream in (False, True):
            path, body = request_of(module, stream)
            status, answer = send(harness_server, path, body, headers(run))
            assert status == 200, (module.PROTOCOL, stream, answer[:500])
            echoed.update(found_in(answer.decode("utf-8", "replace")))
        record = {**headers(str(uuid.uuid4())), "x-harness-record": f"sweep_{module.PROTOCOL}_{uuid.uuid4().hex[:6]}"}
        path, body = request_of(module, stream=False)
        status, answer = send(recording_server, path, body, record)
        assert status == 200, (module.PROTOCOL, "recorded", answer[:500])
    assert echoed  # the keys went through: the lorem answers echo them to the client, which sent them

    # Uploads that carry the keys: refused (trace log, cassette) without repeating them, or stored redacted.
    api = make_client()
    ci_run = api.post("/runs", json={"name": "sweep"}).json()["id"]
    log = {"turn_number": 1, "file_path": f"logs/{GOOGLE}.log", "content": f"POST /v1?key={GOOGLE}\n{ANTHROPIC}"}
    refused = api.post(f"/runs/{ci_run}/trace-logs", json=log)
    assert refused.status_code == 422 and not found_in(refused.content.decode())
    path, body = request_of(wire.WIRES[0], stream=False)
    cassette = {
        "version": "1",
        "interactions": [
            {
                "request": {"method": "POST", "url": f"https://api.example{path}", "headers": [], "body": body},
                "response": {"status": 200, "headers": [], "body_chunks": [f"data: {OPENAI}\n\n"]},
            }
        ],
    }
    refused = api.post(
        "/cassettes", data=json.dumps(cassette).encode(), query_params={"name": "sweep_openai_leaky.json"},
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert refused.status_code == 422 and not found_in(refused.content.decode())
    junit = f'<testsuite name="s"><testcase name="{OPENAI}"><failure message="{ANTHROPIC}">{GOOGLE}</failure>'
    junit += f'<properties><property name="k" value="{AWS}"/></properties></testcase></testsuite>'
    stored = api.post(f"/runs/{ci_run}/junit", data=junit.encode(), headers={"Content-Type": "application/xml"})
    assert stored.status_code == 201
    call = {"protocol": "openai", "model": "m", "path": f"/v1/chat/completions?key={GOOGLE}",
            "body": _openai_chat("m"), "timestamp": "2026-11-24T00:00:00Z", "notes": AWS}  # fmt: skip
    assert api.post(f"/runs/{ci_run}/calls", json={"calls": [call]}).status_code == 201

    # Searched: the database, every table and column (the cassette store among them: recorded cassettes' rows).
    assert database_leaks() == []
    planted = TraceLog.objects.create(run_id=ci_run, turn_number=9, file_path="planted", content=AWS)
    assert database_leaks() == ["runs_app_tracelog: aws"]  # the search finds a key where one is
    planted.delete()
    assert "sweep_openai" in " ".join(str(n) for n in _cassette_names())  # the recordings were stored
    # The logs of both servers.
    assert found_in(harness_server.output()) == [] and found_in(recording_server.output()) == []
    # Every page and API answer of those runs.
    reader = make_client("read")
    pages, api_paths = ["/runs/", "/", f"/runs/{ci_run}/"], ["/runs", "/cassettes", f"/runs/{ci_run}"]
    for run in runs.values():  # (the CI run's uploaded calls serve no response a cassette could export)
        pages += [f"/runs/{run}/", f"/runs/{run}/cassette.json"]
        api_paths += [f"/runs/{run}", f"/runs/{run}/stream-summary", f"/runs/{run}/cassette"]
    for cassette_id in _cassette_ids():
        api_paths += [f"/cassettes/{cassette_id}", f"/cassettes/{cassette_id}/stream-summary"]
    answers = [(url, admin_client.get(url)) for url in pages] + [(url, reader.get(url)) for url in api_paths]
    for url, answer in answers:
        assert answer.status_code == 200, (url, answer.content[:300])
        assert found_in(answer.content.decode("utf-8", "replace")) == [], (url, answer.content[:300])
    # What is shown instead tells the keys apart: the fingerprint the run records for the request's key.
    page = admin_client.get(f"/runs/{runs['openai']}/").content.decode()
    assert fingerprint(OPENAI) in page


def _cassette_names() -> list[str]:
    from runs_app.models import Cassette

    return list(Cassette.objects.values_list("name", flat=True))


def _cassette_ids() -> list[int]:
    from runs_app.models import Cassette

    return list(Cassette.objects.filter(name__startswith="sweep_").values_list("id", flat=True))
