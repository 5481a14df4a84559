"""The judge for stored runs: ``judge(input)`` with the endpoint the settings name, ``transcript_from_run`` (seed
001's ``fromDatabase`` for one of our runs), ``transcript_from_runs`` (``fromDatabase`` by a conversation's
identity: several runs merged in time order) and storing the verdict where the review queue finds it.

Thin on purpose: the prompt and the parsing are pure (:mod:`harnessweb.judging.verdicts`,
:mod:`harnessweb.judging.transcript`), the call is :mod:`harnessweb.judging.client`.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from harnessweb.judging.client import JudgeConfig, judge_with
from harnessweb.judging.transcript import conversation, merge_conversations, timeline, uploaded_conversation
from harnessweb.judging.verdicts import JudgeInput, JudgeVerdict, TurnLog, build_prompt, diagnostic_verdict
from runs_app.models import Artifact, Run, VerdictCriterion
from runs_app.models import JudgeVerdict as StoredVerdict

NOT_CONFIGURED = "HARNESS_JUDGE_BASE_URL is not set: there is no judge to ask"
IDENTITIES = ("conversation", "fingerprint", "run_id", "test")
MAX_MERGED_RUNS = 200  # transcript_from_runs reads at most the newest this many runs


def configured() -> JudgeConfig | None:
    """The judge the settings name, or None when HARNESS_JUDGE_BASE_URL is unset."""
    if not settings.HARNESS_JUDGE_BASE_URL:
        return None
    return JudgeConfig(
        base_url=settings.HARNESS_JUDGE_BASE_URL,
        api_key=settings.HARNESS_JUDGE_API_KEY,
        model=settings.HARNESS_JUDGE_MODEL,
        timeout_s=settings.HARNESS_JUDGE_TIMEOUT_S,
        protocol=settings.HARNESS_JUDGE_PROTOCOL,
    )


def judge(data: JudgeInput, config: JudgeConfig | None = None) -> JudgeVerdict:
    """The judge's verdict on ``data`` (the settings' judge unless ``config`` is given). Never raises: a judge that
    is not configured, unreachable or unreadable gives the diagnostic verdict marked as a judge error; a key that is
    unset or a placeholder gives the skipped verdict (nothing is sent)."""
    config = config or configured()
    if config is None:
        prompt = build_prompt(data)
        verdict = diagnostic_verdict("", NOT_CONFIGURED)
        return replace(verdict, prompt_hash=prompt.digest(""), prompt=prompt.text())
    return judge_with(data, config)


def _pages(artifacts: QuerySet[Artifact]) -> tuple[dict[str, str], dict[str, str]]:
    pages: dict[str, str] = {}
    texts: dict[str, str] = {}
    for artifact in artifacts:
        (pages if artifact.kind == Artifact.Kind.HTML else texts)[artifact.name] = artifact.content
    return pages, texts


def _last(rows: list[Any], limit: int | None) -> list[Any]:
    if limit is None:
        return rows
    return rows[-limit:] if limit > 0 else []


def transcript_from_run(run: Run, since: dt.datetime | None = None, limit: int | None = None) -> JudgeInput:
    """What the judge reads of a run (criteria left empty): its conversation, its timeline, its artifacts and its
    trace logs.

    The conversation is the one the CI job uploaded (``RunMessage``) when there is one: it is what the application
    itself saw, tool calls and results included; else the one the last recorded request carried, plus its answer.
    The timeline always comes from the run's events (requests, answers, tool calls, injected failures), so a run
    with both shows the uploaded conversation and the harness's view of it side by side. HTML artifacts are the
    generated pages, the others are text artifacts. ``since`` keeps the events, messages, artifacts and trace logs
    recorded from then on; ``limit`` keeps the last that many events and the last that many uploaded messages.
    """
    return _transcript(run, _last(_event_rows(run, since), limit), since, limit)


def _event_rows(run: Run, since: dt.datetime | None) -> list[dict[str, Any]]:
    """The run's events in order (kind, turn, data, and their timestamp and seq), recorded from ``since`` on."""
    events = run.events.order_by("seq")
    if since is not None:
        events = events.filter(timestamp__gte=since)
    return list(events.values("kind", "turn", "data", "timestamp", "seq"))


def _transcript(run: Run, rows: list[dict[str, Any]], since: dt.datetime | None, limit: int | None) -> JudgeInput:
    logs = run.trace_logs.order_by("turn_number", "id")
    messages = run.messages.order_by("position")
    artifacts = run.artifacts.order_by("name")
    if since is not None:
        logs = logs.filter(created_at__gte=since)
        messages = messages.filter(created_at__gte=since)
        artifacts = artifacts.filter(updated_at__gte=since)
    uploaded = _last(list(messages.values("role", "parts", "name")), limit)
    pages, texts = _pages(artifacts)
    return JudgeInput(
        messages=uploaded_conversation(uploaded) if uploaded else conversation(rows),
        criteria=[],
        generated_pages=pages,
        artifacts=texts,
        turn_logs=[TurnLog(log.turn_number, log.file_path, log.content) for log in logs],
        timeline=timeline(rows),
    )


def runs_of(
    *, conversation: str = "", fingerprint: str = "", run_id: str = "", test: str = "", since: dt.datetime | None = None
) -> QuerySet[Run]:
    """The runs of one conversation identity (exactly one given), oldest first: a conversation key, an API key's
    fingerprint, an ``X-Harness-Run`` id or (part of) a test's name. Raises ValueError naming the problem."""
    values = (conversation, fingerprint, run_id, test)
    given = {name: value.strip() for name, value in zip(IDENTITIES, values, strict=True)}
    named = [name for name, value in given.items() if value]
    if len(named) != 1:
        raise ValueError(f"name exactly one of {', '.join(IDENTITIES)} (got {', '.join(named) or 'none'})")
    runs = Run.objects.all()
    if given["run_id"]:
        try:
            runs = runs.filter(pk=uuid.UUID(given["run_id"]))
        except ValueError:
            raise ValueError(f"run_id {given['run_id']!r} is not a run id (a UUID)") from None
    else:
        runs = runs.filtered(conversation=given["conversation"], fingerprint=given["fingerprint"], test=given["test"])
    if since is not None:  # a run that began earlier still counts when it went on after since
        runs = runs.exclude(finished_at__lt=since)
    return runs.order_by("started_at", "id")


def transcript_from_runs(
    *,
    conversation: str = "",
    fingerprint: str = "",
    run_id: str = "",
    test: str = "",
    since: dt.datetime | None = None,
    limit: int | None = None,
) -> JudgeInput:
    """Seed 001's ``fromDatabase(identity, {since, limit})``: every run of one conversation identity (exactly one of
    ``conversation``, ``fingerprint``, ``run_id``, ``test``; see :func:`runs_of`) read as one transcript, in time
    order: each run's conversation (merged, what a later request carries again said once), the runs' events as one
    timeline (each line led by its run when there are several), their artifacts and trace logs. ``since`` and
    ``limit`` as in :func:`transcript_from_run` (``limit``: the last that many events and messages of them all)."""
    runs = list(runs_of(conversation=conversation, fingerprint=fingerprint, run_id=run_id, test=test, since=since))
    runs = runs[-MAX_MERGED_RUNS:]
    rows_of = [_event_rows(run, since) for run in runs]  # each run's events read once
    parts = [_transcript(run, rows, since, None) for run, rows in zip(runs, rows_of, strict=True)]
    events: list[tuple[tuple[Any, ...], str, dict[str, Any]]] = []
    for run, rows in zip(runs, rows_of, strict=True):
        lead = f"run {str(run.pk)[:8]} · " if len(runs) > 1 else ""
        for row in rows:
            events.append(((row["timestamp"], run.started_at, str(run.pk), row["seq"]), lead, row))
    events = _last(sorted(events, key=lambda item: item[0]), limit)
    lines = [lead + line for _, lead, row in events for line in timeline([row])]
    pages: dict[str, str] = {}
    texts: dict[str, str] = {}
    for run, part in zip(runs, parts, strict=True):
        for target, items in ((pages, part.generated_pages), (texts, part.artifacts)):
            for name, content in items.items():
                target[f"{name} (run {str(run.pk)[:8]})" if name in target else name] = content
    messages = merge_conversations(part.messages for part in parts)
    return JudgeInput(
        messages=_last(messages, limit),
        criteria=[],
        generated_pages=pages,
        artifacts=texts,
        turn_logs=[log for part in parts for log in part.turn_logs],
        timeline=lines,
    )


def _storable(text: str) -> str:
    # A judge may answer "\u0000" in its JSON: PostgreSQL refuses NUL characters in text.
    return text.replace("\x00", "")


def store_verdict(run: Run, verdict: JudgeVerdict) -> StoredVerdict:
    """The verdict as a row with its criteria, the prompt and the tokens. A judge error is stored with a blank
    overall and ``judge_error`` set, as the CI API stores one: the review rules show it as a judge error, never as a
    FAIL; a skipped judge with a blank overall and ``skipped_reason`` set, shown as skipped."""
    with transaction.atomic():
        row = StoredVerdict.objects.create(
            run=run,
            overall="" if verdict.judge_error or verdict.skipped_reason else verdict.overall,
            summary=_storable(verdict.summary),
            judge_model=_storable(verdict.judge_model)[:200],
            prompt_hash=verdict.prompt_hash,
            raw_output=_storable(verdict.raw_output),
            judge_error=_storable(verdict.judge_error),
            prompt=_storable(verdict.prompt),
            input_tokens=verdict.input_tokens,
            output_tokens=verdict.output_tokens,
            skipped_reason="" if verdict.judge_error else _storable(verdict.skipped_reason),
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
    """Judge one run against ``criteria`` and store the verdict (a judge error or a skipped judge included)."""
    data = replace(transcript_from_run(run), criteria=criteria)
    return store_verdict(run, judge(data, config))
