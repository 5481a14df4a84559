"""Runs and their events: resolved in memory on the request path, written to the database in batches.

A request never waits on a database write before its first byte (the one exception is the attempt counter of a
turn that simulates failures, which must be atomic across processes). Its last frame waits for the commit of the
batch that holds its events (:meth:`Recorder.durable`), and requests that end together share one commit: once a
client has the end of a response, every reader sees the run and that response's events. On a SQLite file the commit
runs on the event loop's own thread (``loop_sqlite``: no thread hop, the same WAL commit), made by the waiting
response itself when no flush is under way, after the requests already received have reached theirs (``_gather``);
on any other database (or while another connection holds SQLite's write lock) on Django's thread.

Runs live in a bounded in-process index; a run this process has not seen is looked up in the database, so a
conversation that moves between workers keeps its run once the earlier worker has flushed. When another process
has appended to the same run meanwhile, the batch's sequence numbers collide with its: the batch is numbered again
after the run's last event and written (no gap, no duplicate, nothing lost).

When the database is slow or down the endpoint keeps answering: a batch that fails stays queued, ahead of newer
events, and is retried with a growing pause; beyond ``HARNESS_RECORDER_BUFFER`` queued events the oldest are
dropped, and how many is logged and recorded on their run (an ``events_dropped`` event) once the database is back.
Responses do not wait for a commit while the database is known to be down. When the server stops (SIGTERM, Ctrl-C)
whatever is still queued is written: at ASGI lifespan shutdown under uvicorn (which re-raises the signal after it,
so exit hooks never run), at interpreter exit under daphne (which speaks no lifespan).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import (
    DatabaseError,
    DataError,
    IntegrityError,
)
from django.db.models import Max
from django.utils import timezone
from uuid_utils.compat import uuid7

from harnessweb.engine.redaction import redact_text
from runs_app import metrics
from runs_app.closing import still_open
from runs_app.endpoint import loop_sqlite, writes
from runs_app.endpoint.broadcasting import RUNS_GROUP, broadcast, event_payload, group_name, watched
from runs_app.endpoint.waiters import Waiters
from runs_app.endpoint.writes import PendingEvent, take_attempt  # noqa: F401 (steps.py imports it from here)
from runs_app.models import Run

log = logging.getLogger(__name__)
MAX_REMEMBERED_RUNS = 20_000
DURABLE_TIMEOUT_S = 5.0
GATHER_TURNS = 16  # at most, of the event loop, for the requests received to reach a commit (``Recorder._gather``)
GATHER_QUIET = 2  # turns in a row that queued nothing: none is left to come (1 left a commit a request under ab -c 16)
RETRY_PAUSES_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)  # between attempts at a batch the database refused


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
    closed: bool = False  # a request of its conversation starts a new run
    active_at: datetime | None = None  # its last request here (or its last event, read back): not written
    stored: bool = False  # its row is in the database (read from it, or committed): its events need not rewrite it

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
            "closed": self.closed,
        }


class Recorder:
    """One per process: the run index, the pending writes and the task that flushes them."""

    def __init__(self) -> None:
        self.by_id: OrderedDict[uuid.UUID, RunState] = OrderedDict()
        self.by_key: dict[str, RunState] = {}
        self.pending_events: list[PendingEvent] = []
        metrics.watch_queue(lambda: len(self.pending_events))
        self.dirty: dict[uuid.UUID, RunState] = {}
        self._flusher: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        # Durability: every queued change gets a generation; a flush commits all generations up to the one it
        # saw when it started. Requests ending a response wait for theirs (``waiters``).
        self.queued = 0
        self.committed = 0
        self._urgent = asyncio.Event()
        self._waiting = Waiters()
        # Backpressure: failed attempts in a row (0 while the database answers), and the events dropped per run
        # while over the bound, recorded on the run once the database is back.
        self.failures = 0
        self.dropped: dict[uuid.UUID, int] = {}
        self.writing = not settings.HARNESS_BENCH_NO_RECORD
        self._lock = asyncio.Lock()  # one flush at a time: a generation is committed after the ones before it
        self._gathering = False  # a response is letting others reach their commit, to share it (``_gather``)

    # -- runs ----------------------------------------------------------------------------------------------------

    async def resolve(self, explicit: uuid.UUID | None, key: str, turn: int, protocol: str) -> RunState:
        """The run a request belongs to: the one it names, else its conversation's while it is open, else a new one."""
        if explicit is not None:
            state = self.by_id.get(explicit) or await while_up(_load_run, explicit)
            state = self.by_id.get(explicit) or state or self._new(explicit, key, protocol)
        else:
            state = self.by_key.get(key)
            if state is None:
                loaded = await while_up(_load_latest_for_key, key) if loop_sqlite.may_have_run_of(key) else None
                state = self.by_key.get(key) or loaded  # another request may have created it meanwhile
            if state is None or turn in state.turns_served or not await still_open(state, _load_run, self.writing):
                state = self._new(uuid7(), key, protocol)  # time first: runs made together share index pages
        state.active_at = timezone.now()
        self._remember(state)
        return state

    def _new(self, run_id: uuid.UUID, key: str, protocol: str) -> RunState:
        state = RunState(id=run_id, protocol=protocol, conversation_key=key, started_at=timezone.now())
        if self.writing:
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
        if isinstance(changes.get("status_reason"), str):  # it may quote a request
            changes["status_reason"] = redact_text(changes["status_reason"])
        changed = False
        for name, value in changes.items():
            changed = changed or getattr(state, name) != value
            setattr(state, name, value)
        if not self.writing or not (changed or not state.stored):  # (an unchanged stored row is not written again)
            return
        self.dirty[state.id] = state
        self.queued += 1
        self._schedule()

    # -- events --------------------------------------------------------------------------------------------------

    def event(self, state: RunState, kind: str, turn: int | None, data: dict[str, Any]) -> None:
        """Queue one timeline event; written and broadcast by the flusher, never on the caller's path, its secrets
        redacted there (a key in a body, a URL, a message: ``writes.write``)."""
        if not self.writing:
            return
        self.pending_events.append(PendingEvent(state.id, state.next_seq, datetime.now(UTC), kind, turn, data))
        state.next_seq += 1
        if not state.stored:  # its row goes in the same batch (a stored row is rewritten only when it changes)
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
        if self.failures:  # the database is down: answer now, the events land when it is back
            self._schedule()
            return False
        if self._gathering:  # a response is gathering the batch: its commit is this one's too
            return await self._waiting.wait(target, timeout)
        if not self._lock.locked() and loop_sqlite.here():
            await self._gather()
            if not self._lock.locked():
                # Committed here and now, on the loop (``_write``), with the responses that reached their commit
                # meanwhile: no wake-up of the flusher, no thread hop. Another writer's lock (None) leaves the batch
                # to the flusher; a batch the database refused stays queued, and the flusher retries it.
                async with self._lock:
                    done = await self._flush(here=True)
                if done and self.committed >= target:
                    return True
                if done is False:
                    self._schedule()
                    return False
        self._schedule()
        self._urgent.set()
        return await self._waiting.wait(target, timeout)

    async def _gather(self) -> None:
        """Let the requests this process has already received reach their commit before it is made, so that they
        share it: turns of the loop until ``GATHER_QUIET`` turns in a row queued nothing (a request read in one
        turn runs in a later one), ``GATHER_TURNS`` at most."""
        self._gathering = True
        try:
            quiet, seen = 0, self.queued
            for _ in range(GATHER_TURNS):
                await asyncio.sleep(0)
                quiet, seen = (quiet + 1, seen) if self.queued == seen else (0, self.queued)
                if quiet == GATHER_QUIET:
                    break
        finally:
            self._gathering = False

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
                gathered = asyncio.get_running_loop().call_later(interval, self._urgent.set)
                await self._urgent.wait()
                gathered.cancel()
            self._urgent.clear()
            if not await self.flush():  # the database refused the batch: try again after a pause
                await asyncio.sleep(RETRY_PAUSES_S[min(self.failures, len(RETRY_PAUSES_S)) - 1])
                self._wake.set()

    def _take_batch(self) -> tuple[int, list[dict[str, Any]], list[PendingEvent]]:
        """What the next write holds (the generation it commits, the run rows, the events), taken off the queue."""
        generation = self.queued
        runs = [s.row() for s in self.dirty.values()]
        events, self.pending_events = self.pending_events, []
        self.dirty = {}
        return generation, runs, events

    def _put_back(self, runs: list[dict[str, Any]], events: list[PendingEvent]) -> None:
        """A batch the database refused, queued again ahead of what came since, within the buffer's bound: the
        oldest events beyond it are dropped and counted per run."""
        for row in runs:
            state = self.by_id.get(row["id"])
            if state is not None:
                self.dirty.setdefault(state.id, state)
        queued = events + self.pending_events
        excess = len(queued) - settings.HARNESS_RECORDER_BUFFER
        if excess > 0:
            for event in queued[:excess]:
                self.dropped[event.run_id] = self.dropped.get(event.run_id, 0) + 1
                if (state := self.by_id.get(event.run_id)) is not None:
                    self.dirty.setdefault(state.id, state)
            log.warning("The database is unreachable: dropped %d events over the buffer's bound", excess)
            queued = queued[excess:]
        self.pending_events = queued

    def _note_drops(self) -> None:
        """Record on each run how many of its events the buffer dropped (after the database came back)."""
        metrics.observe_flush(0, sum(self.dropped.values()))
        for run_id, count in self.dropped.items():
            state = self.by_id.get(run_id)
            if state is not None:
                log.warning("Run %s lost %d events while the database was unreachable", run_id, count)
                self.event(state, "events_dropped", None, {"count": count, "reason": "the database was unreachable"})
        self.dropped = {}

    async def flush(self) -> bool:
        """Write every pending run change and event in one transaction, then broadcast the events; False when
        the database refused it (the batch stays queued)."""
        if not self.dirty and not self.pending_events:
            return True
        async with self._lock:
            return await self._flush()

    async def _flush(self, here: bool = False) -> bool | None:
        if not self.dirty and not self.pending_events:  # (another flush took them while this one waited)
            return True
        generation, runs, events = self._take_batch()
        try:
            events = await self._write(runs, events, here)
        except loop_sqlite.Busy:  # (``here`` only) queued again as it was, for the flusher's thread
            self._put_back(runs, events)
            return None
        except (DataError, IntegrityError):  # a batch the database refuses for good: dropped, counted, not retried
            log.exception("Dropped a batch the database refuses (%d runs, %d events)", len(runs), len(events))
            for event in events:
                self.dropped[event.run_id] = self.dropped.get(event.run_id, 0) + 1
            self.committed = max(self.committed, generation)
            self._waiting.release(True, self.committed)
            return True
        except Exception:
            self.failures += 1
            if self.failures == 1:
                log.exception("Could not record %d runs and %d events; retrying", len(runs), len(events))
            self._put_back(runs, events)
            self._waiting.release(False, self.committed)  # responses waiting for this batch go on without it
            return False
        if self.failures:
            log.warning("The database is back after %d failed attempts", self.failures)
            self.failures = 0
        if self.dropped:
            self._note_drops()
        self._renumbered(events)
        self._stored(runs)
        metrics.observe_flush(len(events))
        self.committed = max(self.committed, generation)
        self._waiting.release(True, self.committed)
        # One message per run and one for the runs list per batch, however many events it holds: with Redis every
        # message is a round trip, and a page re-reads what changed anyway.
        by_run: dict[uuid.UUID, list[PendingEvent]] = {}
        for event in events:
            by_run.setdefault(event.run_id, []).append(event)
        for run_id, of_run in by_run.items():  # (each run's group looked at once, its messages built if watched)
            if watched(group := group_name(run_id)):
                payloads = [event_payload(event) for event in of_run]
                await broadcast(group, {"type": "run.events", "run": str(run_id), "events": payloads})
        if runs and watched(RUNS_GROUP):  # the runs list shows new runs and status changes live
            changed = [{"run": str(run["id"]), "status": run["status"]} for run in runs]
            await broadcast(RUNS_GROUP, {"type": "runs.changed", "runs": changed})
        return True

    async def _write(self, runs: list[dict[str, Any]], events: list[PendingEvent], here: bool) -> list[PendingEvent]:
        """The batch committed (``_commit``); when the database refuses an event whose run's row is not in the batch
        (the row gone: the run deleted, a test's database emptied), once more with those rows, as every event
        wrote its run's row before a row was written only when it changed."""
        try:
            return await self._commit(runs, events, here)
        except IntegrityError:
            known = {row["id"] for row in runs}
            absent = {e.run_id: self.by_id.get(e.run_id) for e in events if e.run_id not in known}
            if not (rows := [state.row() for state in absent.values() if state is not None]):
                raise
            return await self._commit(runs + rows, events, here)

    async def _commit(self, runs: list[dict[str, Any]], events: list[PendingEvent], here: bool) -> list[PendingEvent]:
        """The batch committed on this thread (``loop_sqlite``) when the database is a SQLite file, else on Django's
        thread; on Django's thread too when another connection holds SQLite's write lock, unless ``here`` (then
        :class:`loop_sqlite.Busy`).

        On the loop, not on asgiref's thread, even with other responses in flight: on the thread each statement
        gives the GIL back and waits to take it again from a loop that is busy answering, so that under load a
        commit of 8 responses took 4.5 ms and the process spent twice the CPU a request that recording off spends
        (tests/benchmarks/README.md, *Where the commit runs*)."""
        if here or loop_sqlite.here():
            try:
                return loop_sqlite.write(runs, events)
            except loop_sqlite.Busy:  # another connection holds the lock: the thread may wait for it
                if here:
                    raise
        return await sync_to_async(writes.write)(runs, events)

    def _stored(self, runs: list[dict[str, Any]]) -> None:
        """The runs whose rows a batch committed: their later events leave the rows alone (``event``)."""
        for row in runs:
            if (state := self.by_id.get(row["id"])) is not None:
                state.stored = True

    def _renumbered(self, events: list[PendingEvent]) -> None:
        """After a batch was numbered again (another process appended to its runs), number this process's next
        events of those runs after it."""
        for event in events:
            state = self.by_id.get(event.run_id)
            if state is not None and state.next_seq <= event.seq:
                state.next_seq = event.seq + 1

    def flush_at_exit(self) -> None:
        """Write what is still queued, from the exiting interpreter (no event loop left to run the flusher)."""
        _, runs, events = self._take_batch()
        if runs or events:
            try:
                writes.write(runs, events)
            except Exception:
                log.exception("At exit, could not record %d runs and %d events", len(runs), len(events))

    async def aclose(self) -> None:
        """Write what is pending and stop the flusher (tests, and servers that shut down cleanly)."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        await self.flush()


async def while_up(read: Any, *args: Any) -> Any:
    """A database read on a request's path, or None while the database does not answer: the endpoint keeps
    answering (a run not found is a new run, a script not read is none, a failure not counted is not served)."""
    try:
        return await sync_to_async(read)(*args)
    except DatabaseError as exc:
        log.warning("The database did not answer %s (%s): answering without it", read.__name__, exc)
        return None


def _load_run(run_id: uuid.UUID) -> RunState | None:
    run = Run.objects.filter(id=run_id).first()
    return _state_of(run) if run else None


def _load_latest_for_key(key: str) -> RunState | None:
    run = Run.objects.filter(conversation_key=key, source="endpoint").order_by("-started_at").first()
    return _state_of(run) if run else None


def _state_of(run: Run) -> RunState:
    last = run.events.aggregate(m=Max("seq"), at=Max("timestamp"))
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
        next_seq=(last["m"] or 0) + 1,
        closed=run.closed,
        active_at=last["at"] or run.started_at,
        stored=True,
    )


_recorder: Recorder | None = None


async def close_recorder() -> None:
    """Write what this process's recorder has queued and stop its flusher (a server shutting down)."""
    if _recorder is not None:
        await _recorder.aclose()


def get_recorder() -> Recorder:
    global _recorder
    if _recorder is None:
        _recorder = Recorder()
        atexit.register(_recorder.flush_at_exit)
    return _recorder
