"""Rate-limit headers in-process (the plugin's transport, no server): the official SDKs read the headers counting
down per key through ``with_raw_response``, get the provider's 429 with the headers when the budget is spent (no
retry with ``max_retries=0``; with retries, the wait the headers say, after which the window has reset), on a clock
the test moves itself."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import anthropic
import openai
import pytest
from google.genai import errors

from harnessweb.engine import ratelimit
from harnessweb.testing.harness import Harness

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
TIGHT = {
    "id": "tight",
    "rate_limit": {"requests": 2, "tokens": 10_000, "window_s": 30},
    "turns": [{"turn": n, "response": {"kind": "text", "assistant_text": "Within budget."}} for n in (1, 2, 3, 4)],
}


class Clock:
    """The limiter's clock; the SDKs' retry waits move it instead of sleeping (``sleeps`` records them)."""

    def __init__(self) -> None:
        self.at = T0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.at += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(time, "sleep", clock.sleep)  # the SDKs wait with time.sleep between attempts
    return clock


@pytest.fixture
def harness(clock: Clock) -> Harness:
    harness = Harness()
    harness.rate_limiter = ratelimit.Limiter(clock)
    harness.use_scenario(TIGHT)
    return harness


def ask_openai(client: openai.OpenAI) -> openai.APIResponse:
    return client.chat.completions.with_raw_response.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])


def test_openai_counts_down_then_gets_its_429_with_the_headers(harness: Harness, clock: Clock) -> None:
    client = harness.openai_client(api_key="sk-one", max_retries=0)
    first = ask_openai(client)
    clock.at += 10
    second = ask_openai(client)
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    assert [first.headers["x-ratelimit-remaining-requests"], second.headers["x-ratelimit-remaining-requests"]] == [
        "1",
        "0",
    ]
    assert (first.headers["x-ratelimit-reset-requests"], second.headers["x-ratelimit-reset-requests"]) == ("30s", "20s")
    used = first.parse().usage.total_tokens + second.parse().usage.total_tokens
    assert second.headers["x-ratelimit-remaining-tokens"] == str(10_000 - used)
    with pytest.raises(openai.RateLimitError) as caught:
        ask_openai(client)
    headers = caught.value.response.headers
    assert (headers["x-ratelimit-remaining-requests"], headers["x-ratelimit-reset-requests"]) == ("0", "20s")
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("20", "20000")
    assert caught.value.code == "rate_limit_exceeded"
    assert "Rate limit reached for requests" in caught.value.message
    assert clock.sleeps == []  # max_retries=0: no retry
    assert harness.last_call.error == {"status": 429, "kind": "rate_limit", "message": caught.value.body["message"]}


def test_another_key_has_its_own_budget(harness: Harness) -> None:
    ask_openai(harness.openai_client(api_key="sk-one", max_retries=0))
    ask_openai(harness.openai_client(api_key="sk-one", max_retries=0))
    fresh = ask_openai(harness.openai_client(api_key="sk-two", max_retries=0))
    assert fresh.headers["x-ratelimit-remaining-requests"] == "1"


def test_the_sdk_retries_after_the_reset_the_headers_say(harness: Harness, clock: Clock) -> None:
    client = harness.openai_client(api_key="sk-one", max_retries=2)
    ask_openai(client)
    ask_openai(client)
    clock.at += 25
    answer = ask_openai(client)  # refused, the SDK waits retry-after-ms (5 s), then the new window answers
    assert clock.sleeps == [5.0]
    assert answer.headers["x-ratelimit-remaining-requests"] == "1"
    assert answer.parse().choices[0].message.content == "Within budget."
    assert [call.error["kind"] if call.error else None for call in harness.calls] == [None, None, "rate_limit", None]


def test_anthropic_counts_down_and_gets_its_429(harness: Harness, clock: Clock) -> None:
    client = harness.anthropic_client(api_key="sk-ant-one", max_retries=0)
    kwargs = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}]}
    first = client.messages.with_raw_response.create(**kwargs)
    message = first.parse()
    assert first.headers["anthropic-ratelimit-requests-remaining"] == "1"
    assert first.headers["anthropic-ratelimit-requests-reset"] == "2026-01-01T00:00:30Z"
    used_in, used_out = message.usage.input_tokens, message.usage.output_tokens
    assert first.headers["anthropic-ratelimit-input-tokens-remaining"] == str(10_000 - used_in)
    assert first.headers["anthropic-ratelimit-output-tokens-remaining"] == str(10_000 - used_out)
    assert first.headers["anthropic-ratelimit-tokens-remaining"] == str(10_000 - used_in - used_out)
    client.messages.create(**kwargs)
    with pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(**kwargs)
    headers = caught.value.response.headers
    assert headers["anthropic-ratelimit-requests-remaining"] == "0"
    reset = datetime.fromisoformat(headers["anthropic-ratelimit-requests-reset"])
    assert reset == datetime.fromtimestamp(T0 + 30, UTC)
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("30", "30000")
    assert caught.value.body["error"]["type"] == "rate_limit_error"


def test_the_anthropic_sdk_retries_after_the_reset_too(harness: Harness, clock: Clock) -> None:
    client = harness.anthropic_client(api_key="sk-ant-one", max_retries=2)
    kwargs = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}]}
    client.messages.create(**kwargs)
    client.messages.create(**kwargs)
    clock.at += 29.5
    answer = client.messages.with_raw_response.create(**kwargs)
    assert clock.sleeps == [0.5]  # retry-after-ms
    assert answer.headers["anthropic-ratelimit-requests-remaining"] == "1"
    assert answer.headers["anthropic-ratelimit-requests-reset"] == "2026-01-01T00:01:00Z"


def test_embeddings_count_against_the_same_budget(harness: Harness) -> None:
    client = harness.openai_client(api_key="sk-one", max_retries=0)
    chat = ask_openai(client)
    vectors = client.embeddings.with_raw_response.create(model="text-embedding-3-small", input="x")
    assert vectors.headers["x-ratelimit-remaining-requests"] == "0"
    assert vectors.headers["x-ratelimit-remaining-tokens"] == chat.headers["x-ratelimit-remaining-tokens"]
    with pytest.raises(openai.RateLimitError):
        client.embeddings.create(model="text-embedding-3-small", input="x")


def test_a_provider_without_headers_still_gets_its_429(harness: Harness) -> None:
    client = harness.genai_client(api_key="g-key")
    for _ in range(2):
        client.models.generate_content(model="gemini-2.5-flash", contents="x")
    with pytest.raises(errors.ClientError) as caught:
        client.models.generate_content(model="gemini-2.5-flash", contents="x")
    assert caught.value.code == 429
    assert not [name for name in caught.value.response.headers if "ratelimit" in name]


def test_the_default_budget_is_generous_and_always_said(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_RATE_LIMIT", raising=False)
    harness = Harness()
    harness.rate_limiter = ratelimit.Limiter(clock)
    harness.set_response(text="configured")
    answer = ask_openai(harness.openai_client(max_retries=0))
    assert answer.headers["x-ratelimit-limit-requests"] == "30000"
    assert answer.headers["x-ratelimit-remaining-requests"] == "29999"
    assert answer.headers["x-ratelimit-reset-requests"] == "1m0s"


def test_the_setting_off_sends_no_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_RATE_LIMIT", "off")
    harness = Harness()
    harness.set_response(text="configured")
    answer = ask_openai(harness.openai_client(max_retries=0))
    assert not [name for name in answer.headers if name.startswith("x-ratelimit")]
