"""The judge for stored runs: ``judge(input)`` with the endpoint the settings name, ``transcript_from_run`` (seed
001's ``fromDatabase`` for our runs) and storing the verdict where the review queue finds it.

Thin on purpose: the prompt and the parsing are pure (:mod:`runs_app.judging.verdicts`,
:mod:`runs_app.judging.transcript`), the call is :mod:`runs_app.judging.client`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from django.conf import settings
from django.db import transaction

from runs_app.judging.client import JudgeConfig, judge_with
from runs_app.judging.transcript import conversation, timeline
from runs_app.judging.verdicts import JudgeInput, JudgeVerdict, TurnLog, build_prompt, diagnostic_verdict
from runs_app.models import JudgeVerdict as StoredVerdict
from runs_app.models import Run, VerdictCriterion

NOT_CONFIGURED = "HARNESS_JUDGE_BASE_URL is not set: there is no judge to ask"


def configured() -> JudgeConfig | None:
    """The judge the settings name, or None when HARNESS_JUDGE_BASE_URL is unset."""
    if not settings.HARNESS_JUDGE_BASE_URL:
        return None
    return JudgeConfig(
        base_url=settings.HARNESS_JUDGE_BASE_URL,
        api_key=settings.HARNESS_JUDGE_API_KEY,
        model=settings.HARNESS_JUDGE_MODEL,
        timeout_s=settings.HARNESS_JUDGE_TIMEOUT_S,
    )


def judge(data: JudgeInput, config: JudgeConfig | None = None) -> JudgeVerdict:
    """The judge's verdict on ``data`` (the settings' judge unless ``config`` is given). Never raises: a judge that
    is not configured, unreachable or unreadable gives the diagnostic verdict marked as a judge error."""
    config = config or configured()
    if config is None:
        verdict = diagnostic_verdict("", NOT_CONFIGURED)
        return replace(verdict, prompt_hash=build_prompt(data).digest(""))
    return judge_with(data, config)


def transcript_from_run(run: Run, since: dt.datetime | None = None, limit: int | None = None) -> JudgeInput:
    """What the judge reads of a run (criteria left empty): its conversation, its timeline and its trace logs.

    ``since`` keeps the events and trace logs recorded from then on; ``limit`` keeps the last that many events.
    """
    events = run.events.order_by("seq")
    logs = run.trace_logs.order_by("turn_number", "id")
    if since is not None:
        events = events.filter(timestamp__gte=since)
        logs = logs.filter(created_at__gte=since)
    rows = list(events.values("kind", "turn", "data"))
    if limit is not None:
        rows = rows[-limit:] if limit > 0 else []
    return JudgeInput(
        messages=conversation(rows),
        criteria=[],
        turn_logs=[TurnLog(log.turn_number, log.file_path, log.content) for log in logs],
        timeline=timeline(rows),
    )


def _storable(text: str) -> str:
    # A judge may answer "\u0000" in its JSON: PostgreSQL refuses NUL characters in text.
    return text.replace("\x00", "")


def store_verdict(run: Run, verdict: JudgeVerdict) -> StoredVerdict:
    """The verdict as a row with its criteria. A judge error is stored with a blank overall and ``judge_error``
    set, as the CI API stores one: the review rules show it as a judge error, never as a FAIL."""
    with transaction.atomic():
        row = StoredVerdict.objects.create(
            run=run,
            overall="" if verdict.judge_error else verdict.overall,
            summary=_storable(verdict.summary),
            judge_model=_storable(verdict.judge_model)[:200],
            prompt_hash=verdict.prompt_hash,
            raw_output=_storable(verdict.raw_output),
            judge_error=_storable(verdict.judge_error),
        )
        VerdictCriterion.objects.bulk_create(
            VerdictCriterion(
                verdict=row,
                position=position,
                criterion=_storable(c.criterion),
                judge_verdict=c.verdict,
                reason=_storable(c.reason),
            )
            for position, c in enumerate(verdict.criteria, start=1)
        )
    return row


def judge_run(run: Run, criteria: list[str], config: JudgeConfig | None = None) -> StoredVerdict:
    """Judge one run against ``criteria`` and store the verdict (a judge error included)."""
    data = replace(transcript_from_run(run), criteria=criteria)
    return store_verdict(run, judge(data, config))
