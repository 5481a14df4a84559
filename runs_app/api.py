"""The runs_app REST router: runs, trace logs, judge verdicts, JUnit results, cassettes and coverage.

Uploads that carry raw bytes (JUnit XML, cassettes) or many items (trace logs, verdicts) read the body here rather
than through ninja's body parameters: the bytes must be kept exactly, and one bad item must not sink the others.
Each item's errors are reported by field path; a single item answers 201 (or 422), a list answers 207.
"""

import datetime as dt
import hashlib
import json
import uuid
from collections.abc import Callable
from typing import Annotated, Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DataError, IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.http import content_disposition_header
from ninja import Field, Query, Router, Schema
from ninja.errors import ValidationError
from ninja.pagination import LimitOffsetPagination, paginate
from ninja.responses import Status
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from runs_app import junit
from runs_app.models import (
    Cassette,
    JudgeVerdict,
    JUnitReport,
    Provider,
    Run,
    TestCaseResult,
    TraceLog,
    VerdictCriterion,
)
from runs_app.schemas import (
    BatchOut,
    CassetteFile,
    CassetteOut,
    ErrorOut,
    Instant,
    JUnitReportOut,
    RowId,
    RunDetailOut,
    RunFinishIn,
    RunIn,
    RunOut,
    RunStatus,
    Str64,
    Str100,
    Str200,
    Str300,
    TraceLogIn,
    TraceLogOut,
    VerdictIn,
    VerdictOut,
    cassette_file_name,
    field_errors,
    has_control_characters,
    inline_schema,
    judge_failure,
    leaked_secrets,
    parse_cassette_name,
)

router = Router()

ERRORS: dict[int, Any] = {404: ErrorOut, 413: ErrorOut, 422: ErrorOut}


class Page(LimitOffsetPagination):
    """limit/offset pages, bounded so that no query parameter can overflow the database's integers."""

    class Input(Schema):
        limit: int = Field(100, ge=1, le=1000)
        offset: int = Field(0, ge=0, le=2**31 - 1)


# -- request bodies --------------------------------------------------------------------------------------------------


def max_bytes() -> int:
    """The largest request body the API accepts (settings.HARNESS_API_MAX_BYTES)."""
    return getattr(settings, "HARNESS_API_MAX_BYTES", settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def _check_size(size: int) -> None:
    if size > max_bytes():
        raise RequestDataTooBig(f"{size} bytes is over the limit of {max_bytes()}")


def _check_declared_size(request: HttpRequest) -> None:
    # Refuse before reading (or spooling a multipart upload to disk) when the declared size is already too big.
    length = request.headers.get("Content-Length", "")
    if length.isdigit():
        _check_size(int(length))


def invalid(field: tuple[Any, ...], message: str, kind: str = "value_error", **extra: Any) -> ValidationError:
    """A 422 naming one field; raise it."""
    return ValidationError([{"loc": field, "msg": message, "type": kind, **extra}])


def invalid_from(exc: PydanticValidationError, *prefix: Any) -> ValidationError:
    """A 422 with each of a pydantic error's fields, its path led by ``prefix`` (e.g. "body"); raise it."""
    return ValidationError([{"loc": (*prefix, *e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()])


def read_body(request: HttpRequest) -> bytes:
    """The raw request body, refused with 413 when over the limit (also when sent without a Content-Length)."""
    _check_declared_size(request)
    body = request.body
    _check_size(len(body))
    return body


def parse_json(data: bytes, field: tuple[Any, ...] = ("body",)) -> Any:
    """JSON from bytes, or a 422 naming the line and column where it goes wrong."""
    if not data.strip():
        raise invalid(field, "The body is empty; send JSON.", "missing")
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise invalid(field, f"Malformed JSON: {exc}", "json_invalid", line=exc.lineno, column=exc.colno) from exc
    except UnicodeDecodeError as exc:
        raise invalid(field, f"The body is not UTF-8: {exc}", "unicode_invalid") from exc
    except RecursionError as exc:
        raise invalid(field, "The JSON is nested too deeply.", "json_invalid") from exc


def read_json(request: HttpRequest) -> Any:
    """The request body parsed as JSON (see :func:`parse_json`)."""
    return parse_json(read_body(request))


def is_multipart(request: HttpRequest) -> bool:
    """Whether the body is multipart/form-data (files), rather than one raw document."""
    return request.headers.get("Content-Type", "").lower().startswith("multipart/")


def read_uploads(request: HttpRequest, default_name: str = "") -> tuple[list[tuple[str, bytes]], tuple[str, ...]]:
    """The uploaded files as ``(name, bytes)`` and the field their errors are named by.

    A multipart request gives its files (any field name); anything else is one file: the raw body, named
    ``default_name``.
    """
    if not is_multipart(request):
        return [(default_name, read_body(request))], ("body",)
    _check_declared_size(request)
    try:
        uploads = [upload for key in request.FILES for upload in request.FILES.getlist(key)]
    except MultiPartParserError as exc:
        raise invalid(("body",), f"Malformed multipart body: {exc}", "multipart_invalid") from exc
    if not uploads:
        raise invalid(("file",), "No file in the multipart body: send it as the form field 'file'.", "missing")
    files = []
    for upload in uploads:
        _check_size(upload.size or 0)
        files.append((upload.name or default_name, upload.read()))
    _check_size(sum(len(data) for _, data in files))
    return files, ("file",)


def form_value(request: HttpRequest, name: str) -> str | None:
    """A multipart form field, for parameters a client may send either in the query or next to its file."""
    return request.POST.get(name) if is_multipart(request) else None


def json_body_doc(schema: dict[str, Any], many: bool = False) -> dict[str, Any]:
    """openapi_extra documenting a JSON body that the view reads itself."""
    if many:
        schema = {"anyOf": [schema, {"type": "array", "items": schema}]}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def store_items(
    request: HttpRequest, model: type[BaseModel], store: Callable[[Any], Any], out: Callable[[Any], Any]
) -> Any:
    """Validate and store one item (201, or 422) or a list of them (207 with one result per item).

    Valid items are stored in one transaction, each in its own savepoint, so that one item the database refuses
    is reported and the others still stored; invalid items are reported with their field paths.
    """
    data = read_json(request)
    if not isinstance(data, list):
        try:
            item = model.model_validate(data)
        except PydanticValidationError as exc:
            raise invalid_from(exc, "body") from exc
        with transaction.atomic():
            return Status(201, out(store(item)))

    results: list[dict[str, Any]] = []
    valid: list[tuple[int, Any]] = []
    for index, raw in enumerate(data):
        try:
            valid.append((index, model.model_validate(raw)))
        except PydanticValidationError as exc:
            results.append({"index": index, "accepted": False, "errors": field_errors(exc.errors())})
    with transaction.atomic():
        for index, item in valid:
            try:
                with transaction.atomic():
                    row = store(item)
            except (IntegrityError, DataError) as exc:
                results.append({"index": index, "accepted": False, "errors": [_db_error(exc)]})
            else:
                results.append({"index": index, "accepted": True, "id": row.pk})
    results.sort(key=lambda result: result["index"])
    accepted = sum(1 for result in results if result["accepted"])
    return Status(207, {"accepted": accepted, "rejected": len(results) - accepted, "results": results})


def _db_error(exc: Exception) -> dict[str, Any]:
    return {"field": "", "message": f"The database refused this item: {exc}", "type": "database_error"}


# -- runs ------------------------------------------------------------------------------------------------------------


class RunFilters(Schema):
    scenario: Str100 | None = None
    status: RunStatus | None = None
    source: Annotated[str, Field(max_length=20)] | None = None
    since: Instant | None = None


@router.get("/runs", response=list[RunOut], summary="List runs, newest first")
@paginate(Page)
def list_runs(request: HttpRequest, filters: Query[RunFilters]) -> Any:
    """Runs of the fake endpoints and of CI, filtered by scenario, status, source, and start time (``since``)."""
    # id breaks ties between runs started in the same instant, so that pages neither repeat nor skip a run.
    runs = Run.objects.order_by("-started_at", "id")
    if filters.scenario:
        runs = runs.filter(scenario_id=filters.scenario)
    if filters.status:
        runs = runs.filter(status=filters.status)
    if filters.source:
        runs = runs.filter(source=filters.source)
    if filters.since:
        runs = runs.filter(started_at__gte=filters.since)
    return runs


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
    """Open a run of source "ci". With an ``external_id``, a retried upload answers 200 with the run the first
    upload created instead of creating another; the unique constraint settles concurrent retries."""
    now = timezone.now()
    finished_at = run.finished_at
    if finished_at is None and run.status != Run.Status.RUNNING:
        finished_at = now
    fields = {
        "source": "ci",
        "mode": "ci",
        "protocol": "",
        "name": run.name,
        "commit": run.commit,
        "branch": run.branch,
        "build_url": run.build_url,
        "scenario_id": run.scenario_id,
        "status": run.status,
        "status_reason": run.status_reason,
        "started_at": run.started_at or now,
        "finished_at": finished_at,
        "external_id": run.external_id,
    }
    if run.external_id is None:
        return Status(201, Run.objects.create(**fields))
    # Insert first and fall back on the constraint, rather than look up first: two retries racing each other both
    # miss a lookup, but only one insert can win.
    try:
        with transaction.atomic():
            return Status(201, Run.objects.create(**fields))
    except IntegrityError:
        existing = Run.objects.filter(external_id=run.external_id).first()
        if existing is None:
            raise
        return Status(200, existing)


@router.post("/runs/{run_id}/finish", response={200: RunOut, **ERRORS}, summary="Finish a run")
def finish_run(request: HttpRequest, run_id: uuid.UUID, finish: RunFinishIn) -> Any:
    """Set a run's final status and finish time (now, unless given)."""
    run = get_object_or_404(Run, id=run_id)
    run.status = finish.status
    run.status_reason = finish.status_reason
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
    """One TurnLog ``{turn_number, file_path, content}`` (or ``turnNumber``/``filePath``) answers 201; a list
    answers 207 with ``{index, accepted, id | errors}`` per item."""
    run = get_object_or_404(Run, id=run_id)

    def store(item: TraceLogIn) -> TraceLog:
        return TraceLog.objects.create(
            run=run, turn_number=item.turn_number, file_path=item.file_path, content=item.content
        )

    return store_items(request, TraceLogIn, store, lambda row: row)


def store_verdict(run: Run, verdict: VerdictIn) -> JudgeVerdict:
    """Store a verdict with its criteria; a judge that failed is stored as a judge error with a blank overall."""
    verdict, error = judge_failure(verdict)
    with transaction.atomic():
        row = JudgeVerdict.objects.create(
            run=run,
            overall="" if error else verdict.overall,
            summary=verdict.summary,
            judge_model=verdict.judge_model,
            prompt_hash=verdict.prompt_hash,
            raw_output=verdict.raw_output,
            judge_error=error,
        )
        VerdictCriterion.objects.bulk_create(
            VerdictCriterion(
                verdict=row,
                position=position,
                criterion=criterion.criterion,
                judge_verdict=criterion.verdict,
                reason=criterion.reason,
            )
            for position, criterion in enumerate(verdict.criteria)
        )
    return row


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
    existing = JUnitReport.objects.filter(run=run, digest=digest).first()
    if existing is not None:
        return existing, False
    parsed = junit.parse(data)
    try:
        with transaction.atomic():
            report = JUnitReport.objects.create(
                run=run,
                digest=digest,
                filename=cassette_file_name(filename)[:300],
                tests=parsed.tests,
                failures=parsed.failures,
                errors=parsed.errors,
                skipped=parsed.skipped,
            )
            TestCaseResult.objects.bulk_create((_case_row(report, case) for case in parsed.cases), batch_size=500)
    except IntegrityError:
        # The same file, uploaded concurrently: the other upload stored it.
        existing = JUnitReport.objects.filter(run=run, digest=digest).first()
        if existing is None:
            raise
        return existing, False
    return report, True


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
    accepted = sum(1 for result in results if result["accepted"])
    return Status(207, {"accepted": accepted, "rejected": len(results) - accepted, "results": results})


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
    response={200: CassetteOut, 201: CassetteOut, **ERRORS},
    summary="Upload a VCR cassette (raw JSON body or multipart file)",
    openapi_extra=_CASSETTE_BODY,
)
def upload_cassette(request: HttpRequest, meta: Query[CassetteMeta]) -> Any:
    """A cassette in the VCR format, kept byte for byte. Provider and scenario come from the name
    (``verify_{provider}_{scenario}.json`` or ``{provider}_{scenario}.json``) unless given. A cassette with an
    unredacted Authorization, x-api-key, api-key, cookie or set-cookie header is refused, naming the header.
    The same bytes uploaded again answer 200 with the stored cassette."""
    meta = _cassette_meta(request, meta)
    files, field = read_uploads(request, default_name=meta.name)
    if len(files) != 1:
        raise invalid(("file",), "Upload one cassette per request.")
    upload_name, data = files[0]
    try:
        cassette = CassetteFile.model_validate(parse_json(data, field))
    except PydanticValidationError as exc:
        raise invalid_from(exc, *field) from exc
    leaks = [{**leak, "loc": (*field, *leak["loc"])} for leak in leaked_secrets(cassette)]
    if leaks:
        raise ValidationError(leaks)

    name = cassette_file_name(meta.name or upload_name)
    if has_control_characters(name):
        # The name goes back out in the download's Content-Disposition header.
        raise invalid(("query", "name"), "The name holds control characters.")
    provider, scenario = meta.provider.strip(), meta.scenario.strip()
    if not (provider and scenario):
        parsed = parse_cassette_name(name, Provider.objects.values_list("name", flat=True)) if name else None
        if parsed is None:
            raise invalid(
                ("query", "name"),
                f"Cannot tell provider and scenario from the name {name!r}: name the file "
                "verify_{provider}_{scenario}.json or {provider}_{scenario}.json, or pass provider and scenario.",
            )
        provider, scenario = provider or parsed[0], scenario or parsed[1]
    if len(provider) > 100 or len(scenario) > 200:
        raise invalid(("query", "name"), "The provider (100) or scenario (200 characters) in the name is too long.")
    name = name or f"verify_{provider}_{scenario}.json"
    run = None
    if meta.run is not None:
        run = Run.objects.filter(id=meta.run).first()
        if run is None:
            raise invalid(("query", "run"), f"No run {meta.run}")

    digest = hashlib.sha256(data).hexdigest()
    existing = Cassette.objects.filter(digest=digest).first()
    if existing is None:
        try:
            with transaction.atomic():
                row = Cassette.objects.create(
                    name=name,
                    provider=provider,
                    scenario=scenario,
                    content=data,
                    digest=digest,
                    size=len(data),
                    run=run,
                    commit=meta.commit,
                )
            row.duplicate = False
            return Status(201, row)
        except IntegrityError:
            existing = Cassette.objects.filter(digest=digest).first()
            if existing is None:
                raise
    existing.duplicate = True
    return Status(200, existing)


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


# -- coverage --------------------------------------------------------------------------------------------------------


@router.get("/coverage", response=dict[str, Any], summary="Provider test-obligation coverage")
def coverage(request: HttpRequest, today: dt.date | None = None) -> Any:
    """Providers × obligations with each cell's state, as the coverage dashboard shows it; ``today`` evaluates
    waivers' expiry on another day."""
    # Imported on use: an error in the coverage computation must not take the rest of the API down with it.
    from runs_app.coverage import coverage_report

    return coverage_report(today) if today is not None else coverage_report()
