"""A judge batch's socket (``/ws/judge/<id>/``) through channels' WebsocketCommunicator and the in-memory layer:
refused to anonymous visitors, the progress on connect, and again each time the batch's thread says it moved."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from harnessweb.judging.verdicts import diagnostic_verdict
from runs_app.judging import batches
from runs_app.judging.judge import store_verdict
from runs_app.models import JudgeBatch
from tests.conftest import make_run
from tests.test_live_consumers import ORIGIN, open_socket
from tests.test_runs_list_filters import request_event

pytestmark = pytest.mark.django_db(transaction=True)


def make_batch(**fields) -> JudgeBatch:
    return JudgeBatch.objects.create(**{"criteria": "answered", "run_ids": [], "total": 2, **fields})


async def test_it_refuses_an_anonymous_socket() -> None:
    from harnessweb.asgi import application

    communicator = WebsocketCommunicator(application, "/ws/judge/1/", headers=[ORIGIN])
    connected, code = await communicator.connect()
    assert not connected
    assert code == 4403


async def test_it_sends_the_progress_on_connect_and_when_the_batch_moves() -> None:
    batch = await sync_to_async(make_batch)()
    socket = await open_socket(f"/ws/judge/{batch.pk}/")
    first = await socket.receive_from(timeout=3)
    assert 'id="judge-progress"' in first and 'hx-swap-oob="true"' in first
    assert "0 of 2 judged" in first

    def judge_one() -> None:
        run = make_run(scenario_id="<script>x</script>")
        verdict = store_verdict(run, diagnostic_verdict("<b>garbage</b>", "no verdict in the judge's answer"))
        JudgeBatch.objects.filter(pk=batch.pk).update(done=1, verdict_ids=[verdict.pk])

    await sync_to_async(judge_one)()
    await get_channel_layer().group_send(batches.group_name(batch.pk), {"type": "judge.progress", "batch": batch.pk})
    second = await socket.receive_from(timeout=3)
    assert "1 of 2 judged" in second
    assert ">JUDGE ERROR</span>" in second
    assert "&lt;script&gt;x&lt;/script&gt;" in second and "<script>x" not in second
    await socket.disconnect()


async def test_it_sends_nothing_for_an_unknown_batch() -> None:
    socket = await open_socket("/ws/judge/999999/")
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()


@pytest.mark.django_db
def test_the_progress_names_the_scenario_a_refused_run_asked_for() -> None:
    run = make_run(scenario_id="", mode="scenario", status="errored")
    request_event(run, {"x-harness-scenario": "chekout-flow"})
    verdict = store_verdict(run, diagnostic_verdict("<b>garbage</b>", "no verdict in the judge's answer"))
    batch = make_batch(total=1, done=1, verdict_ids=[verdict.pk])
    assert [row["run_label"] for row in batches.progress_context(batch)["verdicts"]] == ["chekout-flow"]
