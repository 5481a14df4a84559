"""The run page through the test client: every event kind, each protocol's request read, the scenario's
expectations beside what came, retries and dropped streams."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.utils import timezone

from runs_app.models import Run
from tests.conftest import make_scenario
from tests.live_views_helpers import make_events, make_played_run, make_request, make_response

pytestmark = pytest.mark.django_db


# -- the run page ------------------------------------------------------------------------------------------------


def make_run_with_every_event_kind() -> Run:
    run = make_played_run(
        status="failed",
        status_reason="Expected temperature 0.2 but received 0.9",
        finished_at=timezone.now(),
        turns_served=[1, 2],
    )
    run.finished_at = run.started_at + dt.timedelta(milliseconds=2500)
    run.save()
    make_events(
        run,
        make_request(1, tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]),
        ("match", 1, {"mode": "scenario", "scenario": "weather", "turn": 1, "notes": ["chosen by first message"]}),
        ("validation", 1, {"ok": True, "problem": ""}),
        (
            "failure_injected",
            1,
            {
                "status": "rate_limit",
                "message": "Slow down",
                "attempt": 1,
                "of": 1,
                "retryable": True,
                "retry_after_ms": 200,
            },
        ),
        ("response", 1, {"ttfb_ms": 1.0, "duration_ms": 2.0, "status": 429, "failure": "rate_limit", "stream": True}),
        ("client_disconnected", 1, {"after_ms": 3.5}),
        make_request(1, tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]),
        ("match", 1, {"mode": "scenario", "scenario": "weather", "turn": 1, "notes": []}),
        ("validation", 1, {"ok": True, "problem": ""}),
        make_response(
            1,
            text="",
            finish_reason="tool_calls",
            reasoning="The user wants the weather.",
            tool_calls=[{"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}],
        ),
        make_request(2, temperature=0.9),
        ("match", 2, {"mode": "scenario", "scenario": "weather", "turn": 2, "notes": []}),
        ("validation", 2, {"ok": False, "problem": "Expected temperature 0.2 but received 0.9"}),
        make_response(2, text="Scenario validation failed.", finish_reason="tool_calls"),
        make_request(3),
        ("rejected", 3, {"status": 400, "message": "thinking block signature does not match"}),
        step_ms=300,
    )
    return run


def test_it_shows_a_finished_run_from_the_database_with_every_event_kind(admin_client):
    run = make_run_with_every_event_kind()
    response = admin_client.get(f"/runs/{run.id}/")
    html = response.content.decode()
    assert response.status_code == 200
    # The header.
    header = html[html.index('id="run-header"') : html.index('id="run-resilience"')]
    for fact in (
        "weather",
        "failed",
        "2.5 s",
        "Turns served</dt><dd>2<",
        "openai",
        "endpoint",
        "Expected temperature 0.2",
    ):
        assert fact in header
    # One card per turn, each with its parts.
    for turn in (1, 2, 3):
        for part in ("head", "request", "live", "response", "expectations", "events"):
            assert f'id="turn-{turn}-{part}"' in html
    # Every kind of event is on the timeline, the bad ones standing out with their reason.
    for kind in ("request", "match", "validation", "failure_injected", "response", "rejected", "client_disconnected"):
        assert f"kind-{kind}" in html
    assert 'class="event tone-bad kind-validation"' in html
    assert "Validation failed: Expected temperature 0.2 but received 0.9" in html
    assert 'class="event tone-warn kind-failure_injected"' in html
    assert "rate_limit (failure 1 of 1): Slow down · Retry-After 200 ms" in html
    assert 'class="event tone-bad kind-rejected"' in html
    assert "HTTP 400: thinking block signature does not match" in html
    assert "after 4 ms" in html  # the disconnect
    # The recorded answer in the stream viewer: reasoning, then the tool call with its arguments.
    stream = html[html.index('id="turn-1-live"') : html.index('id="turn-1-response"')]
    assert "The user wants the weather." in stream and "get_weather" in stream and "Paris" in stream
    assert "2 attempts" in html
    # The socket starts after the last event the page shows.
    assert f'ws-connect="/ws/runs/{run.id}/?after=16"' in html


def test_it_shows_the_request_and_the_response_side_by_side_with_collapsible_json(admin_client):
    run = make_played_run()
    messages = [
        {"role": "system", "content": "You are a weather assistant"},
        {"role": "user", "content": "weather"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q":1}'}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    make_events(run, make_request(2, messages, temperature=0.2, top_p=0.5), make_response(2))
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    request = html[html.index('id="turn-2-request"') : html.index('id="turn-2-live"')]
    for shown in ("temperature", "0.2", "top_p", "gpt-test", "You are a weather assistant", "lookup", "sunny", "c1"):
        assert shown in request
    assert "<details><summary>Request body (JSON)</summary>" in request
    assert "[REDACTED]" in request
    response = html[html.index('id="turn-2-response"') : html.index('id="turn-2-expectations"')]
    assert "Finish</dt><dd>stop" in response and "total_tokens" in response
    assert "<details><summary>Response summary (JSON)</summary>" in response


def test_it_reads_a_responses_api_request(admin_client):
    run = make_played_run(protocol="responses")
    body = {
        "model": "gpt-test",
        "instructions": "You are a weather assistant",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "weather"}]},
            {"type": "function_call", "call_id": "call_9", "name": "lookup", "arguments": '{"city":"Paris"}'},
            {"type": "function_call_output", "call_id": "call_9", "output": "sunny"},
        ],
        "tools": [{"type": "function", "name": "lookup", "description": "Look the weather up", "parameters": {}}],
        "store": True,
    }
    data = {"method": "POST", "path": "/v1/responses", "headers": {}, "body": body}
    make_events(run, ("request", 2, data))
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    request = html[html.index('id="turn-2-request"') : html.index('id="turn-2-live"')]
    for shown in (
        "You are a weather assistant",
        "weather",
        "lookup",
        "Paris",
        "sunny",
        "call_9",
        "Look the weather up",
    ):
        assert shown in request
    assert "store" in request


def test_it_reads_a_gemini_request(admin_client):
    run = make_played_run(protocol="gemini")
    body = {
        "systemInstruction": {"parts": [{"text": "You are a weather assistant"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "weather"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Thinking it over", "thought": True},
                    {"functionCall": {"name": "lookup", "args": {"city": "Paris"}}},
                ],
            },
            {"role": "user", "parts": [{"functionResponse": {"name": "lookup", "response": {"sky": "sunny"}}}]},
        ],
        "tools": [{"functionDeclarations": [{"name": "lookup", "description": "Look the weather up"}]}],
        "generationConfig": {"temperature": 0.2},
    }
    path = "/v1/models/gemini-2.5-flash:generateContent"
    make_events(run, ("request", 2, {"method": "POST", "path": path, "headers": {}, "body": body}))
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    request = html[html.index('id="turn-2-request"') : html.index('id="turn-2-live"')]
    for shown in ("You are a weather assistant", "Thinking it over", "Paris", "sunny", "Look the weather up"):
        assert shown in request
    assert "generationConfig" in request


def test_it_reads_a_legacy_completions_prompt(admin_client):
    run = make_played_run(protocol="completions")
    body = {"model": "gpt-3.5-turbo-instruct", "prompt": "Say this is a test", "max_tokens": 7}
    make_events(run, ("request", 1, {"method": "POST", "path": "/v1/completions", "headers": {}, "body": body}))
    request = admin_client.get(f"/runs/{run.id}/").content.decode()
    assert "Say this is a test" in request and "max_tokens" in request


def test_it_reads_an_anthropic_request(admin_client):
    run = make_played_run(protocol="anthropic")
    body = {
        "model": "claude-test",
        "max_tokens": 256,
        "system": [{"type": "text", "text": "You are terse"}],
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Consider it", "signature": "sig"},
                    {"type": "tool_use", "id": "tu1", "name": "search", "input": {"q": "x"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "found"}]},
        ],
        "tools": [{"name": "search", "description": "Search the web", "input_schema": {"type": "object"}}],
    }
    data = {"method": "POST", "path": "/v1/messages", "headers": {}, "body": body}
    make_events(run, ("request", 2, data))
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    for shown in ("You are terse", "Consider it", "search", "found", "tu1", "Search the web", "max_tokens"):
        assert shown in html


def test_it_puts_the_scenario_expectations_beside_what_came(admin_client):
    make_scenario(
        "strict",
        [
            {
                "turn": 1,
                "expected_tools": ["get_weather", "agent__final_report"],
                "expected_temperature": 0.2,
                "expected_top_p": 0.9,
                "expected_reasoning": "enabled",
                "response": {"kind": "text", "assistant_text": "ok"},
            }
        ],
        system_prompt_must_include=["You are a weather assistant", "Answer in French"],
    )
    run = make_played_run(scenario_id="strict", started_at=timezone.now() + dt.timedelta(seconds=1))
    messages = [{"role": "system", "content": "You are a weather assistant."}, {"role": "user", "content": "strict"}]
    tools = [{"type": "function", "function": {"name": "get_time", "parameters": {}}}]
    make_events(run, make_request(1, messages, tools=tools, temperature=0.7, top_p=0.9))
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    table = html[html.index('id="turn-1-expectations"') : html.index('id="turn-1-events"')]
    assert "has changed since" not in table
    assert '<tr class="ok"><th scope="row">System prompt includes</th><td>You are a weather assistant</td>' in table
    assert '<tr class="bad"><th scope="row">System prompt includes</th><td>Answer in French</td>' in table
    assert "get_weather, agent__final_report" in table and "get_time — missing get_weather" in table
    assert (
        '<tr class="bad"><th scope="row">temperature</th><td>0.2</td><td><span aria-hidden="true">✖</span> 0.7' in table
    )
    assert '<tr class="ok"><th scope="row">top_p</th><td>0.9</td><td><span aria-hidden="true">✓</span> 0.9' in table
    assert (
        '<tr class="bad"><th scope="row">Reasoning</th><td>enabled</td><td><span aria-hidden="true">✖</span> disabled'
        in table
    )


def test_it_says_when_the_scenario_changed_since_the_run(admin_client):
    make_scenario(
        "edited", [{"turn": 1, "expected_temperature": 0.5, "response": {"kind": "text", "assistant_text": "a"}}]
    )
    run = make_played_run(scenario_id="edited", started_at=timezone.now() - dt.timedelta(minutes=5))
    make_events(run, make_request(1, temperature=0.5), make_request(2))
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    assert "Scenario edited has changed since this run" in html
    assert "Scenario edited defines no turn 2 now." in html


def test_it_says_when_the_scenario_no_longer_exists(admin_client):
    run = make_played_run(scenario_id="deleted-one")
    make_events(run, make_request(1))
    assert b"Scenario deleted-one no longer exists" in admin_client.get(f"/runs/{run.id}/").content


def test_it_escapes_markup_in_what_was_recorded(admin_client):
    run = make_played_run(scenario_id="<b>scenario</b>", status_reason="<img src=x onerror=alert(2)>", status="failed")
    hostile = "<script>alert(1)</script>"
    make_events(
        run,
        make_request(1, [{"role": "user", "content": hostile}], tools=[{"function": {"name": hostile}}]),
        make_response(1, text=hostile, tool_calls=[{"id": hostile, "name": hostile, "arguments": hostile}]),
        ("rejected", 1, {"status": 400, "message": hostile}),
    )
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    assert "<script>alert(1)" not in html
    assert "<img src=x" not in html and "<b>scenario" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    listing = admin_client.get("/runs/").content.decode()
    assert "<b>scenario" not in listing and "&lt;b&gt;scenario&lt;/b&gt;" in listing


def test_it_404s_an_unknown_run_unless_asked_to_wait_for_it(admin_client):
    run_id = uuid.uuid4()
    assert admin_client.get(f"/runs/{run_id}/").status_code == 404
    response = admin_client.get(f"/runs/{run_id}/?live=1")
    html = response.content.decode()
    assert response.status_code == 200
    assert f"X-Harness-Run: {run_id}" in html
    assert f'ws-connect="/ws/runs/{run_id}/?after=0"' in html
    assert 'id="timeline"' in html and 'id="run-resilience"' in html


def test_it_flags_a_client_that_went_on_after_a_dropped_stream(admin_client):
    run = make_played_run(scenario_id="flaky", turns_served=[2])
    make_events(
        run,
        make_request(1),
        ("failure_injected", 1, {"status": "network_error", "message": "cut", "attempt": 1, "of": 1}),
        ("response", 1, {"ttfb_ms": 1, "duration_ms": 5, "status": None, "failure": "network_error", "dropped": True}),
        make_request(2),
        make_response(2),
    )
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    resilience = html[html.index('id="run-resilience"') : html.index("<h2>Timeline</h2>")]
    assert "resilience flagged" in resilience
    assert (
        '<p class="alert bad">⚠ Turn 1, failure 1 of 1, a dropped connection (network_error): the client went on'
        in (resilience)
    )
    assert "went on to a later turn (turn 2)" in resilience
    assert "Connection dropped mid-response (network_error)" in html
    assert "the connection was dropped mid-response" in html


def test_it_shows_retry_waits_against_the_advice(admin_client):
    run = make_played_run(scenario_id="limited")
    failure = {"status": "rate_limit", "message": "slow", "attempt": 1, "of": 1, "retryable": True}
    make_events(
        run,
        make_request(1),
        ("failure_injected", 1, {**failure, "retry_after_ms": 1000}),
        ("response", 1, {"ttfb_ms": 1, "duration_ms": 1, "status": 429, "failure": "rate_limit", "dropped": False}),
        make_request(1),
        make_response(1),
        step_ms=100,
    )
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    assert '<span class="verdict verdict-bad">too early</span>' in html
    assert "The client retried 1 of 1 failure before the advised Retry-After." in html


def test_it_shows_a_ci_run_without_events(admin_client):
    run = make_played_run(
        source="ci",
        scenario_id="",
        name="nightly",
        commit="0123456789abcdef",
        branch="main",
        build_url="https://ci.example/builds/7",
        finished_at=timezone.now(),
    )
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    header = html[html.index('id="run-header"') : html.index('id="run-resilience"')]
    assert "<h1>nightly" in header and "main" in header and 'href="https://ci.example/builds/7"' in header
    assert "No failures were injected on this run" in html
    assert 'id="turn-' not in html


def test_it_shows_a_request_of_odd_shapes_without_failing(admin_client):
    run = make_played_run()
    messages = [
        {"role": "assistant", "content": None, "tool_calls": 5},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:"}}, "loose string"]},
    ]
    make_events(run, make_request(1, messages, tools="not a list"))
    response = admin_client.get(f"/runs/{run.id}/")
    assert response.status_code == 200
    assert b"image_url" in response.content


def test_it_describes_an_injected_broken_body_on_the_turn(admin_client):
    run = make_played_run()
    failure = {"status": "invalid_utf8", "attempt": 1, "of": 1, "message": "m", "retryable": True}
    make_events(
        run,
        make_request(1),
        ("failure_injected", 1, failure),
        ("response", 1, {"status": 200, "failure": "invalid_utf8", "stream": True, "dropped": False}),
    )
    page = admin_client.get(f"/runs/{run.id}/").content.decode()
    assert "Injected invalid_utf8:" in page
    assert "an answer with bytes that are not UTF-8 (invalid_utf8), HTTP 200" in page
