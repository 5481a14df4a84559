"""Realtime's item events and server VAD through the official SDK's async realtime client, unmodified, against
the real server: a spoken answer truncated where the user stopped listening, a deleted item gone from what the
next response reads, and audio with speech then silence answered with no commit and no response.create."""

from __future__ import annotations

import asyncio
import base64
import uuid
from typing import Any

from tests.conftest import ROOT, LiveServer, make_scenario, recorded_run
from tests.test_realtime_sdk import connect, of, until_done

AUDIO = (ROOT / "tests" / "fixtures" / "realtime" / "tone-440hz-250ms.pcm16").read_bytes()  # 250 ms at 24 kHz
SILENCE_100MS = bytes(4800)


async def until(connection: Any, kind: str) -> list[Any]:
    events = []
    async for event in connection:
        events.append(event)
        if event.type == kind:
            return events
    raise AssertionError(f"the socket closed before {kind}: {[e.type for e in events]}")


def test_truncate_and_delete_change_what_the_next_response_reads(
    harness_server: LiveServer, api_key: str, transactional_db: None
) -> None:
    make_scenario(
        "rt-items",
        [
            {"turn": 1, "response": {"kind": "text", "assistant_text": "Like this."},
             "audio": base64.b64encode(AUDIO).decode(), "transcript": "Like this: an A."},
            {"turn": 2, "response": {"kind": "text", "assistant_text": "Again."}},
        ],
    )  # fmt: skip
    run_id = str(uuid.uuid4())

    async def session() -> tuple[list[Any], list[Any]]:
        async with connect(harness_server, api_key, run_id, **{"X-Harness-Scenario": "rt-items"}) as connection:
            await connection.recv()  # session.created
            item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "An A?"}]}
            await connection.conversation.item.create(item={"id": "item_question", **item})
            await connection.response.create()
            first = await until_done(connection)
            answer = first[-1].response.output[0].id
            await connection.conversation.item.truncate(item_id=answer, content_index=0, audio_end_ms=120)
            await connection.conversation.item.delete(item_id="item_question")
            await connection.conversation.item.delete(item_id="item_question", event_id="evt_again")
            await connection.conversation.item.retrieve(item_id=answer)
            after = await until(connection, "conversation.item.retrieved")
            await connection.conversation.item.create(item={**item, "content": [{"type": "input_text", "text": "?"}]})
            await connection.response.create()
            return first, after + await until_done(connection)

    first, after = asyncio.run(session())
    answer = first[-1].response.output[0].id
    truncated, deleted, error, retrieved = [e for e in after if e.type.startswith(("conversation.item.", "error"))][:4]
    assert (truncated.type, truncated.item_id, truncated.audio_end_ms) == ("conversation.item.truncated", answer, 120)
    assert (deleted.type, deleted.item_id) == ("conversation.item.deleted", "item_question")
    assert error.type == "error" and error.error.code == "item_not_found" and error.error.event_id == "evt_again"
    assert retrieved.item.id == answer and retrieved.item.content[0].transcript == ""
    assert "".join(e.delta for e in of(after, "response.output_text.delta")) == "Again."
    run = recorded_run(run_id, status="passed", events=8)
    second = run.events.filter(kind="request").order_by("seq").last().data["body"]["input"]
    assert [i["id"] for i in second][:1] == [answer] and "item_question" not in [i["id"] for i in second]


def test_server_vad_answers_speech_followed_by_silence_without_a_commit(
    harness_server: LiveServer, api_key: str, transactional_db: None
) -> None:
    make_scenario(
        "rt-vad",
        [{"turn": 1, "input_transcript": "What does an A sound like?",
          "response": {"kind": "text", "assistant_text": "Like an A."},
          "expect": {"last_message_contains": "What does an A sound like?"}}],
    )  # fmt: skip
    run_id = str(uuid.uuid4())
    audio = SILENCE_100MS + AUDIO + SILENCE_100MS * 4

    async def session() -> list[Any]:
        async with connect(harness_server, api_key, run_id, **{"X-Harness-Scenario": "rt-vad"}) as connection:
            await connection.recv()  # session.created
            vad = {"type": "server_vad", "silence_duration_ms": 200, "prefix_padding_ms": 0}
            config = {"type": "realtime", "output_modalities": ["text"], "audio": {"input": {"turn_detection": vad}}}
            await connection.session.update(session=config)
            for at in range(0, len(audio), 4800):
                await connection.input_audio_buffer.append(audio=base64.b64encode(audio[at : at + 4800]).decode())
            return await until_done(connection)

    events = asyncio.run(session())
    updated = of(events, "session.updated")[0].session.audio.input.turn_detection
    assert (updated.type, updated.silence_duration_ms, updated.create_response) == ("server_vad", 200, True)
    kinds = [e.type for e in events if e.type.startswith(("input_audio_buffer.", "response.created"))]
    assert kinds == ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
                     "input_audio_buffer.committed", "response.created"]  # fmt: skip
    started, stopped = (
        of(events, "input_audio_buffer.speech_started")[0],
        of(events, "input_audio_buffer.speech_stopped")[0],
    )
    assert (started.audio_start_ms, stopped.audio_end_ms) == (100, 550)  # the tone's start; its end + 200 ms
    assert started.item_id == stopped.item_id == of(events, "input_audio_buffer.committed")[0].item_id
    heard = of(events, "conversation.item.input_audio_transcription.completed")[0]
    assert heard.transcript == "What does an A sound like?" and heard.item_id == started.item_id
    assert "".join(e.delta for e in of(events, "response.output_text.delta")) == "Like an A."
    run = recorded_run(run_id, status="passed", events=4)
    assert run.events.get(kind="validation").data == {"ok": True, "problem": ""}


def test_speech_over_a_response_interrupts_it_and_the_speech_is_answered(
    paced_server: LiveServer, api_key: str, transactional_db: None
) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    make_scenario(
        "rt-barge",
        [
            {"turn": 1, "response": {"kind": "text", "assistant_text": words}},
            {"turn": 2, "input_transcript": "Stop there.", "response": {"kind": "text", "assistant_text": "Stopped."}},
        ],
        pacing={"chunk_words": 1, "interval_ms": 100},
    )
    audio = AUDIO + SILENCE_100MS * 3

    async def session() -> list[Any]:
        async with connect(paced_server, api_key, str(uuid.uuid4()), **{"X-Harness-Scenario": "rt-barge"}) as rt:
            vad = {"type": "server_vad", "silence_duration_ms": 200}
            config = {"type": "realtime", "output_modalities": ["text"], "audio": {"input": {"turn_detection": vad}}}
            await rt.session.update(session=config)
            item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Count."}]}
            await rt.conversation.item.create(item=item)
            await rt.response.create()
            events: list[Any] = []
            async for event in rt:
                events.append(event)
                if event.type == "response.output_text.delta" and len(of(events, event.type)) == 2:  # speak over it
                    for at in range(0, len(audio), 4800):
                        await rt.input_audio_buffer.append(audio=base64.b64encode(audio[at : at + 4800]).decode())
                if len(of(events, "response.done")) == 2:
                    return events
        raise AssertionError("the socket closed")

    events = asyncio.run(session())
    interrupted, answered = of(events, "response.done")
    assert interrupted.response.status == "cancelled" and interrupted.response.status_details.reason == "turn_detected"
    kinds = [e.type for e in events if e.type.startswith("input_audio_buffer.") or e.type == "response.done"]
    assert kinds == ["input_audio_buffer.speech_started", "response.done", "input_audio_buffer.speech_stopped",
                     "input_audio_buffer.committed", "response.done"]  # fmt: skip
    assert len(of(events, "response.output_text.delta")) < 20
    assert answered.response.status == "completed" and answered.response.output[0].content[0].text == "Stopped."
