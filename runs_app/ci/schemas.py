"""Schemas of the REST API for runs and CI uploads, plus the cassette file format; shared by the API and the admin.

Every string that reaches the database passes :func:`storable`: PostgreSQL refuses NUL characters and neither
database can encode a lone surrogate, and a 500 there would be a worse answer than a 422 naming the field.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from decimal import Decimal
from typing import Annotated, Any, Literal

from django.urls import reverse
from ninja import Schema
from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from harnessweb.apikit import (
    ExternalId,
    Instant,
    SmallCount,
    Str64,
    Str100,
    Str128,
    Str200,
    Str500,
    Str1000,
    Text,
    short_text,
)
from harnessweb.engine.pricing import MICRO
from harnessweb.engine.redaction import first_secret, redact_text
from harnessweb.judging.verdicts import NoVerdict, parse_verdict
from runs_app.pricing.costs import total_for, verdict_cost

# -- field types -----------------------------------------------------------------------------------------------------


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


VerdictValue = Annotated[Literal["PASS", "FAIL"], BeforeValidator(_upper)]


def _http_url(value: str) -> str:
    if value and not re.match(r"^https?://[^\s]+$", value):
        raise ValueError("must be an http:// or https:// URL")
    return value


# -- errors ----------------------------------------------------------------------------------------------------------


# -- runs ------------------------------------------------------------------------------------------------------------

# "skipped": a test that did not run (the pytest plugin's skipped tests, or CI's), as final as passed or failed.
RunStatus = Literal["running", "passed", "failed", "errored", "skipped"]
# What a list can filter by: also the endpoint's own closing status, which CI never reports.
ListedStatus = Literal["running", "passed", "failed", "errored", "skipped", "abandoned"]
FinishedStatus = Literal["passed", "failed", "errored", "skipped"]


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
    # "pytest": a test's run uploaded by the pytest plugin (--harness-upload), with its calls.
    source: Literal["ci", "pytest"] = "ci"


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
    pinned: bool
    # What its responses cost at the price table's prices (runs_app/pricing): a lower bound when some are unpriced.
    cost_usd: Decimal | None = Field(None, description="USD, whole micro-dollars; null when no response was priced")
    unpriced_responses: int = Field(0, description="Responses whose cost is unknown (no price, or no usage)")
    unpriced_models: list[str] = Field(default_factory=list, description="The models the price table has no price for")

    @staticmethod
    def resolve_cost_usd(obj: Any) -> Decimal | None:
        return total_for(obj).api_usd

    @staticmethod
    def resolve_unpriced_responses(obj: Any) -> int:
        return total_for(obj).unpriced

    @staticmethod
    def resolve_unpriced_models(obj: Any) -> list[str]:
        return sorted(total_for(obj).unpriced_models)


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


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


class TraceLogIn(BaseModel):
    """The e2e harness's TurnLog; its camelCase names (turnNumber, filePath) are accepted too."""

    # Errors name the canonical field, whichever spelling was sent.
    model_config = ConfigDict(loc_by_alias=False)

    turn_number: SmallCount = Field(validation_alias=AliasChoices("turn_number", "turnNumber"))
    file_path: Str1000 = Field(validation_alias=AliasChoices("file_path", "filePath"))
    content: Text

    @field_validator("file_path")
    @classmethod
    def _redacted_path(cls, file_path: str) -> str:
        return redact_text(file_path)  # stored, and named in a refusal: a key in it stays behind

    @field_validator("content")
    @classmethod
    def _no_secret(cls, content: str, info: ValidationInfo) -> str:
        """A log that holds a key is refused, naming the file and line: redact it before it is uploaded."""
        if found := first_secret(content):
            line, kind = found
            where = info.data.get("file_path", "the log")
            raise ValueError(f"{where}, line {line}, holds {kind}: redact it before uploading the log")
        return content

    # The turn's outcome: "success", "failed" or "" (none); not given, the file's footer says (trace_outcome.py).
    outcome: Annotated[Literal["success", "failed", ""], BeforeValidator(_lower)] | None = None


class TraceLogOut(Schema):
    id: int
    run_id: uuid.UUID
    turn_number: int
    file_path: str
    size: int = Field(description="Bytes of content, in UTF-8")
    outcome: str = Field(description="success, failed, or blank: the turn's outcome (the footer's unless given)")
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
    # A judge that was not asked (no key, a placeholder key): stored as skipped, never a FAIL or a judge error.
    skipped_reason: Text = Field("", validation_alias=_camel("skipped_reason"))
    prompt: Text = ""  # the prompt as sent
    input_tokens: SmallCount | None = Field(None, validation_alias=_camel("input_tokens"))
    output_tokens: SmallCount | None = Field(None, validation_alias=_camel("output_tokens"))


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
    judge_cost_usd: Decimal | None = Field(
        None, description="The judge's own call at the price table's price of judge_model; null when unknown"
    )

    @staticmethod
    def resolve_judge_cost_usd(obj: Any) -> Decimal | None:
        cost = verdict_cost(obj)
        return None if cost is None or cost.usd is None else cost.usd.quantize(MICRO)


def judge_failure(verdict: VerdictIn) -> tuple[VerdictIn, str]:
    """The verdict to store and its judge error ("" when the judge answered).

    Fills criteria/overall/summary from ``raw_output`` when only the raw answer was sent. A judge that failed to
    answer is never turned into a FAIL: the seed's judge answers a bare FAIL without criteria when it could not
    parse its own output, so a verdict without criteria is a judge error too.
    """
    if verdict.judge_error.strip():
        return verdict, verdict.judge_error.strip()
    if verdict.skipped_reason.strip():
        return verdict, ""
    if verdict.overall is None and not verdict.criteria and verdict.raw_output.strip():
        try:  # read as the judge itself reads its answer (harnessweb.judging.verdicts)
            criteria, overall, summary = parse_verdict(verdict.raw_output)
        except NoVerdict:
            return verdict, "No parsable verdict in the judge's raw output."
        parsed = {"criteria": [vars(c) for c in criteria], "overall": overall, "summary": summary}
        try:
            verdict = VerdictIn.model_validate({**verdict.model_dump(), **parsed})
        except ValueError as exc:
            return verdict, f"The judge's raw output is not a valid verdict: {exc}"
    if verdict.overall is None:
        return verdict, "The judge gave no overall verdict."
    if not verdict.criteria:
        return verdict, "The verdict has no criteria: the judge's answer was not parsed."
    return verdict, ""


# -- batches ---------------------------------------------------------------------------------------------------------


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


# -- conversations and artifacts -------------------------------------------------------------------------------------


class MessagesIn(BaseModel):
    """A conversation as ``POST /api/runs/{id}/messages`` takes it in an object (a bare list of messages is taken
    too): the messages in OpenAI's or Anthropic's shape, Anthropic's top-level ``system`` prompt, the shape when the
    messages do not tell it, and the position of the first message (0: the whole conversation, sent again whole)."""

    model_config = ConfigDict(extra="forbid")

    messages: list[Any]
    system: str | list[Any] | None = None
    format: Literal["openai", "anthropic"] | None = None
    start: SmallCount = 0


class MessageOut(Schema):
    position: int
    role: str
    name: str
    format: str
    parts: list[dict[str, Any]]


class MessagesOut(Schema):
    run_id: uuid.UUID
    created: int = Field(description="Messages stored by this upload")
    duplicates: int = Field(description="Messages already stored at their position (a retry)")
    messages: list[MessageOut]


def _artifact_kind(value: Any) -> Any:
    # A MIME type (text/html; charset=utf-8) names the kind too.
    if isinstance(value, str):
        return {"text/html": "html", "text/plain": "text"}.get(value.split(";")[0].strip().lower(), value)
    return value


_HTML_START = re.compile(r"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.IGNORECASE | re.DOTALL)


ArtifactName = short_text(500, min_length=1)


class ArtifactIn(BaseModel):
    """A named artifact: seed 001's generated page (its short URL or name and its HTML) or any text. ``kind`` is
    ``html`` or ``text`` (a MIME type also does); when not given, a name ending in .html or content that opens as an
    HTML document is HTML."""

    model_config = ConfigDict(loc_by_alias=False)

    name: ArtifactName = Field(validation_alias=AliasChoices("name", "url"))
    content: Text
    kind: Annotated[Literal["html", "text"] | None, BeforeValidator(_artifact_kind)] = Field(
        None, validation_alias=AliasChoices("kind", "content_type", "contentType")
    )

    @field_validator("name")
    @classmethod
    def _redacted_name(cls, name: str) -> str:
        return redact_text(name)[:500]  # a URL may carry a key in its query

    @field_validator("content")
    @classmethod
    def _no_secret(cls, content: str, info: ValidationInfo) -> str:
        """An artifact that holds a key is refused, naming the line: redact it before it is uploaded."""
        if found := first_secret(content):
            line, kind = found
            where = info.data.get("name", "the artifact")
            raise ValueError(f"{where}, line {line}, holds {kind}: redact it before uploading the artifact")
        return content

    def resolved_kind(self) -> str:
        if self.kind:
            return self.kind
        if self.name.lower().endswith((".html", ".htm")) or _HTML_START.match(self.content[:4096]):
            return "html"
        return "text"


class ArtifactOut(Schema):
    id: int
    run_id: uuid.UUID
    name: str
    kind: str
    size: int = Field(description="Bytes of content, in UTF-8")
    digest: str
    raw_url: str = Field(description="Its content, for a logged-in browser, under a sandboxing Content-Security-Policy")
    created_at: dt.datetime
    updated_at: dt.datetime
    duplicate: bool = False

    @staticmethod
    def resolve_raw_url(obj: Any) -> str:
        return reverse("runs:artifact_raw", args=[obj.pk])


# -- OpenAPI helpers -------------------------------------------------------------------------------------------------
