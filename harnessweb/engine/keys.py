"""A request's API key: which header carried it (and its fingerprint, never the key), the run an API key may name,
and, when keys must arrive, what the provider answers a request whose key is missing or in a header it does not read
(seed 003: "the API key is silently dropped", "the wrong auth header is sent"). Pure.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from harnessweb.engine.exchange import ChatRequest, evolved
from harnessweb.engine.redaction import fingerprint
from harnessweb.engine.routes import RUN_HEADER, RUN_KEY_PREFIX
from harnessweb.engine.wire import bedrock
from harnessweb.engine.wire.common import WireError

QUERY_KEY = "?key"  # Gemini's key in the query string
# Every place a client may put its key, in the order a request's key is looked for.
KEY_PLACES = ("x-api-key", "authorization", "api-key", "x-goog-api-key", QUERY_KEY)
# Where each provider reads it.
READS: dict[str, tuple[str, ...]] = {
    "openai": ("authorization",),
    "responses": ("authorization",),
    "completions": ("authorization",),
    "anthropic": ("x-api-key", "authorization"),  # the anthropic SDK (2.x) sends its api_key as a Bearer token
    "gemini": ("x-goog-api-key", QUERY_KEY),
    "azure": ("api-key", "authorization"),  # a key, or an Entra bearer token
    "azure_completions": ("api-key", "authorization"),
    "vertex": ("authorization",),  # an OAuth access token (Bearer), for Gemini and Claude on Vertex AI alike
    "vertex_claude": ("authorization",),
    "cohere": ("authorization",),
    "bedrock": ("authorization",),  # a SigV4 signature (its signature is not verified), or a Bedrock API key (Bearer)
    "bedrock_claude": ("authorization",),
    "openrouter": ("authorization",),
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
MISSING["azure_completions"] = MISSING["azure"]
MISSING["cohere"] = (401, "no api key supplied")
MISSING["openrouter"] = (401, "No auth credentials found")
MISSING["bedrock"] = MISSING["bedrock_claude"] = (403, bedrock.MISSING_TOKEN)
# A SigV4 Authorization header, as botocore signs: its parts are checked, its signature is not.
SIGV4 = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/,\s]+)/\d{8}/[^/,\s]+/[^/,\s]+/aws4_request,\s*"
    r"SignedHeaders=[a-z0-9;-]+,\s*Signature=[0-9a-f]{64}"
)
MISSING["responses"] = MISSING["completions"] = MISSING["openai"]
MISSING["vertex"] = MISSING["vertex_claude"] = (
    401,
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid "
    "authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
)


@dataclass(frozen=True)
class Key:
    """Where a request's key came (a header's name, or ``?key``) and its fingerprint."""

    place: str
    fingerprint: str


def _value(place: str, headers: Mapping[str, str], query_key: str) -> str:
    value = query_key if place == QUERY_KEY else headers.get(place, "")
    # A SigV4 signature changes with every request: the key it carries is the access key id its Credential names.
    signed = SIGV4.match(value.strip()) if place == "authorization" else None
    return signed["key"] if signed else value


def _sigv4_refusal(headers: Mapping[str, str]) -> tuple[int, str] | None:
    """Bedrock's refusal of an Authorization header that is neither a SigV4 signature nor a bearer API key (AWS
    names each part it lacks), or of a signed request without its date; None when it would go through."""
    value = headers.get("authorization", "").strip()
    if value.startswith("Bearer ") or (SIGV4.match(value) and (headers.get("x-amz-date") or headers.get("date"))):
        return None
    parts = [f"Authorization header requires '{part}' parameter." for part in ("Credential", "Signature",
             "SignedHeaders") if f"{part}=" not in value]  # fmt: skip
    if not headers.get("x-amz-date") and not headers.get("date"):
        parts.append("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
    if not parts:
        parts.append("Authorization header requires a well-formed AWS4-HMAC-SHA256 signature.")
    return 403, " ".join(parts)


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


def stamped(request: ChatRequest, headers: Mapping[str, str], query_key: str = "") -> ChatRequest:
    """The request with where its key came and its fingerprint on it (what a scenario's ``expect_key`` and a failure
    scope's ``key_fingerprint`` read)."""
    key = presented(headers, query_key)
    return evolved(request, key_place=key.place, key_fingerprint=key.fingerprint) if key else request


def refusal(protocol: str, headers: Mapping[str, str], query_key: str = "") -> tuple[int, str] | None:
    """What the provider answers when keys must arrive and this request's did not (missing, or in a header the
    provider does not read), or an Anthropic request lacks ``anthropic-version``; None when it would go through."""
    reads = READS.get(protocol)
    if reads is None:
        return None
    if protocol == "anthropic" and not headers.get("anthropic-version"):
        return 400, "anthropic-version: header is required"
    signature = headers.get("authorization", "").strip().removeprefix("Bearer").strip()
    if protocol in ("bedrock", "bedrock_claude") and signature:
        return _sigv4_refusal(headers)
    # A bearer scheme with no token after it is no key (an SDK given an empty key sends "Bearer ").
    if any(_value(place, headers, query_key).strip().removeprefix("Bearer").strip() for place in reads):
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
