"""The VCR cassette file format (``{version, test_name, recorded_at, interactions}``, as in the shared fixtures of
``tests/fixtures/vcr``) as a pydantic model, and a cassette's bytes read and checked with an error naming the file:
one check for the server's uploads (``runs_app.ci``), its stored rows and the plugin's folder of cassettes.

Pure: no Django.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class _CassettePart(BaseModel):
    # Recorders add fields of their own; the bytes are kept as sent, so unknown fields are let through.
    model_config = ConfigDict(extra="allow")


class CassetteRequest(_CassettePart):
    method: str = Field(min_length=1)
    url: str = Field(min_length=1)
    headers: list[tuple[str, str]] = Field(default_factory=list)
    body: Any = None


class CassetteResponse(_CassettePart):
    status: int = Field(ge=100, le=599)
    headers: list[tuple[str, str]] = Field(default_factory=list)
    body_chunks: list[str] | None = None
    body_chunks_base64: list[str] | None = None

    @model_validator(mode="after")
    def _has_body(self) -> CassetteResponse:
        if self.body_chunks is None and self.body_chunks_base64 is None:
            raise ValueError("a response needs body_chunks or body_chunks_base64")
        for chunk in self.body_chunks_base64 or ():
            try:
                base64.b64decode(chunk, validate=True)
            except binascii.Error as exc:
                raise ValueError(f"body_chunks_base64 holds a chunk that is not base64: {exc}") from exc
        return self


class CassetteInteraction(_CassettePart):
    request: CassetteRequest
    response: CassetteResponse


class CassetteFile(_CassettePart):
    """A VCR cassette in the format of shared/fixtures/vcr (``{version, test_name, recorded_at, interactions}``)."""

    version: str
    test_name: str | None = None
    recorded_at: str | None = None
    interactions: list[CassetteInteraction] = Field(min_length=1)


class CassetteFileError(ValueError):
    """Bytes that are not a VCR cassette; the message names the file and what is wrong, field by field."""


def describe(exc: ValidationError) -> str:
    """A validation error's fields on one line: ``interactions.0.response.status: Input should be ...``."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()[:5])


def read_cassette(data: bytes, name: str) -> dict[str, Any]:
    """A cassette's bytes as its JSON value, checked against :class:`CassetteFile`; :class:`CassetteFileError`
    naming ``name`` (the file, or the stored row) when they are not JSON or not a cassette."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise CassetteFileError(f"{name} is not a VCR cassette: not JSON ({exc})") from None
    try:
        CassetteFile.model_validate(value)
    except ValidationError as exc:
        raise CassetteFileError(f"{name} is not a VCR cassette: {describe(exc)}") from None
    return value
