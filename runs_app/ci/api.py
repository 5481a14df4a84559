"""The runs_app REST router: runs, trace logs, judge verdicts, JUnit results and cassettes.

Uploads that carry raw bytes (JUnit XML, cassettes) or many items (trace logs, verdicts) read the body here rather
than through ninja's body parameters: the bytes must be kept exactly, and one bad item must not sink the others.
Each item's errors are reported by field path; a single item answers 201 (or 422), a list answers 207.
"""

import hashlib
import uuid
from typing import Annotated, Any

from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.http import content_disposition_header
from ninja import Field, Query, Router, Schema
from ninja.errors import ValidationError
from ninja.pagination import paginate
from ninja.responses import Status
from pydantic import ValidationError as PydanticValidationError

from harnessweb.apikit import (
    BatchOut,
    ErrorOut,
    Page,
    RowId,
    Str300,
    batch_response,
    field_errors,
    form_value,
    inline_schema,
    invalid_from,
    json_body_doc,
    read_uploads,
    store_items,
)
from harnessweb.judging.verdicts import CriterionVerdict
from harnessweb.judging.verdicts import JudgeVerdict as Verdict
from runs_app.ci import cassette_uploads, junit
from runs_app.ci.cassettes import (
    CassetteFile,
    cassette_file_name,
)
from runs_app.ci.schemas import (
    CassetteOut,
    Instant,
    JUnitReportOut,
    ListedStatus,
    RunDetailOut,
    RunFinishIn,
    RunIn,
    RunOut,
    Str64,
    Str100,
    Str200,
    TraceLogIn,
    TraceLogOut,
    VerdictIn,
    VerdictOut,
    judge_failure,
)
from runs_app.ci.trace_logs import store_trace_log
from runs_app.judging import judge
from runs_app.lifecycle import Reported, next_status
from runs_app.models import (
    Cassette,
    JudgeVerdict,
    JUnitReport,
    Run,
    TestCaseResult,
)
from runs_app.pricing.costs import RunPage

router = Router()

ERRORS: dict[int, Any] = {404: ErrorOut, 413: ErrorOut, 422: ErrorOut}


# -- request bodies --------------------------------------------------------------------------------------------------


# -- runs ------------------------------------------------------------------------------------------------------------


class RunFilters(Schema):
    scenario: Str100 | None = None
    status: ListedStatus | None = None
    source: Annotated[str, Field(max_length=20)] | None = None
    since: Instant | None = None
    test: Annotated[Str200, Field(description="Part of a CI or pytest run's test name")] | None = None
    fingerprint: Annotated[str, Field(max_length=64, description="A key's fingerprint (never the key)")] | None = None


@router.get("/runs", response=list[RunOut], summary="List runs, newest first")
@paginate(RunPage)  # each run's cost read for the page at once
def list_runs(request: HttpRequest, filters: Query[RunFilters]) -> Any:
    """Runs of the fake endpoints and of CI, filtered by scenario, status, source, start time (``since``), test name
    (``test``, a part of it) and the fingerprint of an API key a request of the run presented."""
    # id breaks ties between runs started in the same instant, so that pages neither repeat nor skip a run.
    runs = Run.objects.filtered(
        scenario=filters.scenario or "",
        status=filters.status or "",
        source=filters.source or "",
        since=filters.since,
        test=filters.test or "",
        fingerprint=filters.fingerprint or "",
    )
    return runs.order_by("-started_at", "id")


@router.get("/runs/{run_id}", response={200: RunDetailOut, **ERRORS}, summary="A run with its events")
def get_run(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """One run with its timeline events in order."""
    return get_object_or_404(Run.objects.prefetch_related("events"), id=run_id)


@router.post(
    "/runs",
    response={200: RunOut, 201: RunOut, **ERRORS},
    summary="Open a CI run (idempotent on external_id)",
)
def create_run(request: HttpRequest, run: RunIn) -> Any:
    """Open a run of source "ci" (or "pytest", from the pytest plugin). With an ``external_id``, a retried upload
    answers 200 with the run the first upload created instead of creating another; the unique constraint settles
    concurrent retries."""
    now = timezone.now()
    change = next_status(Run.Status.RUNNING, Reported(run.status, run.status_reason))
    fields = {
        "source": run.source,
        "mode": "ci",
        "protocol": "",
        "name": run.name,
        "commit": run.commit,
        "branch": run.branch,
        "build_url": run.build_url,
        "scenario_id": run.scenario_id,
        "status": change.status,
        "status_reason": change.reason,
        "started_at": run.started_at or now,
        "finished_at": run.finished_at or (now if change.finished else None),
    }
    if run.external_id is None:
        return Status(201, Run.objects.create(**fields))
    # The unique constraint settles retries racing each other: only one insert can win, the others get its run.
    row, created = Run.objects.get_or_create(external_id=run.external_id, defaults=fields)
    return Status(201 if created else 200, row)


@router.post("/runs/{run_id}/finish", response={200: RunOut, **ERRORS}, summary="Finish a run")
def finish_run(request: HttpRequest, run_id: uuid.UUID, finish: RunFinishIn) -> Any:
    """Set a run's final status and finish time (now, unless given)."""
    run = get_object_or_404(Run, id=run_id)
    change = next_status(run.status, Reported(finish.status, finish.status_reason))
    run.status, run.status_reason = change.status, change.reason
    run.finished_at = finish.finished_at or timezone.now()
    run.save(update_fields=["status", "status_reason", "finished_at"])
    return run


# -- trace logs and verdicts -----------------------------------------------------------------------------------------


@router.post(
    "/runs/{run_id}/trace-logs",
    response={201: TraceLogOut, 207: BatchOut, **ERRORS},
    summary="Upload trace logs (one TurnLog or a list)",
    openapi_extra=json_body_doc(inline_schema(TraceLogIn), many=True),
)
def upload_trace_logs(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """One TurnLog ``{turn_number, file_path, content, outcome?}`` (or ``turnNumber``/``filePath``) answers 201; a list
    answers 207 with ``{index, accepted, id | errors}`` per item."""
    run = get_object_or_404(Run, id=run_id)

    return store_items(request, TraceLogIn, lambda item: store_trace_log(run, item), lambda row: row)


def store_verdict(run: Run, verdict: VerdictIn) -> JudgeVerdict:
    """Store a verdict as the judge stores its own (a judge that failed as a judge error with a blank overall, a
    skipped one as skipped)."""
    verdict, error = judge_failure(verdict)
    criteria = [CriterionVerdict(c.criterion, c.verdict, c.reason) for c in verdict.criteria]
    fields = verdict.model_dump(exclude={"criteria", "overall", "judge_error"})
    overall = "" if error else verdict.overall or ""
    return judge.store_verdict(run, Verdict(criteria, overall, **fields, judge_error=error))


@router.post(
    "/runs/{run_id}/verdicts",
    response={201: VerdictOut, 207: BatchOut, **ERRORS},
    summary="Upload judge verdicts (one JudgeVerdict or a list)",
    openapi_extra=json_body_doc(inline_schema(VerdictIn), many=True),
)
def upload_verdicts(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """The judge's ``{criteria: [{criterion, verdict, reason}], overall, summary}`` plus ``judge_model``,
    ``prompt_hash``, ``raw_output`` and ``judge_error``. A verdict whose judge failed is stored with
    ``judge_error`` set and a blank ``overall``: it never counts as a FAIL."""
    run = get_object_or_404(Run, id=run_id)
    return store_items(
        request,
        VerdictIn,
        lambda item: store_verdict(run, item),
        lambda row: JudgeVerdict.objects.prefetch_related("criteria").get(pk=row.pk),
    )


# -- JUnit -----------------------------------------------------------------------------------------------------------

_JUNIT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/xml": {"schema": {"type": "string"}},
            "text/xml": {"schema": {"type": "string"}},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"file": {"type": "array", "items": {"type": "string", "format": "binary"}}},
                    "required": ["file"],
                }
            },
        },
    }
}


def store_junit(run: Run, filename: str, data: bytes) -> tuple[JUnitReport, bool]:
    """Parse and store one JUnit XML file; the same bytes already uploaded to ``run`` give the stored report.

    Returns the report and whether it was created. Raises :class:`junit.JUnitError` and stores nothing for a
    malformed file.
    """
    digest = hashlib.sha256(data).hexdigest()
    if (existing := JUnitReport.objects.filter(run=run, digest=digest).first()) is not None:
        return existing, False
    parsed = junit.parse(data)
    counts = {"tests": parsed.tests, "failures": parsed.failures, "errors": parsed.errors, "skipped": parsed.skipped}
    with transaction.atomic():
        # The same file uploaded concurrently: the unique constraint lets one store it, the other gets that report.
        report, created = JUnitReport.objects.get_or_create(
            run=run, digest=digest, defaults={"filename": cassette_file_name(filename)[:300], **counts}
        )
        if created:
            TestCaseResult.objects.bulk_create((_case_row(report, case) for case in parsed.cases), batch_size=500)
    return report, created


def _case_row(report: JUnitReport, case: junit.TestCase) -> TestCaseResult:
    props = case.properties
    return TestCaseResult(
        report=report,
        run_id=report.run_id,
        suite=case.suite[:500],
        name=case.name[:1000] or "(unnamed)",
        classname=case.classname[:1000],
        duration_s=case.duration_s,
        outcome=case.outcome,
        message=case.message,
        properties=props,
        # Lower-cased so that "OpenAI" and "openai" count for one provider.
        provider=props.get("provider", "").strip().lower()[:100],
        tier=props.get("tier", "").strip().lower()[:20],
        scenario=props.get("scenario", "").strip()[:200],
    )


def _junit_error(field: tuple[Any, ...], exc: junit.JUnitError) -> dict[str, Any]:
    return {"loc": field, "msg": exc.message, "type": "xml_invalid", "line": exc.line, "column": exc.column}


@router.post(
    "/runs/{run_id}/junit",
    response={200: JUnitReportOut, 201: JUnitReportOut, 207: BatchOut, **ERRORS},
    summary="Upload JUnit XML (raw body or multipart files)",
    openapi_extra=_JUNIT_BODY,
)
def upload_junit(request: HttpRequest, run_id: uuid.UUID, filename: Str300 = "") -> Any:
    """JUnit XML as pytest, vitest or cargo-nextest write it: the raw body (``application/xml``), or one or more
    multipart files. One file answers 201, or 200 when the same bytes were already uploaded to this run; several
    answer 207 with a result per file."""
    run = get_object_or_404(Run, id=run_id)
    files, field = read_uploads(request, default_name=filename)
    if len(files) == 1:
        name, data = files[0]
        try:
            report, created = store_junit(run, name, data)
        except junit.JUnitError as exc:
            raise ValidationError([_junit_error(field, exc)]) from exc
        report.duplicate = not created
        return Status(201 if created else 200, report)

    results: list[dict[str, Any]] = []
    for index, (name, data) in enumerate(files):
        try:
            report, created = store_junit(run, name, data)
        except junit.JUnitError as exc:
            errors = field_errors([_junit_error((*field, index), exc)])
            results.append({"index": index, "accepted": False, "errors": errors})
        else:
            results.append({"index": index, "accepted": True, "id": report.pk, "duplicate": not created})
    return batch_response(results)


# -- cassettes -------------------------------------------------------------------------------------------------------


class CassetteMeta(Schema):
    name: Str300 = Field("", description="File name, e.g. verify_openai_simple_text.json")
    provider: Str100 = Field("", description="Defaults to the provider in the name")
    scenario: Str200 = Field("", description="Defaults to the scenario in the name")
    run: uuid.UUID | None = Field(None, description="The run that recorded it")
    commit: Str64 = ""


_CASSETTE_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": inline_schema(CassetteFile)},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        **{key: {"type": "string"} for key in ("name", "provider", "scenario", "run", "commit")},
                    },
                    "required": ["file"],
                }
            },
        },
    }
}


def _cassette_meta(request: HttpRequest, meta: CassetteMeta) -> CassetteMeta:
    # Multipart uploads may send these as form fields next to the file; the query wins when both are given.
    given = meta.model_dump(exclude_unset=True)
    form = {key: form_value(request, key) for key in CassetteMeta.model_fields if key not in given}
    form = {key: value for key, value in form.items() if value is not None}
    if not form:
        return meta
    try:
        return CassetteMeta.model_validate({**form, **given})
    except PydanticValidationError as exc:
        raise invalid_from(exc, "form") from exc


@router.post(
    "/cassettes",
    response={200: CassetteOut, 201: CassetteOut, 207: BatchOut, **ERRORS},
    summary="Upload VCR cassettes (raw JSON body, or one or more multipart files)",
    openapi_extra=_CASSETTE_BODY,
)
def upload_cassette(request: HttpRequest, meta: Query[CassetteMeta]) -> Any:
    """A cassette in the VCR format, kept byte for byte. Provider and scenario come from the name
    (``verify_{provider}_{scenario}.json`` or ``{provider}_{scenario}.json``) unless given. A cassette with a
    secret left in it (a secret header or query parameter, a key in a body) is refused, naming the file and place.
    The same bytes uploaded again answer 200 with the stored cassette. Several multipart files answer 207 with a
    result per file, each stored or refused on its own (``cassette_uploads.py``)."""
    return cassette_uploads.upload(request, _cassette_meta(request, meta))


class CassetteFilters(Schema):
    provider: Str100 | None = None
    scenario: Str200 | None = None


@router.get("/cassettes", response=list[CassetteOut], summary="List cassettes")
@paginate(Page)
def list_cassettes(request: HttpRequest, filters: Query[CassetteFilters]) -> Any:
    """Cassettes' metadata (not their content), by provider and scenario."""
    cassettes = Cassette.objects.defer("content").order_by("provider", "scenario", "-uploaded_at", "id")
    if filters.provider:
        cassettes = cassettes.filter(provider=filters.provider)
    if filters.scenario:
        cassettes = cassettes.filter(scenario=filters.scenario)
    return cassettes


@router.get(
    "/cassettes/{cassette_id}",
    response={200: dict[str, Any], 404: ErrorOut, 422: ErrorOut},
    summary="Download a cassette, byte-identical to the upload",
)
def download_cassette(request: HttpRequest, cassette_id: RowId) -> HttpResponse:
    """The cassette exactly as uploaded, as a JSON attachment under its name."""
    row = get_object_or_404(Cassette, pk=cassette_id)
    return HttpResponse(
        bytes(row.content),
        content_type="application/json",
        headers={"Content-Disposition": content_disposition_header(True, row.name)},
    )
