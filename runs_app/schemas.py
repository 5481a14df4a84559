"""Schemas of the REST API for runs and CI uploads, plus the cassette file format; shared by the API and the admin.

Every string that reaches the database passes :func:`storable`: PostgreSQL refuses NUL characters and neither
database can encode a lone surrogate, and a 500 there would be a worse answer than a 422 naming the field.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
import uuid
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath, PureWindowsPath
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

# -- field types -----------------------------------------------------------------------------------------------------


def storable(value: str) -> str:
    """Refuse what the databases cannot store: NUL characters (PostgreSQL) and lone surrogates (any UTF-8 column)."""
    if "\x00" in value:
        raise ValueError("contains a NUL character, which cannot be stored")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("contains a lone surrogate, which is not valid Unicode") from exc
    return value


Text = Annotated[str, AfterValidator(storable)]


def short_text(max_length: int, min_length: int = 0) -> Any:
    """A stored string no longer than its column."""
    return Annotated[str, StringConstraints(min_length=min_length, max_length=max_length), AfterValidator(storable)]


Str64 = short_text(64)
Str100 = short_text(100)
Str128 = short_text(128)
Str200 = short_text(200)
Str500 = short_text(500)
Str300 = short_text(300)
Str1000 = short_text(1000)
ExternalId = short_text(200, min_length=1)


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


VerdictValue = Annotated[Literal["PASS", "FAIL"], BeforeValidator(_upper)]
# Database ids: BigAutoField (signed 64 bits); anything larger would overflow the query, not miss.
RowId = Annotated[int, Field(ge=1, le=2**63 - 1)]
# PositiveIntegerField is a 32-bit integer on PostgreSQL.
SmallCount = Annotated[int, Field(ge=0, le=2**31 - 1)]


def _instant(value: dt.datetime) -> dt.datetime:
    # Naive times are taken as UTC. Both databases store UTC, and an instant near year 1 or 9999 may not convert:
    # refuse it here rather than fail in the database.
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    try:
        return value.astimezone(dt.UTC)
    except OverflowError as exc:
        raise ValueError("is out of the range of dates that can be stored") from exc


Instant = Annotated[dt.datetime, AfterValidator(_instant)]


def _http_url(value: str) -> str:
    if value and not re.match(r"^https?://[^\s]+$", value):
        raise ValueError("must be an http:// or https:// URL")
    return value


# -- errors ----------------------------------------------------------------------------------------------------------


class FieldError(Schema):
    field: str
    message: str
    type: str | None = None
    line: int | None = None
    column: int | None = None


class ErrorOut(Schema):
    detail: str
    errors: list[FieldError] | None = None


def field_errors(errors: Iterable[dict[str, Any]], prefix: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Pydantic/ninja error dicts as ``{"field": "criteria.0.verdict", "message", "type"}``, ``prefix`` first."""
    result = []
    for err in errors:
        item: dict[str, Any] = {
            "field": ".".join(str(p) for p in (*prefix, *err.get("loc", ()))),
            "message": err.get("msg", ""),
            "type": err.get("type"),
        }
        for extra in ("line", "column"):
            if err.get(extra) is not None:
                item[extra] = err[extra]
        result.append(item)
    return result


def unstorable_path(value: Any) -> tuple[tuple[Any, ...], str] | None:
    """The path of the first string (key or value) inside JSON data that :func:`storable` refuses, with the reason."""
    # A stack, not recursion: parsed JSON may nest nearly as deep as the recursion limit already.
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            try:
                storable(node)
            except ValueError as exc:
                return path, str(exc)
        elif isinstance(node, dict):
            for key, item in reversed(node.items()):
                stack.append(((*path, key), item))
                stack.append(((*path, key), key))
        elif isinstance(node, list):
            stack.extend(((*path, index), item) for index, item in reversed(list(enumerate(node))))
    return None


# -- runs ------------------------------------------------------------------------------------------------------------

RunStatus = Literal["running", "passed", "failed", "errored"]
FinishedStatus = Literal["passed", "failed", "errored"]


class RunIn(Schema):
    """A CI run as the build knows it; ``external_id`` makes a retried upload return the same run."""

    name: Str200 = ""
    commit: Str64 = ""
    branch: Str200 = ""
    build_url: Annotated[Str500, AfterValidator(_http_url)] = ""
    external_id: ExternalId | None = None
    scenario_id: Str100 = ""
    status: RunStatus = "running"
    status_reason: Text = ""
    started_at: Instant | None = None
    finished_at: Instant | None = None


class RunFinishIn(Schema):
    status: FinishedStatus
    status_reason: Text = ""
    finished_at: Instant | None = None


class RunOut(Schema):
    id: uuid.UUID
    source: str
    status: str
    status_reason: str
    name: str
    commit: str
    branch: str
    build_url: str
    external_id: str | None
    scenario_id: str
    mode: str
    protocol: str
    started_at: dt.datetime
    finished_at: dt.datetime | None


class RunEventOut(Schema):
    seq: int
    timestamp: dt.datetime
    kind: str
    turn: int | None
    data: dict[str, Any]


class RunDetailOut(RunOut):
    events: list[RunEventOut]


# -- trace logs and verdicts -----------------------------------------------------------------------------------------
# Plain pydantic models, not ninja Schemas: the views validate these from parsed JSON themselves, and a Schema would
# also accept any object (reading attributes), turning a stray string in a batch into an all-defaults item.


class TraceLogIn(BaseModel):
    """The e2e harness's TurnLog; its camelCase names (turnNumber, filePath) are accepted too."""

    # Errors name the canonical field, whichever spelling was sent.
    model_config = ConfigDict(loc_by_alias=False)

    turn_number: SmallCount = Field(validation_alias=AliasChoices("turn_number", "turnNumber"))
    file_path: Str1000 = Field(validation_alias=AliasChoices("file_path", "filePath"))
    content: Text


class TraceLogOut(Schema):
    id: int
    run_id: uuid.UUID
    turn_number: int
    file_path: str
    size: int = Field(description="Bytes of content, in UTF-8")
    created_at: dt.datetime

    @staticmethod
    def resolve_size(obj: Any) -> int:
        return len(obj.content.encode("utf-8"))


class CriterionIn(BaseModel):
    criterion: Text = Field(min_length=1)
    verdict: VerdictValue
    reason: Text = ""


def _camel(name: str) -> AliasChoices:
    head, *rest = name.split("_")
    return AliasChoices(name, head + "".join(part.title() for part in rest))


class VerdictIn(BaseModel):
    """The judge's JudgeVerdict plus what is known about the judge call.

    A verdict whose judge failed is stored as a judge error (never a FAIL): when ``judge_error`` is given, or
    when no verdict can be read (no overall verdict, no criteria, or a ``raw_output`` that does not parse).
    """

    model_config = ConfigDict(loc_by_alias=False)

    criteria: list[CriterionIn] = Field(default_factory=list, max_length=1000)
    overall: VerdictValue | None = None
    summary: Text = ""
    judge_model: Str200 = Field("", validation_alias=_camel("judge_model"))
    prompt_hash: Str128 = Field("", validation_alias=_camel("prompt_hash"))
    raw_output: Text = Field("", validation_alias=_camel("raw_output"))
    judge_error: Text = Field("", validation_alias=_camel("judge_error"))


class CriterionOut(Schema):
    position: int
    criterion: str
    verdict: str
    reason: str

    @staticmethod
    def resolve_verdict(obj: Any) -> str:
        return obj.judge_verdict


class VerdictOut(Schema):
    id: int
    run_id: uuid.UUID
    overall: str
    summary: str
    judge_model: str
    prompt_hash: str
    judge_error: str
    criteria: list[CriterionOut]
    created_at: dt.datetime


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_judge_output(raw: str) -> dict[str, Any] | None:
    """The verdict in a judge's raw answer (bare JSON or a fenced block), as the seed's safeParseJudgeVerdict reads
    it; None when there is none."""
    candidates = [m.group(1) for m in _FENCE.finditer(raw)] + [raw]
    for candidate in candidates:
        try:
            data = json.loads(candidate.strip())
        except ValueError:
            continue
        if isinstance(data, dict) and _upper(data.get("overall")) in ("PASS", "FAIL"):
            return data
    return None


def judge_failure(verdict: VerdictIn) -> tuple[VerdictIn, str]:
    """The verdict to store and its judge error ("" when the judge answered).

    Fills criteria/overall/summary from ``raw_output`` when only the raw answer was sent. A judge that failed to
    answer is never turned into a FAIL: the seed's judge answers a bare FAIL without criteria when it could not
    parse its own output, so a verdict without criteria is a judge error too.
    """
    if verdict.judge_error.strip():
        return verdict, verdict.judge_error.strip()
    if verdict.overall is None and not verdict.criteria and verdict.raw_output.strip():
        parsed = parse_judge_output(verdict.raw_output)
        if parsed is None:
            return verdict, "No parsable verdict in the judge's raw output."
        try:
            verdict = VerdictIn.model_validate({**verdict.model_dump(), **_verdict_fields(parsed)})
        except ValueError as exc:
            return verdict, f"The judge's raw output is not a valid verdict: {exc}"
    if verdict.overall is None:
        return verdict, "The judge gave no overall verdict."
    if not verdict.criteria:
        return verdict, "The verdict has no criteria: the judge's answer was not parsed."
    return verdict, ""


def _verdict_fields(parsed: dict[str, Any]) -> dict[str, Any]:
    return {key: parsed[key] for key in ("criteria", "overall", "summary") if key in parsed}


# -- batches ---------------------------------------------------------------------------------------------------------


class ItemResult(Schema):
    index: int
    accepted: bool
    id: int | None = None
    duplicate: bool | None = None
    errors: list[FieldError] | None = None


class BatchOut(Schema):
    accepted: int
    rejected: int
    results: list[ItemResult]


# -- JUnit -----------------------------------------------------------------------------------------------------------


class JUnitReportOut(Schema):
    id: int
    run_id: uuid.UUID
    filename: str
    digest: str
    tests: int
    failures: int
    errors: int
    skipped: int
    flaky: int
    uploaded_at: dt.datetime
    duplicate: bool = False

    @staticmethod
    def resolve_flaky(obj: Any) -> int:
        return obj.cases.filter(outcome="flaky").count()


# -- cassettes -------------------------------------------------------------------------------------------------------

SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "cookie", "set-cookie"})
REDACTED = "[REDACTED]"


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


def _redacted(name: str, value: str) -> bool:
    value = value.strip()
    if value in ("", REDACTED):
        return True
    # "Bearer [REDACTED]": the scheme is no secret.
    scheme, _, rest = value.partition(" ")
    return name.lower() == "authorization" and scheme.isalpha() and rest.strip() == REDACTED


def leaked_secrets(cassette: CassetteFile) -> Iterator[dict[str, Any]]:
    """Each request or response header among SECRET_HEADERS whose value is not redacted, as a field error."""
    for index, interaction in enumerate(cassette.interactions):
        for side in ("request", "response"):
            for position, (name, value) in enumerate(getattr(interaction, side).headers):
                if name.lower() in SECRET_HEADERS and not _redacted(name, value):
                    yield {
                        "loc": ("interactions", index, side, "headers", position),
                        "msg": f"header {name} has a value that is not redacted; replace it with {REDACTED}",
                        "type": "unredacted_secret",
                    }


def cassette_file_name(name: str) -> str:
    """The bare file name, whatever path a client sent with it."""
    return PurePosixPath(PureWindowsPath(name).name).name.strip()


def has_control_characters(value: str) -> bool:
    """True when ``value`` holds characters that cannot go into a header such as Content-Disposition."""
    return any(ord(char) < 32 or ord(char) == 127 for char in value)


def parse_cassette_name(name: str, providers: Iterable[str] = ()) -> tuple[str, str] | None:
    """``(provider, scenario)`` from ``verify_{provider}_{scenario}.json`` or ``{provider}_{scenario}.json``.

    A provider whose name holds an underscore (``sap_ai_core``) is recognised when it is among ``providers``
    (the longest match wins); otherwise the provider is the text before the first underscore.
    """
    stem = cassette_file_name(name)
    if stem.lower().endswith(".json"):
        stem = stem[: -len(".json")]
    if stem.startswith("verify_"):
        stem = stem[len("verify_") :]
    for provider in sorted(providers, key=len, reverse=True):
        if provider and stem.startswith(provider + "_") and len(stem) > len(provider) + 1:
            return provider, stem[len(provider) + 1 :]
    provider, _, scenario = stem.partition("_")
    if not provider or not scenario:
        return None
    return provider, scenario


class CassetteOut(Schema):
    id: int
    name: str
    provider: str
    scenario: str
    digest: str
    size: int
    run_id: uuid.UUID | None
    commit: str
    uploaded_at: dt.datetime
    duplicate: bool = False


# -- OpenAPI helpers -------------------------------------------------------------------------------------------------


def inline_schema(model: type[BaseModel], *, by_alias: bool = True, optional: Iterable[str] = ()) -> dict[str, Any]:
    """The model's JSON schema with its ``$defs`` inlined, for request bodies documented through ``openapi_extra``
    (whose ``#/$defs/...`` references would not resolve inside an OpenAPI document). ``optional`` names top-level
    fields the endpoint fills in itself."""
    schema = model.model_json_schema(by_alias=by_alias)
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            # A discriminator's mapping points into $defs too; the oneOf it annotates says the same without it.
            return {key: resolve(value) for key, value in node.items() if key != "discriminator"}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    schema = resolve(schema)
    if optional:
        schema["required"] = [name for name in schema.get("required", []) if name not in set(optional)]
    return schema
