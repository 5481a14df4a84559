"""The recorder's batches as statements: one multi-row ``VALUES`` list a table (split in powers of two within the
database's bound on parameters), on Django's thread and on the loop's own SQLite connection alike; and a run's row
written again only when something it holds changed, not with every event of the run."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from django.db import connection

from runs_app.endpoint import loop_sqlite, writes
from runs_app.endpoint.recorder import Recorder, RunState
from runs_app.endpoint.writes import PendingEvent, chunk_sizes
from runs_app.models import Run, RunEvent


def test_a_batch_is_split_in_powers_of_two_within_the_bound_on_parameters() -> None:
    assert chunk_sizes(0, 6, 999) == []
    assert chunk_sizes(1, 6, 999) == [1]
    assert chunk_sizes(4, 6, 999) == [4]
    assert chunk_sizes(64, 6, 999) == [64]
    assert chunk_sizes(70, 6, 999) == [64, 4, 2]
    assert chunk_sizes(300, 6, 999) == [128, 128, 32, 8, 4]  # (999 // 6 = 166: 128 rows a statement at most)
    assert chunk_sizes(40, 18, 999) == [32, 8]  # (999 // 18 = 55: 32)
    assert chunk_sizes(300, 6, None) == [128, 128, 32, 8, 4]  # no bound (PostgreSQL): MAX_ROWS_A_STATEMENT
    assert chunk_sizes(5, 600, 999) == [1, 1, 1, 1, 1]  # a row wider than half the bound: a row a statement
    for rows in range(1, 400):
        sizes = chunk_sizes(rows, 18, 999)
        assert sum(sizes) == rows and all(s & (s - 1) == 0 and s * 18 <= 999 for s in sizes)


def a_batch(runs: int, events_each: int, status: str = "running") -> tuple[list[dict], list[PendingEvent]]:
    now = datetime.now(UTC)
    rows, events = [], []
    for n in range(runs):
        state = RunState(id=uuid.uuid4(), protocol="openai", conversation_key=f"batch-{n}", started_at=now)
        state.status = status
        rows.append(state.row())
        events += [
            PendingEvent(state.id, seq, now, "request", 1, {"n": n, "seq": seq}) for seq in range(1, events_each + 1)
        ]
    return rows, events


def expected_statements(runs: int, events: int, max_params: int | None) -> int:
    run_columns = len(Run._meta.concrete_fields)
    event_columns = len(PendingEvent._fields)
    return len(chunk_sizes(runs, run_columns, max_params)) + len(chunk_sizes(events, event_columns, max_params))


def assert_stored(rows: list[dict], events: list[PendingEvent], status: str) -> None:
    ids = [row["id"] for row in rows]
    assert sorted(Run.objects.filter(id__in=ids).values_list("status", flat=True)) == [status] * len(ids)
    stored = {(e.run_id, e.seq): e.data for e in RunEvent.objects.filter(run_id__in=ids)}
    assert stored == {(e.run_id, e.seq): e.data for e in events}


def inserts_through_django(rows: list[dict], events: list[PendingEvent], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``writes.write``'s INSERT statements, as its driver's cursor ran them."""
    statements: list[str] = []
    driver_cursor = writes._driver_cursor

    def recording(cursor: object) -> tuple[object, object]:
        raw, execute = driver_cursor(cursor)

        def run(on: object, sql: str, params: list) -> object:
            statements.append(sql)
            return execute(on, sql, params)

        return raw, run

    monkeypatch.setattr(writes, "_driver_cursor", recording)
    writes.write(rows, events)
    monkeypatch.undo()
    return [s for s in statements if s.startswith("INSERT")]


@pytest.mark.backends
@pytest.mark.django_db(transaction=True)
def test_django_s_path_writes_a_large_batch_in_few_multi_row_statements(monkeypatch) -> None:
    rows, events = a_batch(40, 4)  # 40 runs and 160 events: more than one statement a table
    inserts = inserts_through_django(rows, events, monkeypatch)
    assert len(inserts) == expected_statements(40, 160, connection.features.max_query_params) == 4
    assert_stored(rows, events, "running")
    for row in rows:  # the same runs again, changed: the multi-row upsert updates every one of them
        row["status"] = "passed"
    assert len(inserts_through_django(rows, [], monkeypatch)) == 2
    assert_stored(rows, events, "passed")


@pytest.mark.django_db(transaction=True)
def test_the_loop_s_connection_writes_a_large_batch_in_few_multi_row_statements() -> None:
    writer = loop_sqlite.writer()
    statements: list[str] = []
    writer.db.set_trace_callback(statements.append)
    try:
        rows, events = a_batch(40, 4)
        loop_sqlite.write(rows, events)
        for row in rows:
            row["status"] = "passed"
        loop_sqlite.write(rows, [])
    finally:
        writer.db.set_trace_callback(None)
    inserts = [s for s in statements if s.startswith("INSERT")]
    assert len(inserts) == expected_statements(40, 160, writer.max_params) + expected_statements(
        40, 0, writer.max_params
    )
    assert_stored(rows, events, "passed")


def counting(recorder: Recorder) -> None:
    recorder._schedule = lambda: None  # type: ignore[method-assign]  (no flusher: what is queued stays to be read)


def test_a_stored_run_s_events_leave_its_row_alone_and_a_change_writes_it() -> None:
    recorder = Recorder()
    counting(recorder)
    state = RunState(id=uuid.uuid4(), protocol="openai", conversation_key="k", started_at=datetime.now(UTC))
    state.stored = True  # (read from the database, or committed)
    recorder.event(state, "request", 1, {})
    recorder.update(state, mode="scenario", status="running", finished_at=None)  # the values it has
    assert recorder.dirty == {} and len(recorder.pending_events) == 1
    recorder.update(state, turns_served={1})
    assert recorder.dirty == {state.id: state}
    assert recorder._take_batch()[1][0]["turns_served"] == [1]


def test_a_new_run_s_row_goes_with_its_events_until_committed() -> None:
    recorder = Recorder()
    counting(recorder)
    state = RunState(id=uuid.uuid4(), protocol="openai", conversation_key="k", started_at=datetime.now(UTC))
    recorder.event(state, "request", 1, {})
    recorder.update(state, status="running")  # unchanged, yet its row was never written
    assert recorder.dirty == {state.id: state}
    recorder._remember(state)
    _, runs, _ = recorder._take_batch()
    recorder.event(state, "match", 1, {})  # its row still in flight: written again with this batch
    assert recorder.dirty == {state.id: state}
    recorder._take_batch()
    recorder._stored(runs)  # (the batch committed)
    recorder.event(state, "response", 1, {})
    assert state.stored and recorder.dirty == {}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("responding", [0, 1], ids=["django-thread", "loop-connection"])
async def test_an_event_of_a_run_whose_row_is_gone_writes_the_row_again(responding: int) -> None:
    recorder = Recorder()
    recorder.responding = responding
    run = await recorder.resolve(None, "gone", 1, "openai")
    recorder.event(run, "request", 1, {})
    assert await recorder.durable(timeout=5) is True and run.stored
    await Run.objects.filter(id=run.id).adelete()  # (deleted from the dashboard, or a test's database emptied)
    recorder.event(run, "response", 1, {"status": 200})
    assert await recorder.durable(timeout=5) is True
    assert await Run.objects.filter(id=run.id).aexists()
    assert [e.kind async for e in RunEvent.objects.filter(run_id=run.id)] == ["response"]
    assert recorder.dropped == {}
