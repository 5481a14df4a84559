"""The judge from any CI, over REST: ``POST /api/runs/{id}/judge`` queues the judge on a run's transcript (a judge
batch of one run: its progress is a row, its live page ``/runs/judge/<id>/``, its channel-layer group
``judge-<id>``) and answers 202 with the job; ``GET /api/judge/{id}`` reads the job's state and, once done, its
verdict, waiting up to ``?wait=`` seconds for it.

Queuing calls a paid model, so it needs a token with judge scope (which includes write and read); reading a job
needs any token. The verdict is stored by :func:`runs_app.judging.judge.store_verdict`, as every verdict is, so a
FAIL lands in the review queue.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from typing import Any, Literal

from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Query, Router, Schema
from ninja.errors import HttpError
from ninja.responses import Status
from ninja.security import HttpBearer
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from harnessweb.apikit import (
    SCOPE_MARK,
    ErrorOut,
    RowId,
    Str100,
    grants,
    inline_schema,
    invalid,
    invalid_from,
    json_body_doc,
    read_json,
    storable,
)
from harnessweb.judging.verdicts import criteria_lines
from runs_app import tokens
from runs_app.judging import batches
from runs_app.judging.judge import configured
from runs_app.judging.models import CriteriaSet, JudgeBatch
from runs_app.models import ApiToken, JudgeVerdict, Run, VerdictCriterion
from runs_app.review import rules as review

router = Router()

MAX_WAIT_S = 60.0  # ?wait= is capped here: a CI step waits longer by asking again
POLL_S = 0.2
MAX_CRITERIA = 100
NO_JUDGE = "No judge is configured on this server: set HARNESS_JUDGE_BASE_URL (and HARNESS_JUDGE_MODEL)."


# -- auth: judge scope -----------------------------------------------------------------------------------------------


class JudgeBearerToken(HttpBearer):
    """A live token with judge scope; a read or write token is a 403 saying which scope it has and which it needs."""

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        row = tokens.authenticate(token)
        if row is not None and not grants(row, ApiToken.Scope.JUDGE):
            raise HttpError(
                403,
                f"This token has {row.scope} scope; queuing the judge calls a paid model and needs a token with judge "
                "scope (which includes write scope): manage.py create_api_token NAME --scope judge.",
            )
        return row


# -- schemas ---------------------------------------------------------------------------------------------------------


class JudgeIn(BaseModel):
    """Criteria as a list of strings, or one string with one criterion per line; else a saved set's name. Typed
    criteria win over a set, as on the judge page."""

    model_config = ConfigDict(extra="forbid")

    criteria: str | list[str] | None = None  # checked item by item in _read_body, so an error names the item
    criteria_set: Str100 | None = None


class CriterionResult(Schema):
    position: int
    criterion: str
    verdict: str  # the judge's PASS or FAIL
    effective: str  # a reviewer's override where given, else the judge's
    reason: str


class VerdictResult(Schema):
    id: int
    run_id: uuid.UUID
    state: Literal["judged", "skipped", "judge_error"]
    overall: str  # the judge's PASS or FAIL; blank when skipped or when the judge failed
    effective: str  # PASS, FAIL, ERROR (the judge failed) or SKIPPED (the judge was not asked)
    summary: str
    criteria: list[CriterionResult]
    judge_model: str
    input_tokens: int | None
    output_tokens: int | None
    prompt_hash: str
    skipped_reason: str
    judge_error: str
    review_url: str
    created_at: dt.datetime
    prompt: str | None = None  # with ?prompt=true


class JobOut(Schema):
    id: int
    state: Literal["queued", "running", "done"]
    run_ids: list[str]
    criteria: list[str]
    criteria_set: str | None
    done: int
    total: int
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    url: str
    page_url: str
    verdict: VerdictResult | None
    detail: str


class JobQuery(Schema):
    wait: float | None = Field(None, ge=0, description=f"Seconds to wait for the verdict (at most {MAX_WAIT_S:g}).")
    prompt: bool = Field(False, description="Include the exact prompt sent to the judge.")


ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}


# -- reading a job ---------------------------------------------------------------------------------------------------


def _state(batch: JudgeBatch) -> str:
    if batch.finished_at is not None:
        return "done"
    return "running" if batch.started_at is not None else "queued"


def verdict_result(request: HttpRequest, verdict: JudgeVerdict, with_prompt: bool = False) -> dict[str, Any]:
    """A stored verdict as the API answers it."""
    state = "judged"
    if review.judge_skipped(verdict):
        state = "skipped"
    elif review.judge_failed(verdict):
        state = "judge_error"
    return {
        "id": verdict.pk,
        "run_id": verdict.run_id,
        "state": state,
        "overall": verdict.overall,
        "effective": review.effective_overall(verdict),
        "summary": verdict.summary,
        "criteria": [
            {
                "position": c.position,
                "criterion": c.criterion,
                "verdict": c.judge_verdict,
                "effective": review.effective_criterion(c),
                "reason": c.reason,
            }
            for c in verdict.criteria.all()
        ],
        "judge_model": verdict.judge_model,
        "input_tokens": verdict.input_tokens,
        "output_tokens": verdict.output_tokens,
        "prompt_hash": verdict.prompt_hash,
        "skipped_reason": verdict.skipped_reason,
        "judge_error": verdict.judge_error,
        "review_url": request.build_absolute_uri(reverse("admin:runs_app_judgeverdict_change", args=[verdict.pk])),
        "created_at": verdict.created_at,
        "prompt": verdict.prompt if with_prompt else None,
    }


def job_result(request: HttpRequest, batch: JudgeBatch, with_prompt: bool = False) -> dict[str, Any]:
    """A judge batch as the API answers it: its state and progress, and its verdict once there is one (a batch of
    several runs, started from the pages, answers its last)."""
    state = _state(batch)
    verdict = None
    if batch.verdict_ids:
        criteria = Prefetch("criteria", queryset=VerdictCriterion.objects.order_by("position"))
        verdict = JudgeVerdict.objects.prefetch_related(criteria).filter(pk=batch.verdict_ids[-1]).first()
    detail = {"queued": "Waiting for the judge.", "running": "The judge is reading the transcript."}.get(state, "")
    if state == "done" and verdict is None:
        detail = "Finished without a verdict: the run was deleted before it was judged, or judging stopped."
    return {
        "id": batch.pk,
        "state": state,
        "run_ids": batch.run_ids,
        "criteria": criteria_lines(batch.criteria),
        "criteria_set": batch.criteria_set.name if batch.criteria_set else None,
        "done": batch.done,
        "total": batch.total,
        "created_at": batch.created_at,
        "started_at": batch.started_at,
        "finished_at": batch.finished_at,
        "url": request.build_absolute_uri(reverse("api:judge_job", args=[batch.pk])),
        "page_url": request.build_absolute_uri(reverse("runs:judge_batch", args=[batch.pk])),
        "verdict": verdict_result(request, verdict, with_prompt) if verdict is not None else None,
        "detail": detail,
    }


# -- the routes ------------------------------------------------------------------------------------------------------


def _criteria(body: JudgeIn) -> tuple[str, CriteriaSet | None]:
    """The criteria text (one per line) and the set named, or a 422 naming the field."""
    if isinstance(body.criteria, list):
        for index, item in enumerate(body.criteria):
            if not item.strip():
                raise invalid(("body", "criteria", index), "A criterion cannot be blank.", "missing")
            if "\n" in item.strip():
                raise invalid(("body", "criteria", index), "One criterion per item: it holds a line break.")
        lines = [item.strip() for item in body.criteria]
    else:
        lines = criteria_lines(body.criteria or "")
    if len(lines) > MAX_CRITERIA:
        raise invalid(("body", "criteria"), f"{len(lines)} criteria: at most {MAX_CRITERIA} at once.", "too_long")
    criteria_set = None
    if body.criteria_set is not None:
        criteria_set = CriteriaSet.objects.filter(name=body.criteria_set).first()
        if criteria_set is None:
            known = ", ".join(CriteriaSet.objects.values_list("name", flat=True)[:20]) or "none saved"
            raise invalid(("body", "criteria_set"), f"No criteria set named {body.criteria_set!r} (known: {known}).")
    if not lines and criteria_set is None:
        given = body.criteria is not None
        message = "has no criteria" if given else "Give criteria (a list of strings, or one per line) or criteria_set"
        raise invalid(("body", "criteria"), message + ".", "missing")
    return "\n".join(lines), criteria_set


def _read_body(request: HttpRequest) -> JudgeIn:
    data = read_json(request)
    if not isinstance(data, dict):
        raise invalid(("body",), "must be an object: {criteria: [...]} or {criteria_set: name}", "type_error")
    criteria = data.get("criteria")
    if criteria is not None and not isinstance(criteria, str | list):
        # Said once, rather than pydantic's one error per member of the union.
        raise invalid(("body", "criteria"), "must be a list of strings, or one string with one criterion per line")
    field: tuple[Any, ...] = ("body", "criteria")
    items = (
        [(field, criteria)] if isinstance(criteria, str) else [((*field, n), c) for n, c in enumerate(criteria or [])]
    )
    for where, item in items:
        if not isinstance(item, str):
            raise invalid(where, "must be a string (one criterion)", "string_type")
        try:
            storable(item)
        except ValueError as exc:
            raise invalid(where, str(exc), "string_unstorable") from None
    try:
        return JudgeIn.model_validate(data)
    except PydanticValidationError as exc:
        raise invalid_from(exc, "body") from None


@router.post(
    "/runs/{run_id}/judge",
    response={202: JobOut, 503: ErrorOut, **ERRORS},
    auth=JudgeBearerToken(),
    summary="Queue the judge on a run's transcript",
    openapi_extra={**json_body_doc(inline_schema(JudgeIn)), SCOPE_MARK: ApiToken.Scope.JUDGE},
)
def queue_judge(request: HttpRequest, run_id: uuid.UUID, response: HttpResponse) -> Any:
    """Judges the run's transcript (its uploaded conversation, artifacts, trace logs and events) against
    ``criteria`` (a list of strings, or one per line) or a saved ``criteria_set``, in the background. Answers 202
    with the job; ``GET`` its ``url`` (``?wait=30``) for the verdict, or open its ``page_url``. Needs judge scope."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        raise HttpError(404, f"No run {run_id}.")
    body = _read_body(request)
    criteria, criteria_set = _criteria(body)
    if configured() is None:
        return Status(503, {"detail": NO_JUDGE})
    try:
        batch = batches.start([run], criteria, criteria_set, None, token=request.auth)
    except batches.BatchRefused as exc:  # the checks above make this unlikely; say it as a 422 all the same
        raise invalid(("body", "criteria"), str(exc)) from None
    result = job_result(request, JudgeBatch.objects.select_related("criteria_set").get(pk=batch.pk))
    response["Location"] = result["url"]
    return Status(202, result)


@router.get("/judge/{job_id}", response={200: JobOut, **ERRORS}, url_name="judge_job", summary="A judge job")
def get_judge_job(request: HttpRequest, job_id: RowId, query: Query[JobQuery]) -> Any:
    """The job's state (queued, running, done), its progress and, once done, its verdict: per criterion PASS or
    FAIL with the reason, overall, summary, judge model, tokens, and the skipped reason or judge error. With
    ``?wait=N`` it answers as soon as the job is done, or after N seconds (at most 60) with the state then."""
    batch = JudgeBatch.objects.select_related("criteria_set").filter(pk=job_id).first()
    if batch is None:
        raise HttpError(404, f"No judge job {job_id}.")
    deadline = time.monotonic() + min(query.wait or 0.0, MAX_WAIT_S)
    while batch.finished_at is None and time.monotonic() < deadline:
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
        batch.refresh_from_db()
    return Status(200, job_result(request, batch, query.prompt))
