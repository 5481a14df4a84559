"""Runs and their events: resolved in memory on the request path, written to the database in batches.

A request never waits on a database write before its first byte (the one exception is the attempt counter of a
turn that simulates failures, which must be atomic across processes). Its last frame waits for the commit of the
batch that holds its events (:meth:`Recorder.durable`), and requests that end together share one commit: once a
client has the end of a response, every reader sees the run and that response's events.

Runs live in a bounded in-process index; a run this process has not seen is looked up in the database, so a
conversation that moves between workers keeps its run once the earlier worker has flushed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from asgiref.sync import sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings
from django.db import (
    DEFAULT_DB_ALIAS,
    IntegrityError,
    close_old_connections,
    connection,
    connections,
    models,
    transaction,
)
from django.db.models import F, Max
from django.utils import timezone

from harnessweb.engine.wire.common import Piece
from runs_app.models import AttemptCounter, Run, RunEvent

log = logging.getLogger(__name__)
MAX_REMEMBERED_RUNS = 20_000
DURABLE_TIMEOUT_S = 5.0


@dataclass
class RunState:
    id: uuid.UUID
    protocol: str
    conversation_key: str
    started_at: datetime
    scenario_id: str = ""
    mode: str = "scenario"
    status: str = Run.Status.RUNNING
    status_reason: str = ""
    turns_served: set[int] = field(default_factory=set)
    finished_at: datetime | None = None
    next_seq: int = 1

    def row(self) -> dict[str, Any]:
        """The run's columns as the recorder writes them (the rest take their model defaults)."""
        return {
            "id": self.id,
            "scenario_id": self.scenario_id,
            "mode": self.mode,
            "protocol": self.protocol,
            "conversation_key": self.conversation_key,
            "status": self.status,
            "status_reason": self.status_reason,
            "turns_served": sorted(self.turns_served),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }


class PendingEvent(NamedTuple):
    """An event queued for the next batch (a RunEvent row to be)."""

    run_id: uuid.UUID
    seq: int
    timestamp: datetime
    kind: str
    turn: int | None
    data: dict[str, Any]


RUNS_GROUP = "runs"


def group_name(run_id: uuid.UUID | str) -> str:
    return f"run-{run_id}"


class Recorder:
    """One per process: the run index, the pending writes and the task that flushes them."""

    def __init__(self) -> None:
        self.by_id: OrderedDict[uuid.UUID, RunState] = OrderedDict()
        self.by_key: dict[str, RunState] = {}
        self.pending_events: list[PendingEvent] = []
        self.dirty: dict[uuid.UUID, RunState] = {}
        self._flusher: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        # Durability: every queued change gets a generation; a flush commits all generations up to the one it
        # saw when it started. Requests ending a response wait for theirs (and ask for a flush without the wait
        # that gathers a batch).
        self.queued = 0
        self.committed = 0
        self._urgent = asyncio.Event()
        self._flushed = asyncio.Condition()

    # -- runs ----------------------------------------------------------------------------------------------------

    async def resolve(self, explicit: uuid.UUID | None, key: str, turn: int, protocol: str) -> RunState:
        """The run a request belongs to: the one it names, else its conversation's, else a new one."""
        if explicit is not None:
            state = self.by_id.get(explicit) or await sync_to_async(_load_run)(explicit)
            state = self.by_id.get(explicit) or state or self._new(explicit, key, protocol)
            self._remember(state)
            return state
        state = self.by_key.get(key)
        if state is None:
            loaded = await sync_to_async(_load_latest_for_key)(key)
            state = self.by_key.get(key) or loaded  # another request may have created it meanwhile
        if state is None or turn in state.turns_served:
            state = self._new(uuid.uuid4(), key, protocol)
        self._remember(state)
        return state

    def _new(self, run_id: uuid.UUID, key: str, protocol: str) -> RunState:
        state = RunState(id=run_id, protocol=protocol, conversation_key=key, started_at=timezone.now())
        self.dirty[run_id] = state
        return state

    def _remember(self, state: RunState) -> None:
        self.by_id[state.id] = state
        self.by_id.move_to_end(state.id)
        if state.conversation_key:
            self.by_key[state.conversation_key] = state
        while len(self.by_id) > MAX_REMEMBERED_RUNS:
            _, old = self.by_id.popitem(last=False)
            if self.by_key.get(old.conversation_key) is old:
                del self.by_key[old.conversation_key]

    def update(self, state: RunState, **changes: Any) -> None:
        for name, value in changes.items():
            setattr(state, name, value)
        self.dirty[state.id] = state
        self.queued += 1
        self._schedule()

    # -- events --------------------------------------------------------------------------------------------------

    def event(self, state: RunState, kind: str, turn: int | None, data: dict[str, Any]) -> None:
        """Queue one timeline event; written and broadcast by the flusher, never on the caller's path."""
        self.pending_events.append(PendingEvent(state.id, state.next_seq, timezone.now(), kind, turn, data))
        state.next_seq += 1
        self.dirty[state.id] = state
        self.queued += 1
        self._schedule()

    async def durable(self, timeout: float = DURABLE_TIMEOUT_S) -> bool:
        """Wait until everything queued so far is committed; concurrent callers share one commit.

        False when the database did not commit within ``timeout`` (down, or slow): the response goes on rather
        than hang, and the failed batch is logged by the flusher.
        """
        target = self.queued
        if self.committed >= target:
            return True
        self._schedule()
        self._urgent.set()
        async with self._flushed:
            try:
                await asyncio.wait_for(self._flushed.wait_for(lambda: self.committed >= target), timeout)
            except TimeoutError:
                log.warning("A response ended before its events were committed (waited %.1f s)", timeout)
                return False
        return True

    # -- flushing ------------------------------------------------------------------------------------------------

    def _schedule(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._run_flusher())
        self._wake.set()

    async def _run_flusher(self) -> None:
        interval = settings.HARNESS_RECORDER_FLUSH_MS / 1000
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._urgent.is_set():  # gather a batch, unless a response waits for its commit
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._urgent.wait(), interval)
            self._urgent.clear()
            await self.flush()

    async def flush(self) -> None:
        """Write every pending run change and event in one transaction, then broadcast the events."""
        if not self.dirty and not self.pending_events:
            return
        generation = self.queued
        runs = [s.row() for s in self.dirty.values()]
        events, self.pending_events = self.pending_events, []
        self.dirty = {}
        try:
            await sync_to_async(_write)(runs, events)
        except Exception:
            log.exception("Could not record %d runs and %d events", len(runs), len(events))
            return
        async with self._flushed:
            self.committed = max(self.committed, generation)
            self._flushed.notify_all()
        for event in events:
            await broadcast(group_name(event.run_id), {"type": "run.event", **event_payload(event)})
        for run in runs:  # the runs list shows new runs and status changes live
            await broadcast(RUNS_GROUP, {"type": "run.changed", "run": str(run["id"]), "status": run["status"]})

    async def aclose(self) -> None:
        """Write what is pending and stop the flusher (tests, and servers that shut down cleanly)."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        await self.flush()

    async def live(self, state: RunState, turn: int | None, pieces: list[Piece]) -> None:
        """Send what a client has just received of a response to the run's watchers (never stored)."""
        if pieces:
            payload = [[p.block, p.kind, p.text] for p in pieces]
            await broadcast(
                group_name(state.id), {"type": "run.chunk", "run": str(state.id), "turn": turn, "pieces": payload}
            )


async def broadcast(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    # The in-memory layer sweeps all its channels on every send: skip the groups nobody watches.
    if layer is None or (isinstance(layer, InMemoryChannelLayer) and group not in layer.groups):
        return
    with contextlib.suppress(Exception):  # a full or unreachable layer must not stop recording or streaming
        await layer.group_send(group, message)


def event_payload(event: PendingEvent | RunEvent) -> dict[str, Any]:
    return {
        "run": str(event.run_id),
        "seq": event.seq,
        "timestamp": event.timestamp.isoformat(),
        "kind": event.kind,
        "turn": event.turn,
        "data": event.data,
    }


RUN_UPDATED_ON_CONFLICT = ("scenario_id", "mode", "status", "status_reason", "turns_served", "finished_at")


def _insert_sql(model: type[models.Model], columns: list[str], update: tuple[str, ...] = ()) -> str:
    qn = connection.ops.quote_name
    sql = f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(c) for c in columns)}) "
    sql += f"VALUES ({', '.join(['%s'] * len(columns))})"
    if update:  # the same ON CONFLICT upsert on SQLite and PostgreSQL
        sql += f" ON CONFLICT ({qn('id')}) DO UPDATE SET " + ", ".join(f"{qn(c)} = excluded.{qn(c)}" for c in update)
    return sql


def _converter(field: models.Field, conn: Any) -> Any:
    """How one column's values become parameters: what ``get_db_prep_save`` does for the field types the recorder
    writes, without its per-value dispatch (the batch's largest cost)."""
    target = field.target_field if isinstance(field, models.ForeignKey) else field
    if isinstance(target, models.UUIDField):
        return (lambda v: v) if conn.features.has_native_uuid_field else (lambda v: v.hex)
    if isinstance(target, models.DateTimeField):
        return conn.ops.adapt_datetimefield_value
    if isinstance(target, models.JSONField):
        return lambda v: conn.ops.adapt_json_value(v, target.encoder)
    if isinstance(target, models.CharField | models.TextField | models.IntegerField | models.BooleanField):
        return lambda v: v
    return lambda v: field.get_db_prep_save(v, conn)


def _prepared(model: type[models.Model], rows: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Rows as parameters, each value prepared for this database as its field would; model defaults for the rest
    (every row of a batch has the same keys, so a missing column's default is prepared once per batch)."""
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, models.AutoField))]
    conn = connections[DEFAULT_DB_ALIAS]
    columns = []
    for f in fields:
        if f.attname in rows[0]:
            columns.append((f.attname, _converter(f, conn), None))
        else:
            columns.append((None, None, f.get_db_prep_save(f.get_default(), conn)))
    params = [
        [convert(row[name]) if name is not None else default for name, convert, default in columns]  # type: ignore[misc]
        for row in rows
    ]
    return [f.column for f in fields], params


def _write(runs: list[dict[str, Any]], events: list[PendingEvent]) -> None:
    """One transaction, two executemany statements: no model instances, no per-row signals, on the write thread.

    The batch is what every request of the last few milliseconds produced; building model objects for it cost
    more than the statements themselves.
    """
    close_old_connections()
    with transaction.atomic(), connection.cursor() as cursor:
        if runs:
            columns, params = _prepared(Run, runs)
            cursor.executemany(_insert_sql(Run, columns, RUN_UPDATED_ON_CONFLICT), params)
        if events:
            columns, params = _prepared(RunEvent, [e._asdict() for e in events])
            cursor.executemany(_insert_sql(RunEvent, columns), params)


def _load_run(run_id: uuid.UUID) -> RunState | None:
    run = Run.objects.filter(id=run_id).first()
    return _state_of(run) if run else None


def _load_latest_for_key(key: str) -> RunState | None:
    run = Run.objects.filter(conversation_key=key, source="endpoint").order_by("-started_at").first()
    return _state_of(run) if run else None


def _state_of(run: Run) -> RunState:
    last = run.events.aggregate(m=Max("seq"))["m"] or 0
    return RunState(
        id=run.id,
        protocol=run.protocol,
        conversation_key=run.conversation_key,
        started_at=run.started_at,
        scenario_id=run.scenario_id,
        mode=run.mode,
        status=run.status,
        status_reason=run.status_reason,
        turns_served=set(run.turns_served),
        finished_at=run.finished_at,
        next_seq=last + 1,
    )


def take_attempt(run_id: uuid.UUID, turn: int, protocol: str, failures: int) -> int:
    """Count one attempt at a failing turn atomically; returns the failure number (1..failures) or 0 to succeed.

    A conditional UPDATE is atomic on SQLite and PostgreSQL alike, so concurrent retries in any number of
    processes serve exactly ``failures`` failures between them.
    """
    close_old_connections()
    key = {"run_id": run_id, "turn": turn, "protocol": protocol}
    with transaction.atomic():
        try:
            with transaction.atomic():
                AttemptCounter.objects.get_or_create(**key)
        except IntegrityError:
            pass  # created concurrently by another request: fine
        if not AttemptCounter.objects.filter(**key, count__lt=failures).update(count=F("count") + 1):
            return 0
        return AttemptCounter.objects.get(**key).count


_recorder: Recorder | None = None


def get_recorder() -> Recorder:
    global _recorder
    if _recorder is None:
        _recorder = Recorder()
    return _recorder
