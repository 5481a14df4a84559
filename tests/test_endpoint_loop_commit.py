"""On a SQLite file the recorder commits its batch on the event loop's own thread (``runs_app/endpoint/loop_sqlite``),
without asgiref's thread hops: what it writes reads back through Django as Django would have written it, and when
another connection holds the database's write lock the loop does not wait for it (the batch goes through the thread
that may)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from runs_app.endpoint import loop_sqlite, writes
from runs_app.endpoint.recorder import GATHER_QUIET, Recorder
from runs_app.models import Run, RunEvent

pytestmark = pytest.mark.django_db(transaction=True)


def refuse_the_thread_path(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make Django's path (``writes.insert``, on asgiref's thread) fail loudly; returns the threads it was tried on."""
    tried: list[str] = []

    def insert(*args: object, **kwargs: object) -> None:
        tried.append(threading.current_thread().name)
        raise AssertionError("written through Django's thread")

    monkeypatch.setattr(writes, "insert", insert)
    return tried


async def test_it_commits_on_the_loop_thread_what_django_reads_back_as_written(monkeypatch) -> None:
    tried = refuse_the_thread_path(monkeypatch)
    recorder = Recorder()
    run = await recorder.resolve(None, "loop-commit", 1, "openai")
    finished = timezone.now() + timedelta(seconds=1)
    data = {"body": {"messages": [{"role": "user", "content": "héllo ✓"}], "n": 2**40, "x": None, "f": 1.5}}
    recorder.event(run, "request", 1, data)
    recorder.update(run, status=Run.Status.PASSED, turns_served={1}, finished_at=finished, status_reason="done")
    assert await recorder.durable(timeout=5) is True and tried == []
    assert loop_sqlite.writer().thread == threading.get_ident()  # this thread's: the loop's
    stored = await Run.objects.aget(id=run.id)
    assert (stored.status, stored.turns_served, stored.finished_at, stored.started_at) == (
        "passed",
        [1],
        finished,
        run.started_at,
    )
    assert (stored.source, stored.scenario_id, stored.pinned, stored.status_reason) == ("endpoint", "", False, "done")
    [event] = [e async for e in RunEvent.objects.filter(run_id=run.id)]
    assert (event.seq, event.kind, event.turn, event.data) == (1, "request", 1, data)


async def test_it_redacts_a_key_before_committing_on_the_loop(monkeypatch) -> None:
    refuse_the_thread_path(monkeypatch)
    recorder = Recorder()
    run = await recorder.resolve(None, "loop-redact", 1, "openai")
    recorder.event(run, "request", 1, {"headers": {"authorization": "Bearer sk-proj-abcdefghijklmnopqrstuvwx"}})
    assert await recorder.durable(timeout=5) is True
    event = await RunEvent.objects.aget(run_id=run.id)
    assert "sk-proj-abcdefghijklmnopqrstuvwx" not in str(event.data)


async def test_it_numbers_a_colliding_batch_after_the_run_s_last_event_on_the_loop(monkeypatch) -> None:
    refuse_the_thread_path(monkeypatch)
    first, second = Recorder(), Recorder()
    named = uuid.uuid4()
    a = await first.resolve(named, "k", 1, "openai")
    b = await second.resolve(named, "k", 2, "openai")
    first.event(a, "request", 1, {"from": "first"})
    second.event(b, "request", 2, {"from": "second"})
    second.event(b, "response", 2, {"from": "second"})
    assert await first.flush() and await second.flush()
    rows = [(e.seq, e.data["from"]) async for e in RunEvent.objects.filter(run_id=named).order_by("seq")]
    assert rows == [(1, "first"), (2, "second"), (3, "second")]
    assert b.next_seq == 4


async def test_the_loop_does_not_wait_for_another_writer_s_lock() -> None:
    recorder = Recorder()
    run = await recorder.resolve(None, "loop-busy", 1, "openai")
    recorder.event(run, "request", 1, {})
    holder = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock for 0.5 s
    threading.Timer(0.5, holder.execute, ["COMMIT"]).start()
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.get_running_loop().create_task(tick())
    try:
        assert await recorder.durable(timeout=10) is True  # written once the lock was released, by the thread
    finally:
        ticker.cancel()
        holder.close()
    assert ticks >= 20  # the loop went on meanwhile (10 ms ticks over 0.5 s)
    assert await RunEvent.objects.filter(run_id=run.id).acount() == 1


def test_a_database_in_memory_or_another_engine_keeps_the_thread_path(settings) -> None:
    database = connection.settings_dict
    assert loop_sqlite.path() == database["NAME"]
    for name in (":memory:", "file:memorydb_default?mode=memory&cache=shared"):
        database_name, database["NAME"] = database["NAME"], name
        try:
            assert loop_sqlite.path() is None
        finally:
            database["NAME"] = database_name


async def test_responses_that_reach_their_commit_together_share_one_on_the_loop(monkeypatch) -> None:
    """Under load the commit stays on the loop, and the requests already received join it: a response waits for
    those that arrive within the loop turns it gathers, then one commit holds them all."""
    tried = refuse_the_thread_path(monkeypatch)
    committed: list[int] = []
    real = loop_sqlite.Writer.write

    def write(self, runs, events):
        committed.append(len(events))
        return real(self, runs, events)

    monkeypatch.setattr(loop_sqlite.Writer, "write", write)
    recorder = Recorder()
    runs = [await recorder.resolve(None, f"together-{i}", 1, "openai") for i in range(12)]

    async def respond(i: int, turns_later: int) -> bool:
        for _ in range(turns_later):  # ready this many loop turns after the first
            await asyncio.sleep(0)
        recorder.event(runs[i], "response", 1, {"i": i})
        return await recorder.durable(timeout=5)

    done = await asyncio.gather(*(respond(i, turns_later=i % 3) for i in range(12)))
    assert done == [True] * 12 and tried == []
    assert committed == [12]
    assert await RunEvent.objects.filter(run__conversation_key__startswith="together-").acount() == 12


async def test_a_response_alone_waits_a_few_empty_loop_turns_and_commits_on_the_loop(monkeypatch) -> None:
    tried = refuse_the_thread_path(monkeypatch)
    recorder = Recorder()
    run = await recorder.resolve(None, "alone", 1, "openai")
    turns = 0

    def turn() -> None:
        nonlocal turns
        turns += 1
        if turns < 100:
            asyncio.get_running_loop().call_soon(turn)

    asyncio.get_running_loop().call_soon(turn)
    recorder.event(run, "response", 1, {})
    assert await recorder.durable(timeout=5) is True and tried == []
    assert turns <= GATHER_QUIET + 1  # the turns that tell no other response is coming, and no more


async def test_a_wait_for_a_commit_ends_at_its_timeout_and_the_others_go_on_waiting(caplog) -> None:
    """A response waits ``timeout`` at most for its commit (one timer for every waiter): here another writer holds
    the lock for 0.6 s; the response that allows 0.2 s goes on without its commit, the one that allows 5 s gets it."""
    recorder = Recorder()
    run = await recorder.resolve(None, "loop-expiry", 1, "openai")
    holder = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.6, holder.execute, ["COMMIT"]).start()
    try:
        recorder.event(run, "request", 1, {})
        patient = asyncio.ensure_future(recorder.durable(timeout=5))
        started = asyncio.get_running_loop().time()
        assert await recorder.durable(timeout=0.2) is False
        assert asyncio.get_running_loop().time() - started < 0.55  # ended at its own deadline, not at the commit
        assert "A response ended before its events were committed (waited 0.2 s)" in caplog.text
        assert await patient is True
    finally:
        holder.close()
    assert await RunEvent.objects.filter(run_id=run.id).acount() == 1


def test_the_events_parameters_are_those_their_model_s_plan_gives() -> None:
    """``event_params`` writes the event table's columns without the generic plan's dicts: the same values, in the
    model's column order (a field added to RunEvent, or moved, fails here)."""
    plan = loop_sqlite.Plan(RunEvent, writes.PendingEvent._fields)
    assert tuple(name for name, _, _ in plan.columns) == loop_sqlite.EVENT_COLUMNS
    now = timezone.now()
    events = [
        writes.PendingEvent(uuid.uuid4(), 1, now, "request", 1, {"body": {"n": 2**70, "t": "é"}}),
        writes.PendingEvent(uuid.uuid4(), 7, now.replace(microsecond=0), "events_dropped", None, {}),
    ]
    assert [list(row) for row in loop_sqlite.event_params(events)] == plan.params([e._asdict() for e in events])
