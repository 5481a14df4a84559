"""A socket response shown live to the run page's watchers while it is sent, as an HTTP stream is
(``runs_app/endpoint/inflight.py``): the Realtime consumer in-process, a paced response read halfway, what it
streamed so far kept with its timing and sent to the run's group, and forgotten once the response is done."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import orjson
import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from runs_app.endpoint import inflight
from runs_app.endpoint import recorder as recorder_module
from runs_app.endpoint.realtime_consumer import RealtimeConsumer
from runs_app.endpoint.recorder import group_name
from tests.conftest import make_scenario

pytestmark = pytest.mark.django_db(transaction=True)

WORDS = [f"w{i}" for i in range(30)]


@pytest.fixture
async def paced(settings: Any) -> Any:
    settings.HARNESS_PACING = True
    response = {"kind": "text", "assistant_text": " ".join(WORDS)}
    pacing = {"chunk_words": 1, "interval_ms": 50}
    await sync_to_async(make_scenario)("rt-live", [{"turn": 1, "response": response}], pacing=pacing)
    recorder = recorder_module.Recorder()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recorder_module, "_recorder", recorder)
        yield
        await recorder.aclose()


async def receive(socket: WebsocketCommunicator) -> dict[str, Any]:
    return orjson.loads(await socket.receive_from(timeout=5))


async def test_a_paced_realtime_response_is_kept_and_sent_to_the_watchers_while_it_streams(paced: None) -> None:
    run_id = uuid.uuid4()
    layer = get_channel_layer()
    watcher = await layer.new_channel()
    await layer.group_add(group_name(run_id), watcher)  # the run page's socket, joined
    headers = [(b"x-harness-run", str(run_id).encode())]
    socket = WebsocketCommunicator(RealtimeConsumer.as_asgi(), "/v1/realtime?model=gpt-realtime", headers=headers)
    connected, _ = await socket.connect()
    assert connected and (await receive(socket))["type"] == "session.created"
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "rt-live"}]}
    await socket.send_to(text_data=orjson.dumps({"type": "conversation.item.create", "item": item}).decode())
    await socket.send_to(text_data=orjson.dumps({"type": "response.create"}).decode())
    deltas = []
    while len(deltas) < 5:  # halfway through
        event = await receive(socket)
        if event["type"] == "response.output_text.delta":
            deltas.append(event["delta"])

    [kept] = inflight.snapshot(str(run_id))
    assert inflight.streaming(str(run_id)) and kept["turn"] == 1
    assert kept["pieces"][: len(deltas) - 1] == [[0, "text", d] for d in deltas[:-1]]
    assert kept["seq"] == len(kept["pieces"]) < len(WORDS)
    assert kept["ttfb_ms"] is not None and kept["frame_ms"][0] == 0 and len(kept["frame_ms"]) >= len(deltas) + 4
    chunk = await asyncio.wait_for(layer.receive(watcher), 5)
    while chunk["type"] != "run.chunk":  # (the group also hears of the events recorded)
        chunk = await asyncio.wait_for(layer.receive(watcher), 5)
    assert chunk["attempt"] == kept["attempt"] and chunk["turn"] == 1
    assert chunk["seq"] == len(chunk["pieces"]) and chunk["pieces"][0] == [0, "text", deltas[0]]

    while (await receive(socket))["type"] != "response.done":
        pass
    assert inflight.snapshot(str(run_id)) == [] and not inflight.streaming(str(run_id))
    await socket.disconnect()
    await layer.group_discard(group_name(run_id), watcher)
