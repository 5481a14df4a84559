"""What a request demands of its answer, honoured through the official SDKs and the frameworks that rely on it: a
forced tool gets a call with arguments valid against its schema, a structured output gets JSON valid against its
schema (checked with ``jsonschema``), deterministically; a scenario turn that contradicts either fails validation,
saying what was asked and where the answer fails it."""

from __future__ import annotations

import json

import anthropic
import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field

from harnessweb.testing.harness import Harness
from tests.conftest import make_scenario


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    celsius: int = Field(ge=-60, le=60)
    conditions: list[str] = Field(min_length=1)


WEATHER = Weather.model_json_schema()
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}
ANTHROPIC_TOOL = {"name": "get_weather", "description": "weather", "input_schema": WEATHER}
USER = [{"role": "user", "content": "What is the weather in Oslo?"}]


def failure_report(reply) -> str:
    """The problem a failed turn reports (the seed's final report, as a tool call)."""
    message = reply.choices[0].message
    assert message.content == "Scenario validation failed."
    return message.tool_calls[0].function.arguments


@pytest.mark.parametrize(
    "tool_choice", ["required", {"type": "function", "function": {"name": "get_weather"}}], ids=["required", "named"]
)
def test_it_answers_a_forced_openai_tool_with_valid_arguments(harness: Harness, tool_choice) -> None:
    client = harness.openai_client()
    other = {"type": "function", "function": {"name": "other", "parameters": {"type": "object"}}}
    tools = [TOOL, other] if tool_choice != "required" else [TOOL]
    first = client.chat.completions.create(model="gpt-4o", messages=USER, tools=tools, tool_choice=tool_choice)
    call = first.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather" and first.choices[0].finish_reason == "tool_calls"
    jsonschema.validate(json.loads(call.function.arguments), WEATHER)
    again = client.chat.completions.create(model="gpt-4o", messages=USER, tools=tools, tool_choice=tool_choice)
    assert again.choices[0].message.tool_calls[0].function.arguments == call.function.arguments


@pytest.mark.parametrize("stream", [False, True])
def test_it_answers_a_forced_anthropic_tool(harness: Harness, stream: bool) -> None:
    client = harness.anthropic_client()
    request = {"model": "claude-sonnet-4-6", "max_tokens": 200, "messages": USER, "tools": [ANTHROPIC_TOOL]}
    if stream:
        with client.messages.stream(**request, tool_choice={"type": "any"}) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**request, tool_choice={"type": "tool", "name": "get_weather"})
    block = next(b for b in message.content if b.type == "tool_use")
    assert block.name == "get_weather" and message.stop_reason == "tool_use"
    jsonschema.validate(block.input, WEATHER)


def test_it_answers_json_schema_and_json_object_with_valid_json(harness: Harness) -> None:
    client = harness.openai_client()
    schema_format = {"type": "json_schema", "json_schema": {"name": "Weather", "schema": WEATHER, "strict": True}}
    reply = client.chat.completions.create(model="gpt-4o", messages=USER, response_format=schema_format)
    jsonschema.validate(json.loads(reply.choices[0].message.content), WEATHER)
    parsed = client.chat.completions.parse(model="gpt-4o", messages=USER, response_format=Weather)
    assert isinstance(parsed.choices[0].message.parsed, Weather)
    loose = client.chat.completions.create(model="gpt-4o", messages=USER, response_format={"type": "json_object"})
    assert isinstance(json.loads(loose.choices[0].message.content), dict)


def test_it_answers_responses_and_anthropic_structured_outputs(harness: Harness) -> None:
    parsed = harness.openai_client().responses.parse(model="gpt-4o", input="Oslo weather?", text_format=Weather)
    assert isinstance(parsed.output_parsed, Weather)
    message = harness.anthropic_client().messages.create(
        model="claude-sonnet-4-6",
        max_tokens=200,
        messages=USER,
        extra_body={"output_format": {"type": "json_schema", "schema": WEATHER}},
    )
    jsonschema.validate(json.loads(message.content[0].text), WEATHER)


def test_it_answers_gemini_response_schema(harness: Harness) -> None:
    from google.genai import types

    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=Weather)
    reply = harness.genai_client().models.generate_content(model="gemini-2.5-flash", contents="Oslo?", config=config)
    assert isinstance(reply.parsed, Weather)


def test_it_serves_langchain_function_calling_structured_output(harness: Harness) -> None:
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(model="gpt-4o", base_url=harness.base_url + "/v1", api_key="k", http_client=harness.http_client())
    result = chat.with_structured_output(Weather, method="function_calling").invoke("Oslo weather?")
    assert isinstance(result, Weather)
    assert harness.last_call.params["tool_choice"]["function"]["name"] == "Weather"


async def test_it_serves_pydantic_ai_structured_output(harness: Harness) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(
        base_url=harness.base_url + "/v1", api_key="k", http_client=harness.http_client(asynchronous=True)
    )
    result = await Agent(OpenAIChatModel("gpt-4o", provider=provider), output_type=Weather).run("Oslo weather?")
    assert isinstance(result.output, Weather)


def test_it_fails_a_scenario_turn_that_contradicts_a_forced_tool(harness: Harness) -> None:
    harness.use_scenario(
        {"id": "prose", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "It is sunny."}}]}
    )
    reply = harness.openai_client().chat.completions.create(
        model="gpt-4o", messages=USER, tools=[TOOL], tool_choice="required"
    )
    assert "tool_choice forces 'get_weather' but turn 1 answers text" in failure_report(reply)
    harness.use_scenario(
        {"id": "prose-allowed", "turns": [{"turn": 1, "ignore_tool_choice": True,
                                           "response": {"kind": "text", "assistant_text": "It is sunny."}}]}
    )  # fmt: skip
    allowed = harness.openai_client().chat.completions.create(
        model="gpt-4o", messages=USER, tools=[TOOL], tool_choice="required"
    )
    assert allowed.choices[0].message.content == "It is sunny."


def test_it_fails_a_scenario_turn_whose_text_breaks_the_schema(harness: Harness) -> None:
    text = json.dumps({"city": "Oslo", "celsius": "warm", "conditions": ["sun"]})
    harness.use_scenario(
        {"id": "bad-json", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": text}}]}
    )
    schema_format = {"type": "json_schema", "json_schema": {"name": "Weather", "schema": WEATHER}}
    reply = harness.openai_client().chat.completions.create(
        model="gpt-4o", messages=USER, response_format=schema_format
    )
    assert "asks for JSON valid against 'Weather'" in failure_report(reply)
    assert "at $.celsius: 'warm' is not of type 'integer'" in failure_report(reply)


def test_it_honours_the_demands_on_the_server_too(oai: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    make_scenario("server-prose", [{"turn": 1, "response": {"kind": "text", "assistant_text": "prose"}}])
    forced = oai.chat.completions.create(model="gpt-4o", messages=USER, tools=[TOOL], tool_choice="required")
    jsonschema.validate(json.loads(forced.choices[0].message.tool_calls[0].function.arguments), WEATHER)
    message = claude.messages.create(
        model="claude-sonnet-4-6", max_tokens=200, messages=USER, tools=[ANTHROPIC_TOOL], tool_choice={"type": "any"}
    )
    assert message.content[-1].type == "tool_use"
    failing = oai.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "server-prose"}], tools=[TOOL], tool_choice="required"
    )
    assert "tool_choice forces 'get_weather'" in failure_report(failing)


def test_it_takes_a_chat_request_without_a_model_in_lorem_and_instruction_mode(harness: Harness) -> None:
    client = harness.http_client()
    url = harness.base_url + "/v1/chat/completions"
    lorem = client.post(url, json={"messages": [{"role": "user", "content": "no model named"}]})
    assert lorem.status_code == 200 and lorem.json()["model"] == "harness-default"
    instruction = '<|instruction_start|>{"messages":[{"text_message":{"length":3}}]}<|instruction_end|>'
    instructed = client.post(url, json={"messages": [{"role": "user", "content": instruction}], "stream": True})
    assert instructed.status_code == 200 and '"model":"harness-default"' in instructed.text
    harness.use_scenario({"id": "named", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "x"}}]})
    refused = client.post(url, json={"messages": [{"role": "user", "content": "hi"}]})
    assert refused.status_code == 400 and "you must provide a model parameter" in refused.json()["error"]["message"]
    wrong = client.post(url, json={"model": 5, "messages": [{"role": "user", "content": "hi"}]})
    assert wrong.status_code == 400 and wrong.json()["error"]["param"] == "model"
