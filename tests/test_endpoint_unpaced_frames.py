"""An unpaced stream's frames before its last go out in one body message (one write for the server, one read for the
client, the same bytes), its last once its events are committed; a paced stream's frames each on their time; a
one-frame answer's headers before its commit, its body after."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pytest
from asgiref.sync import sync_to_async

from runs_app.endpoint import recorder as recorder_module
from runs_app.endpoint.consumer import FakeEndpointConsumer
from tests.conftest import endpoint_stream, make_scenario

pytestmark = pytest.mark.django_db(transaction=True)

WORDS = "one two three four five six"
HEADERS = "(the headers, ahead of the body)"


@pytest.fixture
async def order(monkeypatch) -> Any:
    """What the endpoint did, in order: each non-empty body message it sent, an empty one that sends the headers
    ahead of the body (``HEADERS``), and each commit a response waited for."""
    done: list[str] = []
    recorder = recorder_module.Recorder()
    monkeypatch.setattr(recorder_module, "_recorder", recorder)
    durable = recorder.durable

    async def committed(*args: Any, **kwargs: Any) -> bool:
        result = await durable(*args, **kwargs)
        done.append("commit")
        return result

    send_body = FakeEndpointConsumer.send_body

    async def sent(self: Any, body: bytes, *, more_body: bool = False) -> None:
        if body or more_body:
            done.append(body.decode() or HEADERS)
        await send_body(self, body, more_body=more_body)

    monkeypatch.setattr(recorder, "durable", committed)
    monkeypatch.setattr(FakeEndpointConsumer, "send_body", sent)
    yield done
    await recorder.aclose()


async def stream(scenario: str, streamed: bool = True) -> None:
    communicator = await endpoint_stream(uuid.uuid4(), scenario, stream=streamed)
    while (await communicator.receive_output(5)).get("more_body", False):
        pass
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(5)


def store(scenario: str, interval_ms: int) -> None:
    response = {"kind": "text", "assistant_text": WORDS}
    make_scenario(scenario, [{"turn": 1, "response": response}], pacing={"chunk_words": 1, "interval_ms": interval_ms})


async def test_an_unpaced_stream_goes_out_in_one_message_then_its_last_once_recorded(order, settings) -> None:
    settings.HARNESS_PACING = True
    await sync_to_async(store)("unpaced-frames", 0)
    await stream("unpaced-frames")
    first, commit, last = order
    assert commit == "commit" and last == "data: [DONE]\n\n"
    events = [e for e in first.split("\n\n") if e]
    words = [orjson.loads(e.removeprefix("data: "))["choices"][0]["delta"].get("content") for e in events]
    assert "".join(w for w in words if w) == WORDS and len(events) > len(WORDS.split())  # every frame, in order


async def test_a_paced_stream_sends_each_frame_on_its_own(order, settings) -> None:
    settings.HARNESS_PACING = True
    await sync_to_async(store)("paced-frames", 5)
    await stream("paced-frames")
    *frames, commit, last = order
    assert len(frames) > len(WORDS.split()) and all(frame.count("data: ") == 1 for frame in frames)
    assert commit == "commit" and last == "data: [DONE]\n\n"


async def test_a_one_frame_answer_sends_its_headers_before_its_commit_and_its_body_after(order, settings) -> None:
    # daphne writes the headers with the first body message: sent empty, the client reads them during the commit.
    settings.HARNESS_PACING = True
    await sync_to_async(store)("plain-answer", 0)
    await stream("plain-answer", streamed=False)
    headers, commit, body = order
    assert headers == HEADERS and commit == "commit"
    assert orjson.loads(body)["choices"][0]["message"]["content"] == WORDS


async def test_without_recording_nothing_waits_and_the_headers_go_with_the_body(order, settings) -> None:
    settings.HARNESS_PACING = True
    recorder_module._recorder.writing = False
    await sync_to_async(store)("plain-unrecorded", 0)
    await stream("plain-unrecorded", streamed=False)
    commit, body = order
    assert commit == "commit" and orjson.loads(body)["choices"][0]["message"]["content"] == WORDS
