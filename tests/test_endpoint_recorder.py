"""The recorder: events batched to the database and broadcast to the run's channel layer group."""

import uuid

import pytest
from channels.layers import get_channel_layer

from runs_app.endpoint import loop_sqlite, writes
from runs_app.endpoint.recorder import Recorder, group_name
from runs_app.models import Run, RunEvent


def failing_writes(monkeypatch: pytest.MonkeyPatch, error: Exception) -> dict[str, bool]:
    """Every batch refused with ``error`` while the returned switch's ``down`` is True, on either of the recorder's
    paths (the loop's own SQLite connection, Django's thread)."""
    switch = {"down": True}
    for module in (writes, loop_sqlite):
        real = module.write

        def write(runs, events, real=real):
            if switch["down"]:
                raise error
            return real(runs, events)

        monkeypatch.setattr(module, "write", write)
    return switch


@pytest.mark.django_db(transaction=True)
async def test_it_writes_events_in_one_batch_and_broadcasts_them_to_the_run_group_in_one_message():
    recorder = Recorder()
    run = await recorder.resolve(None, "conversation-1", 1, "openai")
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group_name(run.id), channel)
    recorder.event(run, "request", 1, {"body": {"x": 1}})
    recorder.event(run, "response", 1, {"text": "hi"})
    # Nothing written on the caller's path (counted for this run: a server from an earlier test may still be writing).
    assert await RunEvent.objects.filter(run_id=run.id).acount() == 0
    await recorder.flush()
    assert [e.kind async for e in RunEvent.objects.filter(run_id=run.id).order_by("seq")] == ["request", "response"]
    message = await layer.receive(channel)
    assert (message["type"], message["run"]) == ("run.events", str(run.id))
    first, second = message["events"]
    assert (first["kind"], first["seq"], first["run"]) == ("request", 1, str(run.id))
    assert second["data"] == {"text": "hi"}


@pytest.mark.django_db(transaction=True)
async def test_it_continues_a_run_another_process_recorded():
    writer, reader = Recorder(), Recorder()
    run = await writer.resolve(None, "conversation-2", 1, "anthropic")
    writer.event(run, "request", 1, {})
    writer.update(run, turns_served={1})
    await writer.flush()
    # A second process (its own recorder) sees the conversation's run and numbers events after it.
    same = await reader.resolve(None, "conversation-2", 2, "anthropic")
    assert same.id == run.id and same.next_seq == 2
    replay = await reader.resolve(None, "conversation-2", 1, "anthropic")
    assert replay.id != run.id


@pytest.mark.django_db(transaction=True)
async def test_it_creates_a_named_run_and_keeps_requests_pinned_to_it():
    recorder = Recorder()
    named = uuid.uuid4()
    run = await recorder.resolve(named, "k", 1, "openai")
    recorder.update(run, turns_served={1})
    assert (await recorder.resolve(named, "k", 1, "openai")).id == named
    await recorder.flush()
    assert await Run.objects.filter(id=named).aexists()


@pytest.mark.backends
@pytest.mark.django_db(transaction=True)
async def test_it_numbers_a_batch_again_when_another_process_appended_to_the_run():
    first, second = Recorder(), Recorder()
    named = uuid.uuid4()
    a = await first.resolve(named, "k", 1, "openai")
    b = await second.resolve(named, "k", 2, "openai")  # both start at seq 1: neither has flushed yet
    for n in range(3):
        first.event(a, "request", 1, {"from": "first", "n": n})
        second.event(b, "request", 2, {"from": "second", "n": n})
    assert await first.flush() and await second.flush()  # the second batch collides, and is numbered after
    second.event(b, "response", 2, {"from": "second", "n": 3})
    assert await second.flush()
    rows = [(e.seq, e.data["from"], e.data["n"]) async for e in RunEvent.objects.filter(run_id=named).order_by("seq")]
    assert [seq for seq, _, _ in rows] == [1, 2, 3, 4, 5, 6, 7]  # no gap, no duplicate
    assert [(who, n) for _, who, n in rows] == [("first", 0), ("first", 1), ("first", 2)] + [
        ("second", n) for n in range(4)
    ]


@pytest.mark.django_db(transaction=True)
async def test_it_keeps_answering_while_the_database_is_down_and_records_when_it_is_back(monkeypatch, settings, caplog):
    from django.db import OperationalError

    settings.HARNESS_RECORDER_BUFFER = 5
    recorder = Recorder()
    run = await recorder.resolve(None, "outage", 1, "openai")
    switch = failing_writes(monkeypatch, OperationalError("connection refused"))
    for n in range(3):
        recorder.event(run, "request", 1, {"n": n})
    assert await recorder.flush() is False and recorder.failures == 1
    assert await recorder.durable(timeout=5) is False  # at once: a response does not wait on a database that is down
    for n in range(3, 8):
        recorder.event(run, "request", 1, {"n": n})
    assert await recorder.flush() is False
    # Eight events over a bound of five: the three oldest were dropped, counted, and said in the log.
    assert recorder.dropped == {run.id: 3} and [e.data["n"] for e in recorder.pending_events] == [3, 4, 5, 6, 7]
    assert "dropped 3 events over the buffer's bound" in caplog.text
    switch["down"] = False
    assert await recorder.flush() is True and await recorder.flush() is True
    events = [e async for e in RunEvent.objects.filter(run_id=run.id).order_by("seq")]
    assert [e.data.get("n") for e in events if e.kind == "request"] == [3, 4, 5, 6, 7]
    [dropped] = [e for e in events if e.kind == "events_dropped"]
    assert dropped.data == {"count": 3, "reason": "the database was unreachable"}
    assert recorder.failures == 0 and await recorder.durable(timeout=1) is True


@pytest.mark.backends
@pytest.mark.django_db(transaction=True)
async def test_it_stores_a_body_with_a_nul_character_on_every_database():
    recorder = Recorder()
    run = await recorder.resolve(None, "nul", 1, "openai")
    recorder.event(run, "request", 1, {"body": {"messages": [{"content": "x\x00y"}], "k\x00": 1}})
    assert await recorder.flush() is True
    recorder.event(run, "response", 1, {"text": "after"})
    assert await recorder.flush() is True
    events = [e async for e in RunEvent.objects.filter(run_id=run.id).order_by("seq")]
    assert [e.kind for e in events] == ["request", "response"]
    assert events[0].data["body"]["messages"][0]["content"] in ("x\x00y", "x\ufffdy")  # PostgreSQL: U+FFFD


@pytest.mark.django_db(transaction=True)
async def test_it_drops_a_batch_the_database_refuses_for_good_and_says_so(monkeypatch):
    from django.db import DataError

    recorder = Recorder()
    run = await recorder.resolve(None, "poison", 1, "openai")
    recorder.event(run, "request", 1, {"n": 1})
    switch = failing_writes(monkeypatch, DataError("invalid input"))
    assert await recorder.flush() is True and recorder.failures == 0  # not retried: the next batches go on
    assert await recorder.durable(timeout=1) is True and recorder.dropped == {run.id: 1}
    switch["down"] = False
    recorder.event(run, "response", 1, {"n": 2})
    assert await recorder.flush() is True and await recorder.flush() is True
    kinds = [e.kind async for e in RunEvent.objects.filter(run_id=run.id).order_by("seq")]
    assert "response" in kinds and "events_dropped" in kinds and "request" not in kinds
