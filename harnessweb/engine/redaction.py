"""Secrets never stay: the header names and query parameters that carry one, the marker that replaces their value,
and the redaction of headers and URLs, for everything recorded (a run's timeline, a recorded or exported cassette)
and everything checked (an uploaded cassette). Pure.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "set-cookie"}
)
SECRET_QUERY = frozenset({"key", "api_key", "api-key"})
REDACTED = "[REDACTED]"


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers (lower-case names) as recorded: each secret's value replaced by the marker."""
    return {name: (REDACTED if name in SECRET_HEADERS else value) for name, value in headers.items()}


def redact_url(url: str) -> str:
    """A URL with the value of each key-bearing query parameter (``key=``) replaced by the marker."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = [
        (k, REDACTED if k.lower() in SECRET_QUERY else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit(parts._replace(query=urlencode(pairs, safe="[]")))


def redact(headers: Iterable[tuple[str, str]], secrets: Collection[str] = SECRET_HEADERS) -> list[list[str]]:
    """Headers as a cassette holds them, each secret's value (``secrets``: lower-case names) replaced by the
    marker; a set-cookie or cookie goes too, as every secret header does."""
    return [[name, REDACTED if name.lower() in secrets else value] for name, value in headers]
