"""The pytest plugin as a team uses it: throwaway projects (pytester, in a subprocess, installing nothing) whose
tests use the ``harness`` fixture with the real SDKs in-process, pass, and fail where they must with messages that
say why; alone, under ``-n 2`` (pytest-xdist) and in random order, never sharing a test's state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SCENARIO = {
    "id": "weather",
    "turns": [
        {
            "turn": 1,
            "expected_tools": ["get_weather"],
            "failures_before_success": 1,
            "failure_status": "rate_limit",
            "failure_retry_after_ms": 10,
            "response": {
                "kind": "tool-call",
                "tool_calls": [{"tool_name": "get_weather", "call_id": "call_1", "arguments": {"city": "Oslo"}}],
            },
        },
        {"turn": 2, "response": {"kind": "text", "assistant_text": "It is sunny in Oslo."}},
    ],
}

TESTS = """
import anthropic
import openai
import pytest

WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def ask(client, text="hi", **kw):
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": text}], **kw)


def test_set_response_through_openai(harness):
    harness.set_response(text="Hello from the harness")
    assert ask(harness.openai_client()).choices[0].message.content == "Hello from the harness"
    call = harness.last_call
    assert (call.protocol, call.model, call.prompt, call.path) == ("openai", "gpt-4o", "hi", "/v1/chat/completions")
    assert call.response["text"] == "Hello from the harness"


def test_answers_come_in_order_and_the_last_stays(harness):
    harness.set_response(text="one")
    harness.set_response(text="two")
    client = harness.openai_client()
    assert [ask(client).choices[0].message.content for _ in range(3)] == ["one", "two", "two"]


def test_model_scoped_answers_and_streaming_anthropic(harness):
    harness.set_response(text="for claude", model="claude-sonnet-4-6")
    harness.set_response(text="for anyone else")
    client = harness.anthropic_client()
    with client.messages.stream(model="claude-sonnet-4-6", max_tokens=50,
                                messages=[{"role": "user", "content": "hey"}]) as stream:
        assert stream.get_final_text() == "for claude"
    other = client.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "x"}])
    assert other.content[0].text == "for anyone else"
    assert harness.get_model("claude-sonnet-4-6").prompt_count == 1
    assert harness.models["claude-haiku-4-5"].call_history[0].stream is False


def test_json_answer_and_history_fields(harness):
    harness.set_response(json={"found": True})
    schema = {"type": "object", "properties": {"found": {"type": "boolean"}}}
    response = ask(harness.openai_client(), "find it", temperature=0.3, max_completion_tokens=40, seed=7,
                   response_format={"type": "json_schema", "json_schema": {"name": "Found", "schema": schema}})
    assert response.choices[0].message.content == '{"found": true}'
    call = harness.last_call
    assert (call.temperature, call.max_tokens, call.params["seed"]) == (0.3, 40, 7)
    assert call.schema["title"] == "Found" and call["prompt_length"] == len("find it")
    harness.assert_called_with(prompt_contains="find", temperature=0.3, schema="Found")


def test_forced_tool_gets_the_json_as_arguments(harness):
    harness.set_response(json={"city": "Oslo"})
    response = ask(harness.openai_client(), tools=[WEATHER_TOOL],
                   tool_choice={"type": "function", "function": {"name": "get_weather"}})
    call = response.choices[0].message.tool_calls[0]
    assert (call.function.name, call.function.arguments) == ("get_weather", '{"city": "Oslo"}')


def test_rate_limit_is_retried_by_the_sdk(harness):
    harness.set_error("rate_limit", times=1)
    harness.set_response(text="after the retry")
    assert ask(harness.openai_client()).choices[0].message.content == "after the retry"
    assert [c.error and c.error["status"] for c in harness.calls] == [429, None]


def test_exception_reaches_the_sdk_as_a_connection_error(harness):
    harness.set_error(ConnectionError("Network error"), times="always")
    with pytest.raises(openai.APIConnectionError) as caught:
        ask(harness.openai_client(max_retries=0))
    assert isinstance(caught.value.__cause__.__cause__, ConnectionError)


def test_other_exceptions_leave_the_transport_as_they_are(harness):
    harness.set_error(ValueError("API key invalid"), times=2)
    with pytest.raises(ValueError, match="API key invalid"):
        ask(harness.openai_client(max_retries=0))  # openai lets it through
    with pytest.raises(anthropic.APIConnectionError) as caught:  # anthropic wraps any exception
        harness.anthropic_client(max_retries=0).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert isinstance(caught.value.__cause__, ValueError)


def test_dropped_stream_is_a_cut_connection(harness):
    harness.set_error("network_error", times="always")
    with pytest.raises(openai.APIConnectionError):
        list(ask(harness.openai_client(max_retries=0), stream=True))


def test_overloaded_anthropic(harness):
    harness.set_error("model_error", times="always")
    with pytest.raises(anthropic.InternalServerError):
        harness.anthropic_client(max_retries=0).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])


def test_scenario_from_the_session_folder(harness):
    harness.use_scenario("weather")
    client = harness.openai_client()
    first = ask(client, "weather in Oslo?", tools=[WEATHER_TOOL])
    assert first.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert [c.error and c.error["kind"] for c in harness.calls] == ["rate_limit", None]
    messages = [{"role": "user", "content": "weather in Oslo?"}, first.choices[0].message.model_dump(),
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    second = client.chat.completions.create(model="gpt-4o", messages=messages, tools=[WEATHER_TOOL])
    assert second.choices[0].message.content == "It is sunny in Oslo."
    harness.assert_called_times(3)


@pytest.mark.harness_scenario("weather")
def test_marker_plays_a_loaded_scenario(harness):
    first = ask(harness.openai_client(), "weather?", tools=[WEATHER_TOOL])
    assert first.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_scenario_given_whole(harness):
    turn = {"turn": 1, "response": {"kind": "text", "assistant_text": "inline!"}}
    harness.use_scenario({"id": "inline", "turns": [turn]})
    assert ask(harness.openai_client()).choices[0].message.content == "inline!"


def test_default_clients_are_answered_in_process(harness):
    harness.set_response(text="default client")
    assert ask(openai.OpenAI()).choices[0].message.content == "default client"
    assert harness.prompt_count == 1


def test_gemini_client(harness):
    harness.set_response(text="from gemini")
    assert harness.genai_client().models.generate_content(model="gemini-2.5-flash", contents="hi").text == "from gemini"


async def test_async_clients(harness):
    harness.set_response(text="async")
    response = await harness.async_openai_client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}])
    message = await harness.async_anthropic_client().messages.create(
        model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert response.choices[0].message.content == message.content[0].text == "async"


def test_reset_forgets_everything(harness):
    harness.set_response(text="configured")
    ask(harness.openai_client())
    harness.reset()
    assert harness.prompt_count == 0
    assert ask(harness.openai_client()).choices[0].message.content != "configured"


def test_isolation_one(harness):
    assert harness.prompt_count == 0
    harness.set_response(text="one")
    assert ask(harness.openai_client()).choices[0].message.content == "one"


def test_isolation_two(harness):
    assert harness.prompt_count == 0
    assert ask(harness.openai_client()).choices[0].message.content != "one"


def test_fails_wrong_assert_called_with(harness):
    ask(harness.openai_client(), "summarise the report", temperature=0.2)
    ask(harness.openai_client(), "something else")
    harness.assert_called_with(prompt_contains="summarise", temperature=0.7)


def test_fails_real_provider_host(harness):
    import httpx2
    try:
        httpx2.get("https://api.mistral.ai/v1/models")
    except httpx2.ConnectError:
        pass


@pytest.mark.harness_strict
def test_fails_strict_unused_answer(harness):
    harness.set_response(text="never asked for", model="nobody")
    ask(harness.openai_client())
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_project=TESTS)
    scenarios = pytester.mkdir("scenarios")
    (scenarios / "weather.json").write_text(json.dumps(SCENARIO))
    pytester.makeini(
        "[pytest]\nharness_scenarios = scenarios\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    return pytester


def check(result: pytest.RunResult) -> None:
    result.assert_outcomes(passed=21, failed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*No call matches prompt_contains='summarise', temperature=0.7 among 2 call(s). "
            "Closest: call 0 (openai 'gpt-4o', prompt 'summarise the report'), which differs in:*",
            "*- temperature: wanted 0.7, sent 0.2*",
        ]
    )
    result.stdout.fnmatch_lines(["*real provider host api.mistral.ai*"])
    result.stdout.fnmatch_lines(["*never used: set_response(text, model='nobody')*unmatched call 0*"])


def test_it_passes_and_fails_a_throwaway_project_as_it_should(project: pytest.Pytester) -> None:
    check(project.runpytest_subprocess("-p", "no:cacheprovider"))


def test_it_keeps_tests_apart_under_xdist_and_in_random_order(project: pytest.Pytester) -> None:
    check(project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--random-order"))


def test_it_applies_the_harness_to_every_test_with_autouse(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nharness_autouse = true\nharness_strict = true\n")
    pytester.makepyfile(
        test_auto="""
import llm
import openai

def test_default_client_without_naming_the_fixture():
    reply = openai.OpenAI().chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert reply.choices[0].message.content

def test_llm_without_naming_the_fixture():
    assert llm.get_model("anthropic/claude").prompt("x").json() == {"success": True}
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    # Strict mode: the lorem answer is a call nothing configured; the llm default is one too.
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(["*unmatched call 0: openai 'gpt-4o'*lorem*", "*unmatched call 0: llm*default*"])


def test_it_names_the_file_of_a_broken_scenario_folder(pytester: pytest.Pytester) -> None:
    pytester.mkdir("scenarios")
    (pytester.path / "scenarios" / "bad.json").write_text('{"id": "bad", "turns": [{"turn": 0}]}')
    pytester.makepyfile(test_x="def test_x(harness):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-scenarios", "scenarios")
    result.stdout.fnmatch_lines(["*--harness-scenarios:*bad.json*turn*"])
    assert result.ret != 0


def test_it_runs_the_readme_example_as_written(pytester: pytest.Pytester) -> None:
    section = (Path(__file__).resolve().parent.parent / "docs" / "pytest.md").read_text()
    scenario = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    test = section.split("```python\n", 1)[1].split("```", 1)[0]
    command = section.split("```sh\npytest ", 2)[1].split("#", 1)[0].split()
    pytester.mkdir("scenarios")
    (pytester.path / "scenarios" / "weather.yaml").write_text(scenario)
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_weather.py").write_text(test)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *command)
    result.assert_outcomes(passed=1)
