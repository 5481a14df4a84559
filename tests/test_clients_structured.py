"""Structured output through the client libraries that force a tool or ask for a schema: each states a scenario's
answer once, as a turn ``{"kind": "structured", "data": {...}}``, and gets it back parsed into its pydantic model
however it asks (litellm's ``response_format`` on OpenAI and Anthropic, openai-agents' ``output_type`` through
``LitellmModel``, magentic's forced tool, mirascope's strict schema and forced tool, smolagents' ToolCallingAgent
under ``tool_choice: "required"``, haystack's CohereChatGenerator in a tool loop). Each case checks the object it
parsed, the way its request asked (so a library that changes how it asks shows here) and the run the harness
recorded, passed. magentic and mirascope run from virtualenvs of their own (tests/clients/<name>/check.py). The
README's "Structured output by client" table is this file's outcome."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.client_runs import ANSWER, Harness, played
from tests.conftest import make_scenario

ROOT = Path(__file__).resolve().parent.parent

WEATHER = {"city": "Paris", "celsius": 21, "conditions": "sunny"}


class Weather(BaseModel):
    city: str
    celsius: int
    conditions: str


@pytest.fixture
def harness(harness_server: Any, api_key: str, transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> Harness:
    # LiteLLM fetches its model prices and Anthropic beta headers from the network unless told not to; tracing and
    # telemetry off: nothing leaves the machine.
    for name, value in {
        "LITELLM_OFFLINE_MODE": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "true",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
    }.items():
        monkeypatch.setenv(name, value)
    return Harness(harness_server.url, api_key, [])


def structured_scenario(name: str) -> str:
    """A one-turn scenario whose answer is WEATHER, whatever way the client asks for it."""
    make_scenario(f"structured-{name}", [{"turn": 1, "response": {"kind": "structured", "data": WEATHER}}])
    return f"structured-{name}"


def request_bodies(run: Any) -> list[dict[str, Any]]:
    """The bodies of the run's requests, in order."""
    return [event.data["body"] for event in run.events.filter(kind="request").order_by("seq")]


# -- one request, one model: how each library asks ---------------------------------------------------------------


def json_schema_format(body: dict[str, Any]) -> bool:
    """Chat Completions' structured output (``response_format`` json_schema)."""
    return body.get("response_format", {}).get("type") == "json_schema"


def anthropic_output_format(body: dict[str, Any]) -> bool:
    """Anthropic's structured output, as ``output_format`` (the beta's name) or ``output_config.format``."""
    output = body.get("output_format") or (body.get("output_config") or {}).get("format") or {}
    return output.get("type") == "json_schema"


def responses_format(body: dict[str, Any]) -> bool:
    """The Responses API's structured output (``text.format`` json_schema)."""
    return (body.get("text") or {}).get("format", {}).get("type") == "json_schema"


def cohere_json_object(body: dict[str, Any]) -> bool:
    """Cohere's structured output (``response_format`` json_object with its ``json_schema``)."""
    response_format = body.get("response_format") or {}
    return response_format.get("type") == "json_object" and "json_schema" in response_format


def forced_tool(body: dict[str, Any]) -> bool:
    """A named tool forced, in Chat Completions', the Responses API's or Anthropic's form."""
    choice = body.get("tool_choice")
    return isinstance(choice, dict) and bool(choice.get("name") or choice.get("function", {}).get("name"))


def litellm_openai(h: Harness, scenario: str) -> Weather:
    import litellm

    answer = litellm.completion(
        model="openai/gpt-4.1",
        api_base=f"{h.url}/v1",
        api_key=h.key,
        messages=[{"role": "user", "content": scenario}],
        response_format=Weather,
    )
    return Weather.model_validate_json(answer.choices[0].message.content)


def litellm_anthropic(h: Harness, scenario: str) -> Weather:
    import litellm

    answer = litellm.completion(
        model="anthropic/claude-sonnet-4-6",
        api_base=h.url,
        api_key=h.key,
        max_tokens=256,
        messages=[{"role": "user", "content": scenario}],
        response_format=Weather,
    )
    return Weather.model_validate_json(answer.choices[0].message.content)


def agents_litellm(h: Harness, scenario: str) -> Weather:
    from agents import Agent, Runner, set_tracing_disabled
    from agents.extensions.models.litellm_model import LitellmModel

    set_tracing_disabled(True)
    model = LitellmModel(model="openai/gpt-4.1", base_url=f"{h.url}/v1", api_key=h.key)
    agent = Agent(name="weather", instructions="You are a weather assistant", output_type=Weather, model=model)
    return Runner.run_sync(agent, scenario).final_output


def haystack_cohere(h: Harness, scenario: str) -> Weather:
    from haystack.dataclasses import ChatMessage
    from haystack.utils import Secret
    from haystack_integrations.components.generators.cohere import CohereChatGenerator

    generator = CohereChatGenerator(
        api_key=Secret.from_token(h.key),
        api_base_url=h.url,
        model="command-a-03-2025",
        generation_kwargs={"response_format": {"type": "json_object", "json_schema": Weather.model_json_schema()}},
    )
    [reply] = generator.run([ChatMessage.from_user(scenario)])["replies"]
    return Weather.model_validate_json(reply.text)


@dataclass
class Case:
    name: str
    path: str  # the endpoint it calls
    asks: Callable[[dict[str, Any]], bool]  # how its request asks for the structure
    run: Callable[[Harness, str], Weather]


CASES = [
    Case("litellm-openai", "/v1/chat/completions", json_schema_format, litellm_openai),
    Case("litellm-anthropic", "/v1/messages", anthropic_output_format, litellm_anthropic),
    Case("openai-agents-litellm", "/v1/chat/completions", json_schema_format, agents_litellm),
    Case("haystack-cohere", "/v2/chat", cohere_json_object, haystack_cohere),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_structured_turn_reaches_the_librarys_model(case: Case, harness: Harness) -> None:
    scenario = structured_scenario(case.name)
    assert case.run(harness, scenario) == Weather(**WEATHER)
    run = played(scenario, [1])
    [body] = request_bodies(run)
    assert case.asks(body), body
    assert {event.data["path"].split("?")[0] for event in run.events.filter(kind="request")} == {case.path}


# -- magentic and mirascope, each from a virtualenv of its own (see the Makefile's SIDE_CLIENTS) ------------------


@dataclass
class SideCase:
    client: str  # the virtualenv .venv/<client> and the script tests/clients/<client>/check.py
    case: str  # what the script is asked to run
    path: str
    asks: Callable[[dict[str, Any]], bool]


SIDE_CASES = [
    SideCase("magentic", "openai", "/v1/chat/completions", forced_tool),
    SideCase("magentic", "anthropic", "/v1/messages", forced_tool),
    SideCase("mirascope", "openai:default", "/v1/responses", responses_format),  # its "strict" mode
    SideCase("mirascope", "openai:tool", "/v1/responses", forced_tool),
    SideCase("mirascope", "anthropic:default", "/v1/messages", anthropic_output_format),
    SideCase("mirascope", "anthropic:tool", "/v1/messages", forced_tool),
]


@pytest.mark.parametrize("client", ["magentic", "mirascope"])
def test_a_structured_turn_reaches_a_side_clients_model(client: str, harness: Harness) -> None:
    # One process runs all of a client's cases: its start (the imports) is most of a case's time.
    python = ROOT / ".venv" / client / "bin" / "python"
    assert python.exists(), f"{client}'s virtualenv is missing: run `make clients`"
    cases = {side.case: side for side in SIDE_CASES if side.client == client}
    scenarios = {case: structured_scenario(f"{client}-{case.replace(':', '-')}") for case in cases}
    script = ROOT / "tests" / "clients" / client / "check.py"
    done = subprocess.run(
        [str(python), str(script), harness.url, harness.key, *(f"{c}={s}" for c, s in scenarios.items())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"case": case, "weather": WEATHER} for case in cases
    ]
    for case, side in cases.items():
        run = played(scenarios[case], [1])
        [body] = request_bodies(run)
        assert side.asks(body), (case, body)
        assert {event.data["path"].split("?")[0] for event in run.events.filter(kind="request")} == {side.path}


# -- tool loops that end in structured data ----------------------------------------------------------------------


def test_smolagents_tool_calling_agent_finishes_under_required(harness: Harness) -> None:
    """ToolCallingAgent sends ``tool_choice: "required"`` with every step: turn 1 calls get_weather, turn 2's
    structured data is the arguments of ``final_answer``, the offered tool whose parameters take it (not the first
    tool of the list)."""
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    make_scenario(
        "structured-smolagents",
        [
            {
                "turn": 1,
                "expected_tools": ["get_weather", "final_answer"],
                "response": {
                    "kind": "tool-call",
                    "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Paris"}}],
                },
            },
            {"turn": 2, "response": {"kind": "structured", "data": {"answer": ANSWER}}},
        ],
    )

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: the city
        """
        return harness.get_weather(city)

    # Its task reaches the model wrapped in its own prompt: the header names the scenario.
    model = OpenAIServerModel(
        model_id="gpt-4.1",
        api_base=f"{harness.url}/v1",
        api_key=harness.key,
        client_kwargs={"default_headers": {"X-Harness-Scenario": "structured-smolagents"}, "max_retries": 0},
    )
    agent = ToolCallingAgent(tools=[get_weather], model=model, max_steps=3, verbosity_level=0)
    assert agent.run("What is the weather in Paris?") == ANSWER
    assert harness.calls == ["Paris"]
    run = played("structured-smolagents", [1, 2])
    assert [body.get("tool_choice") for body in request_bodies(run)] == ["required", "required"]


def test_haystack_cohere_agent_runs_its_tool_and_gets_the_data_as_text(harness: Harness) -> None:
    """haystack's Agent over CohereChatGenerator: turn 1 calls get_weather, haystack sends its result back (as a
    string, ``{"result": ...}`` in JSON), turn 2's structured data, with no schema asked, comes back as JSON text."""
    from haystack.components.agents import Agent
    from haystack.dataclasses import ChatMessage
    from haystack.tools import Tool
    from haystack.utils import Secret
    from haystack_integrations.components.generators.cohere import CohereChatGenerator

    make_scenario(
        "structured-haystack-cohere",
        [
            {
                "turn": 1,
                "response": {
                    "kind": "tool-call",
                    "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Paris"}}],
                },
            },
            {"turn": 2, "response": {"kind": "structured", "data": WEATHER}},
        ],
    )
    weather_tool = Tool(
        name="get_weather",
        description="The weather in a city.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        function=harness.get_weather,
    )
    generator = CohereChatGenerator(
        api_key=Secret.from_token(harness.key), api_base_url=harness.url, model="command-a-03-2025"
    )
    agent = Agent(chat_generator=generator, tools=[weather_tool])
    result = agent.run(messages=[ChatMessage.from_user("structured-haystack-cohere")])
    assert Weather.model_validate_json(result["last_message"].text) == Weather(**WEATHER)
    assert harness.calls == ["Paris"]
    run = played("structured-haystack-cohere", [1, 2])
    tool_message = next(m for m in request_bodies(run)[1]["messages"] if m["role"] == "tool")
    assert json.loads(tool_message["content"]) == {"result": json.dumps({"city": "Paris", "sky": "clear"})}
