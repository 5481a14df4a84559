"""The rate-limit engine (harnessweb/engine/ratelimit.py), pure: buckets per key on an injected clock, the window
that resets, each provider's headers byte for byte, the 429's failure, the setting and the scenario block."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harnessweb.engine import ratelimit
from harnessweb.engine.exchange import Usage
from harnessweb.engine.ratelimit import Limiter, RateLimit
from harnessweb.engine.schemas import Scenario

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


class Clock:
    def __init__(self, at: float = T0) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


def test_it_counts_requests_down_per_key_and_refuses_the_one_past_the_limit() -> None:
    limiter, limits = Limiter(Clock()), RateLimit(requests=2, window_s=60)
    first = limiter.admit(limits, "aaaa", Usage(10, 5, 15))
    second = limiter.admit(limits, "aaaa", Usage(10, 5, 15))
    third = limiter.admit(limits, "aaaa", Usage(10, 5, 15))
    assert (first.requests_left, second.requests_left, third.requests_left) == (1, 0, 0)
    assert (first.spent, second.spent, third.spent) == (False, False, True)
    assert third.tokens_left == limits.tokens - 30  # the refused request spent nothing
    other = limiter.admit(limits, "bbbb", None)
    assert (other.requests_left, other.spent) == (1, False)


def test_no_key_is_one_anonymous_bucket() -> None:
    limiter, limits = Limiter(Clock()), RateLimit(requests=3)
    limiter.admit(limits, "", None)
    assert limiter.admit(limits, "", None).requests_left == 1
    assert limiter.admit(limits, ratelimit.ANONYMOUS, None).requests_left == 0


def test_the_window_resets_everything_when_it_ends() -> None:
    clock = Clock()
    limiter, limits = Limiter(clock), RateLimit(requests=1, window_s=2)
    limiter.admit(limits, "k", Usage(4, 4, 8))
    clock.at += 1.5
    spent = limiter.admit(limits, "k", None)
    assert spent.spent and spent.reset_ms == 500
    clock.at += 0.5
    fresh = limiter.admit(limits, "k", Usage(1, 1, 2))
    assert (fresh.spent, fresh.requests_left, fresh.tokens_left) == (False, 0, limits.tokens - 2)
    assert fresh.reset_at == clock.at + 2


def test_tokens_input_and_output_budgets_are_spent_on_their_own() -> None:
    limiter = Limiter(Clock())
    tokens = RateLimit(tokens=100)
    assert not limiter.admit(tokens, "k", Usage(60, 50, 110)).spent  # the request that crosses it goes through
    assert limiter.admit(tokens, "k", None).spent
    output = RateLimit(output_tokens=10)
    assert limiter.admit(output, "j", Usage(1, 10, 11)).output_left == 0
    refused = limiter.admit(output, "j", None)
    assert refused.spent and "output tokens" in ratelimit.failure(refused).message


def test_a_scenario_budget_wins_and_counts_in_its_own_bucket() -> None:
    scenario = Scenario.model_validate({"id": "tight", "rateLimit": {"requests": 2, "windowS": 1.5}})
    setting = RateLimit(requests=100)
    assert ratelimit.limits_for(setting, scenario) == (RateLimit(requests=2, window_s=1.5), "tight")
    assert ratelimit.limits_for(setting, None) == (setting, "")
    assert ratelimit.limits_for(None, scenario)[0] == scenario.rate_limit  # even with the setting off
    limiter = Limiter(Clock())
    ratelimit.gate(limiter, setting, scenario, "openai", "k", None)
    _, spent = ratelimit.gate(limiter, setting, None, "openai", "k", None)
    assert spent is None  # the setting's bucket is untouched by the scenario's


def test_openai_headers_byte_for_byte() -> None:
    clock = Clock()
    limiter = Limiter(clock)
    standing = limiter.admit(RateLimit(requests=60, tokens=1000, window_s=360), "k", Usage(7, 3, 10))
    assert ratelimit.headers("openai", standing) == [
        (b"x-ratelimit-limit-requests", b"60"),
        (b"x-ratelimit-limit-tokens", b"1000"),
        (b"x-ratelimit-remaining-requests", b"59"),
        (b"x-ratelimit-remaining-tokens", b"990"),
        (b"x-ratelimit-reset-requests", b"6m0s"),
        (b"x-ratelimit-reset-tokens", b"6m0s"),
    ]
    for protocol in ("azure", "responses", "completions", "azure_completions"):
        assert ratelimit.headers(protocol, standing) == ratelimit.headers("openai", standing)


def test_anthropic_headers_byte_for_byte() -> None:
    clock = Clock()
    limiter = Limiter(clock)
    limits = RateLimit(requests=50, tokens=96_000, input_tokens=80_000, output_tokens=16_000, window_s=60)
    limiter.admit(limits, "k", Usage(100, 20, 120))
    clock.at += 0.25
    standing = limiter.admit(limits, "k", Usage(100, 20, 120))
    assert ratelimit.headers("anthropic", standing) == [
        (b"anthropic-ratelimit-requests-limit", b"50"),
        (b"anthropic-ratelimit-requests-remaining", b"48"),
        (b"anthropic-ratelimit-requests-reset", b"2026-01-01T00:01:00Z"),
        (b"anthropic-ratelimit-tokens-limit", b"96000"),
        (b"anthropic-ratelimit-tokens-remaining", b"95760"),
        (b"anthropic-ratelimit-tokens-reset", b"2026-01-01T00:01:00Z"),
        (b"anthropic-ratelimit-input-tokens-limit", b"80000"),
        (b"anthropic-ratelimit-input-tokens-remaining", b"79800"),
        (b"anthropic-ratelimit-input-tokens-reset", b"2026-01-01T00:01:00Z"),
        (b"anthropic-ratelimit-output-tokens-limit", b"16000"),
        (b"anthropic-ratelimit-output-tokens-remaining", b"15960"),
        (b"anthropic-ratelimit-output-tokens-reset", b"2026-01-01T00:01:00Z"),
    ]


@pytest.mark.parametrize(
    "protocol", ["gemini", "vertex", "vertex_claude", "bedrock", "bedrock_claude", "cohere", "ollama", "openrouter"]
)
def test_providers_that_send_no_rate_limit_headers_get_none(protocol: str) -> None:
    standing = Limiter(Clock()).admit(RateLimit(), "k", None)
    assert ratelimit.headers(protocol, standing) == []


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.02, "20ms"), (0.0201, "21ms"), (1, "1s"), (1.5, "1.5s"), (17.28, "17.28s"), (360, "6m0s"),
     (90.25, "1m30.25s"), (3600, "1h0m0s"), (3723, "1h2m3s")],
)  # fmt: skip
def test_durations_are_said_as_openai_says_them(seconds: float, text: str) -> None:
    assert ratelimit.go_duration(seconds) == text


def test_the_spent_budget_gives_a_rate_limit_failure_retrying_at_the_reset() -> None:
    clock = Clock()
    limiter = Limiter(clock)
    limits = RateLimit(requests=1, window_s=10)
    limiter.admit(limits, "k", None, scope="openai:s")  # the scenario's bucket for OpenAI's requests
    clock.at += 7.5
    _, spent = ratelimit.gate(limiter, None, Scenario(id="s", rate_limit=limits), "openai", "k", None)
    assert spent is not None
    failure = ratelimit.failure(spent)
    assert (failure.status, failure.retryable, failure.retry_after_ms) == ("rate_limit", True, 2500)
    assert failure.message == "Rate limit reached for requests per 10s: Limit 1. Please try again in 2.5s."
    assert spent.event_data()["rate_limit"]["reset_ms"] == 2500


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", RateLimit()),
        ("requests=60,tokens=100000,window_s=60", RateLimit(requests=60, tokens=100_000, window_s=60)),
        (" requests = 5 , window_s=0.5 ", RateLimit(requests=5, window_s=0.5)),
        ("off", None),
    ],
)
def test_the_setting_reads_name_value_pairs(text: str, expected: RateLimit | None) -> None:
    assert ratelimit.parse_setting(text) == expected


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("requests=0", "HARNESS_RATE_LIMIT: requests:"),
        ("requests=lots", "HARNESS_RATE_LIMIT: requests:"),
        ("window_s=-1", "HARNESS_RATE_LIMIT: window_s:"),
        ("burst=3", "HARNESS_RATE_LIMIT: burst:"),
        ("requests", "HARNESS_RATE_LIMIT: expected name=value"),
    ],
)
def test_a_bad_setting_names_the_field(text: str, names: str) -> None:
    with pytest.raises(ValueError, match=names):
        ratelimit.parse_setting(text)


def test_the_scenario_block_refuses_unknown_and_bad_fields_naming_them() -> None:
    with pytest.raises(ValidationError, match=r"rate_limit\.window_s"):
        Scenario.model_validate({"id": "s", "rate_limit": {"window_s": 0}})
    with pytest.raises(ValidationError, match=r"rate_limit\.burst"):
        Scenario.model_validate({"id": "s", "rate_limit": {"burst": 1}})


def test_ended_buckets_are_dropped_when_many_keys_were_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ratelimit, "PRUNE_AT", 3)
    clock = Clock()
    limiter, limits = Limiter(clock), RateLimit(window_s=1)
    for key in "abc":
        limiter.admit(limits, key, None)
    clock.at += 1
    limiter.admit(limits, "d", None)
    assert [ident[0] for ident in limiter.buckets] == ["d"]


def test_each_provider_counts_its_own_requests_of_one_key() -> None:
    limiter, setting = Limiter(Clock()), RateLimit(requests=1)
    assert ratelimit.gate(limiter, setting, None, "openai", "k", None)[1] is None
    assert ratelimit.gate(limiter, setting, None, "anthropic", "k", None)[1] is None
    assert ratelimit.gate(limiter, setting, None, "azure", "k", None)[1] is None
    assert ratelimit.gate(limiter, setting, None, "responses", "k", None)[1] is not None  # OpenAI's, spent
