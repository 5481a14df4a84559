"""An unpaced stream's frames before its last go out in one body message (one write for the server, one read for the
client, the same bytes), its last once its events are committed; a paced stream's frames each on their time."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pytest
from asgiref.sync import sync_to_async

from runs_app.endpoint import recorder as recorder_module
from runs_app.models import RunEvent
from tests.conftest import endpoint_stream, make_scenario

pytestmark = pytest.mark.django_db(transaction=True)

WORDS = "one two three four five six"


@pytest.fixture
async def recorder() -> Any:
    recorder = recorder_module.Recorder()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recorder_module, "_recorder", recorder)
        yield recorder
        await recorder.aclose()


async def body_messages(scenario: str, run_id: uuid.UUID) -> list[tuple[bytes, int]]:
    """The endpoint's non-empty body messages for one streamed request, each with the response events stored when
    it was received."""
    communicator = await endpoint_stream(run_id, scenario)
    received = []
    while True:
        message = await communicator.receive_output(5)
        if message.get("body"):
            stored = await RunEvent.objects.filter(run_id=run_id, kind="response").acount()
            received.append((message["body"], stored))
        if not message.get("more_body"):
            break
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(5)
    return received


def store(scenario: str, interval_ms: int) -> None:
    response = {"kind": "text", "assistant_text": WORDS}
    make_scenario(scenario, [{"turn": 1, "response": response}], pacing={"chunk_words": 1, "interval_ms": interval_ms})


async def test_an_unpaced_stream_goes_out_in_one_message_then_its_last_once_recorded(recorder, settings) -> None:
    settings.HARNESS_PACING = True
    await sync_to_async(store)("unpaced-frames", 0)
    run_id = uuid.uuid4()
    (first, stored_before), (last, stored_at_last) = await body_messages("unpaced-frames", run_id)
    assert last == b"data: [DONE]\n\n" and stored_before == 0 and stored_at_last == 1
    events = [line for line in first.split(b"\n\n") if line]
    words = [orjson.loads(e.removeprefix(b"data: "))["choices"][0]["delta"].get("content") for e in events]
    assert "".join(w for w in words if w) == WORDS and len(events) > len(WORDS.split())  # every frame, in order


async def test_a_paced_stream_sends_each_frame_on_its_own(recorder, settings) -> None:
    settings.HARNESS_PACING = True
    await sync_to_async(store)("paced-frames", 5)
    received = await body_messages("paced-frames", uuid.uuid4())
    assert len(received) > len(WORDS.split()) and all(body.count(b"data: ") == 1 for body, _ in received)
    assert received[-1][0] == b"data: [DONE]\n\n"
