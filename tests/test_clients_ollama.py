"""Ollama's clients against a live harness, each with its defaults (only the host given): the ``ollama`` package
(chat, stream, its tool loop, ``format`` with a schema, ``think``, embed and the older embeddings, generate, the model
list, show, ps), LangChain's ``ChatOllama`` and litellm's ``ollama_chat/`` (text, stream, tool loop). Every case
checks what the client parsed, the path it called and the run the harness recorded."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from harnessweb.engine.wire import embeddings
from tests.client_runs import (
    ANSWER,
    STREAMED,
    TEXT,
    WEATHER_TURNS,
    Harness,
    paths,
    played,
    stream_scenario,
    text_scenario,
)
from tests.conftest import make_scenario

ollama = pytest.importorskip("ollama")
MODEL = "llama3.2"


@pytest.fixture
def harness(harness_server: Any, api_key: str, transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> Harness:
    # Nothing leaves the machine: litellm's price map is the installed one, no tracing.
    for name, value in {"LITELLM_LOCAL_MODEL_COST_MAP": "true", "LANGSMITH_TRACING": "false"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    return Harness(harness_server.url, api_key, [])


def tools_scenario(name: str) -> str:
    """The tool loop, whose turn 2 also expects the call answered by its id (or its tool's name, which the ``ollama``
    package answers by) and the tool's result as the last message."""
    expect = {"tool_calls_answered": True, "last_message_contains": "clear"}
    make_scenario(f"tools-{name}", [WEATHER_TURNS[0], {**WEATHER_TURNS[1], "expect": expect}])
    return f"tools-{name}"


def client(h: Harness, suffix: str = "") -> Any:
    return ollama.Client(host=h.url + suffix, timeout=20)


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


# -- the ollama package ------------------------------------------------------------------------------------------------


def test_it_answers_the_ollama_package_chat(harness):
    scenario = text_scenario("ollama")
    answer = client(harness).chat(model=MODEL, messages=user(scenario))
    assert answer.message.role == "assistant" and answer.message.content == TEXT
    assert answer.done and answer.done_reason == "stop" and answer.model == MODEL
    assert answer.eval_count > 0 and answer.total_duration == (
        answer.load_duration + answer.prompt_eval_duration + answer.eval_duration
    )
    assert paths(played(scenario, [1])) == {"/api/chat"}


def test_it_streams_ndjson_to_the_ollama_package_with_the_counts_last(harness):
    scenario = stream_scenario("ollama")
    parts = list(client(harness).chat(model=MODEL, messages=user(scenario), stream=True))
    assert "".join(p.message.content for p in parts) == STREAMED
    assert len(parts) > 2 and not any(p.done for p in parts[:-1])
    assert parts[-1].done and parts[-1].done_reason == "stop" and parts[-1].eval_count > 0
    assert paths(played(scenario, [1])) == {"/api/chat"}


def test_it_runs_the_ollama_package_tool_loop(harness):
    scenario = tools_scenario("ollama")
    c = client(harness)
    messages: list[Any] = user(scenario)
    while True:
        answer = c.chat(model=MODEL, messages=messages, tools=[harness.get_weather])
        messages.append(answer.message)
        if not answer.message.tool_calls:
            break
        for call in answer.message.tool_calls:
            assert isinstance(call.function.arguments, dict)  # Ollama's arguments are an object
            result = harness.get_weather(**call.function.arguments)
            messages.append({"role": "tool", "content": result, "tool_name": call.function.name})
    assert answer.message.content == ANSWER and harness.calls == ["Paris"]
    assert paths(played(scenario, [1, 2])) == {"/api/chat"}


class Weather(BaseModel):
    city: str
    celsius: int


def test_it_answers_format_with_a_schema_as_the_structured_answer(harness):
    make_scenario("structured-ollama", [{"turn": 1, "response": {"kind": "structured", "data": {"city": "Paris",
                  "celsius": 21}}}])  # fmt: skip
    answer = client(harness).chat(
        model=MODEL, messages=user("structured-ollama"), format=Weather.model_json_schema(), stream=False
    )
    assert Weather.model_validate_json(answer.message.content) == Weather(city="Paris", celsius=21)
    run = played("structured-ollama", [1])
    assert run.events.get(kind="request").data["body"]["format"]["title"] == "Weather"


def test_it_fails_the_run_when_the_scenario_data_breaks_the_format_schema(harness):
    make_scenario("structured-bad-ollama", [{"turn": 1, "response": {"kind": "structured", "data": {"city": 1}}}])
    client(harness).chat(model=MODEL, messages=user("structured-bad-ollama"), format=Weather.model_json_schema())
    from runs_app.models import Run
    from tests.conftest import wait_for

    run = wait_for(lambda: Run.objects.filter(scenario_id="structured-bad-ollama", status="failed").first())
    assert "Weather" in run.status_reason


def test_it_puts_the_reasoning_in_thinking_when_think_is_asked(harness):
    turn = {"kind": "text", "assistant_text": TEXT, "reasoning": [{"text": "The user greets me."}]}
    make_scenario("think-ollama", [{"turn": 1, "response": turn}])
    answer = client(harness).chat(model=MODEL, messages=user("think-ollama"), think=True)
    assert (answer.message.thinking, answer.message.content) == ("The user greets me.", TEXT)
    parts = list(client(harness, "/ollama").chat(model=MODEL, messages=user("think-ollama"), think=True, stream=True))
    assert "".join(p.message.thinking or "" for p in parts) == "The user greets me."


def test_it_generates_and_streams_generate(harness):
    scenario = text_scenario("ollama-generate")
    answer = client(harness).generate(model=MODEL, prompt=scenario)
    assert answer.response == TEXT and answer.done and answer.context
    streamed = list(client(harness).generate(model=MODEL, prompt=scenario, stream=True))
    assert "".join(p.response for p in streamed) == TEXT and streamed[-1].done


def test_it_embeds_deterministically_on_both_embedding_endpoints(harness):
    c = client(harness)
    both = c.embed(model="nomic-embed-text", input=["red", "blue"])
    assert len(both.embeddings) == 2 and len(both.embeddings[0]) == 768 and both.prompt_eval_count == 2
    assert both.embeddings[0] == pytest.approx(list(embeddings.vector("red", 768)))
    older = c.embeddings(model="nomic-embed-text", prompt="red")
    assert list(older.embedding) == both.embeddings[0]
    assert c.embed(model="nomic-embed-text", input="red", dimensions=8).embeddings[0] == pytest.approx(
        list(embeddings.vector("red", 8))
    )


def test_it_lists_shows_and_reports_the_models(harness):
    text_scenario("ollama-list")
    c = client(harness)
    assert "text-ollama-list" in [m.model for m in c.list().models]
    shown = c.show(MODEL)
    assert "tools" in shown.capabilities and shown.details.format == "gguf"
    assert c.ps().models == []
    version = httpx.get(f"{harness.url}/api/version", timeout=10)
    assert version.status_code == 200 and version.json() == {"version": "0.13.0"}
    # Beside them, the dashboard's REST API under /api/ is still Django's (its JSON errors say "detail").
    for rest in ("/api/runs", "/api/scenarios", "/api/coverage", "/api/current-run"):
        refused = httpx.get(f"{harness.url}{rest}", timeout=10)
        assert refused.status_code in (401, 405) and "detail" in refused.json(), rest


def test_it_answers_under_the_ollama_prefix_of_a_host_with_a_path(harness):
    scenario = text_scenario("ollama-prefix")
    assert client(harness, "/ollama").chat(model=MODEL, messages=user(scenario)).message.content == TEXT
    assert paths(played(scenario, [1])) == {"/ollama/api/chat"}


def test_it_refuses_a_bad_body_in_ollamas_error_format(harness):
    missing = httpx.post(f"{harness.url}/api/chat", json={"model": MODEL}, timeout=10)
    assert missing.status_code == 400 and "messages" in missing.json()["error"]
    no_model = httpx.post(f"{harness.url}/api/show", json={}, timeout=10)
    assert (no_model.status_code, no_model.json()) == (400, {"error": "model is required"})
    with pytest.raises(ollama.ResponseError) as caught:
        client(harness).chat(model=MODEL, messages=[{"role": "robot", "content": "hi"}])
    assert caught.value.status_code == 400 and "messages[0].role" in caught.value.error
    wrong = httpx.get(f"{harness.url}/api/chat", timeout=10)
    assert wrong.status_code == 405 and "use POST" in wrong.json()["error"]


def test_it_gives_a_scripted_failure_as_an_ollama_error(harness):
    failing = {"turn": 1, "failure_status": "rate_limit", "failures_before_success": "always",
               "response": {"kind": "text", "assistant_text": TEXT}}  # fmt: skip
    make_scenario("failing-ollama", [failing])
    with pytest.raises(ollama.ResponseError) as caught:
        client(harness).chat(model=MODEL, messages=user("failing-ollama"), stream=True).__next__()
    assert caught.value.status_code == 429


# -- LangChain's ChatOllama ------------------------------------------------------------------------------------------


def chat_ollama(h: Harness) -> Any:
    langchain_ollama = pytest.importorskip("langchain_ollama")
    return langchain_ollama.ChatOllama(model=MODEL, base_url=h.url)


def test_it_answers_langchains_chat_ollama(harness):
    scenario = text_scenario("chatollama")
    assert chat_ollama(harness).invoke(scenario).content == TEXT
    streamed = stream_scenario("chatollama")
    chunks = [c.content for c in chat_ollama(harness).stream(streamed) if c.content]
    assert "".join(chunks) == STREAMED and len(chunks) > 1
    assert paths(played(scenario, [1])) == paths(played(streamed, [1])) == {"/api/chat"}


def test_it_runs_langchains_chat_ollama_tool_loop(harness):
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return harness.get_weather(city)

    scenario = tools_scenario("chatollama")
    model = chat_ollama(harness).bind_tools([get_weather])
    messages: list[Any] = [HumanMessage(scenario)]
    while True:
        answer = model.invoke(messages)
        messages.append(answer)
        if not answer.tool_calls:
            break
        for call in answer.tool_calls:
            messages.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))
    assert answer.content == ANSWER and harness.calls == ["Paris"]
    assert paths(played(scenario, [1, 2])) == {"/api/chat"}


# -- litellm's ollama_chat/ ------------------------------------------------------------------------------------------


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def test_it_answers_litellms_ollama_chat(harness):
    import litellm

    scenario = text_scenario("litellm-ollama")
    answer = litellm.completion(model=f"ollama_chat/{MODEL}", messages=user(scenario), api_base=harness.url)
    assert answer.choices[0].message.content == TEXT
    streamed = stream_scenario("litellm-ollama")
    chunks = litellm.completion(model=f"ollama_chat/{MODEL}", messages=user(streamed), api_base=harness.url,
                                stream=True)  # fmt: skip
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == STREAMED
    assert paths(played(scenario, [1])) == paths(played(streamed, [1])) == {"/api/chat"}


def test_it_runs_litellms_ollama_chat_tool_loop(harness):
    import litellm

    scenario = tools_scenario("litellm-ollama")
    messages: list[Any] = user(scenario)
    while True:
        answer = litellm.completion(
            model=f"ollama_chat/{MODEL}", messages=messages, tools=[WEATHER_TOOL], api_base=harness.url
        )
        message = answer.choices[0].message
        messages.append(message.model_dump())
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            result = harness.get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "name": call.function.name, "content": result})
    assert message.content == ANSWER and harness.calls == ["Paris"]
    assert paths(played(scenario, [1, 2])) == {"/api/chat"}
