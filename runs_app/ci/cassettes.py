"""VCR cassettes on the server: the secrets a stored one must not hold, and what a cassette's file name says about its
provider and scenario. The file format itself (``CassetteFile``) is pure, in :mod:`harnessweb.engine.cassette_format`:
the plugin reads cassettes too."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from harnessweb.engine.cassette_format import CassetteFile
from harnessweb.engine.redaction import (
    REDACTED,
    SECRET_HEADERS,
    is_redacted,
    secrets_in_json,
    secrets_in_text,
    secrets_in_url,
)
from runs_app.models import Provider

# The older cassette names (``{provider}_{scenario}.json``, as in the shared fixtures) name the same scenarios as the
# seed's ``verify_{provider}_{scenario}.json`` files differently.
SCENARIO_ALIASES = {
    "auth_failure_401": "error_auth_401",
    "bad_request_400": "error_bad_request_400",
    "rate_limit_429": "error_rate_limit_429",
    "unicode_content": "unicode_text",
}


def leaked_secrets(cassette: CassetteFile, file_name: str = "") -> Iterator[dict[str, Any]]:
    """Each secret a cassette still holds, as a field error naming the interaction and the place: a secret header
    whose value is not redacted (a scheme before the marker is no secret: ``Bearer [REDACTED]``), a secret query
    parameter of the URL, a key shape in another header, in the request body (by JSON path) or in a response chunk;
    ``file_name`` leads each message.
    """

    def _leak(loc: tuple[Any, ...], msg: str) -> dict[str, Any]:
        msg = f"{file_name}: {msg}" if file_name else msg
        return {"loc": loc, "msg": f"{msg}; replace it with {REDACTED}", "type": "unredacted_secret"}

    for index, interaction in enumerate(cassette.interactions):
        request = interaction.request
        for parameter in secrets_in_url(request.url):
            yield _leak(("interactions", index, "request", "url"), f"query parameter {parameter} is not redacted")
        for kind in secrets_in_text(request.url.partition("?")[0]):
            yield _leak(("interactions", index, "request", "url"), f"the URL holds {kind}")
        for side in ("request", "response"):
            for position, (name, value) in enumerate(getattr(interaction, side).headers):
                loc = ("interactions", index, side, "headers", position)
                if name.lower() in SECRET_HEADERS and not is_redacted(value):
                    yield _leak(loc, f"header {name} has a value that is not redacted")
                elif name.lower() not in SECRET_HEADERS and (kinds := secrets_in_text(value)):
                    yield _leak(loc, f"header {name} holds {kinds[0]}")
        for field in ("body", "body_text"):
            for path, what in secrets_in_json(getattr(request, field, None)):
                where = f"body at {path}" if field == "body" else field
                yield _leak(("interactions", index, "request", field), f"the request's {where}: {what}")
        for position, chunk in enumerate(interaction.response.body_chunks or ()):
            for kind in secrets_in_text(chunk):
                yield _leak(("interactions", index, "response", "body_chunks", position), f"the chunk holds {kind}")


def cassette_file_name(name: str) -> str:
    """The bare file name, whatever path a client sent with it."""
    return PurePosixPath(PureWindowsPath(name).name).name.strip()


def has_control_characters(value: str) -> bool:
    """True when ``value`` holds characters that cannot go into a header such as Content-Disposition."""
    return any(ord(char) < 32 or ord(char) == 127 for char in value)


def parse_cassette_name(name: str, providers: Iterable[str] = ()) -> tuple[str, str] | None:
    """``(provider, scenario)`` from ``verify_{provider}_{scenario}.json`` or ``{provider}_{scenario}.json``.

    A provider among ``providers`` is recognised whatever its case and with ``-`` and ``_`` read alike (a name holding
    an underscore, ``sap_ai_core``, or a dash, ``kimi-for-coding``), the longest match first, and returned as
    registered; otherwise the provider is the text before the first underscore.
    """
    stem = cassette_file_name(name)
    if stem.lower().endswith(".json"):
        stem = stem[: -len(".json")]
    if stem.lower().startswith("verify_"):
        stem = stem[len("verify_") :]
    key = Provider.key(stem)
    for provider in sorted(providers, key=len, reverse=True):
        prefix = Provider.key(provider)
        if prefix and key.startswith(prefix + "-") and len(stem) > len(prefix) + 1:
            return provider, stem[len(prefix) + 1 :]
    provider, _, scenario = stem.partition("_")
    if not provider or not scenario:
        return None
    return provider, scenario


def canonical_scenario(scenario: str) -> str:
    """A cassette's scenario as coverage counts it: lower case, older names read as the seed's."""
    scenario = scenario.strip().lower()
    return SCENARIO_ALIASES.get(scenario, scenario)
