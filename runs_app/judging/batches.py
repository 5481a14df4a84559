"""Judging runs in a batch ("judge these runs"): a row, a background thread that judges its runs one by one, and
its progress told to the batch's page through the channel layer (group ``judge-<id>``), rendered from the row.

A thread, not an asyncio task: judging is blocking work (the ORM, an HTTP call of up to minutes), and the page
that starts it is a sync view. The progress lives in the row, so any worker renders it and a reload keeps it; the
channel layer only says "look again".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from django.db import close_old_connections, connection, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from harnessweb.judging.verdicts import criteria_lines
from runs_app.endpoint.recorder import broadcast
from runs_app.judging.judge import configured, judge_run
from runs_app.judging.models import CriteriaSet, JudgeBatch
from runs_app.live.presenters import asked_scenario
from runs_app.models import ApiToken, JudgeVerdict, Run
from runs_app.review import rules as review

log = logging.getLogger(__name__)


LABELS = {review.ERROR: "JUDGE ERROR", review.SKIPPED: "skipped"}


def group_name(batch_id: int) -> str:
    return f"judge-{batch_id}"


class BatchRefused(ValueError):
    """A batch that cannot start; the message is meant for the person who asked."""


def start(
    runs: Iterable[Run], criteria: str, criteria_set: CriteriaSet | None, user: Any, token: ApiToken | None = None
) -> JudgeBatch:
    """Store a batch for ``runs`` and judge them in a background thread once the batch is committed.

    The criteria are the typed ones, or the set's when none are typed. ``user`` (a page) or ``token`` (the REST
    API) is who asked. Raises BatchRefused when there is no judge, no criterion or no run.
    """
    if configured() is None:
        raise BatchRefused("No judge is configured: set HARNESS_JUDGE_BASE_URL (and HARNESS_JUDGE_MODEL).")
    text = criteria if criteria_lines(criteria) else (criteria_set.criteria if criteria_set else "")
    if not criteria_lines(text):
        raise BatchRefused("Give at least one criterion (one per line), or choose a saved criteria set.")
    run_ids = [str(run.pk) for run in runs]
    if not run_ids:
        raise BatchRefused("There are no runs to judge.")
    batch = JudgeBatch.objects.create(
        criteria="\n".join(criteria_lines(text)),
        criteria_set=criteria_set if text == getattr(criteria_set, "criteria", None) else None,
        run_ids=run_ids,
        total=len(run_ids),
        started_by=user if getattr(user, "pk", None) else None,
        api_token=token,
    )
    loop = server_loop()
    transaction.on_commit(lambda: launch(batch.pk, loop))
    return batch


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def server_loop() -> asyncio.AbstractEventLoop | None:
    """The server's event loop when called from a sync view under ASGI (asgiref runs the coroutine there), else
    None (a test client, a command: the loop asgiref made for the call is closed by now)."""
    try:
        loop = async_to_sync(_running_loop)()
    except RuntimeError:  # called from a thread that runs a loop of its own: there is no server loop to find
        return None
    return None if loop.is_closed() else loop


def launch(batch_id: int, loop: asyncio.AbstractEventLoop | None = None) -> threading.Thread:
    thread = threading.Thread(target=run_batch, args=(batch_id, loop), name=f"judge-batch-{batch_id}", daemon=True)
    thread.start()
    return thread


def run_batch(batch_id: int, loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Judge each run of the batch in turn, counting and announcing each verdict. A run deleted meanwhile counts as
    done without a verdict; a judge that fails gives a judge-error verdict (``judge`` never raises)."""
    close_old_connections()
    try:
        JudgeBatch.objects.filter(pk=batch_id).update(started_at=timezone.now())
        batch = JudgeBatch.objects.get(pk=batch_id)
        criteria = criteria_lines(batch.criteria)
        config = configured()
        verdict_ids: list[int] = []
        for done, run_id in enumerate(batch.run_ids, start=1):
            run = Run.objects.filter(pk=run_id).first()
            if run is not None:
                verdict_ids.append(judge_run(run, criteria, config).pk)
            JudgeBatch.objects.filter(pk=batch_id).update(done=done, verdict_ids=verdict_ids)
            _announce(batch_id, loop)
    except Exception:
        log.exception("Judge batch %s stopped", batch_id)
    finally:
        JudgeBatch.objects.filter(pk=batch_id).update(finished_at=timezone.now())
        _announce(batch_id, loop)
        connection.close()  # this thread's own connection


async def _tell(batch_id: int) -> None:
    await broadcast(group_name(batch_id), {"type": "judge.progress", "batch": batch_id})


def _announce(batch_id: int, loop: asyncio.AbstractEventLoop | None) -> None:
    if loop is None or loop.is_closed():
        async_to_sync(_tell)(batch_id)
        return
    # On the server's own loop: the in-memory channel layer's queues belong to it and wake only its consumers.
    with contextlib.suppress(Exception):  # a slow layer must not stop the judging; the page catches up on reload
        asyncio.run_coroutine_threadsafe(_tell(batch_id), loop).result(timeout=5)


# -- the page ----------------------------------------------------------------------------------------------------------


def progress_context(batch: JudgeBatch) -> dict[str, Any]:
    """Context of ``runs_app/judge_progress.html``: n of m, and each verdict so far with its effective verdict."""
    by_id = JudgeVerdict.objects.select_related("run").prefetch_related("criteria").in_bulk(batch.verdict_ids)
    verdicts = []
    for verdict in (by_id[pk] for pk in batch.verdict_ids if pk in by_id):
        effective = review.effective_overall(verdict)
        verdicts.append(
            {
                "verdict": verdict,
                "effective": effective,
                "label": LABELS.get(effective, effective),
                "passed": "{}/{}".format(*review.criteria_counts(verdict)),
                # A refused run has no scenario of its own: the id it asked for, as the run page and list say.
                "run_label": asked_scenario(verdict.run) or verdict.run.name or verdict.run.mode,
                "run_url": reverse("runs:detail", args=[verdict.run_id]),
                "admin_url": reverse("admin:runs_app_judgeverdict_change", args=[verdict.pk]),
            }
        )
    return {
        "batch": batch,
        "finished": batch.finished_at is not None,
        "percent": round(100 * batch.done / batch.total) if batch.total else 100,
        "verdicts": verdicts,
        "failed": sum(v["effective"] == review.FAIL for v in verdicts),
        "errors": sum(v["effective"] == review.ERROR for v in verdicts),
        "skipped": sum(v["effective"] == review.SKIPPED for v in verdicts),
        "queue_url": reverse("admin:runs_app_judgeverdict_queue"),
    }


def render_progress(batch_id: int) -> str:
    """The progress partial as an out-of-band swap, for the batch page's socket ("" for an unknown batch)."""
    batch = JudgeBatch.objects.filter(pk=batch_id).first()
    if batch is None:
        return ""
    return render_to_string("runs_app/judge_progress.html", {**progress_context(batch), "oob": True})
