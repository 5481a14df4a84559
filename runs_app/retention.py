"""How long runs are kept: ``manage.py prune_runs`` deletes old ones in small batches, except the pinned, which the
run page and ``PUT/DELETE /api/runs/{id}/pin`` pin and unpin."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST
from ninja import Router

from harnessweb.apikit import ErrorOut
from runs_app.ci.schemas import RunOut
from runs_app.models import Run, RunEvent

router = Router()


def prunable(cutoff: dt.datetime) -> Any:
    """The runs ``prune`` deletes: started before ``cutoff``, not pinned, not running."""
    return Run.objects.filter(started_at__lt=cutoff, pinned=False).exclude(status=Run.Status.RUNNING)


def prune(cutoff: dt.datetime, batch: int) -> Iterator[tuple[int, int]]:
    """Delete the prunable runs ``batch`` at a time, each batch its own short transaction (events first: the bulk
    of the rows, and nothing refers to an event, so one DELETE without loading any); yields (runs, events) deleted
    per batch."""
    while ids := list(prunable(cutoff).values_list("id", flat=True)[:batch]):
        with transaction.atomic():
            ids = list(prunable(cutoff).filter(id__in=ids).select_for_update().values_list("id", flat=True))
            events = RunEvent.objects.filter(run_id__in=ids).delete()[0]  # (a run pinned meanwhile is kept)
            runs = Run.objects.filter(id__in=ids).delete()[1].get("runs_app.Run", 0)
        yield runs, events


def set_pinned(run_id: uuid.UUID, pinned: bool) -> Run:
    run = get_object_or_404(Run, id=run_id)
    if run.pinned != pinned:
        run.pinned = pinned
        run.save(update_fields=["pinned"])
    return run


@router.put("/runs/{run_id}/pin", response={200: RunOut, 404: ErrorOut}, summary="Pin a run: prune_runs keeps it")
def pin(request: HttpRequest, run_id: uuid.UUID) -> Run:
    return set_pinned(run_id, True)


@router.delete("/runs/{run_id}/pin", response={200: RunOut, 404: ErrorOut}, summary="Unpin a run")
def unpin(request: HttpRequest, run_id: uuid.UUID) -> Run:
    return set_pinned(run_id, False)


@login_required
@require_POST
def pin_run(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """The run page's pin button: pin (``pinned=1``) or unpin the run, then back to its page."""
    run = set_pinned(run_id, request.POST.get("pinned") == "1")
    return redirect("runs:detail", run_id=run.id)
