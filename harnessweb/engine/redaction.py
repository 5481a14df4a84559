"""Secrets never stay: the header names and query parameters that carry one, the key shapes found in bodies and
text, the marker that replaces a secret (its scheme and fingerprint kept, so two keys can still be told apart), and
the redaction of headers, URLs, text and JSON values, for everything recorded or shown (a run's events, a recorded or
exported cassette, the plugin's call history, uploaded JUnit output, the server's log); and where an uploaded
cassette or trace log still holds one, to refuse it. Pure.

A secret becomes ``[REDACTED:<fingerprint>]``, the fingerprint being the first 12 hex digits of the SHA-256 of the
secret (a bearer token without its scheme): the one :mod:`harnessweb.engine.keys` records for a request's key. What
says which kind of secret it was stays before the marker: ``Bearer [REDACTED:…]``, ``sk-ant-[REDACTED:…]``,
``AIza[REDACTED:…]``, ``AKIA[REDACTED:…]``, ``?key=[REDACTED:…]``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import orjson

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "cookie",
        "set-cookie",
    }
)
# Query parameters that carry a secret, compared whatever their case.
SECRET_QUERY = frozenset(
    {
        "key",
        "api-key",
        "api_key",
        "access_token",
        "token",
        "sig",
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
    }
)
# JSON members whose string value is a secret whatever its shape (a body or a log carrying a header by name).
SECRET_MEMBERS = SECRET_HEADERS | {"api_key", "apikey", "access_token", "aws_secret_access_key", "secret_access_key"}
REDACTED = "[REDACTED]"
MARKER = re.compile(r"\[REDACTED(?::[0-9a-f]{12})?\]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s+(\S.*)", re.DOTALL)

_TOKEN_END = r"(?![A-Za-z0-9_-])"
# (what it is, the pattern: group 1 is kept before the marker, the whole match is the secret), in the order they
# are replaced (an Anthropic key also looks like an OpenAI one).
KEY_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an Anthropic key (sk-ant-…)", re.compile(r"(?<![A-Za-z0-9_-])(sk-ant-)[A-Za-z0-9_-]{16,}")),
    ("an OpenAI project key (sk-proj-…)", re.compile(r"(?<![A-Za-z0-9_-])(sk-proj-)[A-Za-z0-9_-]{16,}")),
    ("an OpenAI key (sk-…)", re.compile(r"(?<![A-Za-z0-9_-])(sk-)[A-Za-z0-9_-]{16,}")),
    ("a Google API key (AIza…)", re.compile(r"(?<![A-Za-z0-9_-])(AIza)[A-Za-z0-9_-]{35}" + _TOKEN_END)),
    ("an AWS access key id (AKIA…/ASIA…)", re.compile(r"(?<![A-Za-z0-9])(AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
    (
        "a bearer token",
        re.compile(r"\b(bearer\s+)(?=[A-Za-z._~+/-]*[0-9])[A-Za-z0-9._~+/-]{12,}=*(?![A-Za-z0-9._~+/=\[-])", re.I),
    ),
    (
        "a secret query parameter",
        re.compile(
            r"([?&](?:" + "|".join(re.escape(name) for name in sorted(SECRET_QUERY)) + r")=)"
            r"(?!\[REDACTED|%5BREDACTED)[^&#\s\"'<>\\]+",
            re.I,
        ),
    ),
)


def fingerprint(secret: str) -> str:
    """A short digest that tells two keys apart without showing either (a bearer token's scheme left out): the
    first 12 hex digits of its SHA-256."""
    return hashlib.sha256(secret.removeprefix("Bearer ").strip().encode()).hexdigest()[:12]


def marker(secret: str) -> str:
    """What replaces a secret: ``[REDACTED:<fingerprint>]`` (the bare marker for an empty one)."""
    secret = secret.strip()
    return f"[REDACTED:{fingerprint(secret)}]" if secret else REDACTED


def is_redacted(value: str) -> bool:
    """Whether a secret header's or parameter's value holds nothing secret: empty, the marker, or a scheme and the
    marker (``Bearer [REDACTED:…]``)."""
    value = unquote(value).strip()
    if not value or MARKER.fullmatch(value):
        return True
    scheme = _SCHEME.fullmatch(value)
    return bool(scheme and MARKER.fullmatch(scheme.group(2).strip()))


def redact_value(value: str) -> str:
    """A secret header's value as recorded: its scheme kept (``Bearer``, ``AWS4-HMAC-SHA256``), the rest a marker
    with its fingerprint; a value already redacted stays as it is."""
    if is_redacted(value):
        return value
    scheme = _SCHEME.fullmatch(value.strip())
    if scheme:
        return f"{scheme.group(1)} {marker(scheme.group(2))}"
    return marker(value)


class Redacted(dict[str, str]):
    """Headers as :func:`redact_headers` recorded them: what :func:`redact_json` would make of them already, so that
    :func:`redact_json` and :func:`redact_data` leave them as they are rather than scan them again."""


def redact_headers(headers: Mapping[str, str]) -> Redacted:
    """Headers (lower-case names) as recorded: each secret's value (a secret header's, or a member's named like a
    secret) replaced by the marker, key shapes in the others and in the names too."""
    # One look at every other header's name and value together first: most requests hold nothing a key shape
    # needs (a request's two dozen headers cost two dozen calls less).
    if not _may_hold("\n".join([f"{n}\n{v}" for n, v in headers.items() if n.lower() not in SECRET_MEMBERS])):
        return Redacted((n, redact_value(v) if n.lower() in SECRET_MEMBERS else v) for n, v in headers.items())
    return Redacted(
        (redact_text(name), redact_value(value) if name.lower() in SECRET_MEMBERS else redact_text(value))
        for name, value in headers.items()
    )


def redact_url(url: str) -> str:
    """A URL with the value of each secret query parameter (``key=``, ``sig=``, ``X-Amz-Signature=``, …) replaced
    by the marker, and key shapes in the rest redacted."""
    parts = urlsplit(url)
    if not parts.query:
        return redact_text(url)
    pairs = [
        (k, redact_value(v) if k.lower() in SECRET_QUERY else redact_text(v))
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit(parts._replace(path=redact_text(parts.path), query=urlencode(pairs, safe="[]:")))


def redact(headers: Iterable[tuple[str, str]], secrets: Collection[str] = SECRET_HEADERS) -> list[list[str]]:
    """Headers as a cassette holds them, each secret's value (``secrets``: lower-case names) replaced by the
    marker (scheme and fingerprint kept), key shapes in the others too."""
    return [[name, redact_value(value) if name.lower() in secrets else redact_text(value)] for name, value in headers]


def _replace(match: re.Match[str]) -> str:
    kept = match.group(1)
    return kept + marker(match.group(0)[len(kept) :] if kept.lower().startswith(("bearer", "?", "&")) else match[0])


def redact_text(text: str) -> str:
    """Text (a log, a JUnit message, a body that is no JSON) with every key shape in it redacted: ``sk-…``,
    ``sk-proj-…``, ``sk-ant-…``, ``AIza…``, ``AKIA…``/``ASIA…``, a bearer token, a secret query parameter's value.
    The fingerprint is the whole key's (a token's or parameter's value alone)."""
    if not isinstance(text, str) or not _may_hold(text):
        return text
    for _, pattern in KEY_SHAPES:
        text = pattern.sub(_replace, text)
    return text


def _may_hold(text: str) -> bool:
    """Whether a text holds what every key shape holds (``sk-``, ``AIza``, ``AKIA``, ``ASIA``, a bearer scheme, a
    parameter's ``=``): a text with none of these is left as it is without running the patterns."""
    # Spelled out rather than any() over a tuple: it runs for every string of every recorded body and call, and the
    # generator cost four times the substring checks themselves.
    return (
        "sk-" in text
        or "AIza" in text
        or "AKIA" in text
        or "ASIA" in text
        or "earer" in text
        or "EARER" in text
        or "=" in text
    )


def redact_json(value: Any) -> Any:
    """A JSON value (a request body, an event's data) with every string redacted as text and the string members
    named like a secret (``authorization``, ``api_key``, …) replaced by the marker; a new value, the given one is
    left alone."""
    # JSON's own types first, the Mapping ABC (a slow check) last: this walks every body the history and the
    # recorder keep, and a number or null is left as it is without asking whether it is a mapping.
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Redacted):
        return value
    if isinstance(value, dict):
        return _redact_members(value)
    if isinstance(value, list | tuple):
        return [redact_json(item) for item in value]
    if value is None or isinstance(value, int | float):
        return value
    if isinstance(value, Mapping):
        return _redact_members(value)
    return value


def _redact_members(value: Mapping[Any, Any]) -> dict[Any, Any]:
    return {
        redact_text(k) if isinstance(k, str) else k: (
            redact_value(v) if isinstance(v, str) and str(k).lower() in SECRET_MEMBERS else redact_json(v)
        )
        for k, v in value.items()
    }


# What any secret :func:`redact_json` would replace shows in a value's JSON text (orjson's: no spaces, control
# characters escaped): a key shape's start, a bearer scheme or secret parameter not followed by a marker, a member
# named like a secret whose value is not one. Looser than the patterns, never stricter: a match only means "walk".
# One pattern per way, each searched only when a substring check (C speed) finds what it needs: one alternation of
# them all, which Python tries at every quote of the JSON, cost most of recording's own time.
_KEY_LITERALS = ("sk-", "AIza", "AKIA", "ASIA")
_BEARER = re.compile(r"(?i:bearer)(?:\s|\\[a-z]|\\u[0-9a-fA-F]{4})+(?!\[REDACTED)")
_QUERY = re.compile(
    r"[?&](?i:" + "|".join(re.escape(name) for name in sorted(SECRET_QUERY)) + r")=(?!\[REDACTED|%5BREDACTED)"
)
_MEMBER_KEYS = tuple(f'"{name}":"' for name in sorted(SECRET_MEMBERS))  # as orjson writes a member, lowercased
_MEMBER = re.compile(
    r"\"(?i:"
    + "|".join(re.escape(name) for name in sorted(SECRET_MEMBERS))
    + r")\":\"(?!\"|(?:[A-Za-z][A-Za-z0-9-]* )?\[REDACTED)"
)


def _suspect(text: str) -> bool:
    """Whether a value's JSON text may hold a secret the walk would redact: a key's shape, a bearer token, a secret
    query parameter, a member named like a secret (none of them already redacted)."""
    # Loops rather than any() over a generator: this runs for every event recorded, and a generator's frame cost more
    # than the substring checks themselves.
    for literal in _KEY_LITERALS:
        if literal in text:
            return True
    if "=" in text and _QUERY.search(text):
        return True
    lower = text.lower()  # the walk reads members' names lowercased too
    if "bearer" in lower and _BEARER.search(text):
        return True
    for key in _MEMBER_KEYS:
        if key in lower:
            return _MEMBER.search(text) is not None
    return False


def redact_data(value: Any) -> Any:
    """:func:`redact_json` after one look at the value's JSON text: the value itself when nothing in it can be a
    secret (most of a run's events), so that recording pays a serialisation and a few substring checks rather than a
    walk."""
    # A request event's headers (Redacted) are scanned as an empty object: their secrets are markers already.
    scanned = value
    if isinstance(value, dict) and isinstance(value.get("headers"), Redacted):
        scanned = {**value, "headers": {}}
    try:
        text = orjson.dumps(scanned).decode()
    except (orjson.JSONEncodeError, TypeError):
        return redact_json(value)
    return redact_json(value) if _suspect(text) else value


# -- finding what an upload must not hold ----------------------------------------------------------------------------


def secrets_in_text(text: str) -> list[str]:
    """What kinds of secret a text holds (``an OpenAI key (sk-…)``, …), each once, in the order of KEY_SHAPES."""
    if not isinstance(text, str) or not _may_hold(text):
        return []
    found = []
    for kind, pattern in KEY_SHAPES:
        if pattern.search(text):
            found.append(kind)
            text = pattern.sub(_replace, text)
    return found


def secrets_in_url(url: str) -> list[str]:
    """The secret query parameters of a URL whose value is not redacted, by name as written."""
    query = urlsplit(url).query
    return [k for k, v in parse_qsl(query, keep_blank_values=True) if k.lower() in SECRET_QUERY and not is_redacted(v)]


def secrets_in_json(value: Any, path: str = "$") -> Iterator[tuple[str, str]]:
    """``(JSON path, what)`` for each string of a JSON value that holds a secret (a member named like a secret
    whose value is not redacted, or a key shape)."""
    if isinstance(value, str):
        for kind in secrets_in_text(value):
            yield path, kind
    elif isinstance(value, Mapping):
        for k, v in value.items():
            where = f"{path}.{k}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(k)) else f"{path}[{str(k)!r}]"
            if isinstance(v, str) and str(k).lower() in SECRET_MEMBERS and not is_redacted(v):
                yield where, f"member {k} is not redacted"
            else:
                yield from secrets_in_json(v, where)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from secrets_in_json(item, f"{path}[{i}]")


def first_secret(text: str) -> tuple[int, str] | None:
    """The first line (from 1) of a text that holds a secret, and what it holds; None when none does."""
    for number, line in enumerate(text.splitlines(), start=1):
        if found := secrets_in_text(line):
            return number, found[0]
    return None
