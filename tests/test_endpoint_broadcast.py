"""The fake endpoint in-process, through channels' ApplicationCommunicator: what the client receives is broadcast."""

import uuid

import orjson
import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import ApplicationCommunicator

from runs_app.endpoint import recorder as recorder_module
from runs_app.endpoint.consumer import FakeEndpointConsumer
from runs_app.models import RunEvent
from tests.conftest import make_scenario

ANSWER = "one two three four five six seven eight nine ten eleven twelve"


async def post(path: str, body: dict, headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    scope = {"type": "http", "method": "POST", "path": path, "headers": headers, "query_string": b""}
    communicator = ApplicationCommunicator(FakeEndpointConsumer.as_asgi(), scope)
    await communicator.send_input({"type": "http.request", "body": orjson.dumps(body), "more_body": False})
    start = await communicator.receive_output(5)
    received = b""
    while True:
        message = await communicator.receive_output(5)
        received += message.get("body", b"")
        if not message.get("more_body"):
            break
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(5)
    return start["status"], received


@pytest.fixture
async def fresh_recorder(monkeypatch):
    recorder = recorder_module.Recorder()
    monkeypatch.setattr(recorder_module, "_recorder", recorder)
    yield recorder
    await recorder.aclose()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("path", "extra"),
    [("/v1/chat/completions", {}), ("/v1/messages", {"max_tokens": 64})],
)
async def test_it_broadcasts_every_piece_the_client_receives_to_the_run_group(fresh_recorder, path, extra):
    await sync_to_async(make_scenario)(
        "live", [{"turn": 1, "response": {"kind": "text", "assistant_text": ANSWER}}], pacing={"chunk_words": 3}
    )
    run_id = uuid.uuid4()
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(f"run-{run_id}", channel)
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "live"}], **extra}
    status, received = await post(path, body, [(b"x-harness-run", str(run_id).encode())])
    assert status == 200 and b"eleven twelve" in received
    chunk = await layer.receive(channel)
    assert chunk["type"] == "run.chunk" and chunk["turn"] == 1
    assert "".join(text for _, kind, text in chunk["pieces"] if kind == "text") == ANSWER
    assert len(chunk["pieces"]) == 4  # 12 words in 3-word chunks, sent as one message since nothing was paced
    await fresh_recorder.flush()
    kinds = [e.kind async for e in RunEvent.objects.filter(run_id=run_id).order_by("seq")]
    assert kinds == ["request", "match", "validation", "response"]
