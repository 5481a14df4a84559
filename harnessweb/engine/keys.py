"""A request's API key: which header carried it (and its fingerprint, never the key), the run an API key may name,
and, when keys must arrive, what the provider answers a request whose key is missing or in a header it does not read
(seed 003: "the API key is silently dropped", "the wrong auth header is sent"). Pure.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from harnessweb.engine.routes import RUN_HEADER, RUN_KEY_PREFIX
from harnessweb.engine.wire.common import WireError

QUERY_KEY = "?key"  # Gemini's key in the query string
# Every place a client may put its key, in the order a request's key is looked for.
KEY_PLACES = ("x-api-key", "authorization", "api-key", "x-goog-api-key", QUERY_KEY)
# Where each provider reads it.
READS: dict[str, tuple[str, ...]] = {
    "openai": ("authorization",),
    "responses": ("authorization",),
    "completions": ("authorization",),
    "anthropic": ("x-api-key",),
    "gemini": ("x-goog-api-key", QUERY_KEY),
    "azure": ("api-key", "authorization"),  # a key, or an Entra bearer token
}
# What each provider answers a request without a key it reads (status, message), as the real APIs do.
MISSING: dict[str, tuple[int, str]] = {
    "openai": (
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer "
        "auth (i.e. Authorization: Bearer YOUR_KEY).",
    ),
    "anthropic": (401, "x-api-key header is required"),
    "gemini": (
        403,
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or "
        "other form of API consumer identity to call this API.",
    ),
    "azure": (
        401,
        "Access denied due to missing subscription key. Make sure to include subscription key when making "
        "requests to an API.",
    ),
}
MISSING["responses"] = MISSING["completions"] = MISSING["openai"]


@dataclass(frozen=True)
class Key:
    """Where a request's key came (a header's name, or ``?key``) and its fingerprint."""

    place: str
    fingerprint: str


def fingerprint(secret: str) -> str:
    """A short digest that tells two keys apart without showing either (a bearer token's scheme left out)."""
    return hashlib.sha256(secret.removeprefix("Bearer ").strip().encode()).hexdigest()[:12]


def _value(place: str, headers: Mapping[str, str], query_key: str) -> str:
    return query_key if place == QUERY_KEY else headers.get(place, "")


def secret(headers: Mapping[str, str], query_key: str = "") -> tuple[str, str] | None:
    """Where a request's key is and the key itself (for the conversation it belongs to: never stored, never
    shown), found where any provider reads one; None without any."""
    for place in KEY_PLACES:
        if value := _value(place, headers, query_key).strip():
            return place, value
    return None


def presented(headers: Mapping[str, str], query_key: str = "") -> Key | None:
    """Where a request's key came and its fingerprint; None without any."""
    found = secret(headers, query_key)
    return Key(found[0], fingerprint(found[1])) if found else None


def refusal(protocol: str, headers: Mapping[str, str], query_key: str = "") -> tuple[int, str] | None:
    """What the provider answers when keys must arrive and this request's did not (missing, or in a header the
    provider does not read), or an Anthropic request lacks ``anthropic-version``; None when it would go through."""
    reads = READS.get(protocol)
    if reads is None:
        return None
    if protocol == "anthropic" and not headers.get("anthropic-version"):
        return 400, "anthropic-version: header is required"
    if any(_value(place, headers, query_key).strip() for place in reads):
        return None
    return MISSING[protocol]


def run_named(headers: Mapping[str, str], query_key: str = "") -> uuid.UUID | None:
    """The run a request names: ``X-Harness-Run``, or an API key ``harness-run-<uuid>`` (what a program that builds
    its own default client can be given through its environment, e.g. ``OPENAI_API_KEY``). Raises
    :class:`WireError` for a header that is no UUID."""
    value = headers.get(RUN_HEADER)
    if value is None:
        keys = [_value(place, headers, query_key) for place in KEY_PLACES]
        named = next((k.removeprefix("Bearer ") for k in keys if RUN_KEY_PREFIX in k), None)
        if named is None:
            return None
        try:
            return uuid.UUID(named.strip().removeprefix(RUN_KEY_PREFIX))
        except ValueError:
            return None
    try:
        return uuid.UUID(value.strip())
    except ValueError:
        raise WireError(f"{RUN_HEADER} must be a UUID, got {value[:80]!r}", RUN_HEADER) from None
