"""Secrets never stay: the header names that carry one, and the marker that replaces their value in anything
recorded (a run's timeline, a stored cassette)."""

from __future__ import annotations

from collections.abc import Mapping

SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "set-cookie"}
)
REDACTED = "[REDACTED]"


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers (lower-case names) as recorded: each secret's value replaced by the marker."""
    return {name: (REDACTED if name in SECRET_HEADERS else value) for name, value in headers.items()}
