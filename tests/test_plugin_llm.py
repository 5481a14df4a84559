"""Seed 002 whole, in a throwaway project written to it: code under test that calls ``llm.get_model`` itself, tests
with seed 002's fixture names, its three response patterns, its unit tests of the mock, its error handling and
edge cases, ``create_mock_get_model`` in unittest, and code written for real ``llm`` models; then the same project
under ``-n 2`` and in random order."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

PLANNER = '''
"""Code under test: a planner that calls the llm library itself, unchanged."""
import llm
from pydantic import BaseModel


class DiscoveryResult(BaseModel):
    found: bool
    workflow_name: str | None = None


def discover(request: str) -> DiscoveryResult:
    model = llm.get_model("anthropic/claude")
    response = model.prompt(f"Analyze this request: {request}", schema=DiscoveryResult, temperature=0.0)
    return DiscoveryResult(**response.json())


def summarise(text: str) -> tuple[str, int]:
    response = llm.get_model("openai/gpt-4").prompt(text)
    return response.text(), response.usage().output


def with_retries(text: str, attempts: int = 3) -> str:
    for attempt in range(attempts):
        try:
            return llm.get_model("anthropic/claude").prompt(text).text()
        except ConnectionError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")
'''

CLI = """
import sys

from planner import discover

def main(argv):
    result = discover(" ".join(argv))
    print("found" if result.found else "not found")
    return 0 if result.found else 1

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
"""

SEED_TESTS = """
import json

import llm
import pytest

import cli
import planner
from harnessweb.testing import create_mock_get_model


# §4.1 the three response patterns
def test_pattern_structured(mock_llm_responses):
    mock_llm_responses.set("anthropic/claude", {"found": True, "workflow_name": "test-workflow"})
    result = planner.discover("make a report")
    assert result.found and result.workflow_name == "test-workflow"


def test_pattern_text_and_usage(mock_llm_responses):
    mock_llm_responses.set("openai/gpt-4", "a short summary")
    model = llm.get_model("openai/gpt-4")
    response = model.prompt("summarise")
    assert response.text == "a short summary"          # seed 002 reads an attribute
    assert response.text() == "a short summary"        # real llm calls a method
    assert response.usage == {"input_tokens": 1, "output_tokens": 3}
    assert response.usage().output == 3


# §5.2, §5.3 code under test imported normally, calls verified at the boundary
def test_llm_called(mock_llm_calls, mock_llm_responses):
    mock_llm_responses.set("anthropic/claude", {"found": False})
    assert cli.main(["analyze", "my", "files"]) == 1
    model = mock_llm_calls.get_model("anthropic/claude")
    assert model.prompt_count == 1
    assert "analyze" in model.call_history[0]["prompt"]
    assert model.call_history[0]["kwargs"]["schema"] == "DiscoveryResult"
    model.assert_called_with(prompt_contains="Analyze", schema=planner.DiscoveryResult, temperature=0.0)


# §6.1 the mock's own unit tests
def test_mock_returns_consistent_responses(mock_llm_calls):
    assert llm.get_model("anthropic/claude") is llm.get_model("anthropic/claude")
    assert mock_llm_calls("anthropic/claude") is mock_llm_calls.get_model("anthropic/claude")


def test_mock_tracks_call_history(mock_llm_calls):
    llm.get_model("m").prompt("first", temperature=0.5, max_tokens=10).text()
    call = mock_llm_calls.get_model("m").call_history[0]
    assert (call["prompt"], call["prompt_length"], call["temperature"], call["max_tokens"]) == ("first", 5, 0.5, 10)
    assert call["timestamp"] and call["error"] is None and call["response"] == {"success": True}


def test_mock_handles_schema_responses(mock_llm_responses):
    mock_llm_responses.set("anthropic/claude", {"found": True})
    response = llm.get_model("anthropic/claude").prompt("x", schema=planner.DiscoveryResult)
    assert json.loads(response.text()) == {"found": True} == response.json()


def test_mock_simulates_errors(mock_llm_responses):
    mock_llm_responses.set_error("anthropic/claude", ValueError("API key invalid"))
    with pytest.raises(ValueError, match="API key invalid"):
        llm.get_model("anthropic/claude").prompt("x").text()
    assert llm.get_model("anthropic/claude").call_history[0]["error"] == "API key invalid"


def test_mock_isolation_between_tests_a(mock_llm_calls):
    assert mock_llm_calls.models == {}
    llm.get_model("shared").prompt("x").text()


def test_mock_isolation_between_tests_b(mock_llm_calls):
    assert mock_llm_calls.models == {}
    llm.get_model("shared").prompt("x").text()


# §7 error handling
def test_unconfigured_model(mock_llm_calls):
    model = mock_llm_calls.get_model("unconfigured-model")
    assert model.prompt("test").json() == {"success": True}


def test_invalid_response_types(mock_llm_responses):
    mock_llm_responses.set("model", "plain text response")
    response = llm.get_model("model").prompt("test")
    assert response.text == "plain text response"
    with pytest.raises(json.JSONDecodeError):
        response.json()


def test_rate_limit_kind_at_the_boundary(harness):
    harness.set_error("rate_limit", model="anthropic/claude")
    with pytest.raises(llm.ModelError) as caught:
        llm.get_model("anthropic/claude").prompt("x").text()
    assert (caught.value.status, caught.value.kind, caught.value.retry_after_ms) == (429, "rate_limit", 1000)


# §10 edge cases
def test_multiple_models(mock_llm_responses):
    mock_llm_responses.set("anthropic/claude", {"a": 1})
    mock_llm_responses.set("openai/gpt-4", {"b": 2})
    assert llm.get_model("anthropic/claude").prompt("").json() == {"a": 1}
    assert llm.get_model("openai/gpt-4").prompt("").json() == {"b": 2}


def test_streaming(mock_llm_responses):
    mock_llm_responses.set("m", "one two three four five six seven")
    chunks = list(llm.get_model("m").prompt("x", stream=True))
    assert len(chunks) == 2 and "".join(chunks) == "one two three four five six seven"


def test_retry_logic(harness):
    harness.set_error(ConnectionError("Temporary failure"), times=2)
    harness.set_response(text="third time")
    assert planner.with_retries("go") == "third time"
    assert [c.error and c.error["type"] for c in harness.calls] == ["ConnectionError", "ConnectionError", None]


async def test_async_model(harness):
    harness.set_response(text="async answer")
    response = llm.get_async_model("anthropic/claude").prompt("x")
    assert await response.text() == "async answer"
    assert harness.get_model("anthropic/claude").prompt_count == 1


def test_conversation_and_scenario(harness):
    harness.use_scenario({"id": "chat", "turns": [
        {"turn": 1, "response": {"kind": "text", "assistant_text": "first"}},
        {"turn": 2, "response": {"kind": "text", "assistant_text": "second"}}]})
    conversation = llm.get_model("m").conversation()
    assert [conversation.prompt(t).text() for t in ("a", "b")] == ["first", "second"]


def test_tool_calls(harness):
    harness.set_response(tool_calls=[{"name": "lookup", "arguments": {"q": "x"}}])
    def lookup(q: str) -> str:
        return q
    response = llm.get_model("m").prompt("x", tools=[lookup])
    response.text()
    assert [(c.name, c.arguments) for c in response.tool_calls()] == [("lookup", {"q": "x"})]
    assert harness.last_call.tools == ["lookup"]


def test_code_outside_pytest_with_the_factory():
    with create_mock_get_model({"anthropic/claude": {"found": True}}):
        assert planner.discover("x").found
    get_model = create_mock_get_model(side_effect=ConnectionError("Network error"))
    with pytest.raises(ConnectionError):
        get_model("anthropic/claude").prompt("x").text()
"""

UNITTEST = """
import unittest

import planner
from harnessweb.testing import create_mock_get_model


class PlannerTest(unittest.TestCase):
    def test_discovery(self):
        with create_mock_get_model({"anthropic/claude": {"found": True, "workflow_name": "w"}}) as mock:
            self.assertEqual(planner.discover("x").workflow_name, "w")
        self.assertEqual(mock.get_model("anthropic/claude").prompt_count, 1)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(planner=PLANNER, cli=CLI, test_seed002=SEED_TESTS, test_unittest_style=UNITTEST)
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\npythonpath = .\n")
    return pytester


def test_it_runs_a_project_written_to_seed_002(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=20)


def test_it_runs_it_under_xdist_in_random_order(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--random-order")
    result.assert_outcomes(passed=20)
