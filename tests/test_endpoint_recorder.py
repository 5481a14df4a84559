"""The recorder: events batched to the database and broadcast to the run's channel layer group."""

import uuid

import pytest
from channels.layers import get_channel_layer

from runs_app.endpoint.recorder import Recorder, group_name
from runs_app.models import Run, RunEvent


@pytest.mark.django_db(transaction=True)
async def test_it_writes_events_in_one_batch_and_broadcasts_each_to_the_run_group():
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
    first, second = await layer.receive(channel), await layer.receive(channel)
    assert (first["type"], first["kind"], first["seq"], first["run"]) == ("run.event", "request", 1, str(run.id))
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
