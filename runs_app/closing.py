"""Runs nobody finishes: a run of the endpoint that no request came to for ``HARNESS_RUN_IDLE_S`` is closed, a running
one as ``abandoned`` (``lifecycle.Idle`` says the status and the reason: "no request for 5 min after turn 1 of 2").

There is no timer: a run is closed when something would read it as running. The endpoint's recorder closes the run a
request of its conversation would join (that request then starts a new run), and the pages that list or count runs
(the overview, the runs list, a run's page) and ``manage.py prune_runs`` close every idle one first, so what they show
and keep is never a run that can no longer end. Closing is one conditional UPDATE per run (still running, still no
event since the limit), which one process wins when several try, and never undoes a request that came meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError
from django.db.models import Exists, Max, OuterRef
from django.db.models.functions import Coalesce
from django.utils import timezone

from runs_app.lifecycle import Idle, next_status, open_to_conversation
from runs_app.models import Run, RunEvent
from scenarios_app.catalog import cached_catalog, current_catalog

log = logging.getLogger(__name__)


def idle_limit() -> timedelta:
    return timedelta(seconds=settings.HARNESS_RUN_IDLE_S)


def is_idle(active_at: datetime, now: datetime | None = None) -> bool:
    """Whether a run last active at ``active_at`` (its last event, else its start) is idle past the limit."""
    return (now or timezone.now()) - active_at > idle_limit()


def _idle(runs: Any, cutoff: datetime) -> Any:
    """The running endpoint runs among ``runs`` with no event since ``cutoff`` and started before it (CI's runs end
    when CI says so, however long its build takes)."""
    recent = RunEvent.objects.filter(run_id=OuterRef("pk"), timestamp__gte=cutoff)
    return runs.filter(status=Run.Status.RUNNING, source="endpoint", started_at__lt=cutoff).exclude(Exists(recent))


def _turns(scenario_id: str, catalog: Any) -> int:
    scenario = catalog.by_id.get(scenario_id) if scenario_id else None
    return len(scenario.turns) if scenario is not None else 0


def close_idle(runs: Any = None, now: datetime | None = None) -> int:
    """Close the idle running runs among ``runs`` (a queryset; every run by default) as abandoned; how many were.

    Each run's row is updated only while it is still running with no recent event (a conditional UPDATE, atomic on
    SQLite and PostgreSQL): a request that joined it meanwhile, in any process, keeps it open. Its finish time is
    its last activity, so its duration is how long it was served, not how long nobody looked.
    """
    now = now or timezone.now()
    cutoff = now - idle_limit()
    idle = _idle(Run.objects.all() if runs is None else runs, cutoff)
    found = list(
        idle.annotate(last=Coalesce(Max("events__timestamp"), "started_at")).values_list(
            "id", "scenario_id", "turns_served", "last"
        )
    )
    if not found:
        return 0
    catalog = cached_catalog() or current_catalog()
    closed = 0
    for run_id, scenario_id, served, last in found:
        happened = Idle(settings.HARNESS_RUN_IDLE_S, max(served or [0]), _turns(scenario_id, catalog))
        change = next_status(Run.Status.RUNNING, happened)
        assert change is not None  # a running run idle past the limit is always abandoned
        closed += _idle(Run.objects.filter(id=run_id), cutoff).update(
            status=change.status, status_reason=change.reason, finished_at=last, closed=True
        )
    return closed


def _closed_and_read(run_id: Any, load: Callable[[Any], Any]) -> Any:
    close_idle(Run.objects.filter(id=run_id))
    return load(run_id)


async def still_open(state: Any, load: Callable[[Any], Any], read: bool = True) -> bool:
    """Whether a request of a conversation may join the run it had (``state``, the recorder's ``RunState``): not once
    the run ended (``lifecycle.open_to_conversation``), nor once no request came for the limit.

    What one process remembers of a run may be older than what another served since: a run idle here is closed in
    the database only if idle there too, then read back (``load``, in place: this process's requests hold it). Not
    read (``read`` False, or the database does not answer): the conversation starts a new run.
    """
    if not open_to_conversation(state.status, state.closed):
        return False
    if state.active_at is None or not is_idle(state.active_at):
        return True
    try:
        fresh = await sync_to_async(_closed_and_read)(state.id, load) if read else None
    except DatabaseError as exc:
        log.warning("The database did not answer whether run %s is idle (%s): a new run", state.id, exc)
        fresh = None
    if fresh is None:
        return False
    fresh.next_seq = max(fresh.next_seq, state.next_seq)
    vars(state).update(vars(fresh))
    return open_to_conversation(state.status, state.closed) and not is_idle(state.active_at)
