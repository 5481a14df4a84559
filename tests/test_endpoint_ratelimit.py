"""Rate-limit headers from the server, through the official SDKs: every answer says where its key's budget stands
in its provider's headers, counting down per key; the request past a scenario's (or ``HARNESS_RATE_LIMIT``'s)
budget gets the provider's 429 with the headers and ``retry-after``, recorded on the run as an injected failure;
the SDK that retries waits what they say and is answered in the new window."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import anthropic
import openai
import pytest

from runs_app.live.panels import event_row
from tests.conftest import LiveServer, make_scenario, recorded_run, running_server, wait_for

ANSWER = "Within budget."


def make_limited(scenario_id: str, **limits: float) -> None:
    make_scenario(scenario_id, [{"turn": 1, "response": {"kind": "text", "assistant_text": ANSWER}}], rate_limit=limits)


def ask(client: openai.OpenAI, content: str, **kw: object) -> openai.APIResponse:
    messages = [{"role": "user", "content": content}]
    return client.chat.completions.with_raw_response.create(model="gpt-4o", messages=messages, **kw)


def test_openai_counts_down_per_key_then_gets_its_429_with_the_headers(oai: openai.OpenAI) -> None:
    make_limited("rl-openai", requests=2, tokens=10_000, window_s=60)
    client = oai.with_options(max_retries=0)
    first, second = ask(client, "rl-openai"), ask(client, "rl-openai", stream=True)
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    remaining = [r.headers["x-ratelimit-remaining-requests"] for r in (first, second)]
    assert remaining == ["1", "0"]
    used = first.parse().usage.total_tokens
    assert first.headers["x-ratelimit-remaining-tokens"] == str(10_000 - used)
    assert first.headers["x-ratelimit-reset-requests"].endswith("s")
    with pytest.raises(openai.RateLimitError) as caught:
        ask(client, "rl-openai")
    headers = caught.value.response.headers
    assert (headers["x-ratelimit-limit-requests"], headers["x-ratelimit-remaining-requests"]) == ("2", "0")
    assert 0 < int(headers["retry-after-ms"]) <= 60_000
    assert int(headers["retry-after"]) == -(-int(headers["retry-after-ms"]) // 1000)
    assert caught.value.code == "rate_limit_exceeded"
    other = ask(openai.OpenAI(base_url=str(oai.base_url), api_key=f"sk-other-{uuid.uuid4().hex}"), "rl-openai")
    assert other.headers["x-ratelimit-remaining-requests"] == "1"  # another key, its own budget
    run = recorded_run(headers["x-harness-run"])  # the run the 429 was recorded on
    events = run.events.filter(kind="failure_injected")
    injected = wait_for(lambda: list(events.values_list("data", flat=True)), message="the injected 429")
    assert [(d["status"], d["rate_limit"]["requests"], d["rate_limit"]["requests_left"]) for d in injected] == [
        ("rate_limit", 2, 0)
    ]
    row = event_row(events.first(), None)  # the run page's timeline line
    assert (row["label"], row["tone"]) == ("Injected failure", "warn")
    assert row["summary"].startswith("rate_limit (rate limit · 2 requests per 60 s spent): Rate limit reached")


def test_anthropic_counts_down_then_gets_its_429(claude: anthropic.Anthropic) -> None:
    make_limited("rl-anthropic", requests=1, input_tokens=5_000, output_tokens=1_000, window_s=60)
    client = claude.with_options(max_retries=0)
    kwargs = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "rl-anthropic"}]}
    before = datetime.now(UTC).replace(microsecond=0)
    first = client.messages.with_raw_response.create(**kwargs)
    usage = first.parse().usage
    assert first.headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert first.headers["anthropic-ratelimit-input-tokens-limit"] == "5000"
    assert first.headers["anthropic-ratelimit-input-tokens-remaining"] == str(5_000 - usage.input_tokens)
    assert first.headers["anthropic-ratelimit-output-tokens-remaining"] == str(1_000 - usage.output_tokens)
    reset = datetime.fromisoformat(first.headers["anthropic-ratelimit-requests-reset"])
    assert before + timedelta(seconds=59) <= reset <= before + timedelta(seconds=62)
    with pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(**kwargs)
    assert caught.value.response.headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert caught.value.response.headers["anthropic-ratelimit-requests-reset"] == reset.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert caught.value.body["error"]["type"] == "rate_limit_error"


def test_the_sdk_waits_the_reset_and_is_answered_in_the_new_window(oai: openai.OpenAI) -> None:
    make_limited("rl-reset", requests=1, window_s=2)
    first = ask(oai, "rl-reset")
    again = ask(oai, "rl-reset")  # refused, then retried after retry-after-ms: the window has ended
    assert again.retries_taken == 1
    assert again.parse().choices[0].message.content == ANSWER
    assert (first.headers["x-ratelimit-remaining-requests"], again.headers["x-ratelimit-remaining-requests"]) == (
        "0",
        "0",
    )


def test_embeddings_count_against_the_named_scenario_s_budget(oai: openai.OpenAI) -> None:
    make_limited("rl-embed", requests=1, window_s=60)
    client = oai.with_options(max_retries=0, default_headers={"X-Harness-Scenario": "rl-embed"})
    vectors = client.embeddings.with_raw_response.create(model="text-embedding-3-small", input="x")
    assert vectors.headers["x-ratelimit-remaining-requests"] == "0"
    with pytest.raises(openai.RateLimitError) as caught:
        client.embeddings.create(model="text-embedding-3-small", input="x")
    assert caught.value.response.headers["x-ratelimit-limit-requests"] == "1"


def test_every_answer_says_the_generous_default_budget(oai: openai.OpenAI) -> None:
    make_scenario("rl-default")
    answer = ask(oai, "rl-default")
    assert answer.headers["x-ratelimit-limit-requests"] == "30000"
    assert answer.headers["x-ratelimit-remaining-requests"] == "29999"
    assert answer.headers["x-ratelimit-reset-requests"] == "1m0s"


@pytest.fixture(scope="module")
def limited_server(
    django_db_setup: None, django_db_blocker: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    env = {"HARNESS_PACING": "off", "HARNESS_RATE_LIMIT": "requests=2,tokens=100000,window_s=60"}
    with running_server(tmp_path_factory.mktemp("ratelimit"), env) as server:
        yield server


def test_the_setting_sets_the_budget_of_every_key(limited_server: LiveServer, transactional_db: None) -> None:
    client = anthropic.Anthropic(base_url=limited_server.url, api_key=f"sk-ant-{uuid.uuid4().hex}", max_retries=0)
    kwargs = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "hello"}]}
    first = client.messages.with_raw_response.create(**kwargs)
    assert first.headers["anthropic-ratelimit-requests-limit"] == "2"
    assert first.headers["anthropic-ratelimit-tokens-limit"] == "100000"
    client.messages.create(**kwargs)
    with pytest.raises(anthropic.RateLimitError):
        client.messages.create(**kwargs)


def test_the_server_refuses_a_bad_setting_naming_the_field() -> None:
    env = {**os.environ, "HARNESS_RATE_LIMIT": "requests=none", "DJANGO_SETTINGS_MODULE": "harnessweb.settings"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "HARNESS_RATE_LIMIT: requests: Input should be a valid integer" in done.stderr
