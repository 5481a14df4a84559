"""The seed's default usage, on request: counting tokens stays the default, and seed 000's fixed usage (64 input, 32
output, 96 total) is a choice: a scenario's ``default_usage`` (``"seed"``, ``"counted"`` or the counts; camelCase
``defaultUsage``), the server's ``HARNESS_DEFAULT_USAGE=seed``, the plugin's ini ``harness_default_usage`` (or the same
variable). A turn's own ``usage`` wins, count by count. Through the engine, the in-process SDKs, the server and the
plugin."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from pydantic import ValidationError

from harnessweb.engine import tokens
from harnessweb.engine.exchange import ChatRequest, Message
from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario, format_validation_error
from harnessweb.testing.harness import Harness, Options
from tests.conftest import LiveServer, make_scenario, running_server

PROMPT = "Say hello to the seed"
SEED = (64, 32, 96)
pytest_plugins = ["pytester"]


def scenario(scenario_id: str = "usage", usage: dict[str, int] | None = None, **fields: Any) -> dict[str, Any]:
    turn: dict[str, Any] = {"turn": 1, "response": {"kind": "text", "assistant_text": "Hello, seed."}}
    if usage is not None:
        turn["usage"] = usage
    return {"id": scenario_id, "turns": [turn], **fields}


def usage_of(data: dict[str, Any], default_usage: str = "counted", header: str | None = "usage") -> tuple[int, ...]:
    request = ChatRequest("openai", "gpt-4o", messages=(Message(role="user", text=PROMPT),))
    catalog = Catalog.build([Scenario.model_validate(data)])
    reply = decide(catalog, request, header_scenario=header, default_usage=default_usage).reply  # type: ignore[arg-type]
    return (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.total_tokens)


COUNTED = (tokens.count(PROMPT), tokens.count("Hello, seed."), tokens.count(PROMPT) + tokens.count("Hello, seed."))


# ---------------------------------------------------------------------------------------------------------------
# The engine


def test_counting_stays_the_default() -> None:
    assert usage_of(scenario()) == COUNTED != SEED


def test_a_scenario_asks_for_the_seeds_usage() -> None:
    assert usage_of(scenario(default_usage="seed")) == SEED
    assert Scenario.model_validate(scenario(default_usage="seed")).canonical()["default_usage"] == "seed"


def test_a_scenario_gives_its_own_counts_in_camel_case_too() -> None:
    data = scenario(defaultUsage={"inputTokens": 10, "outputTokens": 5, "totalTokens": 15})
    assert usage_of(data) == (10, 5, 15)
    assert Scenario.model_validate(data).canonical()["default_usage"] == {
        "input_tokens": 10,
        "output_tokens": 5,
        "total_tokens": 15,
    }
    # A count the object leaves out is counted; the total is then input + output.
    assert usage_of(scenario(default_usage={"input_tokens": 10})) == (10, COUNTED[1], 10 + COUNTED[1])


def test_a_turns_own_usage_wins_count_by_count() -> None:
    assert usage_of(scenario(default_usage="seed", usage={"output_tokens": 7})) == (64, 7, 71)
    assert usage_of(scenario(default_usage="seed", usage={"input_tokens": 1, "output_tokens": 2})) == (1, 2, 3)
    full = {"input_tokens": 5, "output_tokens": 6, "total_tokens": 99}
    assert usage_of(scenario(default_usage="seed", usage=full), default_usage="seed") == (5, 6, 99)
    # The seed's tokenUsage on the response is a turn's usage too.
    data = scenario(default_usage="seed")
    data["turns"][0]["response"]["tokenUsage"] = {"inputTokens": 3}
    assert usage_of(data) == (3, 32, 35)


def test_the_servers_default_and_the_scenarios_own() -> None:
    assert usage_of(scenario(), default_usage="seed") == SEED
    assert usage_of(scenario(), default_usage="seed", header=None) == SEED  # the lorem too
    assert usage_of(scenario(default_usage="counted"), default_usage="seed") == COUNTED  # the scenario says first


def test_a_bad_default_usage_names_the_field() -> None:
    with pytest.raises(ValidationError) as info:
        Scenario.model_validate(scenario(default_usage="seeds"))
    assert "default_usage" in format_validation_error(info.value)
    with pytest.raises(ValidationError) as info:
        Scenario.model_validate(scenario(default_usage={"input_tokens": -1}))
    assert "default_usage.Usage.input_tokens" in format_validation_error(info.value)
    with pytest.raises(ValueError, match="HARNESS_DEFAULT_USAGE must be 'counted' or 'seed', not 'fixed'"):
        tokens.parse_default_usage("fixed")
    assert (tokens.parse_default_usage(""), tokens.parse_default_usage(" Seed ")) == ("counted", "seed")


def test_the_server_refuses_a_bad_setting_naming_it() -> None:
    env = {**os.environ, "HARNESS_DEFAULT_USAGE": "sometimes", "DJANGO_SETTINGS_MODULE": "harnessweb.settings"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "HARNESS_DEFAULT_USAGE must be 'counted' or 'seed', not 'sometimes'" in done.stderr


# ---------------------------------------------------------------------------------------------------------------
# In-process, through the SDKs


def test_in_process_sdks_report_the_seeds_usage() -> None:
    harness = Harness([Scenario.model_validate(scenario(default_usage="seed"))])
    harness.use_scenario("usage")
    reply = harness.openai_client().chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": PROMPT}]
    )
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == SEED
    message = harness.anthropic_client().messages.create(
        model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": PROMPT}]
    )
    assert (message.usage.input_tokens, message.usage.output_tokens) == (64, 32)


def test_the_harness_option_applies_to_every_answer() -> None:
    harness = Harness([], Options(default_usage="seed"))
    stream = harness.openai_client().chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": PROMPT}],
        stream=True,
        stream_options={"include_usage": True},
    )
    usage = [chunk.usage for chunk in stream if chunk.usage is not None][-1]
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == SEED


def test_the_plugin_reads_the_ini_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_seed="""
def test_seed_usage(harness):
    reply = harness.openai_client().chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
    )
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (64, 32, 96)
"""
    )
    pytester.makeini("[pytest]\nharness_default_usage = seed\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly").assert_outcomes(passed=1)


class Ini:
    """What ``_options`` reads of a pytest config: the ini options, each at its default unless given."""

    def __init__(self, **given: str) -> None:
        self.given = given

    def getini(self, name: str) -> str:
        defaults = {"harness_unmatched": "lorem", "harness_llm_default": "{}", "harness_default_usage": ""}
        return self.given.get(name, defaults.get(name, "false"))


def test_the_plugin_reads_the_variable_and_names_a_bad_option(monkeypatch: pytest.MonkeyPatch) -> None:
    from harnessweb.testing.plugin import _options

    monkeypatch.delenv("HARNESS_DEFAULT_USAGE", raising=False)
    assert _options(Ini()).default_usage == "counted"  # type: ignore[arg-type]
    monkeypatch.setenv("HARNESS_DEFAULT_USAGE", "seed")
    assert _options(Ini()).default_usage == "seed"  # type: ignore[arg-type]
    assert _options(Ini(harness_default_usage="counted")).default_usage == "counted"  # type: ignore[arg-type]
    with pytest.raises(pytest.UsageError, match="ini option harness_default_usage must be .* not 'always'"):
        _options(Ini(harness_default_usage="always"))  # type: ignore[arg-type]
    monkeypatch.setenv("HARNESS_DEFAULT_USAGE", "fixed")
    with pytest.raises(pytest.UsageError, match="HARNESS_DEFAULT_USAGE must be 'counted' or 'seed', not 'fixed'"):
        _options(Ini())  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------------
# The server


@pytest.fixture(scope="module")
def seed_server(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[LiveServer]:
    """The app with ``HARNESS_DEFAULT_USAGE=seed``."""
    env = {"HARNESS_PACING": "off", "HARNESS_DEFAULT_USAGE": "seed"}
    with running_server(tmp_path_factory.mktemp("seed-usage"), env) as server:
        yield server


def ask(url: str, scenario_id: str) -> tuple[int, int, int]:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=f"sk-test-{uuid.uuid4().hex}", max_retries=0, timeout=20)
    reply = client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": PROMPT}],
        extra_headers={"X-Harness-Scenario": scenario_id},
    )
    return (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens)


def test_the_server_setting_gives_the_seeds_usage(seed_server: LiveServer, transactional_db: None) -> None:
    make_scenario(**scenario("plain"))
    make_scenario(**scenario("counting", default_usage="counted"))
    make_scenario(**scenario("own-turn", usage={"output_tokens": 7}))
    assert ask(seed_server.url, "plain") == SEED
    assert ask(seed_server.url, "counting") == COUNTED
    assert ask(seed_server.url, "own-turn") == (64, 7, 71)


def test_a_scenario_asks_the_counting_server_for_the_seeds_usage(
    harness_server: LiveServer, transactional_db: None
) -> None:
    make_scenario(**scenario("seeded", default_usage="seed"))
    make_scenario(**scenario("counted-here"))
    assert ask(harness_server.url, "seeded") == SEED
    assert ask(harness_server.url, "counted-here") == COUNTED
    client = anthropic.Anthropic(base_url=harness_server.url, api_key=f"sk-test-{uuid.uuid4().hex}", timeout=20)
    with client.messages.stream(
        model="claude-sonnet-4-5",
        max_tokens=100,
        messages=[{"role": "user", "content": PROMPT}],
        extra_headers={"X-Harness-Scenario": "seeded"},
    ) as stream:
        message = stream.get_final_message()
    assert (message.usage.input_tokens, message.usage.output_tokens) == (64, 32)


def test_the_editor_keeps_a_default_usage_on_the_raw_tab() -> None:
    from scenarios_app.editor import mapping

    data = Scenario.model_validate(scenario(default_usage="seed")).canonical()
    assert mapping.form_problem(data) == "its default usage (default_usage) is set on the raw tab"
    assert mapping.form_problem(Scenario.model_validate(scenario()).canonical()) == ""
