"""What a response has streamed so far (runs_app/endpoint/inflight.py) and how a run page's socket joins a stream in
its middle: the snapshot first, then only the pieces after it, whatever overlaps."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import ApplicationCommunicator

from harnessweb.engine.wire.common import Piece
from runs_app.endpoint import inflight
from runs_app.endpoint import recorder as recorder_module
from runs_app.endpoint.recorder import RunState, group_name
from runs_app.live import waterfall
from tests.conftest import endpoint_stream, make_run, make_scenario
from tests.test_live_consumers import close, make_event, open_socket

pytestmark = pytest.mark.django_db(transaction=True)


@dataclass
class Sender:
    """What the endpoint's consumer is to inflight.send: its run, turn and timing so far."""

    run: RunState
    turn: int | None = 1
    request_id: str = field(default_factory=lambda: f"req_{uuid.uuid4().hex[:24]}")
    started: float = field(default_factory=time.perf_counter)
    first_byte: float | None = None
    frame_ms: list[int] = field(default_factory=list)


def state_of(run_id: uuid.UUID) -> RunState:
    return RunState(id=run_id, protocol="openai", conversation_key="k", started_at=dt.datetime.now(dt.UTC))


def text(*words: str) -> list[Piece]:
    return [Piece(1, "text", w) for w in words]


async def test_it_numbers_the_pieces_of_an_attempt_and_forgets_them_at_its_end():
    run_id = uuid.uuid4()
    sender = Sender(state_of(run_id), first_byte=time.perf_counter(), frame_ms=[0, 150])
    await inflight.send(sender, [Piece(0, "reasoning", "Think. ")])
    await inflight.send(sender, text("one ", "two "))
    [kept] = inflight.snapshot(str(run_id))
    assert kept["attempt"] == sender.request_id and kept["turn"] == 1 and kept["seq"] == 3
    assert kept["pieces"] == [[0, "reasoning", "Think. "], [1, "text", "one "], [1, "text", "two "]]
    assert kept["frame_ms"] == [0, 150] and kept["ttfb_ms"] is not None and kept["elapsed_ms"] >= 0
    assert inflight.snapshot(str(run_id), pieces=False)[0]["pieces"] == []
    assert inflight.streaming(str(run_id)) and not inflight.streaming(str(uuid.uuid4()))
    inflight.end(sender.request_id)
    assert inflight.snapshot(str(run_id)) == [] and not inflight.streaming(str(run_id))


async def test_it_sends_a_socket_opened_mid_stream_what_streamed_before_then_nothing_twice():
    run = await sync_to_async(make_run)()
    await sync_to_async(make_event)(run, 1, "request", path="/v1/chat/completions", body={"model": "m"})
    sender = Sender(state_of(run.id))
    await inflight.send(sender, text("one ", "two ", "three "))  # before the page opened: nobody watched
    try:
        communicator = await open_socket(f"/ws/runs/{run.id}/?after=1")
        html = await communicator.receive_from(timeout=3)
        # The page has turn 1's card: its viewer is emptied and filled with the three pieces.
        assert 'hx-swap-oob="beforeend:#timeline"' not in html
        assert '<div id="turn-1-live" class="stream" hx-swap-oob="true"></div>' in html
        assert '<span hx-swap-oob="beforeend:#turn-1-block-1">one two three </span>' in html

        # A message the socket joined in time for, overlapping the snapshot (pieces 2 to 5): only 4 and 5 go out.
        layer = get_channel_layer()
        overlapping = {
            "type": "run.chunk",
            "run": str(run.id),
            "turn": 1,
            "attempt": sender.request_id,
            "seq": 5,
            "pieces": [[1, "text", "two "], [1, "text", "three "], [1, "text", "four "], [1, "text", "five "]],
        }
        await layer.group_send(group_name(run.id), overlapping)
        html = await communicator.receive_from(timeout=3)
        assert html.strip() == '<span hx-swap-oob="beforeend:#turn-1-block-1">four five </span>'
        # Whatever was sent already is dropped; the next pieces follow.
        await layer.group_send(group_name(run.id), {**overlapping, "seq": 4, "pieces": overlapping["pieces"][:3]})
        await layer.group_send(group_name(run.id), {**overlapping, "seq": 6, "pieces": [[1, "text", "six"]]})
        html = await communicator.receive_from(timeout=3)
        assert html.strip() == '<span hx-swap-oob="beforeend:#turn-1-block-1">six</span>'

        # The next attempt at the turn (another request id) starts a fresh viewer from its own first piece.
        retry = {**overlapping, "attempt": "req_retry", "seq": 1, "pieces": [[1, "text", "again"]]}
        await layer.group_send(group_name(run.id), retry)
        html = await communicator.receive_from(timeout=3)
        assert html.lstrip().startswith('<div id="turn-1-live" class="stream" hx-swap-oob="true"></div>')
        assert '<span hx-swap-oob="beforeend:#turn-1-block-1">again</span>' in html
        await close(communicator)
    finally:
        inflight.end(sender.request_id)


def test_it_draws_a_streaming_response_as_far_as_it_went():
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    events = [
        {"seq": 1, "timestamp": t0, "kind": "request", "turn": 1, "data": {}},
        {"seq": 2, "timestamp": t0 + dt.timedelta(milliseconds=5), "kind": "validation", "turn": 1, "data": {}},
    ]
    before = waterfall.build(events, live=True).rows[0]
    assert before.status == "in flight" and before.end_ms == 5 and not before.dots

    streaming = {1: {"ttfb_ms": 40.0, "frame_ms": [0, 150, 300, 450], "elapsed_ms": 2000.0}}
    [row] = waterfall.build(events, live=True, streaming=streaming).rows
    assert row.status == "streaming, 4 frames so far" and row.state == "in-flight"
    assert row.end_ms == 2000 and row.ttfb_ms == 40
    assert len(row.dots) == 4 and [g.ms for g in row.gaps] == [150, 150, 150]
    # A finished run's chart, or a turn whose request has ended, takes no streaming timing.
    assert waterfall.build(events, live=False, streaming=streaming).rows[0].status == "no answer recorded"


# -- the endpoint keeps a stream only while it is sent ----------------------------------------------------------------


async def start_stream(run_id: uuid.UUID) -> ApplicationCommunicator:
    """A paced stream of the endpoint's, in-process, read up to its first body frame."""
    communicator = await endpoint_stream(run_id, "kept-while-sent")
    while not (await communicator.receive_output(5)).get("body"):
        pass  # the headers' empty body message, if any
    return communicator


@pytest.fixture
async def paced_stream(settings: Any) -> Any:
    settings.HARNESS_PACING = True
    words = " ".join(f"w{i}" for i in range(40))
    pacing = {"chunk_words": 1, "interval_ms": 60}
    response = {"kind": "text", "assistant_text": words}
    await sync_to_async(make_scenario)("kept-while-sent", [{"turn": 1, "response": response}], pacing=pacing)
    recorder = recorder_module.Recorder()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recorder_module, "_recorder", recorder)
        yield words
        await recorder.aclose()


async def wait_streaming(run_id: uuid.UUID) -> None:
    for _ in range(100):
        if inflight.streaming(str(run_id)):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the stream was never kept")


async def test_it_forgets_a_stream_whose_client_hangs_up_midway(paced_stream: str) -> None:
    run_id = uuid.uuid4()
    communicator = await start_stream(run_id)
    await wait_streaming(run_id)
    assert inflight.snapshot(str(run_id))[0]["seq"] < len(paced_stream.split())  # midway
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(5)
    assert inflight.snapshot(str(run_id)) == [] and not inflight.streaming(str(run_id))


async def test_it_forgets_a_stream_once_it_is_sent_whole(paced_stream: str) -> None:
    run_id = uuid.uuid4()
    communicator = await start_stream(run_id)
    await wait_streaming(run_id)
    while (await communicator.receive_output(5)).get("more_body"):
        pass
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(5)
    assert inflight.snapshot(str(run_id)) == []
