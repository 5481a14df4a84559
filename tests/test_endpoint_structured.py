"""Through the real SDKs against the server: ``required`` / ``any`` allow every offered tool (the scenario calls the
second one), and a scenario turn that states its answer once as ``{"kind": "structured", "data": {...}}`` answers
however the client asks for it: the openai SDK's ``parse`` (a json_schema structured output), a forced tool over
OpenAI, Anthropic and Bedrock (``{"any": {}}``), Bedrock Converse's ``outputConfig``, Gemini's ``response_schema``,
pydantic-ai's default output tool on OpenAI and Anthropic."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import boto3
import openai
from botocore.config import Config
from google import genai
from google.genai import types
from pydantic import BaseModel, Field

from tests.conftest import make_client, make_scenario, recorded_run


class Person(BaseModel):
    """Someone the user asked about."""

    name: str
    age: int = Field(ge=0)
    languages: list[str]


ALICE = {"name": "Alice", "age": 30, "languages": ["en", "nb"]}
PERSON = Person.model_json_schema()
OAI_TOOLS = [
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {"name": "final_answer", "parameters": {
        "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}},
]  # fmt: skip
CLAUDE_TOOLS = [
    {"name": f["function"]["name"], "description": "a tool", "input_schema": f["function"]["parameters"]}
    for f in OAI_TOOLS
]


def structured(scenario_id: str, data: Any = ALICE) -> str:
    make_scenario(scenario_id, [{"turn": 1, "response": {"kind": "structured", "data": data}}])
    return scenario_id


def final_answer(scenario_id: str) -> str:
    call = {"tool_name": "final_answer", "arguments": {"answer": "42"}}
    make_scenario(scenario_id, [{"turn": 1, "response": {"kind": "tool-call", "tool_calls": [call]}}])
    return scenario_id


def test_openai_required_lets_the_scenario_call_the_second_tool(oai: openai.OpenAI) -> None:
    scenario = final_answer("required-second")
    reply = oai.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": scenario}], tools=OAI_TOOLS, tool_choice="required"
    )
    call = reply.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("final_answer", {"answer": "42"})


def test_anthropic_any_lets_the_scenario_call_the_second_tool(claude: anthropic.Anthropic) -> None:
    scenario = final_answer("any-second")
    reply = claude.messages.create(
        model="claude-sonnet-4-6", max_tokens=200, messages=[{"role": "user", "content": scenario}],
        tools=CLAUDE_TOOLS, tool_choice={"type": "any"},
    )  # fmt: skip
    uses = [(b.name, b.input) for b in reply.content if b.type == "tool_use"]
    assert uses == [("final_answer", {"answer": "42"})] and reply.stop_reason == "tool_use"


def test_openai_parse_gets_the_data_as_its_structured_output(oai: openai.OpenAI) -> None:
    scenario = structured("parse-person")
    reply = oai.chat.completions.parse(
        model="gpt-4o", messages=[{"role": "user", "content": scenario}], response_format=Person
    )
    assert reply.choices[0].message.parsed == Person(**ALICE)


def test_a_structured_answer_that_breaks_the_schema_fails_validation(oai: openai.OpenAI) -> None:
    scenario = structured("parse-bad", {"name": "Alice", "age": -3, "languages": []})
    reply = oai.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": scenario}],
        response_format={"type": "json_schema", "json_schema": {"name": "Person", "schema": PERSON}},
    )  # fmt: skip
    report = reply.choices[0].message.tool_calls[0].function.arguments
    assert "asks for JSON valid against 'Person'; turn 1's structured answer fails it" in report
    assert "at $.age: -3 is less than the minimum of 0" in report


def test_an_openai_forced_tool_gets_the_data_as_its_arguments(oai: openai.OpenAI) -> None:
    scenario = structured("forced-openai")
    tools = [*OAI_TOOLS, {"type": "function", "function": {"name": "Person", "parameters": PERSON}}]
    for stream in (False, True):
        kwargs: dict[str, Any] = {"tools": tools, "tool_choice": {"type": "function", "function": {"name": "Person"}}}
        messages = [{"role": "user", "content": scenario}]
        if stream:
            with oai.chat.completions.stream(model="gpt-4o", messages=messages, **kwargs) as events:
                message = events.get_final_completion().choices[0].message
        else:
            message = oai.chat.completions.create(model="gpt-4o", messages=messages, **kwargs).choices[0].message
        call = message.tool_calls[0]
        assert (call.function.name, json.loads(call.function.arguments)) == ("Person", ALICE)


def test_the_run_page_and_the_stream_summary_show_a_structured_answer(oai: openai.OpenAI, admin_client: Any) -> None:
    scenario = structured("page-person")
    schema_format = {"type": "json_schema", "json_schema": {"name": "Person", "schema": PERSON}}
    raw = oai.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": scenario}], response_format=schema_format
    )
    run_id = raw.headers["x-harness-run"]
    recorded_run(run_id, events=4)
    page = admin_client.get(f"/runs/{run_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    table = html[html.index('id="turn-1-expectations"') : html.index('id="turn-1-events"')]
    assert (
        '<tr class="ok"><th scope="row">Structured output</th><td>JSON valid against &#x27;Person&#x27;</td>' in table
    )
    summary = make_client("read").get(f"/runs/{run_id}/stream-summary").json()["responses"][0]["summary"]
    assert json.loads(summary["text"]) == ALICE == json.loads(raw.parse().choices[0].message.content)


def test_an_anthropic_forced_tool_gets_the_data_as_its_input(claude: anthropic.Anthropic) -> None:
    scenario = structured("forced-claude")
    tools = [*CLAUDE_TOOLS, {"name": "Person", "description": "the person", "input_schema": PERSON}]
    reply = claude.messages.create(
        model="claude-sonnet-4-6", max_tokens=300, messages=[{"role": "user", "content": scenario}],
        tools=tools, tool_choice={"type": "tool", "name": "Person"},
    )  # fmt: skip
    assert [(b.name, b.input) for b in reply.content if b.type == "tool_use"] == [("Person", ALICE)]


def test_gemini_response_schema_gets_the_data(harness_server: Any, api_key: str, transactional_db: None) -> None:
    scenario = structured("gemini-person")
    client = genai.Client(api_key=api_key, http_options=types.HttpOptions(base_url=harness_server.url))
    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=Person)
    reply = client.models.generate_content(model="gemini-2.5-flash", contents=scenario, config=config)
    assert reply.parsed == Person(**ALICE)


def test_bedrock_converse_gets_the_data_as_output_config_and_as_any_tool(
    harness_server: Any, transactional_db: None
) -> None:
    runtime = boto3.client(
        "bedrock-runtime", endpoint_url=harness_server.url, region_name="us-east-1", aws_access_key_id="AKIASTRUCTURED",
        aws_secret_access_key="fake-secret-key", config=Config(retries={"total_max_attempts": 1}),
    )  # fmt: skip
    scenario = structured("bedrock-person")
    messages = [{"role": "user", "content": [{"text": scenario}]}]
    schema = {"jsonSchema": {"schema": json.dumps(PERSON), "name": "Person"}}
    output = {"textFormat": {"type": "json_schema", "structure": schema}}
    reply = runtime.converse(modelId="anthropic.claude-sonnet-4-6", messages=messages, outputConfig=output)
    assert json.loads(reply["output"]["message"]["content"][0]["text"]) == ALICE
    specs = [{"toolSpec": {"name": t["name"], "inputSchema": {"json": t["input_schema"]}}} for t in CLAUDE_TOOLS]
    specs.append({"toolSpec": {"name": "Person", "inputSchema": {"json": PERSON}}})
    tools = {"tools": specs, "toolChoice": {"any": {}}}
    reply = runtime.converse(modelId="anthropic.claude-sonnet-4-6", messages=messages, toolConfig=tools)
    uses = [b["toolUse"] for b in reply["output"]["message"]["content"] if "toolUse" in b]
    assert [(u["name"], u["input"]) for u in uses] == [("Person", ALICE)] and reply["stopReason"] == "tool_use"


def roll_dice() -> str:
    """Roll a six-sided die."""
    return "4"


def test_pydantic_ai_output_tools_get_the_data(harness_server: Any, api_key: str, transactional_db: None) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.providers.openai import OpenAIProvider

    scenario = structured("pydantic-ai-person")
    models = [
        OpenAIChatModel("gpt-4o", provider=OpenAIProvider(base_url=f"{harness_server.url}/v1", api_key=api_key)),
        AnthropicModel("claude-sonnet-4-6", provider=AnthropicProvider(base_url=harness_server.url, api_key=api_key)),
    ]
    for model in models:
        # A function tool beside the output tool: the data goes to ``final_result``, whose parameters describe it.
        result = Agent(model, output_type=Person, tools=[roll_dice]).run_sync(scenario)
        assert result.output == Person(**ALICE)
