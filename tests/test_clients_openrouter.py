"""OpenRouter's clients against a live harness, each with its defaults (only the base URL and a key given): the
``openai`` SDK with OpenRouter's base URL (``/api/v1``) and litellm's ``openrouter/``: text, stream and tool loop,
``usage`` with its ``cost``, ``provider`` preferences accepted, the app's ``X-Title`` / ``HTTP-Referer`` recorded,
OpenRouter's error shape. Every case checks what the client parsed, the path it called and the run recorded."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from harnessweb.engine.wire import openrouter
from tests.client_runs import (
    ANSWER,
    STREAMED,
    TEXT,
    Harness,
    paths,
    played,
    stream_scenario,
    text_scenario,
    tools_scenario,
)
from tests.conftest import make_scenario

MODEL = "openai/gpt-4o"
PATH = "/api/v1/chat/completions"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture
def harness(harness_server: Any, api_key: str, transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> Harness:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "true")  # litellm's price map is the installed one
    return Harness(harness_server.url, api_key, [])


def client(h: Harness, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{h.url}/api/v1", api_key=h.key, max_retries=0, timeout=20, default_headers=headers)


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


# -- the openai SDK at OpenRouter's base URL --------------------------------------------------------------------------


def test_it_answers_with_the_cost_and_records_the_apps_headers(harness):
    scenario = text_scenario("openrouter")
    app = {"HTTP-Referer": "https://example.test/app", "X-Title": "Weather Bot"}
    answer = client(harness, **app).chat.completions.create(
        model=MODEL,
        messages=user(scenario),
        extra_body={"provider": {"order": ["openai", "azure"], "allow_fallbacks": False}, "usage": {"include": True}},
    )
    assert answer.choices[0].message.content == TEXT
    usage = answer.usage.model_dump()
    assert usage["cost"] == openrouter.cost(MODEL, usage) and usage["cost"] > 0 and usage["is_byok"] is False
    assert answer.model_extra["provider"] == openrouter.PROVIDER
    run = played(scenario, [1])
    assert paths(run) == {PATH}
    request = run.events.get(kind="request").data
    assert (request["headers"]["x-title"], request["headers"]["http-referer"]) == (app["X-Title"], app["HTTP-Referer"])
    assert request["body"]["provider"]["order"] == ["openai", "azure"]


def test_it_streams_with_the_usage_chunk_when_usage_include_is_asked(harness):
    scenario = stream_scenario("openrouter")
    chunks = list(
        client(harness).chat.completions.create(
            model=MODEL, messages=user(scenario), stream=True, extra_body={"usage": {"include": True}}
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == STREAMED
    assert chunks[-1].choices == [] and chunks[-1].usage.model_dump()["cost"] > 0
    assert paths(played(scenario, [1])) == {PATH}


def test_it_runs_the_openai_sdks_tool_loop_at_openrouters_url(harness):
    scenario = tools_scenario("openrouter")
    c = client(harness)
    messages: list[Any] = user(scenario)
    while True:
        message = c.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER_TOOL]).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            result = harness.get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    assert message.content == ANSWER and harness.calls == ["Paris"]
    assert paths(played(scenario, [1, 2])) == {PATH}


def test_it_refuses_in_openrouters_error_shape(harness):
    with pytest.raises(openai.BadRequestError) as caught:
        client(harness).chat.completions.create(model=MODEL, messages=user("x"), extra_body={"provider": "openai"})
    assert caught.value.body == {
        "code": 400,
        "message": "provider must be an object",
        "metadata": {"param": "provider"},
    }
    failing = {"turn": 1, "failure_status": "rate_limit", "failures_before_success": "always",
               "response": {"kind": "text", "assistant_text": TEXT}}  # fmt: skip
    make_scenario("failing-openrouter", [failing])
    with pytest.raises(openai.RateLimitError) as limited:
        client(harness).chat.completions.create(model=MODEL, messages=user("failing-openrouter"))
    assert limited.value.body["code"] == 429


def test_it_lists_the_models_with_their_prices(harness):
    text_scenario("openrouter-models")
    models = {m.id: m for m in client(harness).models.list()}
    assert "text-openrouter-models" in models
    assert models["text-openrouter-models"].model_extra["pricing"] == {"prompt": "0", "completion": "0"}


# -- litellm's openrouter/ -------------------------------------------------------------------------------------------


def completion(h: Harness, messages: list[Any], **extra: Any) -> Any:
    import litellm

    return litellm.completion(model=f"openrouter/{MODEL}", messages=messages, api_base=f"{h.url}/api/v1",
                              api_key=h.key, **extra)  # fmt: skip


def test_it_answers_litellms_openrouter(harness):
    scenario = text_scenario("litellm-openrouter")
    assert completion(harness, user(scenario)).choices[0].message.content == TEXT
    streamed = stream_scenario("litellm-openrouter")
    chunks = completion(harness, user(streamed), stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == STREAMED
    assert paths(played(scenario, [1])) == paths(played(streamed, [1])) == {PATH}


def test_it_runs_litellms_openrouter_tool_loop(harness):
    scenario = tools_scenario("litellm-openrouter")
    messages: list[Any] = user(scenario)
    while True:
        message = completion(harness, messages, tools=[WEATHER_TOOL]).choices[0].message
        messages.append(message.model_dump())
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            result = harness.get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    assert message.content == ANSWER and harness.calls == ["Paris"]
    assert paths(played(scenario, [1, 2])) == {PATH}
