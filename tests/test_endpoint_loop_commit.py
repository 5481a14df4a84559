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
from runs_app.endpoint.recorder import Recorder
from runs_app.models import Run, RunEvent

pytestmark = pytest.mark.django_db(transaction=True)


def answering() -> Recorder:
    """A recorder as the endpoint's is while it answers one request (the consumer counts them)."""
    recorder = Recorder()
    recorder.responding = 1
    return recorder


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
    recorder = answering()
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
    recorder = answering()
    run = await recorder.resolve(None, "loop-redact", 1, "openai")
    recorder.event(run, "request", 1, {"headers": {"authorization": "Bearer sk-proj-abcdefghijklmnopqrstuvwx"}})
    assert await recorder.durable(timeout=5) is True
    event = await RunEvent.objects.aget(run_id=run.id)
    assert "sk-proj-abcdefghijklmnopqrstuvwx" not in str(event.data)


async def test_it_numbers_a_colliding_batch_after_the_run_s_last_event_on_the_loop(monkeypatch) -> None:
    refuse_the_thread_path(monkeypatch)
    first, second = answering(), answering()
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
    recorder = answering()
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


async def test_while_other_requests_are_answered_the_batch_goes_to_the_thread(monkeypatch) -> None:
    """With other responses in flight the loop has their frames to send: the commit is not made on it."""
    committed_here: list[int] = []
    real = loop_sqlite.Writer.write

    def write(self, runs, events):
        committed_here.append(len(events))
        return real(self, runs, events)

    monkeypatch.setattr(loop_sqlite.Writer, "write", write)
    recorder = Recorder()
    run = await recorder.resolve(None, "loop-busy-process", 1, "openai")
    recorder.responding = 3  # this request and two others being answered
    recorder.event(run, "request", 1, {})
    assert await recorder.durable(timeout=5) is True and committed_here == []
    recorder.responding = 0  # none (a flush at shutdown, or outside the endpoint)
    recorder.event(run, "match", 1, {})
    assert await recorder.durable(timeout=5) is True and committed_here == []
    recorder.responding = 1  # this one alone
    recorder.event(run, "response", 1, {})
    assert await recorder.durable(timeout=5) is True and committed_here == [1]
    assert await RunEvent.objects.filter(run_id=run.id).acount() == 3
