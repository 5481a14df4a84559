"""What a response's commit on the event loop's own thread costs (``runs_app/endpoint/loop_sqlite``): the statements
planned once, and a log that is written from its start again after each checkpoint rather than growing while
requests keep coming."""

from __future__ import annotations

import os
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
    assert len(checkpoints) >= 20
    assert await RunEvent.objects.filter(run__conversation_key__startswith="wal-").acount() == 1500
    # 1,400 commits after the first sample, a few pages each: several MB more log without a restart, none with
    # (the file keeps its largest size; a restarted log is written over from its start).
    assert sizes[-1] - sizes[0] < 2 * 2**20, [round(size / 2**20, 1) for size in sizes]
