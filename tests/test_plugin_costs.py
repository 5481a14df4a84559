"""``harness.cost`` and ``harness.assert_cost_below`` as a team uses them (pytester, in a subprocess): a test's cost
from its calls' usage at the shipped prices or a file of its own (``--harness-prices``, ini ``harness_prices``),
in-process and in server mode; the assertion passes below the budget, and fails listing each call's cost when over
it or when a model has no price."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

# Seed 001's Opus: 1000 input tokens × $15/MTok + 200 output × $75/MTok = $0.03.
OPUS_TURN = {
    "id": "opus",
    "turns": [
        {
            "turn": 1,
            "response": {"kind": "text", "assistant_text": "Done."},
            "usage": {"input_tokens": 1000, "output_tokens": 200},
        }
    ],
}

TESTS = (
    """
from decimal import Decimal

import pytest

SCENARIO = """
    + json.dumps(OPUS_TURN)
    + """


def ask(client, model):
    return client.messages.create(model=model, max_tokens=50, messages=[{"role": "user", "content": "plan"}])


def test_cost_of_a_dated_opus_id(harness):
    harness.use_scenario(SCENARIO)
    ask(harness.anthropic_client(), "claude-opus-4-1-20250805")
    ask(harness.anthropic_client(), "claude-opus-4-1-20250805")
    assert harness.cost.usd == Decimal("0.06")
    assert str(harness.cost) == "$0.06"
    harness.assert_cost_below(0.07)
    harness.assert_cost_below("0.0600001")


def test_no_calls_cost_nothing(harness):
    assert harness.cost.usd == Decimal(0)
    harness.assert_cost_below(0.01)


def test_failed_calls_cost_nothing(harness):
    harness.set_error("rate_limit", times="always")
    with pytest.raises(Exception):
        harness.anthropic_client(max_retries=0).messages.create(
            model="claude-opus-4-1", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert harness.cost.usd == Decimal(0)


def test_unpriced_model_is_unknown(harness):
    harness.set_response(text="hi")
    harness.openai_client().chat.completions.create(model="gpt-unknown", messages=[{"role": "user", "content": "x"}])
    assert harness.cost.usd is None
    assert "no price for gpt-unknown" in str(harness.cost)


def test_fails_over_budget(harness):
    harness.use_scenario(SCENARIO)
    ask(harness.anthropic_client(), "claude-opus-4-1")
    harness.assert_cost_below(0.03)


def test_fails_unpriced(harness):
    harness.use_scenario(SCENARIO)
    ask(harness.anthropic_client(), "claude-opus-4-1")
    ask(harness.anthropic_client(), "my-own-model")
    harness.assert_cost_below(100)
"""
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_costs=TESTS)
    return pytester


def check(result: pytest.RunResult) -> None:
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: This test cost $0.03 (0.03 USD), not below $0.03 (prices from *prices.json):",
            "*call 0 claude-opus-4-1: 1000 in, 200 out → $0.03",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: Cannot tell whether this test cost below $100.00: ≥ $0.03, 1 response unpriced "
            "(no price for my-own-model). Add the model to the price file*",
            "*call 0 claude-opus-4-1: 1000 in, 200 out → $0.03",
            "*call 1 my-own-model: 1000 in, 200 out → no price for my-own-model",
        ]
    )


def test_it_prices_a_tests_calls_at_the_shipped_prices(project: pytest.Pytester) -> None:
    check(project.runpytest_subprocess("-p", "no:cacheprovider"))


def test_it_prices_them_in_server_mode_too(project: pytest.Pytester) -> None:
    conftest = "import pytest\n\n@pytest.fixture\ndef harness(harness):\n    harness.serve()\n    return harness\n"
    project.makeconftest(conftest)
    check(project.runpytest_subprocess("-p", "no:cacheprovider"))


def test_a_project_brings_its_own_prices(pytester: pytest.Pytester) -> None:
    rows = [{"model": "my-*", "input_usd_per_mtok": "1", "output_usd_per_mtok": "2", "priced_on": "2026-11-24"}]
    (pytester.path / "prices.json").write_text(json.dumps(rows))
    pytester.makeini("[pytest]\nharness_prices = prices.json\n")
    pytester.makepyfile(
        test_own="""
from decimal import Decimal

def test_own_prices(harness):
    harness.use_scenario({"id": "u", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "ok"},
                                                "usage": {"input_tokens": 1000, "output_tokens": 1000}}]})
    harness.openai_client().chat.completions.create(model="my-model", messages=[{"role": "user", "content": "x"}])
    assert harness.cost.usd == Decimal("0.003")
    harness.assert_cost_below("0.0031")

def test_a_model_neither_the_file_nor_genai_prices_knows_is_unpriced(harness):
    harness.use_scenario({"id": "u", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "ok"}}]})
    messages = [{"role": "user", "content": "x"}]
    harness.openai_client().chat.completions.create(model="house-model-1", messages=messages)
    assert harness.cost.usd is None

def test_genai_prices_prices_the_models_the_file_does_not_name(harness):
    harness.use_scenario({"id": "u", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "ok"},
                                                "usage": {"input_tokens": 1000, "output_tokens": 1000}}]})
    messages = [{"role": "user", "content": "x"}]
    harness.openai_client().chat.completions.create(model="gpt-4o-2024-08-06", messages=messages)
    assert harness.cost.usd == Decimal("0.0125")  # OpenAI's $2.50 in and $10 out per million tokens
"""
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_a_bad_price_file_names_its_line_and_field(pytester: pytest.Pytester) -> None:
    (pytester.path / "prices.json").write_text('[\n  {"model": "m", "input_usd_per_mtok": "x"}\n]')
    pytester.makepyfile(test_bad="def test_any(harness):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-prices", "prices.json")
    result.stdout.fnmatch_lines(
        ["*--harness-prices: *prices.json, line 2 (row 1), field 'output_usd_per_mtok': required*"]
    )
    assert result.ret != 0
