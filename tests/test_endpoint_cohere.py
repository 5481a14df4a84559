"""Cohere v2 through the official ``cohere`` SDK's ``ClientV2`` (and ``AsyncClientV2``) against the real server: a
scenario turn answered whole and streamed (its typed events parsed by the SDK), a tool call and its result in one run
(and on the run page), expectations, embeddings, models, a token limit, stop sequences and log-probabilities, a JSON
schema and a required tool, scripted failures as the SDK's exception classes (every failure kind, and the README's
table of them; the SDK's own retry in the resilience view), a key that must arrive, and the pytest plugin's
in-process ``harness.cohere_client()``."""

from __future__ import annotations

import base64
import json

import cohere
import httpx
import httpx2
import pytest

from harnessweb.engine.configured import FAILURE_KINDS
from tests.conftest import docs_text, make_scenario, recorded_run
from tests.test_endpoint_failure_kinds import ANSWER, CLIENT_TIMEOUT_S, failing

WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
TURNS = [
    {"turn": 1, "expected_tools": ["get_weather"],
     "response": {"kind": "tool-call", "assistant_text": "I will look up the weather in Paris.",
                  "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Paris"}}]}},
    {"turn": 2, "response": {"kind": "text", "assistant_text": "It is sunny in Paris."}},
]  # fmt: skip


@pytest.fixture
def co(harness_server, api_key, transactional_db) -> cohere.ClientV2:
    return cohere.ClientV2(api_key=api_key, base_url=harness_server.url, max_retries=0, timeout=20)


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def run_page(run_id: object) -> str:
    """The run's page as a staff member sees it."""
    from django.contrib.auth.models import User
    from django.test import Client

    staff = Client()
    member = User.objects.filter(username="cohere-staff").first()
    staff.force_login(member or User.objects.create_superuser("cohere-staff", "staff@example.com", "pw"))
    return staff.get(f"/runs/{run_id}/").content.decode()


def test_it_answers_a_scenario_turn_and_records_the_run(co, api_key):
    from runs_app.models import Run

    make_scenario("cohere-hello", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello from Cohere."}}])
    raw = co.with_raw_response.chat(model="command-a-03-2025", messages=user("cohere-hello"))
    response = raw.data
    assert response.message.content[0].text == "Hello from Cohere." and response.finish_reason == "COMPLETE"
    assert response.usage.billed_units.input_tokens == 3 and response.usage.tokens.output_tokens == 4
    assert raw.headers["x-debug-trace-id"].startswith("req_")
    run = recorded_run(raw.headers["x-harness-run"], status="passed", events=4)
    request = run.events.get(kind="request").data
    assert (run.protocol, run.scenario_id, request["path"]) == ("cohere", "cohere-hello", "/v2/chat")
    assert request["headers"]["authorization"] != f"Bearer {api_key}" and api_key not in str(request)
    assert Run.objects.filter(protocol="cohere").count() == 1


def test_it_streams_the_typed_events(co):
    text = "one two three four five six seven"
    make_scenario("cohere-stream", [{"turn": 1, "response": {"kind": "text", "assistant_text": text}}])
    events = list(co.chat_stream(model="command-a-03-2025", messages=user("cohere-stream")))
    assert [e.type for e in events] == [
        "message-start", "content-start", "content-delta", "content-delta", "content-end", "message-end"
    ]  # fmt: skip
    assert "".join(e.delta.message.content.text for e in events if e.type == "content-delta") == text
    end = events[-1]
    assert end.delta.finish_reason == "COMPLETE" and end.delta.usage.tokens.output_tokens == 7


def test_it_plays_a_tool_call_then_its_result_in_one_run(co):
    make_scenario("cohere-weather", TURNS)
    messages = [{"role": "system", "content": "You report the weather."}, *user("cohere-weather")]
    events = list(co.chat_stream(model="command-a-03-2025", messages=messages, tools=WEATHER))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["message-start", "tool-plan-delta"] and kinds[-2:] == ["tool-call-end", "message-end"]
    assert {"tool-call-start", "tool-call-delta"} <= set(kinds) and events[-1].delta.finish_reason == "TOOL_CALL"
    start = next(e for e in events if e.type == "tool-call-start").delta.message.tool_calls
    arguments = "".join(e.delta.message.tool_calls.function.arguments for e in events if e.type == "tool-call-delta")
    assert (start.function.name, arguments) == ("get_weather", '{"city":"Paris"}')
    plan = "".join(e.delta.message.tool_plan for e in events if e.type == "tool-plan-delta")
    assert plan == "I will look up the weather in Paris."

    messages += [
        {"role": "assistant", "tool_plan": plan, "tool_calls": [
            {"id": start.id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": start.id,
         "content": [{"type": "document", "document": {"data": {"sky": "clear", "temperature": 21}}}]},
    ]  # fmt: skip
    raw = co.with_raw_response.chat(model="command-a-03-2025", messages=messages, tools=WEATHER)
    assert raw.data.message.content[0].text == "It is sunny in Paris." and raw.data.finish_reason == "COMPLETE"
    run = recorded_run(raw.headers["x-harness-run"], status="passed", events=8)
    assert sorted(run.turns_served) == [1, 2] and run.events.filter(kind="request").count() == 2
    page = run_page(run.id)  # the request's tool plan, call and document result, and the answer
    assert all(text in page for text in ("tool plan", plan, "get_weather", "temperature", "It is sunny in Paris."))


def test_it_takes_a_tool_result_whose_document_data_is_a_json_string(co):
    # As Cohere's tool-use guide and haystack's CohereChatGenerator send it: {"data": json.dumps(result)}.
    expect = {"last_message_contains": '"temperature": 21', "tool_calls_answered": True}
    turns = [TURNS[0], {**TURNS[1], "expect": expect}]
    make_scenario("cohere-weather-string", turns)
    messages = user("cohere-weather-string")
    first = co.chat(model="command-a-03-2025", messages=messages, tools=WEATHER)
    [call] = first.message.tool_calls
    result = json.dumps({"sky": "clear", "temperature": 21})
    messages += [
        {"role": "assistant", "tool_plan": first.message.tool_plan, "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": "get_weather", "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": [{"type": "document", "document": {"data": result}}]},
    ]  # fmt: skip
    documents = [{"id": "almanac", "data": json.dumps({"title": "Paris in spring"})}]
    raw = co.with_raw_response.chat(model="command-a-03-2025", messages=messages, tools=WEATHER, documents=documents)
    assert raw.data.message.content[0].text == "It is sunny in Paris." and raw.data.finish_reason == "COMPLETE"
    run = recorded_run(raw.headers["x-harness-run"], status="passed", events=8)
    assert sorted(run.turns_served) == [1, 2]


def test_it_answers_a_tool_call_whole_with_its_plan(co):
    make_scenario("cohere-weather-whole", TURNS)
    first = co.chat(model="command-a-03-2025", messages=user("cohere-weather-whole"), tools=WEATHER)
    [call] = first.message.tool_calls
    assert (call.type, call.function.name, call.function.arguments) == ("function", "get_weather", '{"city":"Paris"}')
    assert call.id.startswith("get_weather_") and first.finish_reason == "TOOL_CALL" and first.message.content is None
    assert first.message.tool_plan == "I will look up the weather in Paris."


def test_it_checks_a_turns_expectations_against_what_cohere_sends(co):
    make_scenario("cohere-expects", [{"turn": 1, "expected_temperature": 0.2, "expected_top_p": 0.9,
                                      "expected_reasoning": "enabled",
                                      "response": {"kind": "text", "assistant_text": "ok"}}],
                  system_prompt_must_include=["weather"])  # fmt: skip
    messages = [{"role": "system", "content": "You report the weather."}, *user("cohere-expects")]
    good = co.chat(model="command-a-reasoning", messages=messages, temperature=0.2, p=0.9,
                   thinking={"type": "enabled", "token_budget": 64})  # fmt: skip
    assert good.message.content[-1].text == "ok"
    raw = co.with_raw_response.chat(model="command-a", messages=user("cohere-expects"), temperature=0.7, p=0.9)
    [report] = raw.data.message.tool_calls  # the failure final report, its text the tool plan
    assert raw.data.message.tool_plan == "Scenario validation failed."
    assert report.function.name == "agent__final_report" and "# Test Harness Error" in report.function.arguments
    run = recorded_run(raw.headers["x-harness-run"], status="failed")
    assert run.status_reason.startswith("System prompt missing: weather")


def test_it_honours_a_json_schema_and_a_required_tool_without_a_scenario(co):
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}},
              "required": ["city", "celsius"]}  # fmt: skip
    answer = co.chat(model="command-a-03-2025", messages=user("The weather, as JSON"),
                     response_format={"type": "json_object", "json_schema": schema})  # fmt: skip
    data = json.loads(answer.message.content[0].text)
    assert isinstance(data["city"], str) and isinstance(data["celsius"], int)
    forced = co.chat(model="command-a-03-2025", messages=user("Anything"), tools=WEATHER, tool_choice="REQUIRED")
    [call] = forced.message.tool_calls
    assert call.function.name == "get_weather" and "city" in json.loads(call.function.arguments)


async def test_it_streams_to_the_async_client(harness_server, api_key, transactional_db):
    from asgiref.sync import sync_to_async

    turns = [{"turn": 1, "response": {"kind": "text", "assistant_text": "Async hello."}}]
    await sync_to_async(make_scenario)("cohere-async", turns)
    client = cohere.AsyncClientV2(api_key=api_key, base_url=harness_server.url, max_retries=0, timeout=20)
    stream = client.chat_stream(model="command-a-03-2025", messages=user("cohere-async"))
    events = [event async for event in stream]
    text = "".join(e.delta.message.content.text for e in events if e.type == "content-delta")
    assert text == "Async hello." and events[-1].type == "message-end"
    vectors = await client.embed(model="embed-v4.0", texts=["x"], input_type="classification",
                                 embedding_types=["base64"], output_dimension=256)  # fmt: skip
    assert len(vectors.embeddings.base64) == 1 and len(base64.b64decode(vectors.embeddings.base64[0])) == 256 * 4


def test_it_embeds_texts_by_type(co):
    response = co.embed(model="embed-v4.0", texts=["alpha", "beta", "alpha"], input_type="search_document",
                        embedding_types=["float", "int8"])  # fmt: skip
    floats = response.embeddings.float_
    assert len(floats) == 3 and len(floats[0]) == 1536 and floats[0] == floats[2] != floats[1]
    assert len(response.embeddings.int8) == 3 and response.texts == ["alpha", "beta", "alpha"]
    assert response.meta.billed_units.input_tokens == 3


def test_it_lists_the_scenarios_as_models_in_coheres_shape(co):
    make_scenario("cohere-listed")
    assert "cohere-listed" in [m.name for m in co.models.list().models]
    assert co.models.get("command-a-03-2025").endpoints == ["chat", "embed"]


def test_it_cuts_the_answer_at_max_tokens(co):
    make_scenario("cohere-long", [{"turn": 1, "response": {"kind": "text", "assistant_text": "one two three four"}}])
    response = co.chat(model="command-a-03-2025", messages=user("cohere-long"), max_tokens=2)
    assert response.message.content[0].text == "one two" and response.finish_reason == "MAX_TOKENS"
    streamed = list(co.chat_stream(model="command-a-03-2025", messages=user("cohere-long"), stop_sequences=["three"]))
    assert streamed[-1].delta.finish_reason == "STOP_SEQUENCE"
    scored = co.chat(model="command-a-03-2025", messages=user("cohere-long"), logprobs=True)
    assert [item.text for item in scored.logprobs] == ["one", " two", " three", " four"]
    assert all(len(item.token_ids) == 1 and -2.5 < item.logprobs[0] <= 0 for item in scored.logprobs)


def test_it_sends_a_scripted_failure_as_coheres_error(co):
    make_scenario("cohere-limited", [{"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit",
                                      "failure_retry_after_ms": 1500,
                                      "response": {"kind": "text", "assistant_text": "After the wait."}}])  # fmt: skip
    with pytest.raises(cohere.TooManyRequestsError) as caught:
        co.chat(model="command-a-03-2025", messages=user("cohere-limited"))
    assert caught.value.status_code == 429 and caught.value.body["message"] == "Rate limit exceeded (simulated)"
    assert caught.value.headers["retry-after"] == "2" and caught.value.body["id"].startswith("req_")
    assert co.chat(model="command-a-03-2025", messages=user("cohere-limited")).message.content[0].text == (
        "After the wait."
    )


def test_its_own_retry_shows_on_the_run_page_and_in_the_resilience_view(harness_server, api_key, transactional_db):
    from runs_app.live.resilience import HONOURED, RETRIED, analyse

    make_scenario("cohere-retried", [{"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit",
                                      "failure_retry_after_ms": 200,
                                      "response": {"kind": "tool-call", "assistant_text": "Checking the sky.",
                                                   "tool_calls": [{"tool_name": "get_weather",
                                                                   "arguments": {"city": "Oslo"}}]}}])  # fmt: skip
    client = cohere.ClientV2(api_key=api_key, base_url=harness_server.url, max_retries=2, timeout=20)
    raw = client.with_raw_response.chat(model="command-a-03-2025", messages=user("cohere-retried"), tools=WEATHER)
    assert raw.data.message.tool_calls[0].function.arguments == '{"city":"Oslo"}'
    run = recorded_run(raw.headers["x-harness-run"], events=8)
    events = [{"seq": e.seq, "timestamp": e.timestamp, "kind": e.kind, "turn": e.turn, "data": e.data}
              for e in run.events.order_by("seq")]  # fmt: skip
    [failure] = analyse(events).failures
    assert (failure.outcome, failure.verdict, failure.advised_ms) == (RETRIED, HONOURED, 200)
    page = run_page(run.id)
    assert "Checking the sky." in page and "get_weather" in page and "honouring the advised 200 ms" in page


def test_it_refuses_a_bad_body_in_coheres_shape(harness_server, transactional_db):
    response = httpx2.post(f"{harness_server.url}/v2/chat", json={"model": "m", "messages": []}, timeout=20)
    assert response.status_code == 400 and response.json()["message"] == (
        "invalid request: messages must be a non-empty list"
    )
    missing = httpx2.post(f"{harness_server.url}/v2/rerank", json={}, timeout=20)
    assert missing.status_code == 404 and "Nothing is served at POST /v2/rerank" in missing.json()["message"]


def test_it_refuses_a_missing_key_with_coheres_401(harness_server, transactional_db):
    make_scenario("cohere-keyed", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Keyed."}}],
                  require_key=True)  # fmt: skip
    keyless = cohere.ClientV2(api_key="", base_url=harness_server.url, max_retries=0, timeout=20)
    with pytest.raises(cohere.UnauthorizedError) as caught:
        keyless.chat(model="command-a-03-2025", messages=user("cohere-keyed"))
    assert caught.value.body["message"] == "no api key supplied"
    keyed = cohere.ClientV2(api_key="co-key", base_url=harness_server.url, max_retries=0, timeout=20)
    assert keyed.chat(model="command-a-03-2025", messages=user("cohere-keyed")).message.content[0].text == "Keyed."


# -- every failure kind, as ClientV2 meets it (retries off) ----------------------------------------------------------

# kind -> what a plain call raises, then a streamed one ("answer": the whole answer, no error; "answer, empty" with none
# of it: ClientV2 skips a stream event it cannot parse, with a warning, rather than raising; "answer, garbled" with
# U+FFFD in it).
KINDS: dict[str, tuple[str, str]] = {
    "rate_limit": ("TooManyRequestsError", "TooManyRequestsError"),
    "model_error": ("InternalServerError", "InternalServerError"),
    "auth_error": ("UnauthorizedError", "UnauthorizedError"),
    "permission_error": ("ForbiddenError", "ForbiddenError"),
    "not_found": ("NotFoundError", "NotFoundError"),
    "bad_request": ("BadRequestError", "BadRequestError"),
    "request_too_large": ("ApiError", "ApiError"),
    "server_error": ("InternalServerError", "InternalServerError"),
    "bad_gateway": ("ApiError", "ApiError"),
    "unavailable": ("ServiceUnavailableError", "ServiceUnavailableError"),
    "overloaded": ("ServiceUnavailableError", "ServiceUnavailableError"),
    "timeout": ("ReadTimeout", "ReadTimeout"),
    "network_error": ("RemoteProtocolError", "RemoteProtocolError"),
    "invalid_response": ("ApiError", "answer, empty"),
    "wrong_content_type": ("answer", "SSEError"),
    "missing_content_type": ("answer", "SSEError"),
    "invalid_json_in_stream": ("ApiError", "answer, empty"),
    "invalid_utf8": ("UnicodeDecodeError", "answer, garbled"),
    "truncated_stream": ("ApiError", "answer"),
    "slow_first_byte": ("answer", "answer"),
}


def readme_row(kind: str) -> str:
    plain, streamed = KINDS[kind]
    return f"| `{kind}` | {plain if plain == streamed else f'{plain} / {streamed}'} |"


def call(url: str, scenario: str, stream: bool, timeout: float) -> str:
    """One ClientV2 call, retries off: ``answer…`` or the name of what it raised."""
    transport = httpx.Client(timeout=timeout, headers={"X-Harness-Scenario": scenario})
    client = cohere.ClientV2(api_key="k", base_url=url, max_retries=0, timeout=timeout, httpx_client=transport)
    try:
        if stream:
            events = client.chat_stream(model="m", messages=user("hello"))
            text = "".join(e.delta.message.content.text for e in events if e.type == "content-delta")
        else:
            text = client.chat(model="m", messages=user("hello")).message.content[0].text
    except Exception as exc:  # noqa: BLE001 - what the SDK raises is the measurement
        return type(exc).__name__
    if text == ANSWER:
        return "answer"
    return "answer, garbled" if "\ufffd" in text else "answer, cut" if text else "answer, empty"


def test_it_covers_every_failure_kind_and_the_readme_says_the_same() -> None:
    assert set(KINDS) == set(FAILURE_KINDS)
    readme = docs_text()
    missing = [kind for kind in KINDS if readme_row(kind) not in readme]
    assert not missing, "README rows differ:\n" + "\n".join(map(readme_row, missing))


def test_it_serves_each_failure_kind_as_the_table_says(harness_server, transactional_db) -> None:
    measured, wanted = {}, {}
    for kind, expected in KINDS.items():
        scenario = failing(kind, "cohere-fails")
        timeout = CLIENT_TIMEOUT_S.get(kind, 10.0)
        measured[kind] = tuple(call(harness_server.url, scenario, stream, timeout) for stream in (False, True))
        wanted[kind] = expected
    assert measured == wanted


def test_it_plays_in_process_through_the_harness_fixture(harness) -> None:
    """The pytest plugin's in-process transport serves the same bytes to ``harness.cohere_client()``."""
    harness.set_response(text="In process.")
    harness.set_response(tool_calls=[{"name": "get_weather", "arguments": {"city": "Rome"}}])
    co = harness.cohere_client()
    assert co.chat(model="command-a-03-2025", messages=user("hi")).message.content[0].text == "In process."
    events = list(co.chat_stream(model="command-a-03-2025", messages=user("weather?"), tools=WEATHER))
    assert events[-1].delta.finish_reason == "TOOL_CALL" and "tool-call-start" in [e.type for e in events]
    assert harness.last_call.protocol == "cohere" and harness.last_call.tools == ["get_weather"]
    vectors = co.embed(model="embed-english-v3.0", texts=["a"], input_type="search_query", embedding_types=["float"])
    assert len(vectors.embeddings.float_[0]) == 1024
