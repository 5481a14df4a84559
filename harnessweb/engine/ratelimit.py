"""Rate limits as the providers report them: a budget of requests and tokens per API key within a window, counted
down on every conversation request and said in each provider's headers, and the provider's 429 once it is spent.

Pure: the buckets live in memory (one :class:`Limiter` per server process, one per plugin harness), keyed by the
presented key's fingerprint (no key: one anonymous bucket), by provider, and by the scenario when its own
``rate_limit`` block sets the budget; the clock is passed in, so tests count deterministically. A window is fixed: it
starts at a bucket's first request and everything in it resets together when it ends. Each server process counts
its own (uvicorn's ``--workers``: a key's budget per worker); no database or Redis round trip per request.

What each provider sends, from the real APIs:

- OpenAI and Azure OpenAI (every OpenAI-protocol route but OpenRouter's): ``x-ratelimit-limit-requests``,
  ``-remaining-requests``, ``-reset-requests`` and the ``-tokens`` trio; resets as Go durations (``20ms``, ``1s``,
  ``6m0s``).
- Anthropic: ``anthropic-ratelimit-requests-*``, ``-tokens-*``, ``-input-tokens-*`` and ``-output-tokens-*``
  (``limit``, ``remaining``, ``reset``), resets as RFC 3339 times.
- Gemini, Vertex AI, Bedrock, Cohere, Ollama, OpenRouter and the harness's own protocol: none. Their requests are
  still counted, and the spent budget's 429 still carries ``retry-after`` (each wire's ``encode_failure``).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from harnessweb.engine.exchange import Failure, Usage

# The protocols whose answers carry OpenAI's headers, and Anthropic's.
OPENAI_FORM = frozenset({"openai", "responses", "completions", "azure", "azure_completions"})
ANTHROPIC_FORM = frozenset({"anthropic"})
# The provider whose budget a protocol's requests count against (its APIs share one), where it is not the protocol.
PROVIDER = {"responses": "openai", "completions": "openai", "azure_completions": "azure"}
ANONYMOUS = "anonymous"
SETTING = "HARNESS_RATE_LIMIT"
# Buckets kept before the ended ones are dropped (a long-lived server seeing many keys).
PRUNE_AT = 10_000


class RateLimit(BaseModel):
    """A budget: requests and tokens (input plus output) per window; Anthropic's separate input and output token
    limits default to the token limit. The defaults are OpenAI's tier-5 limits for a small model (30,000 requests,
    150,000,000 tokens a minute): present on every answer like the real API's, and never reached by a test suite
    that does not ask for it."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="forbid",
        frozen=True,
        allow_inf_nan=False,
    )

    requests: int = Field(30_000, ge=1, le=10**9)
    tokens: int = Field(150_000_000, ge=1, le=10**12)
    input_tokens: int | None = Field(None, ge=1, le=10**12)
    output_tokens: int | None = Field(None, ge=1, le=10**12)
    window_s: float = Field(60.0, gt=0, le=86_400)

    @property
    def input_limit(self) -> int:
        return self.input_tokens if self.input_tokens is not None else self.tokens

    @property
    def output_limit(self) -> int:
        return self.output_tokens if self.output_tokens is not None else self.tokens


DEFAULT = RateLimit()


def parse_setting(text: str, source: str = SETTING) -> RateLimit | None:
    """``HARNESS_RATE_LIMIT``'s value: ``requests=60,tokens=100000,window_s=60`` (any of ``requests``, ``tokens``,
    ``input_tokens``, ``output_tokens``, ``window_s``; the others keep their defaults), empty for the defaults, or
    ``off`` for no headers and no counting. A ``ValueError`` names the setting and the field it cannot read."""
    text = text.strip()
    if not text:
        return DEFAULT
    if text.lower() in ("off", "0", "false", "no"):
        return None
    fields: dict[str, str] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name = name.strip().lower()
        if not sep or not name:
            expected = "name=value pairs separated by commas (requests=60,window_s=60)"
            raise ValueError(f"{source}: expected {expected}, not {part.strip()!r}")
        fields[name] = value.strip()
    try:
        return RateLimit.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise ValueError(f"{source}: {field}: {err['msg']}") from None


def limits_for(setting: RateLimit | None, scenario: Any) -> tuple[RateLimit | None, str]:
    """The budget a request counts against and its bucket's scope: the scenario's own ``rate_limit`` (its id the
    scope, so its budget is its own), else the setting's (shared by every request of the key)."""
    own = getattr(scenario, "rate_limit", None)
    if own is not None:
        return own, scenario.id
    return setting, ""


@dataclass
class Bucket:
    """One key's use of one budget within the window that started at ``started`` (the clock's seconds)."""

    started: float
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Standing:
    """Where a key stands after a request: what is left of each limit, when the window resets (the clock's
    seconds, an epoch time with the default clock), and whether the request was refused (the budget was spent)."""

    limits: RateLimit
    requests_left: int
    tokens_left: int
    input_left: int
    output_left: int
    now: float
    reset_at: float
    spent: bool

    @property
    def reset_ms(self) -> int:
        """Milliseconds until the window resets (at least 1 while it has not)."""
        return max(1, math.ceil((self.reset_at - self.now) * 1000))

    def event_data(self) -> dict[str, Any]:
        """What the run's ``failure_injected`` event says of a refused request."""
        limits = self.limits
        return {
            "rate_limit": {
                "requests": limits.requests,
                "tokens": limits.tokens,
                "window_s": limits.window_s,
                "requests_left": self.requests_left,
                "tokens_left": self.tokens_left,
                "reset_ms": self.reset_ms,
            }
        }


class Limiter:
    """The buckets of one process (or one plugin harness), by key and scope; ``clock`` returns seconds (an epoch
    time: Anthropic's resets are said as dates)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.buckets: dict[tuple[str, str, RateLimit], Bucket] = {}
        self._lock = threading.Lock()  # the plugin's clients may call from threads

    def admit(self, limits: RateLimit, key: str, usage: Usage | None, scope: str = "") -> Standing:
        """Count one request of ``key`` (a fingerprint, ``""`` for none) against ``limits``, with the tokens of
        ``usage`` (None: an answer that spends none, a failure); once any limit is spent the request is refused
        (``spent``) and counts nothing."""
        now = self.clock()
        ident = (key or ANONYMOUS, scope, limits)
        with self._lock:
            bucket = self.buckets.get(ident)
            if bucket is None or now >= bucket.started + limits.window_s:
                if len(self.buckets) >= PRUNE_AT:
                    self._prune(now)
                bucket = self.buckets[ident] = Bucket(started=now)
            spent = (
                bucket.requests >= limits.requests
                or bucket.input_tokens + bucket.output_tokens >= limits.tokens
                or bucket.input_tokens >= limits.input_limit
                or bucket.output_tokens >= limits.output_limit
            )
            if not spent:
                bucket.requests += 1
                if usage is not None:
                    bucket.input_tokens += usage.input_tokens
                    bucket.output_tokens += usage.output_tokens
            return Standing(
                limits=limits,
                requests_left=max(0, limits.requests - bucket.requests),
                tokens_left=max(0, limits.tokens - bucket.input_tokens - bucket.output_tokens),
                input_left=max(0, limits.input_limit - bucket.input_tokens),
                output_left=max(0, limits.output_limit - bucket.output_tokens),
                now=now,
                reset_at=bucket.started + limits.window_s,
                spent=spent,
            )

    def _prune(self, now: float) -> None:
        for ident, bucket in list(self.buckets.items()):
            if now >= bucket.started + ident[2].window_s:
                del self.buckets[ident]


def go_duration(seconds: float) -> str:
    """A duration as OpenAI's reset headers say it (Go's ``time.Duration``, to the millisecond): ``20ms``, ``1s``,
    ``1.5s``, ``6m0s``, ``1h0m0s``."""
    ms = max(0, math.ceil(seconds * 1000 - 1e-6))
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs = str(rest // 1000) if rest % 1000 == 0 else f"{rest / 1000:.3f}".rstrip("0")
    text = f"{secs}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return text


def rfc3339(at: float) -> str:
    """An epoch time as Anthropic's reset headers say it, to the second (rounded up: the budget is back then)."""
    return _rfc3339(math.ceil(at))


@lru_cache(maxsize=256)  # a window's requests all say its one reset
def _rfc3339(second: int) -> str:
    return datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def headers(protocol: str, standing: Standing) -> list[tuple[bytes, bytes]]:
    """The rate-limit headers ``protocol``'s real API sends with an answer (none for a protocol whose API sends
    none)."""
    limits = standing.limits
    if protocol in OPENAI_FORM:
        reset = go_duration(standing.reset_at - standing.now).encode()
        return [
            (b"x-ratelimit-limit-requests", str(limits.requests).encode()),
            (b"x-ratelimit-limit-tokens", str(limits.tokens).encode()),
            (b"x-ratelimit-remaining-requests", str(standing.requests_left).encode()),
            (b"x-ratelimit-remaining-tokens", str(standing.tokens_left).encode()),
            (b"x-ratelimit-reset-requests", reset),
            (b"x-ratelimit-reset-tokens", reset),
        ]
    if protocol in ANTHROPIC_FORM:
        reset = rfc3339(standing.reset_at).encode()
        out: list[tuple[bytes, bytes]] = []
        for name, limit, left in (
            (b"requests", limits.requests, standing.requests_left),
            (b"tokens", limits.tokens, standing.tokens_left),
            (b"input-tokens", limits.input_limit, standing.input_left),
            (b"output-tokens", limits.output_limit, standing.output_left),
        ):
            prefix = b"anthropic-ratelimit-" + name
            out += [(prefix + b"-limit", str(limit).encode()), (prefix + b"-remaining", str(left).encode())]
            out.append((prefix + b"-reset", reset))
        return out
    return []


def failure(standing: Standing) -> Failure:
    """The provider's 429 for a spent budget (the ``rate_limit`` kind every wire encodes as its own), its
    ``retry-after`` / ``retry-after-ms`` the time left in the window."""
    limits = standing.limits
    if standing.requests_left == 0:
        what, limit = "requests", limits.requests
    elif standing.tokens_left == 0:
        what, limit = "tokens", limits.tokens
    elif standing.input_left == 0:
        what, limit = "input tokens", limits.input_limit
    else:
        what, limit = "output tokens", limits.output_limit
    wait = go_duration(standing.reset_ms / 1000)
    message = (
        f"Rate limit reached for {what} per {go_duration(limits.window_s)}: Limit {limit}. Please try again in {wait}."
    )
    return Failure(status="rate_limit", message=message, retryable=True, retry_after_ms=standing.reset_ms)


@cache
def _setting(text: str) -> RateLimit | None:
    return parse_setting(text)


def from_environment() -> RateLimit | None:
    """The budget ``HARNESS_RATE_LIMIT`` sets where no Django settings are read (the plugin's harness)."""
    return _setting(os.environ.get(SETTING, ""))


def limiter_of(holder: Any) -> Limiter:
    """The limiter kept on ``holder`` (a plugin harness: each test counts from a full budget), made on first use;
    a test sets ``holder.rate_limiter`` for its own clock."""
    found = holder.__dict__.get("rate_limiter")
    if found is None:
        found = holder.rate_limiter = Limiter()
    return found


def gate(
    limiter: Limiter, setting: RateLimit | None, scenario: Any, protocol: str, key: str, usage: Usage | None
) -> tuple[list[tuple[bytes, bytes]], Standing | None]:
    """One conversation request counted (``limits_for``, ``Limiter.admit``) in its provider's bucket for the key
    (a test's one fake key sent to two providers is two keys): the headers its answer carries and, when the budget
    was spent, the standing whose 429 (``failure``) it gets instead."""
    limits, scope = limits_for(setting, scenario)
    if limits is None:
        return [], None
    standing = limiter.admit(limits, key, usage, f"{PROVIDER.get(protocol, protocol)}:{scope}")
    return headers(protocol, standing), standing if standing.spent else None
