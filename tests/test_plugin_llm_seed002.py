"""Seed 002 to the letter at the ``llm`` boundary, in a throwaway project: a conftest default that a test overrides
(``set`` means "this model now answers this"), the explicit queue (``sequence``), seed 002's own examples as its
text writes them (§3 to §11: ``model_name``, a per-model ``default_response``, ``reset()`` clearing the models,
streamed chunks with ``.text``, ``prompt()`` recording the call and raising a configured exception when it is made,
the §4.2 call record with ``call["response"]`` as configured and ``call["error"]`` the message)."""

from __future__ import annotations

from dataclasses import fields

import pytest

from harnessweb.testing.calls import Call

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest


@pytest.fixture(autouse=True)
def planner_defaults(mock_llm_responses):
    # the suite's default answers, which a test overrides
    mock_llm_responses.set("anthropic/claude", {"found": False})
    mock_llm_responses.set("openai/gpt-4", "the default summary")
"""

TESTS = """
import datetime
import json
import time
from unittest.mock import Mock

import llm
import pytest
from pydantic import BaseModel

from harnessweb.testing import create_mock_get_model


class DiscoveryResult(BaseModel):
    found: bool


# set(model, response): this model now answers this
def test_a_test_overrides_the_conftest_default(mock_llm_responses):
    assert llm.get_model("anthropic/claude").prompt("before").json() == {"found": False}
    mock_llm_responses.set("anthropic/claude", {"found": True})
    model = llm.get_model("anthropic/claude")
    assert [model.prompt("x").json() for _ in range(3)] == [{"found": True}] * 3


def test_set_response_overrides_too(mock_llm_calls):
    mock_llm_calls.set_response("openai/gpt-4", "the test's own summary")
    assert llm.get_model("openai/gpt-4").prompt("x").text() == "the test's own summary"


def test_sequence_queues_answers_in_order(mock_llm_responses):
    mock_llm_responses.sequence("anthropic/claude", [{"step": 1}, {"step": 2}, "done"])
    model = llm.get_model("anthropic/claude")
    answers = [model.prompt(str(i)).text() for i in range(4)]
    assert answers == ['{"step": 1}', '{"step": 2}', "done", "done"]  # then the last one stays


def test_set_and_sequence_in_server_mode(harness, mock_llm_responses):
    harness.serve()  # the answers become the run's script: a replaced answer must not come back there either
    client = harness.openai_client()
    def ask():
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        return reply.choices[0].message.content
    mock_llm_responses.set("m", {"first": 1})
    assert ask() == '{"first": 1}'
    mock_llm_responses.set("m", {"second": 2})
    assert ask() == '{"second": 2}' == llm.get_model("m").prompt("x").text()
    mock_llm_responses.sequence("m", ["a", "b"])
    assert [ask(), ask(), ask()] == ["a", "b", "b"]


# §3.1 MockLLMModel
def test_model_name_and_default_response(mock_llm_calls):
    model = mock_llm_calls.get_model("openai/gpt-4o")
    assert model.model_name == "openai/gpt-4o"
    assert model.default_response == {"success": True}
    model.default_response = {"ok": "per model"}
    assert model.prompt("x").json() == {"ok": "per model"}
    assert mock_llm_calls.get_model("other").prompt("x").json() == {"success": True}


def test_reset_history_and_assert_called_with(mock_llm_calls):
    model = mock_llm_calls.get_model("anthropic/claude")
    model.prompt("Analyze the files", schema=DiscoveryResult)
    model.assert_called_with(prompt_contains="Analyze", schema=DiscoveryResult)
    with pytest.raises(AssertionError):
        model.assert_called_with(prompt_contains="nowhere")
    model.reset_history()
    assert model.prompt_count == 0 and model.call_history == []


# §3.3 the fixture's own example, and reset(): "Clear all models"
def test_something(mock_llm_calls):
    model = mock_llm_calls.get_model("anthropic/claude")
    assert model.prompt_count == 0


def test_reset_clears_all_models(mock_llm_calls):
    llm.get_model("anthropic/claude").prompt("x")
    assert list(mock_llm_calls.models) == ["anthropic/claude"]
    mock_llm_calls.reset()
    assert mock_llm_calls.models == {}
    assert llm.get_model("anthropic/claude").prompt("x").json() == {"success": True}  # the conftest default too


# prompt() is the call: recorded, and a configured exception raised, when it is made
def test_prompt_records_the_call_when_it_is_made(mock_llm_calls):
    llm.get_model("anthropic/claude").prompt("analyze this")  # never read
    model = mock_llm_calls.get_model("anthropic/claude")
    assert model.prompt_count == 1
    assert "analyze" in model.call_history[0]["prompt"]


def test_async_prompt_records_the_call_when_it_is_made(mock_llm_calls):
    llm.get_async_model("anthropic/claude").prompt("analyze this")
    assert mock_llm_calls.get_model("anthropic/claude").prompt_count == 1


# §4.1 the three patterns
def test_response_patterns(mock_llm_responses):
    mock_llm_responses.set("anthropic/claude", {"found": True})
    model = llm.get_model("anthropic/claude")
    response = model.prompt("prompt", schema=DiscoveryResult)
    result = response.json()  # Returns dict
    assert result == {"found": True}
    response = model.prompt("prompt")
    text = response.text  # Returns string
    assert json.loads(text) == {"found": True}
    tokens = response.usage  # Returns {"input_tokens": N, "output_tokens": M}
    assert set(tokens) == {"input_tokens", "output_tokens"}


# §4.2 what each call records
def test_call_record(mock_llm_calls, mock_llm_responses):
    mock_llm_responses.set("anthropic/claude", {"found": True})
    llm.get_model("anthropic/claude").prompt("Analyze a", schema=DiscoveryResult, temperature=0.0)
    call = mock_llm_calls.get_model("anthropic/claude").call_history[0]
    datetime.datetime.fromisoformat(call["timestamp"])
    assert (call["prompt"], call["prompt_length"]) == ("Analyze a", 9)
    assert call["kwargs"]["schema"] == "DiscoveryResult"
    assert (call["kwargs"]["temperature"], call["kwargs"]["model"]) == (0.0, "anthropic/claude")
    assert call["response"] == {"found": True}  # what was configured
    assert call["error"] is None
    assert call["response_record"]["json"] == {"found": True}  # the harness's structured record
    assert call.response["usage"]["output_tokens"] == 2


def test_call_record_of_a_text_answer(mock_llm_calls):
    llm.get_model("openai/gpt-4").prompt("x")
    assert mock_llm_calls.get_model("openai/gpt-4").call_history[0]["response"] == "the default summary"


# §4.3 error simulation
def test_error_per_model(mock_llm_responses):
    mock_llm_responses.set_error("anthropic/claude",
                                 ValueError("API key invalid"))
    model = llm.get_model("anthropic/claude")
    with pytest.raises(ValueError, match="API key invalid"):
        model.prompt("x")  # raised by prompt() itself
    call = model.call_history[0]
    assert call["error"] == "API key invalid" and call["response"] is None
    assert call["error_record"] == {"type": "ValueError", "message": "API key invalid"}


def test_failure_kind_is_raised_by_prompt(harness):
    harness.set_error("rate_limit", model="anthropic/claude")
    with pytest.raises(llm.ModelError):
        llm.get_model("anthropic/claude").prompt("x")
    assert harness.last_call["error"].startswith("Rate limit")
    assert harness.last_call.error["kind"] == "rate_limit"


def test_global_error():
    mock = create_mock_get_model(side_effect=ConnectionError("Network error"))
    with pytest.raises(ConnectionError, match="Network error"):
        mock("anthropic/claude").prompt("x")


# §7.1 and §7.2
def test_unconfigured_model(mock_llm_calls):
    model = mock_llm_calls.get_model("unconfigured-model")
    response = model.prompt("test")
    assert response.json() == {"success": True}  # Safe default


def test_invalid_response_types(mock_llm_responses):
    mock_llm_responses.set("model", "plain text response")
    model = mock_llm_responses.get_model("model")
    response = model.prompt("test")
    assert response.text == "plain text response"
    with pytest.raises(json.JSONDecodeError):
        response.json()


# §7.3 the seed's own fixture shape, and §8.1 assigning llm.get_model
def test_cleanup_fixture_shape(monkeypatch):
    mock = create_mock_get_model({"anthropic/claude": {"a": 1}})
    monkeypatch.setattr("llm.get_model", mock)
    try:
        assert llm.get_model("anthropic/claude").prompt("x").json() == {"a": 1}
    finally:
        mock.reset()
    assert mock.models == {}


def test_assigning_get_model(monkeypatch):
    monkeypatch.setattr(llm, "get_model", llm.get_model)  # restored at the end
    llm.get_model = create_mock_get_model()
    assert llm.get_model("anything").prompt("x").json() == {"success": True}


# §10.1 multiple models
def test_multiple_models(mock_llm_responses):
    mock_llm_responses.set("anthropic/claude", {"a": 1})
    mock_llm_responses.set("openai/gpt-4", {"b": 2})

    model1 = llm.get_model("anthropic/claude")
    model2 = llm.get_model("openai/gpt-4")

    assert model1.prompt("").json() == {"a": 1}
    assert model2.prompt("").json() == {"b": 2}


# §10.2 streamed chunks carry .text
def test_streamed_chunks(mock_llm_responses):
    mock_llm_responses.set("m", "Hello big World of many streamed words here")
    chunks = list(llm.get_model("m").prompt("x", stream=True))
    assert len(chunks) > 1
    assert "".join(chunk.text for chunk in chunks) == "Hello big World of many streamed words here"
    assert all(isinstance(chunk, str) for chunk in chunks)  # and still the strings real llm yields


# §10.3 retry logic, the seed's own way
def test_retry_logic(mock_llm_calls):
    model = mock_llm_calls.get_model("anthropic/claude")
    call_count = 0
    def flaky_prompt(*args, **kwargs):
        nonlocal call_count
        call_count += 1
        if call_count < 3:
            raise ConnectionError("Temporary failure")
        return Mock(json=lambda: {"success": True})

    model.prompt = flaky_prompt
    for _ in range(3):
        try:
            result = model.prompt("x").json()
            break
        except ConnectionError:
            continue
    assert result == {"success": True} and call_count == 3


# §11.1 and §11.2 debugging and assertion helpers
def test_debug_and_helpers(mock_llm_calls, mock_llm_responses, capsys):
    llm.get_model("anthropic/claude").prompt("analyze the repository layout in depth")
    for model_name, model in mock_llm_calls.models.items():
        print(f"\\nModel {model_name} called {model.prompt_count} times")
        for call in model.call_history:
            print(f"  - {call['prompt'][:50]}...")
    assert "Model anthropic/claude called 1 times" in capsys.readouterr().out
    model = mock_llm_calls.get_model("anthropic/claude")
    assert model is not None
    assert model.prompt_count == 1
    prompts = [call["prompt"] for call in model.call_history]
    assert any("repository" in p for p in prompts)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_letter=TESTS)
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    return pytester


def test_seed_002_to_the_letter(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-q")
    result.assert_outcomes(passed=TESTS.count("\ndef test_"))


def test_a_calls_dict_copies_its_record_and_leaves_the_rest_untouched() -> None:
    # Seed 002's response as configured may be anything a test hands over (here a generator, which cannot be
    # copied): as_dict leaves it out without copying it, and the record it returns is a copy of the call's.
    call = Call(
        protocol="openai", model="m", path="/v1/chat/completions", messages=[{"role": "user", "content": "hi"}],
        system="", prompt="hi", tools=["f"], schema=None, temperature=0.0, top_p=None, max_tokens=None,
        params={"user": "u"}, stream=False, timestamp="2026-01-01T00:00:00Z", response={"text": "ok"},
        body={"model": "m"}, answer=(chunk for chunk in ["o", "k"]),
    )  # fmt: skip
    data = call.as_dict()
    assert list(data) == [f.name for f in fields(Call) if f.name not in ("body", "configured", "answer", "started")] + [
        "prompt_length"
    ]
    assert data["messages"] == call.messages and data["messages"] is not call.messages
    assert (data["response"], data["params"], data["prompt_length"]) == ({"text": "ok"}, {"user": "u"}, 2)
