"""A run's responses as StreamSummaries and as a VCR cassette (runs_app/ci/run_streams.py, runs_app/ci/streams.py):
runs played through the official SDKs against the real server, their summaries read back by the API, equal to what
the SDK read, and the exported cassette loading with the cassette model and summarising the same."""

from __future__ import annotations

import json
import uuid

import anthropic
import openai
import pytest
from django.test import Client

from harnessweb.engine.redaction import is_redacted, marker
from runs_app.ci.cassettes import CassetteFile, leaked_secrets
from runs_app.ci.recordings import cassette_summaries
from runs_app.models import Cassette
from tests.conftest import make_client, make_run, make_scenario, recorded_run

TOOL_TURNS = [
    {"turn": 1, "response": {"kind": "tool-call", "assistant_text": "Let me look.",
                             "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Paris"}}],
                             "reasoning": [{"text": "The user wants the weather."}]}},
    {"turn": 2, "response": {"kind": "text", "assistant_text": "It is sunny in Paris."}},
]  # fmt: skip


def _summaries(run_id: str) -> list[dict]:
    got = make_client("read").get(f"/runs/{run_id}/stream-summary")
    assert got.status_code == 200, got.content
    return [item["summary"] for item in got.json()["responses"]]


def _exported(run_id: str) -> dict:
    got = make_client("read").get(f"/runs/{run_id}/cassette")
    assert got.status_code == 200, got.content
    assert got["Content-Disposition"] == f'attachment; filename="run_{run_id}.json"'
    return json.loads(got.content)


@pytest.mark.parametrize("stream", [True, False])
def test_it_summarises_an_openai_run_as_the_sdk_read_it(oai, stream):
    make_scenario("weather-run", TOOL_TURNS)
    messages = [{"role": "user", "content": "weather-run"}]
    raw = oai.chat.completions.with_raw_response.create(model="gpt-4o", messages=messages, stream=stream)
    if stream:
        text, calls = "", []
        for chunk in raw.parse():
            for choice in chunk.choices:
                text += choice.delta.content or ""
                calls += [c.function.name for c in choice.delta.tool_calls or [] if c.function.name]
    else:
        message = raw.parse().choices[0].message
        text, calls = message.content, [c.function.name for c in message.tool_calls]
    run_id = raw.headers["x-harness-run"]
    recorded_run(run_id, events=4)
    [summary] = _summaries(run_id)
    assert summary["text"] == text == "Let me look."
    assert [c["name"] for c in summary["tool_calls"]] == calls == ["get_weather"]
    assert json.loads(summary["tool_calls"][0]["arguments"]) == {"city": "Paris"}
    assert summary["thinking"] == "The user wants the weather."
    assert summary["stop_reason"] == "tool_use" and summary["has_start"] and summary["has_done"]
    assert summary["protocol"] == "openai" and summary["stream_error"] is None


def test_it_exports_an_anthropic_run_whose_cassette_summarises_as_the_run(claude, harness_server):
    make_scenario("weather-claude", TOOL_TURNS)
    run_id = str(uuid.uuid4())
    extra = {"extra_headers": {"X-Harness-Run": run_id}}
    first = [{"role": "user", "content": "weather-claude"}]
    with claude.messages.stream(model="claude-x", max_tokens=64, messages=first, **extra) as stream:
        message = stream.get_final_message()
    call = next(b for b in message.content if b.type == "tool_use")
    history = [
        *first,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}]},
    ]
    second = claude.messages.create(model="claude-x", max_tokens=64, messages=history, **extra)
    recorded_run(run_id, status="passed", events=8)

    summaries = _summaries(run_id)
    assert [s["text"] for s in summaries] == ["Let me look.", second.content[0].text]
    assert summaries[0]["tool_calls"][0]["name"] == "get_weather"
    assert summaries[0]["thinking_blocks"][0]["signature"]  # the engine's signature, as sent
    assert summaries[0]["timeline"][:2] == ["start", "thinking_start"]

    cassette = _exported(run_id)
    loaded = CassetteFile.model_validate(cassette)  # the cassette format's own model
    assert list(leaked_secrets(loaded)) == []
    headers = dict(cassette["interactions"][0]["request"]["headers"])
    secrets = {name: value for name, value in headers.items() if name in ("authorization", "x-api-key")}
    assert secrets and all(is_redacted(value) for value in secrets.values())
    assert [s.model_dump() for s in cassette_summaries(cassette)] == summaries
    assert cassette["interactions"][0]["request"]["url"].endswith("/v1/messages")


def test_it_summarises_an_injected_failure_and_exports_its_retry_headers(oai):
    make_scenario("limited-run", [{"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit",
                                   "failure_retry_after_ms": 10,
                                   "response": {"kind": "text", "assistant_text": "after the wait"}}])  # fmt: skip
    raw = oai.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "limited-run"}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    run_id = raw.headers["x-harness-run"]
    recorded_run(run_id, status="passed")
    failed, answered = _summaries(run_id)
    assert failed["status"] == 429 and failed["stream_error"].startswith("HTTP 429") and failed["timeline"] == []
    assert answered["text"] == text == "after the wait"
    cassette = _exported(run_id)
    error = cassette["interactions"][0]["response"]
    assert error["status"] == 429 and ["retry-after-ms", "10"] in error["headers"]
    assert [s.model_dump() for s in cassette_summaries(cassette)] == [failed, answered]


def test_it_summarises_the_responses_api_and_gemini_runs(harness_server, api_key, transactional_db):
    from google import genai
    from google.genai import types

    make_scenario("plain-run", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Plain answer here."}}])
    client = openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key=api_key)
    raw = client.responses.with_raw_response.create(model="m", input="plain-run")
    run_id = raw.headers["x-harness-run"]
    recorded_run(run_id, events=4)
    assert [s["text"] for s in _summaries(run_id)] == [raw.parse().output_text]

    run_id = str(uuid.uuid4())
    options = types.HttpOptions(base_url=harness_server.url, headers={"X-Harness-Run": run_id})
    gemini = genai.Client(api_key="test-any", http_options=options)
    text = "".join(chunk.text or "" for chunk in gemini.models.generate_content_stream(model="g", contents="plain-run"))
    recorded_run(run_id, events=4)
    [summary] = _summaries(run_id)
    assert summary["text"] == text == "Plain answer here." and summary["protocol"] == "gemini"


def test_it_exports_a_refused_request_in_the_protocol_error_format(claude):
    with pytest.raises(anthropic.NotFoundError) as caught:
        claude.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}],
                               extra_headers={"X-Harness-Scenario": "no-such-scenario"})  # fmt: skip
    run_id = caught.value.response.headers["x-harness-run"]
    recorded_run(run_id, status="errored")
    [summary] = _summaries(run_id)
    assert summary["status"] == 404 and "no-such-scenario" in summary["stream_error"]
    assert summary["error"]["type"] == "not_found_error"


@pytest.mark.django_db
def test_it_answers_404_for_an_unknown_run_or_one_with_nothing_to_export():
    client = make_client("read")
    missing = uuid.uuid4()
    assert client.get(f"/runs/{missing}/stream-summary").status_code == 404
    assert client.get(f"/runs/{missing}/cassette").status_code == 404
    run = make_run()
    assert client.get(f"/runs/{run.id}/stream-summary").json() == {
        "run_id": str(run.id),
        "responses": [],
        "skipped": [],
    }
    empty = client.get(f"/runs/{run.id}/cassette")
    assert empty.status_code == 404 and "no response" in empty.json()["detail"]
    assert client.get("/runs/not-a-uuid/cassette").status_code == 422


@pytest.mark.django_db
def test_it_skips_events_it_cannot_encode_again_and_says_why():
    run = make_run()
    run.events.create(seq=1, timestamp=run.started_at, kind="request", turn=1,
                      data={"method": "POST", "path": "/v1/nowhere", "headers": {}, "body": {}})  # fmt: skip
    run.events.create(seq=2, timestamp=run.started_at, kind="response", turn=1, data={"text": "x"})
    got = make_client("read").get(f"/runs/{run.id}/stream-summary").json()
    assert got["responses"] == [] and got["skipped"][0]["seq"] == 1 and "/v1/nowhere" in got["skipped"][0]["reason"]


@pytest.mark.django_db
def test_it_summarises_a_stored_cassette_per_interaction():
    content = json.loads((__import__("tests.conftest").conftest.VCR_DIR / "anthropic_rate_limit_429.json").read_text())
    row = Cassette.objects.create(name="anthropic_rate_limit_429.json", provider="anthropic", scenario="x",
                                  content=json.dumps(content).encode(), digest="d" * 64, size=1)  # fmt: skip
    got = make_client("read").get(f"/cassettes/{row.pk}/stream-summary")
    assert got.status_code == 200
    [summary] = got.json()["interactions"]
    assert summary["status"] == 429 and summary["error"]["type"] == "rate_limit_error"
    broken = Cassette.objects.create(name="b.json", provider="p", scenario="s", content=b"{", digest="e" * 64, size=1)
    bad = make_client("read").get(f"/cassettes/{broken.pk}/stream-summary")
    assert bad.status_code == 422 and "is not JSON" in bad.json()["detail"]
    assert make_client("read").get("/cassettes/999999/stream-summary").status_code == 404


def _served_run(text: str = "Hello <b>there</b>") -> object:
    run = make_run()
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    run.events.create(seq=1, timestamp=run.started_at, kind="request", turn=1,
                      data={"method": "POST", "path": "/v1/chat/completions",
                            "headers": {"authorization": "Bearer sk-secret"}, "body": body})  # fmt: skip
    usage = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    run.events.create(seq=2, timestamp=run.started_at, kind="response", turn=1,
                      data={"text": text, "reasoning": "", "tool_calls": [], "finish_reason": "stop", "usage": usage,
                            "chunks": 1, "status": 200, "stream": True})  # fmt: skip
    return run


@pytest.mark.django_db
def test_it_shows_the_summaries_and_the_export_link_on_the_run_page(staff_client):
    run = _served_run()
    page = staff_client.get(f"/runs/{run.id}/").content.decode()
    assert "Stream summaries" in page and "start → text_start → text_delta" in page
    assert "Hello &lt;b&gt;there&lt;/b&gt;" in page and "Hello <b>there" not in page
    assert f'href="/runs/{run.id}/cassette.json"' in page


@pytest.mark.django_db
def test_it_downloads_the_run_cassette_from_the_dashboard_with_secrets_redacted(staff_client):
    run = _served_run()
    got = staff_client.get(f"/runs/{run.id}/cassette.json")
    assert got.status_code == 200 and got["Content-Disposition"] == f'attachment; filename="run_{run.id}.json"'
    cassette = json.loads(got.content)
    assert cassette == json.loads(make_client("read").get(f"/runs/{run.id}/cassette").content)
    assert cassette["interactions"][0]["request"]["headers"] == [["authorization", f"Bearer {marker('sk-secret')}"]]
    assert "sk-secret" not in got.content.decode()
    assert [s.text for s in cassette_summaries(cassette)] == ["Hello <b>there</b>"]
    assert Client().get(f"/runs/{run.id}/cassette.json").status_code == 302  # log in first
    assert staff_client.get(f"/runs/{make_run().id}/cassette.json").status_code == 404
    assert staff_client.post(f"/runs/{run.id}/cassette.json").status_code == 405


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "status", "expected"),
    [
        ("network_error", None, {"has_done": False, "stream_error": None}),
        ("invalid_json_in_stream", 200, {"has_done": False}),
        ("invalid_response", 200, {"has_done": False}),
        ("overloaded", 529, {"status": 529, "has_done": False}),
        ("timeout", 504, {"status": 504}),
    ],
)
def test_it_makes_every_failure_kinds_bytes_again(kind, status, expected):
    run = make_run(protocol="anthropic")
    body = {"model": "m", "max_tokens": 8, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    run.events.create(seq=1, timestamp=run.started_at, kind="request", turn=1,
                      data={"method": "POST", "path": "/v1/messages", "headers": {}, "body": body})  # fmt: skip
    injected = {"status": kind, "message": "injected", "retryable": True, "retry_after_ms": None}
    run.events.create(seq=2, timestamp=run.started_at, kind="failure_injected", turn=1, data=injected)
    run.events.create(seq=3, timestamp=run.started_at, kind="response", turn=1,
                      data={"status": status, "failure": kind, "stream": True, "dropped": status is None})  # fmt: skip
    got = make_client("read").get(f"/runs/{run.id}/stream-summary").json()
    [item] = got["responses"]
    assert {key: item["summary"][key] for key in expected} == expected
    cassette = json.loads(make_client("read").get(f"/runs/{run.id}/cassette").content)
    CassetteFile.model_validate(cassette)
    assert [s.model_dump() for s in cassette_summaries(cassette)] == [item["summary"]]
