"""Gemini Live's audio through google-genai's live client, unmodified, against ``harness serve --tls``: speech
then silence in ``send_realtime_input`` ends the user's turn (automatic activity detection), the words are the
scenario's ``input_transcript`` (``input_transcription``), and the answer is the turn's audio fixture as
``inline_data`` with its ``output_transcription``."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from google.genai import types

from tests.conftest import ROOT
from tests.test_live_gemini_sdk import live_client, run_of, served_tls

TONE = (ROOT / "tests" / "fixtures" / "realtime" / "tone-440hz-250ms.pcm16").read_bytes()  # loud PCM16 samples
SCENARIOS = [
    {
        "id": "live-audio",
        "turns": [
            {
                "turn": 1,
                "input_transcript": "What does an A sound like?",
                "response": {"kind": "text", "assistant_text": "Like this."},
                "audio": base64.b64encode(TONE).decode(),
                "transcript": "Like this: an A.",
                "expect": {"last_message_contains": "What does an A sound like?"},
            }
        ],
    },
    {
        "id": "live-barge",
        "pacing": {"chunk_words": 1, "interval_ms": 100},
        "turns": [
            {"turn": 1, "response": {"kind": "text", "assistant_text": " ".join(f"word{i}" for i in range(40))}},
            {"turn": 2, "input_transcript": "Stop there.", "response": {"kind": "text", "assistant_text": "Stopped."}},
        ],
    },
]
SPEECH = bytes(3200) + TONE + bytes(3200 * 6)  # 100 ms of silence, the tone, 600 ms of silence at 16 kHz


async def speak(live: Any) -> None:
    for at in range(0, len(SPEECH), 3200):
        await live.send_realtime_input(audio=types.Blob(data=SPEECH[at : at + 3200], mime_type="audio/pcm;rate=16000"))


@pytest.fixture(scope="module")
def audio_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with served_tls(tmp_path_factory.mktemp("live-audio"), SCENARIOS, pacing="on") as line:
        yield line


def test_spoken_input_is_answered_with_the_turn_s_audio_and_both_transcriptions(
    audio_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = live_client(audio_server, monkeypatch)
    run_id = str(uuid.uuid4())
    headers = {"X-Harness-Run": run_id, "X-Harness-Scenario": "live-audio"}
    config = types.LiveConnectConfig(
        response_modalities=[types.Modality.AUDIO],
        input_audio_transcription=types.AudioTranscriptionConfig(),
        output_audio_transcription=types.AudioTranscriptionConfig(),
        http_options=types.HttpOptions(base_url=audio_server["url"], headers=headers),
    )

    async def session() -> list[Any]:
        async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as live:
            await speak(live)
            return [message async for message in live.receive()]

    messages = asyncio.run(session())
    contents = [m.server_content for m in messages if m.server_content]
    heard = [c.input_transcription.text for c in contents if c.input_transcription]
    assert heard == ["What does an A sound like?"]
    parts = [p for c in contents if c.model_turn for p in c.model_turn.parts]
    assert all(p.inline_data and p.inline_data.mime_type == "audio/pcm;rate=24000" for p in parts)
    assert b"".join(p.inline_data.data for p in parts) == TONE and len(parts) == 3
    said = "".join(c.output_transcription.text for c in contents if c.output_transcription)
    assert said == "Like this: an A."
    assert contents[-1].turn_complete is True
    run = run_of(audio_server, run_id)
    assert run["scenario_id"] == "live-audio" and run["status"] == "passed", run


def test_speech_over_the_model_s_turn_interrupts_it_and_is_answered(
    audio_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = live_client(audio_server, monkeypatch)
    config = types.LiveConnectConfig(
        response_modalities=[types.Modality.TEXT],
        http_options=types.HttpOptions(base_url=audio_server["url"], headers={"X-Harness-Scenario": "live-barge"}),
    )

    async def session() -> list[Any]:
        async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as live:
            await live.send_client_content(turns={"role": "user", "parts": [{"text": "Count."}]}, turn_complete=True)
            messages, chunks = [], 0
            async for message in live.receive():
                messages.append(message)
                chunks += bool(message.text)
                if chunks == 2 and message.text:  # speak over the model's turn
                    await speak(live)
            return messages

    messages = asyncio.run(session())
    contents = [m.server_content for m in messages if m.server_content]
    interrupted = next(i for i, m in enumerate(messages) if m.server_content and m.server_content.interrupted)
    said = "".join(m.text or "" for m in messages[interrupted:] if m.server_content and m.server_content.model_turn)
    assert said == "Stopped."  # nothing more of the interrupted turn, then the spoken turn's answer
    before = "".join(m.text or "" for m in messages[:interrupted] if m.server_content)
    assert before.startswith("word0 word1") and "Stopped." not in before
    assert sum(1 for c in contents if c.turn_complete) == 1 and contents[-1].turn_complete
    assert len([m for m in messages if m.text]) < 30
