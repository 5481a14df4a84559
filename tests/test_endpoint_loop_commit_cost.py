"""What a response's commit on the event loop's own thread costs (``runs_app/endpoint/loop_sqlite``): the statements
planned once, and a log that is written from its start again after each checkpoint rather than growing while
requests keep coming, and a checkpoint that keeps the loop off the write lock only for its last pages."""

from __future__ import annotations

import os
import sqlite3
import threading

import pytest
from django.db import connection

from runs_app.endpoint import loop_sqlite
from runs_app.endpoint.recorder import Recorder
from runs_app.models import RunEvent

pytestmark = pytest.mark.django_db(transaction=True)


async def test_the_statements_are_planned_once_and_kept(monkeypatch) -> None:
    planned: list[str] = []
    real = loop_sqlite.Plan.__init__

    def plan(self, model, keys, update=()):
        planned.append(model.__name__)
        real(self, model, keys, update)

    monkeypatch.setattr(loop_sqlite.Plan, "__init__", plan)
    recorder = Recorder()
    for turn in (1, 2, 3):
        run = await recorder.resolve(None, f"plans-{turn}", 1, "openai")
        recorder.event(run, "request", 1, {"turn": turn})
        assert await recorder.durable(timeout=5) is True
        if turn == 1:
            planned.clear()  # (the first batch plans what this thread's connection had not seen)
    assert planned == []


async def test_the_log_is_written_from_its_start_again_after_a_checkpoint(monkeypatch) -> None:
    """Requests one after another, each committing on the loop: the log stays about as large as the commits
    between two checkpoints write, rather than growing with every commit."""
    monkeypatch.setattr(loop_sqlite, "CHECKPOINT_EVERY", 50)
    checkpoints: list[threading.Thread] = []
    real = threading.Thread.start

    def start(self: threading.Thread) -> None:
        if self.name == "sqlite-checkpoint":
            checkpoints.append(self)
        real(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    recorder = Recorder()
    wal = f"{connection.settings_dict['NAME']}-wal"
    sizes = []
    for i in range(1500):
        run = await recorder.resolve(None, f"wal-{i}", 1, "openai")
        recorder.event(run, "request", 1, {"i": i, "body": "x" * 200})
        assert await recorder.durable(timeout=10) is True
        if i % 100 == 99:
            sizes.append(os.path.getsize(wal))
    for thread in checkpoints:
        thread.join(10)
    assert len(checkpoints) >= 10  # (of 30 due: none starts while another is under way)
    assert await RunEvent.objects.filter(run__conversation_key__startswith="wal-").acount() == 1500
    # 1,400 commits after the first sample, about 50 KB each: some 70 MB more log without a restart, none with (the
    # file keeps its largest size; a restarted log is written over from its start). A checkpoint that a reader of
    # an older snapshot holds up (another test's connection, on this shared database) lets the log run on for one
    # interval of 50 commits, about 2.5 MB: a few of those are allowed, a log that never restarts is not.
    assert sizes[-1] - sizes[0] < 8 * 2**20, [round(size / 2**20, 1) for size in sizes]


async def test_a_checkpoint_under_way_keeps_the_loop_off_the_write_lock() -> None:
    """The checkpoint's waits for the lock find it free: the loop's commits go to Django's thread meanwhile."""
    db = loop_sqlite.writer().db
    loop_sqlite.CHECKPOINTING.set()
    try:
        with pytest.raises(loop_sqlite.Busy, match="checkpoint"):
            loop_sqlite.begin(db)
    finally:
        loop_sqlite.CHECKPOINTING.clear()
    loop_sqlite.begin(db)
    db.execute("ROLLBACK")


def test_a_checkpoint_copies_the_bulk_of_the_log_before_it_keeps_the_loop_off_the_lock(monkeypatch) -> None:
    """PASSIVE while the loop goes on committing (the syncs of the whole log), then FULL for the rest with the loop's
    commits sent to Django's thread; one checkpoint at a time."""
    seen: list[tuple[str, bool]] = []
    connect = sqlite3.connect

    class Recorded:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def execute(self, sql: str, *args: object) -> object:
            seen.append((sql, loop_sqlite.CHECKPOINTING.is_set()))
            if "PASSIVE" in sql:
                assert not loop_sqlite._checkpointer.acquire(blocking=False)  # (held: no second one starts)
            return self.db.execute(sql, *args)

        def close(self) -> None:
            self.db.close()

    monkeypatch.setattr(loop_sqlite.sqlite3, "connect", lambda *a, **k: Recorded(connect(*a, **k)))
    file = loop_sqlite.path()
    loop_sqlite._checkpoint(file)
    for thread in threading.enumerate():
        if thread.name == "sqlite-checkpoint":
            thread.join(10)
    assert seen == [("PRAGMA wal_checkpoint(PASSIVE)", False), ("PRAGMA wal_checkpoint(FULL)", True)]
    assert not loop_sqlite.CHECKPOINTING.is_set() and loop_sqlite._checkpointer.acquire(blocking=False)
    loop_sqlite._checkpointer.release()
