"""Gemini Live's audio (harnessweb/engine/wire/gemini_live.py): audio in heard as automatic activity detection
hears it (speech then silence, counted in samples), ``audioStreamEnd`` or a client's ``activityEnd`` ending the
user's turn; the turn's words from the scenario as ``inputTranscription``; audio out as ``inlineData``."""

from __future__ import annotations

import base64
from array import array
from typing import Any

import orjson

from harnessweb.engine.exchange import Block, Message, Reply, Usage
from harnessweb.engine.wire import gemini_live

RATE = 16000


def pcm(ms_silence: int, ms_speech: int, ms_after: int) -> bytes:
    loud = array("h", [6000, -6000] * (ms_speech * RATE // 2000))
    return bytes(ms_silence * RATE // 500) + loud.tobytes() + bytes(ms_after * RATE // 500)


def opened(**setup: Any) -> gemini_live.LiveSession:
    session = gemini_live.LiveSession("live_a")
    gemini_live.receive(session, orjson.dumps({"setup": {"model": "models/gemini-live-2.5-flash", **setup}}))
    return session


def audio(session: gemini_live.LiveSession, data: bytes, chunk: int = 3200) -> list[gemini_live.Step]:
    """``realtimeInput.audio`` in 100 ms chunks, base64 URL-safe as google-genai sends it."""
    return [
        gemini_live.receive(session, orjson.dumps({"realtimeInput": {"audio": {
            "data": base64.urlsafe_b64encode(data[at : at + chunk]).decode(), "mimeType": "audio/pcm;rate=16000"}}}))
        for at in range(0, len(data), chunk)
    ]  # fmt: skip


def test_speech_then_silence_ends_the_user_s_turn_once() -> None:
    session = opened(inputAudioTranscription={})
    steps = audio(session, pcm(200, 400, 600))  # silence of 500 ms (the default) ends it
    assert [s.hear for s in steps] == [False] * 10 + [True, False]
    assert not any(s.respond or s.messages or s.close for s in steps)
    assert gemini_live.upcoming_request(session).messages == (Message("user", ""),)
    heard = gemini_live.heard(session, "What does an A sound like?")
    assert [orjson.dumps(m) for m in heard] == [
        b'{"serverContent":{"inputTranscription":{"text":"What does an A sound like?"}}}'
    ]
    assert gemini_live.chat_request(session).messages == (Message("user", "What does an A sound like?"),)


def test_without_input_transcription_the_words_are_only_the_conversation_s() -> None:
    session = opened()
    assert gemini_live.heard(session, "Hi") == []
    assert gemini_live.recorded_body(session)["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]


def test_the_setup_s_silence_duration_and_media_chunks_are_read_in_snake_case_too() -> None:
    session = opened(realtime_input_config={"automatic_activity_detection": {"silence_duration_ms": 100}})
    data = pcm(0, 200, 100)
    chunk = {"data": base64.b64encode(data).decode(), "mime_type": "audio/pcm"}  # 16 kHz unless it says
    step = gemini_live.receive(session, orjson.dumps({"realtime_input": {"media_chunks": [chunk]}}))
    assert step.hear and not step.close


def test_audio_stream_end_during_speech_ends_the_turn_and_after_it_does_nothing() -> None:
    session = opened()
    assert not any(s.hear for s in audio(session, pcm(0, 300, 0)))
    end = orjson.dumps({"realtimeInput": {"audioStreamEnd": True}})
    assert gemini_live.receive(session, end).hear
    assert not gemini_live.receive(session, end).hear


def test_with_detection_disabled_the_client_s_activity_end_ends_the_turn() -> None:
    session = opened(realtimeInputConfig={"automaticActivityDetection": {"disabled": True}})
    assert not gemini_live.receive(session, b'{"realtimeInput": {"activityStart": {}}}').hear
    assert not any(s.hear for s in audio(session, pcm(0, 300, 900)))  # silence is no end: the client says
    assert gemini_live.receive(session, b'{"realtimeInput": {"activityEnd": {}}}').hear
    assert not gemini_live.receive(session, b'{"realtimeInput": {"activityEnd": {}}}').hear  # no activity open


def test_refusals_close_the_session_naming_the_field() -> None:
    session = opened()
    step = gemini_live.receive(session, b'{"realtimeInput": {"activityStart": {}}}')
    assert step.close.startswith("realtimeInput.activityStart")  # automatic detection is on
    bad = {"realtimeInput": {"audio": {"data": "!!", "mimeType": "audio/pcm;rate=16000"}}}
    assert (
        gemini_live.receive(opened(), orjson.dumps(bad)).close == "realtimeInput.audio.data: not base64-encoded audio."
    )
    mp3 = {"realtimeInput": {"mediaChunks": [{"data": "AAAA", "mimeType": "audio/mp3"}]}}
    assert gemini_live.receive(opened(), orjson.dumps(mp3)).close.startswith("realtimeInput.mediaChunks[0].mimeType")
    video = {"realtimeInput": {"video": {"data": "AAAA", "mimeType": "image/jpeg"}}}
    assert gemini_live.receive(opened(), orjson.dumps(video)) == gemini_live.Step()  # accepted, not answered


REPLY = Reply((Block("text", text="Like this."),), "stop", Usage(3, 4, 7), chunk_words=2)
SOUND = bytes(range(256)) * 30  # 7680 bytes: two chunks of at most 4800


def test_an_audio_setup_hears_the_turn_s_audio_as_inline_data_beside_its_transcription() -> None:
    session = opened(generationConfig={"responseModalities": ["AUDIO"]}, outputAudioTranscription={})
    gemini_live.heard(session, "An A?")
    messages = [m for m, _ in gemini_live.response_messages(session, REPLY, base64.b64encode(SOUND).decode(), "An A.")]
    parts = [m["serverContent"]["modelTurn"]["parts"][0] for m in messages if "modelTurn" in m["serverContent"]]
    assert [p["inlineData"]["mimeType"] for p in parts] == ["audio/pcm;rate=24000"] * 2
    assert b"".join(base64.b64decode(p["inlineData"]["data"]) for p in parts) == SOUND
    said = [
        m["serverContent"]["outputTranscription"]["text"]
        for m in messages
        if "outputTranscription" in m["serverContent"]
    ]
    assert said == ["An A."] and "text" not in str(parts)
    assert messages[-1]["serverContent"] == {"turnComplete": True}
    assert gemini_live.chat_request(session).messages[-1] == Message("assistant", "Like this.")


def test_a_text_setup_or_a_turn_without_audio_answers_in_text() -> None:
    text_setup = opened(generationConfig={"responseModalities": ["TEXT"]})
    gemini_live.heard(text_setup, "An A?")
    messages = gemini_live.response_messages(text_setup, REPLY, base64.b64encode(SOUND).decode())
    assert messages[0][0]["serverContent"]["modelTurn"]["parts"] == [{"text": "Like this."}]
    audio_setup = opened(generation_config={"response_modalities": ["AUDIO"]})  # no audio fixture: text still
    gemini_live.heard(audio_setup, "An A?")
    assert gemini_live.response_messages(audio_setup, REPLY)[0][0]["serverContent"]["modelTurn"]["parts"] == [
        {"text": "Like this."}
    ]


def test_speech_starting_interrupts_the_model_unless_the_setup_says_no_interruption() -> None:
    steps = audio(opened(), pcm(100, 300, 0))
    assert [s.interrupt for s in steps] == [False, True, False, False]
    calm = opened(realtimeInputConfig={"activityHandling": "NO_INTERRUPTION"})
    assert not any(s.interrupt for s in audio(calm, pcm(100, 300, 0)))
    manual = opened(realtimeInputConfig={"automaticActivityDetection": {"disabled": True}})
    assert gemini_live.receive(manual, b'{"realtimeInput": {"activityStart": {}}}').interrupt
    assert orjson.dumps(gemini_live.INTERRUPTED) == b'{"serverContent":{"interrupted":true}}'
