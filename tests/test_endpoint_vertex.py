"""Vertex AI through its official clients: google-genai with ``vertexai=True`` (Gemini at
``/v1beta1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent``) and ``anthropic.AnthropicVertex``
(Claude at ``/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict``), each given an access token
and no Google credentials: scenarios, tool turns, failures in each publisher's error format, runs and keys."""

from __future__ import annotations

import anthropic
import httpx2
import pytest
from google import genai
from google.genai import errors, types
from google.oauth2.credentials import Credentials

from harnessweb.engine import keys
from tests.client_runs import (
    ANSWER,
    STREAMED,
    TEXT,
    paths,
    played,
    stream_scenario,
    streaming,
    text_scenario,
    tools_scenario,
)
from tests.conftest import make_scenario, recorded_run, wait_for
from tests.test_endpoint_failure_kinds import CLIENT_TIMEOUT_S, TABLE, call, expected, failing

TOKEN = "ya29.vertex-test-token"
REQUIRE = {"X-Harness-Require-Key": "1"}
GEMINI = "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"
CLAUDE = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict"


def gemini_client(url: str, headers: dict[str, str] | None = None) -> genai.Client:
    # An access token as credentials: google-genai sends it as the bearer token and looks for no Google account.
    return genai.Client(vertexai=True, project="p", location="us-central1", credentials=Credentials(token=TOKEN),
                        http_options=types.HttpOptions(base_url=url, headers=headers))  # fmt: skip


def claude_client(url: str, max_retries: int = 0, **options) -> anthropic.AnthropicVertex:
    # Vertex's own base URL ends in /v1 (https://{region}-aiplatform.googleapis.com/v1): so does the harness's.
    return anthropic.AnthropicVertex(region="us-east5", project_id="p", access_token=TOKEN, base_url=f"{url}/v1",
                                     max_retries=max_retries, **options)  # fmt: skip


def recorded_requests(scenario: str, count: int) -> list[dict]:
    """The request events of a scenario's runs, in order, once ``count`` are recorded."""
    from runs_app.models import RunEvent

    def ready() -> list[dict] | None:
        found = RunEvent.objects.filter(run__scenario_id=scenario, kind="request").order_by("id")
        return [event.data for event in found] if len(found) >= count else None

    return wait_for(ready, message=f"{count} requests of {scenario}")


@pytest.fixture
def vertex_gemini(harness_server, transactional_db) -> genai.Client:
    return gemini_client(harness_server.url)


@pytest.fixture
def vertex_claude(harness_server, transactional_db) -> anthropic.AnthropicVertex:
    return claude_client(harness_server.url)


def test_it_plays_a_scenario_for_gemini_on_vertex_plain_and_streamed(vertex_gemini) -> None:
    from runs_app.models import Run

    make_scenario("vertex-hello", [{"turn": 1, "response": {"kind": "text", "assistant_text": STREAMED}}])
    response = vertex_gemini.models.generate_content(model="gemini-2.5-flash", contents="vertex-hello")
    assert response.text == STREAMED and response.model_version == "gemini-2.5-flash"
    chunks = list(vertex_gemini.models.generate_content_stream(model="gemini-2.5-flash", contents="vertex-hello"))
    assert len(chunks) > 1 and "".join(chunk.text for chunk in chunks) == STREAMED
    requests = recorded_requests("vertex-hello", 2)
    assert [request["path"] for request in requests] == [GEMINI, streaming(GEMINI)]
    assert {run.protocol for run in Run.objects.filter(scenario_id="vertex-hello")} == {"vertex"}
    assert requests[0]["key"] == {"place": "authorization", "fingerprint": keys.fingerprint(TOKEN)}
    assert requests[0]["headers"]["authorization"] != f"Bearer {TOKEN}" and TOKEN not in str(requests)


def test_it_plays_a_function_call_turn_through_the_clients_own_tool_loop(vertex_gemini) -> None:
    asked: list[str] = []

    def get_weather(city: str) -> dict[str, str]:
        """The weather in a city."""
        asked.append(city)
        return {"sky": "clear"}

    chat = vertex_gemini.chats.create(model="gemini-2.5-flash", config=types.GenerateContentConfig(tools=[get_weather]))
    answer = chat.send_message(tools_scenario("vertex-gemini"))
    assert answer.text == ANSWER and asked == ["Paris"]
    run = played("tools-vertex-gemini", [1, 2])
    assert run.protocol == "vertex" and paths(run) == {GEMINI}
    second = run.events.filter(kind="request").order_by("seq").last().data
    response = second["body"]["contents"][-1]["parts"][0]["functionResponse"]
    assert (response["name"], response["response"]) == ("get_weather", {"result": {"sky": "clear"}})


def test_it_fails_gemini_on_vertex_in_googles_format(vertex_gemini) -> None:
    make_scenario("vertex-limited", [{"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit",
                                      "failure_message": "Quota exceeded for aiplatform.googleapis.com.",
                                      "response": {"kind": "text", "assistant_text": "later"}}])  # fmt: skip
    with pytest.raises(errors.ClientError) as caught:
        vertex_gemini.models.generate_content(model="gemini-2.5-flash", contents="vertex-limited")
    assert (caught.value.code, caught.value.status) == (429, "RESOURCE_EXHAUSTED")
    assert caught.value.message == "Quota exceeded for aiplatform.googleapis.com."
    assert vertex_gemini.models.generate_content(model="gemini-2.5-flash", contents="vertex-limited").text == "later"
    with pytest.raises(errors.ClientError) as unserved:  # Vertex's embeddings (:predict) are not served
        vertex_gemini.models.embed_content(model="text-embedding-005", contents="x")
    assert unserved.value.code == 404 and unserved.value.status == "NOT_FOUND"


def test_it_plays_text_and_a_stream_for_claude_on_vertex(vertex_claude) -> None:
    model = "claude-sonnet-4@20250514"
    question = [{"role": "user", "content": text_scenario("vertex-claude")}]
    text = vertex_claude.messages.create(model=model, max_tokens=256, messages=question)
    assert (text.content[0].text, text.model) == (TEXT, model)
    question = [{"role": "user", "content": stream_scenario("vertex-claude")}]
    with vertex_claude.messages.stream(model=model, max_tokens=256, messages=question) as stream:
        pieces = list(stream.text_stream)
    assert len(pieces) > 1 and "".join(pieces) == STREAMED
    assert paths(played("text-vertex-claude", [1])) == {CLAUDE}
    assert paths(played("stream-vertex-claude", [1])) == {CLAUDE.replace(":rawPredict", ":streamRawPredict")}


def test_it_plays_a_tool_turn_for_claude_on_vertex_plain_then_streamed(vertex_claude) -> None:
    question = [{"role": "user", "content": tools_scenario("vertex-claude")}]
    tools = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    first = vertex_claude.messages.create(model="claude-sonnet-4@20250514", max_tokens=256, messages=question,
                                          tools=tools)  # fmt: skip
    [call] = [block for block in first.content if block.type == "tool_use"]
    assert (call.name, call.input, first.model) == ("get_weather", {"city": "Paris"}, "claude-sonnet-4@20250514")
    result = [{"type": "tool_result", "tool_use_id": call.id, "content": "clear"}]
    history = [*question, {"role": "assistant", "content": first.content}, {"role": "user", "content": result}]
    with vertex_claude.messages.stream(model="claude-sonnet-4@20250514", max_tokens=256, messages=history,
                                       tools=tools) as stream:  # fmt: skip
        assert "".join(stream.text_stream) == ANSWER
    assert stream.get_final_message().stop_reason == "end_turn"
    run = played("tools-vertex-claude", [1, 2])
    requests = run.events.filter(kind="request").order_by("seq")
    assert run.protocol == "vertex_claude"
    assert [event.data["path"] for event in requests] == [CLAUDE, CLAUDE.replace(":rawPredict", ":streamRawPredict")]
    assert vertex_claude.messages.count_tokens(model="claude-sonnet-4@20250514", messages=question).input_tokens == 5


def test_it_fails_claude_on_vertex_in_anthropics_format(harness_server, vertex_claude) -> None:
    make_scenario("vertex-overloaded", [{"turn": 1, "failures_before_success": 1, "failure_status": "overloaded",
                                         "response": {"kind": "text", "assistant_text": "back"}}])  # fmt: skip
    question = [{"role": "user", "content": "vertex-overloaded"}]
    with pytest.raises(anthropic.OverloadedError) as caught:
        vertex_claude.messages.create(model="claude-sonnet-4@20250514", max_tokens=64, messages=question)
    assert caught.value.status_code == 529 and caught.value.body["error"]["type"] == "overloaded_error"
    reply = vertex_claude.messages.create(model="claude-sonnet-4@20250514", max_tokens=64, messages=question)
    assert reply.content[0].text == "back"
    body = {"max_tokens": 9, "messages": question}  # no anthropic_version in the body
    refused = httpx2.post(f"{harness_server.url}{CLAUDE}", json=body, timeout=20)
    assert refused.status_code == 400 and refused.json()["error"] == {
        "type": "invalid_request_error",
        "message": "anthropic_version: Field required",
    }


@pytest.mark.parametrize("kind", sorted(TABLE))
def test_it_serves_each_failure_kind_to_the_vertex_clients_as_to_their_own(harness_server, transactional_db, kind):
    """The README's failure table holds for the Vertex clients: AnthropicVertex raises what anthropic does, google-genai
    with ``vertexai=True`` what it does with an API key, plain and streamed."""
    scenario = failing(kind, "vertex-fails")
    cases = [(sdk, stream) for sdk in ("anthropic", "google-genai") for stream in (False, True)]
    timeout = CLIENT_TIMEOUT_S.get(kind, 10.0)
    measured = {case: call(case[0], harness_server.url, scenario, case[1], timeout, vertex=True) for case in cases}
    assert measured == {case: expected(kind, *case) for case in cases}


def test_it_requires_vertexs_bearer_token_when_keys_must_arrive(harness_server, transactional_db) -> None:
    contents = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    refused = httpx2.post(f"{harness_server.url}{GEMINI}", json=contents, headers=REQUIRE, timeout=20)
    assert refused.status_code == 401 and refused.json()["error"]["status"] == "UNAUTHENTICATED"
    api_key = {**REQUIRE, "x-goog-api-key": "AIza-not-vertex"}  # Gemini's header: Vertex reads a token
    assert httpx2.post(f"{harness_server.url}{GEMINI}", json=contents, headers=api_key, timeout=20).status_code == 401
    body = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}
    claude = httpx2.post(f"{harness_server.url}{CLAUDE}", json=body, headers=REQUIRE, timeout=20)
    assert claude.status_code == 401 and claude.json()["error"]["type"] == "authentication_error"
    # The official clients send the token where Vertex reads it.
    assert (
        gemini_client(harness_server.url, headers=REQUIRE)
        .models.generate_content(model="gemini-2.5-flash", contents="hi")
        .text.endswith("hi")
    )
    reply = claude_client(harness_server.url, default_headers=REQUIRE).messages.create(
        model="claude-sonnet-4@20250514", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.content[0].text.endswith("hi")


def test_it_shows_a_vertex_run_and_how_the_client_retried_on_its_page(
    harness_server, transactional_db, admin_client
) -> None:
    make_scenario("vertex-retried", [{"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit",
                                      "failure_retry_after_ms": 200,
                                      "response": {"kind": "text", "assistant_text": "After the wait."}}])  # fmt: skip
    reply = claude_client(harness_server.url, max_retries=2).messages.create(
        model="claude-sonnet-4@20250514", max_tokens=64, messages=[{"role": "user", "content": "vertex-retried"}]
    )
    assert reply.content[0].text == "After the wait."
    from runs_app.models import Run

    run = wait_for(lambda: Run.objects.filter(scenario_id="vertex-retried").first(), message="the retried run")
    run = recorded_run(str(run.id), status="passed", events=7)
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    resilience = html[html.index('id="run-resilience"') : html.index("<h2>Timeline</h2>")]
    assert "vertex_claude" in html and "vertex-retried" in html and f"fingerprint {keys.fingerprint(TOKEN)}" in html
    assert '<tr class="outcome-ok">' in resilience and "rate_limit" in resilience and "then-ok" in resilience
    assert TOKEN not in html
    # Its responses made again and read back as the run's stream summaries: the 429, then the answer.
    from runs_app.ci.run_streams import run_summaries

    failed, served = [item["summary"] for item in run_summaries(run)["responses"]]
    assert (failed["protocol"], failed["error"]["type"], served["text"]) == (
        "vertex_claude",
        "rate_limit_error",
        "After the wait.",
    )
