"""Google Gemini through the official `google-genai` SDK: text, streams, function calls and their responses, thoughts,
errors in Google's format and injected failures, under /v1beta/ and /v1/."""

from __future__ import annotations

import pytest
from google import genai
from google.genai import errors, types

from harnessweb.engine.redaction import fingerprint
from tests.conftest import make_scenario, recorded_run, wait_for

TURNS = [
    {
        "turn": 1,
        "expected_tools": ["get_weather"],
        "response": {
            "kind": "tool-call",
            "reasoning": [{"text": "I should look it up."}],
            "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Paris"}}],
        },
    },
    {"turn": 2, "response": {"kind": "text", "assistant_text": "It is sunny in Paris."}},
]
WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather", parameters=types.Schema(type="OBJECT", properties={"city": types.Schema(type="STRING")})
        )
    ]
)


@pytest.fixture
def gemini(harness_server, api_key, transactional_db) -> genai.Client:
    return genai.Client(api_key=api_key, http_options=types.HttpOptions(base_url=harness_server.url))


def test_it_answers_a_scenario_turn(gemini):
    make_scenario("hello-gemini", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hi from Gemini."}}])
    response = gemini.models.generate_content(model="gemini-2.5-flash", contents="hello-gemini")
    assert response.text == "Hi from Gemini."
    assert response.candidates[0].finish_reason == types.FinishReason.STOP
    assert response.usage_metadata.total_token_count == 7  # "hello-gemini" is 3 tokens, "Hi from Gemini." 4


def test_it_streams_the_answer_in_chunks(gemini):
    make_scenario(
        "stream-gemini",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": "one two three four five six seven"}}],
    )
    chunks = list(gemini.models.generate_content_stream(model="gemini-2.5-flash", contents="stream-gemini"))
    assert "".join(chunk.text for chunk in chunks) == "one two three four five six seven"
    assert len(chunks) == 2 and chunks[-1].usage_metadata.total_token_count == 10


def test_it_plays_a_function_call_and_its_response_in_one_run(gemini):
    make_scenario("weather-gemini", TURNS)
    config = types.GenerateContentConfig(
        system_instruction="You are a weather assistant",
        tools=[WEATHER],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        thinking_config=types.ThinkingConfig(include_thoughts=True),
    )
    first = gemini.models.generate_content(model="gemini-2.5-flash", contents="weather-gemini", config=config)
    call = first.function_calls[0]
    assert (call.name, call.args) == ("get_weather", {"city": "Paris"})
    thought = first.candidates[0].content.parts[0]
    assert thought.thought is True and thought.thought_signature
    history = [
        types.Content(role="user", parts=[types.Part(text="weather-gemini")]),
        first.candidates[0].content,
        types.Content(
            role="user", parts=[types.Part.from_function_response(name="get_weather", response={"sky": "clear"})]
        ),
    ]
    second = gemini.models.generate_content(model="gemini-2.5-flash", contents=history, config=config)
    assert second.text == "It is sunny in Paris."


def test_it_records_the_run_with_the_model_from_the_path(gemini, api_key):
    from runs_app.models import Run

    make_scenario("recorded-gemini", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Noted."}}])
    gemini.models.generate_content(model="gemini-2.5-pro", contents="recorded-gemini")
    run = wait_for(lambda: Run.objects.filter(scenario_id="recorded-gemini").first(), message="the gemini run")
    run = recorded_run(str(run.id), status="passed", events=4)
    request = run.events.get(kind="request").data
    assert run.protocol == "gemini" and request["path"] == "/v1/models/gemini-2.5-pro:generateContent"
    assert request["headers"]["x-goog-api-key"] == f"[REDACTED:{fingerprint(api_key)}]" and api_key not in str(request)


def test_it_answers_errors_and_failures_in_google_s_format(gemini):
    make_scenario(
        "limited-gemini",
        [
            {
                "turn": 1,
                "failures_before_success": 1,
                "failure_status": "rate_limit",
                "failure_message": "Resource has been exhausted (e.g. check quota).",
                "response": {"kind": "text", "assistant_text": "later"},
            }
        ],
    )
    with pytest.raises(errors.ClientError) as caught:
        gemini.models.generate_content(model="gemini-2.5-flash", contents="limited-gemini")
    assert caught.value.code == 429 and caught.value.status == "RESOURCE_EXHAUSTED"
    assert gemini.models.generate_content(model="gemini-2.5-flash", contents="limited-gemini").text == "later"
    with pytest.raises(errors.ClientError) as unknown:
        gemini.models.embed_content(model="text-embedding-004", contents="x")
    assert unknown.value.code == 404 and "EmbedContents" in unknown.value.message


def test_it_lists_and_gets_models_in_gemini_s_shape(gemini):
    make_scenario("listed-gemini")
    names = [model.name for model in gemini.models.list()]
    assert "models/listed-gemini" in names
    assert gemini.models.get(model="gemini-2.5-flash").name == "models/gemini-2.5-flash"


def test_it_serves_the_v1beta_api_version_too(harness_server, api_key, transactional_db):
    make_scenario("v1beta-gemini", [{"turn": 1, "response": {"kind": "text", "assistant_text": "On v1beta."}}])
    client = genai.Client(
        api_key=api_key, http_options=types.HttpOptions(base_url=harness_server.url, api_version="v1beta")
    )
    assert client.models.generate_content(model="gemini-2.5-flash", contents="v1beta-gemini").text == "On v1beta."
    assert "models/v1beta-gemini" in [model.name for model in client.models.list()]


def test_it_takes_the_key_from_the_query_and_never_records_it(harness_server, transactional_db):
    import httpx2

    from runs_app.models import Run

    make_scenario("keyed-gemini", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Keyed."}}])
    body = {"contents": [{"role": "user", "parts": [{"text": "keyed-gemini"}]}]}
    url = f"{harness_server.url}/v1beta/models/gemini-2.5-flash:generateContent"
    for key in ("secret-key-one", "secret-key-two"):
        response = httpx2.post(url, params={"key": key}, json=body, timeout=20)
        assert response.status_code == 200

    def both_runs() -> list[Run] | None:
        runs = list(Run.objects.filter(scenario_id="keyed-gemini", status="passed"))
        return runs if len(runs) == 2 else None

    runs = wait_for(both_runs, message="a run for each key")
    assert not any("secret-key" in str(event.data) for run in runs for event in run.events.all())


def test_it_streams_a_json_array_unless_asked_for_sse(harness_server, api_key, transactional_db):
    import json

    import httpx2

    make_scenario(
        "array-gemini", [{"turn": 1, "response": {"kind": "text", "assistant_text": "one two three four five six"}}]
    )
    url = f"{harness_server.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "array-gemini"}]}]}
    response = httpx2.post(
        url, params={"$alt": "json;enum-encoding=int"}, json=body, headers={"x-goog-api-key": api_key}, timeout=20
    )
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    chunks = json.loads(response.content)
    assert "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks) == "one two three four five six"
    assert chunks[-1]["usageMetadata"]["totalTokenCount"] == 9 and len(chunks) == 2
