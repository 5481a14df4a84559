"""Which Python client calls what: each library pointed at the harness with its defaults (only the base URL and a
key given), asked for a plain answer, a stream and its own tool loop (turn 1 calls get_weather, the library runs
it, turn 2 answers). Every case checks the text it got, the endpoint path it called and the run the harness
recorded. The README's "Which client calls what" table is this file's (and test_clients_node.py's) outcome."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.client_runs import (
    ANSWER,
    STREAMED,
    TEXT,
    WEATHER_DOC,
    Harness,
    paths,
    played,
    stream_scenario,
    streaming,
    text_scenario,
    threads,
    tools_scenario,
)


@pytest.fixture
def harness(harness_server, api_key, transactional_db, monkeypatch) -> Harness:
    # Whatever a library reads from the environment points at the harness too: nothing leaves the machine.
    for name, value in {
        "OPENAI_API_KEY": api_key,
        "OPENAI_BASE_URL": f"{harness_server.url}/v1",
        "ANTHROPIC_API_KEY": api_key,
        "ANTHROPIC_BASE_URL": harness_server.url,
        "GOOGLE_API_KEY": api_key,
        "GOOGLE_GEMINI_BASE_URL": harness_server.url,
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    return Harness(harness_server.url, api_key, [])


# -- the clients: text, stream, tool loop -----------------------------------------------------------------------------


@dataclass
class Client:
    name: str
    path: str  # the endpoint it calls by default
    text: Callable[[Harness, str], str]
    stream: Callable[[Harness, str], list[str]] | None  # None: fails on the harness, see NOT_IN_THE_SUITE
    tools: Callable[[Harness, str], str]


# Cases that fail because of the harness, left out until it is fixed (the README's table says why):
# - langchain-google-genai with its default transport, gRPC, which the harness does not serve.
NOT_IN_THE_SUITE = {"langchain-google-genai": ("every call over gRPC, its default transport",)}


def run_async(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


# openai: Chat Completions and the Responses API (the SDK has no tool runner: the loop is the caller's).


def openai_client(h: Harness) -> Any:
    import openai

    return openai.OpenAI(base_url=f"{h.url}/v1", api_key=h.key, max_retries=0, timeout=20)


WEATHER_CHAT_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": WEATHER_DOC,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
WEATHER_RESPONSES_TOOL = {"type": "function", **WEATHER_CHAT_TOOL["function"]}


def azure_client(h: Harness) -> Any:
    import openai

    return openai.AzureOpenAI(azure_endpoint=h.url, api_key=h.key, api_version="2024-10-21", max_retries=0, timeout=20)


Case = tuple[Callable[..., str], Callable[..., list[str]], Callable[..., str]]


def chat_case(make: Callable[[Harness], Any]) -> Case:
    """Chat Completions through a client ``make`` builds (OpenAI's, or Azure's, where the model names a deployment)."""

    def text(h: Harness, scenario: str) -> str:
        answer = make(h).chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": scenario}])
        return answer.choices[0].message.content

    def stream(h: Harness, scenario: str) -> list[str]:
        chunks = make(h).chat.completions.create(
            model="gpt-4.1", messages=[{"role": "user", "content": scenario}], stream=True
        )
        return [chunk.choices[0].delta.content for chunk in chunks if chunk.choices and chunk.choices[0].delta.content]

    def tools(h: Harness, scenario: str) -> str:
        client = make(h)
        messages: list[Any] = [{"role": "user", "content": scenario}]
        while True:
            message = (
                client.chat.completions.create(model="gpt-4.1", messages=messages, tools=[WEATHER_CHAT_TOOL])
                .choices[0]
                .message
            )
            if not message.tool_calls:
                return message.content
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                output = h.get_weather(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})

    return text, stream, tools


def responses_text(h: Harness, scenario: str) -> str:
    return openai_client(h).responses.create(model="gpt-4.1", input=scenario).output_text


def responses_stream(h: Harness, scenario: str) -> list[str]:
    with openai_client(h).responses.stream(model="gpt-4.1", input=scenario) as stream:
        return [event.delta for event in stream if event.type == "response.output_text.delta"]


def responses_tools(h: Harness, scenario: str) -> str:
    client = openai_client(h)
    items: list[Any] = [{"role": "user", "content": scenario}]
    while True:
        response = client.responses.create(model="gpt-4.1", input=items, tools=[WEATHER_RESPONSES_TOOL])
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        items += [item.model_dump(exclude_none=True) for item in response.output]
        for call in calls:
            output = h.get_weather(**json.loads(call.arguments))
            items.append({"type": "function_call_output", "call_id": call.call_id, "output": output})


# anthropic: Messages, and the SDK's tool runner (beta, which threads the conversation by default).


def anthropic_client(h: Harness) -> Any:
    import anthropic

    return anthropic.Anthropic(base_url=h.url, api_key=h.key, max_retries=0, timeout=20)


def messages_text(h: Harness, scenario: str) -> str:
    answer = anthropic_client(h).messages.create(
        model="claude-sonnet-4-6", max_tokens=256, messages=[{"role": "user", "content": scenario}]
    )
    return answer.content[0].text


def messages_stream(h: Harness, scenario: str) -> list[str]:
    with anthropic_client(h).messages.stream(
        model="claude-sonnet-4-6", max_tokens=256, messages=[{"role": "user", "content": scenario}]
    ) as stream:
        return list(stream.text_stream)


def messages_tools(h: Harness, scenario: str) -> str:
    from anthropic import beta_tool

    @beta_tool
    def get_weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: the city
        """
        return h.get_weather(city)

    runner = anthropic_client(h).beta.messages.tool_runner(
        model="claude-sonnet-4-6",
        max_tokens=256,
        messages=[{"role": "user", "content": scenario}],
        tools=[get_weather],
    )
    return runner.until_done().content[0].text


# google-genai: generateContent, and its automatic function calling (on by default for Python functions).


def genai_client(h: Harness) -> Any:
    from google import genai

    return genai.Client(api_key=h.key, http_options={"base_url": h.url})


def genai_text(h: Harness, scenario: str) -> str:
    client = genai_client(h)  # kept: a collected client closes its connection pool
    return client.models.generate_content(model="gemini-2.5-flash", contents=scenario).text


def genai_stream(h: Harness, scenario: str) -> list[str]:
    client = genai_client(h)
    chunks = client.models.generate_content_stream(model="gemini-2.5-flash", contents=scenario)
    return [chunk.text for chunk in chunks if chunk.text]


def genai_tools(h: Harness, scenario: str) -> str:
    from google.genai import types

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return h.get_weather(city)

    client = genai_client(h)
    config = types.GenerateContentConfig(tools=[get_weather])
    return client.models.generate_content(model="gemini-2.5-flash", contents=scenario, config=config).text


# The OpenAI Agents SDK: Runner with the default model provider (the Responses API over HTTP).


def agents_config(h: Harness) -> Any:
    from agents import RunConfig, set_tracing_disabled
    from agents.models.openai_provider import OpenAIProvider
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    # A client of its own: the provider's shared HTTP client would outlive the event loop of the previous case.
    client = AsyncOpenAI(base_url=f"{h.url}/v1", api_key=h.key, max_retries=0, timeout=20)
    return RunConfig(model_provider=OpenAIProvider(openai_client=client), tracing_disabled=True)


def agents_agent(h: Harness, tools: Iterable[Any] = ()) -> Any:
    from agents import Agent

    return Agent(name="weather", instructions="You are a weather assistant", tools=list(tools))


def agents_text(h: Harness, scenario: str) -> str:
    from agents import Runner

    return Runner.run_sync(agents_agent(h), scenario, run_config=agents_config(h)).final_output


def agents_stream(h: Harness, scenario: str) -> list[str]:
    from agents import Runner

    async def go() -> list[str]:
        result = Runner.run_streamed(agents_agent(h), scenario, run_config=agents_config(h))
        deltas = []
        async for event in result.stream_events():
            if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
                deltas.append(event.data.delta)
        assert result.final_output == "".join(deltas)
        return deltas

    return run_async(go())


def agents_tools(h: Harness, scenario: str) -> str:
    from agents import Runner, function_tool

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return h.get_weather(city)

    return Runner.run_sync(agents_agent(h, [get_weather]), scenario, run_config=agents_config(h)).final_output


# pydantic-ai: Agent over each provider's model class ("openai:" names the Responses model, OpenAIChatModel is
# Chat Completions).


def pydantic_model(h: Harness, kind: str) -> Any:
    if kind in ("responses", "chat"):
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model_class = OpenAIResponsesModel if kind == "responses" else OpenAIChatModel
        return model_class("gpt-4.1", provider=OpenAIProvider(base_url=f"{h.url}/v1", api_key=h.key))
    if kind == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel("claude-sonnet-4-6", provider=AnthropicProvider(base_url=h.url, api_key=h.key))
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    return GoogleModel("gemini-2.5-flash", provider=GoogleProvider(base_url=h.url, api_key=h.key))


def pydantic_agent(h: Harness, kind: str, tools: Iterable[Any] = ()) -> Any:
    from pydantic_ai import Agent

    return Agent(pydantic_model(h, kind), instructions="You are a weather assistant", tools=list(tools))


def pydantic_case(kind: str) -> tuple[Callable[..., str], Callable[..., list[str]], Callable[..., str]]:
    def text(h: Harness, scenario: str) -> str:
        return pydantic_agent(h, kind).run_sync(scenario).output

    def stream(h: Harness, scenario: str) -> list[str]:
        async def go() -> list[str]:
            async with pydantic_agent(h, kind).run_stream(scenario) as result:
                return [delta async for delta in result.stream_text(delta=True, debounce_by=None)]

        return run_async(go())

    def tools(h: Harness, scenario: str) -> str:
        def get_weather(city: str) -> str:
            """The weather in a city."""
            return h.get_weather(city)

        return pydantic_agent(h, kind, [get_weather]).run_sync(scenario).output

    return text, stream, tools


# LangChain: the chat model classes (invoke, stream) and create_agent's tool loop.


def langchain_model(h: Harness, kind: str) -> Any:
    if kind == "openai":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model="gpt-4.1", base_url=f"{h.url}/v1", api_key=h.key, max_retries=0)
    if kind == "azure":
        from langchain_openai import AzureChatOpenAI

        return AzureChatOpenAI(
            azure_endpoint=h.url, azure_deployment="gpt-4.1", api_version="2024-10-21", api_key=h.key, max_retries=0
        )
    if kind == "anthropic":
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(model="claude-sonnet-4-6", base_url=h.url, api_key=h.key, max_retries=0)
    from langchain_google_genai import ChatGoogleGenerativeAI

    # Its default transport is gRPC, which the harness does not serve: REST is the one way over HTTP.
    return ChatGoogleGenerativeAI(
        model="gemini-2.5-flash", base_url=h.url, google_api_key=h.key, transport="rest", timeout=20, max_retries=0
    )


def langchain_case(kind: str) -> tuple[Callable[..., str], Callable[..., list[str]] | None, Callable[..., str]]:
    def text(h: Harness, scenario: str) -> str:
        return langchain_model(h, kind).invoke(scenario).text

    def stream(h: Harness, scenario: str) -> list[str]:
        return [chunk.text for chunk in langchain_model(h, kind).stream(scenario) if chunk.text]

    def tools(h: Harness, scenario: str) -> str:
        from langchain.agents import create_agent
        from langchain_core.tools import tool

        @tool
        def get_weather(city: str) -> str:
            """The weather in a city."""
            return h.get_weather(city)

        agent = create_agent(langchain_model(h, kind), tools=[get_weather], system_prompt="You are a weather assistant")
        return agent.invoke({"messages": [{"role": "user", "content": scenario}]})["messages"][-1].text

    return text, stream, tools


CLIENTS = [
    Client("openai-chat", "/v1/chat/completions", *chat_case(openai_client)),
    Client("azure-openai-chat", "/openai/deployments/gpt-4.1/chat/completions", *chat_case(azure_client)),
    Client("openai-responses", "/v1/responses", responses_text, responses_stream, responses_tools),
    Client("anthropic-messages", "/v1/messages", messages_text, messages_stream, messages_tools),
    Client("google-genai", "/v1/models/gemini-2.5-flash:generateContent", genai_text, genai_stream, genai_tools),
    Client("openai-agents", "/v1/responses", agents_text, agents_stream, agents_tools),
    Client("pydantic-ai-openai-responses", "/v1/responses", *pydantic_case("responses")),
    Client("pydantic-ai-openai-chat", "/v1/chat/completions", *pydantic_case("chat")),
    Client("pydantic-ai-anthropic", "/v1/messages", *pydantic_case("anthropic")),
    Client("pydantic-ai-google", "/v1/models/gemini-2.5-flash:generateContent", *pydantic_case("google")),
    Client("langchain-openai", "/v1/chat/completions", *langchain_case("openai")),
    Client("langchain-azure-openai", "/openai/deployments/gpt-4.1/chat/completions", *langchain_case("azure")),
    Client("langchain-anthropic", "/v1/messages", *langchain_case("anthropic")),
    Client("langchain-google-genai", "/v1beta/models/gemini-2.5-flash:generateContent", *langchain_case("google")),
]
IDS = [client.name for client in CLIENTS]
STREAMING = [client for client in CLIENTS if client.stream]


@pytest.mark.parametrize("client", CLIENTS, ids=IDS)
def test_it_answers_text_through_each_client(client: Client, harness: Harness) -> None:
    scenario = text_scenario(client.name)
    assert client.text(harness, scenario) == TEXT
    assert paths(played(scenario, [1])) == {client.path}


@pytest.mark.parametrize("client", STREAMING, ids=[client.name for client in STREAMING])
def test_it_streams_through_each_client(client: Client, harness: Harness) -> None:
    scenario = stream_scenario(client.name)
    assert client.stream is not None
    deltas = client.stream(harness, scenario)
    assert "".join(deltas) == STREAMED and len(deltas) > 1
    assert paths(played(scenario, [1])) == {streaming(client.path)}


@pytest.mark.parametrize("client", CLIENTS, ids=IDS)
def test_it_runs_each_client_s_own_tool_loop(client: Client, harness: Harness) -> None:
    scenario = tools_scenario(client.name)
    assert client.tools(harness, scenario) == ANSWER
    assert harness.calls == ["Paris"]
    run = played(scenario, [1, 2])
    assert paths(run) == {client.path}
    if client.name == "anthropic-messages":  # the tool runner threads the conversation by default
        assert threads(run) == ["create", "continue"]
