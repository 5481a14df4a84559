"""Realtime's server VAD (harnessweb/engine/wire/realtime.py, realtime_vad.py): appended audio with speech, then
silence as long as the session says, makes speech_started / speech_stopped, a commit and a response; measured in
samples, so the same bytes give the same events however they are cut."""

from __future__ import annotations

import base64
from array import array
from typing import Any

import orjson

from harnessweb.engine.wire import realtime
from harnessweb.engine.wire.realtime_vad import Detector, Speech

RATE = 24000


def pcm(ms_silence: int, ms_speech: int, ms_after: int) -> bytes:
    """Silence, a loud square wave, silence again: PCM16 at 24 kHz."""
    loud = array("h", [8000, -8000] * (ms_speech * RATE // 2000))
    return bytes(ms_silence * RATE // 500) + loud.tobytes() + bytes(ms_after * RATE // 500)


def session(**vad: Any) -> realtime.Session:
    s = realtime.open_session("sess_vad", "gpt-realtime")[0]
    send(s, {"type": "session.update", "session": {"audio": {"input": {"turn_detection": vad or None}}}})
    return s


def send(s: realtime.Session, event: dict[str, Any]) -> realtime.Step:
    return realtime.receive(s, orjson.dumps(event))


def append(s: realtime.Session, audio: bytes, chunk: int = 4800) -> list[realtime.Step]:
    return [
        send(s, {"type": "input_audio_buffer.append", "audio": base64.b64encode(audio[at : at + chunk]).decode()})
        for at in range(0, len(audio), chunk)
    ]


def test_turning_server_vad_on_fills_in_the_api_s_defaults() -> None:
    s = realtime.open_session("sess_vad", "gpt-realtime")[0]
    (updated,) = send(
        s, {"type": "session.update", "session": {"audio": {"input": {"turn_detection": {"type": "server_vad"}}}}}
    ).events
    assert updated["session"]["audio"]["input"]["turn_detection"] == {
        "type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500,
        "idle_timeout_ms": None, "create_response": True, "interrupt_response": True,
    }  # fmt: skip
    assert updated["session"]["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}


def test_speech_then_silence_starts_stops_commits_and_asks_for_a_response() -> None:
    s = session(type="server_vad", silence_duration_ms=200, prefix_padding_ms=100)
    audio = pcm(300, 500, 300)
    steps = append(s, audio[: 10 * 4800])  # 100 ms chunks: speech from 300 ms, stopped 200 ms after its end
    kinds = [[e["type"] for e in step.events] for step in steps]
    assert kinds == [[], [], [], ["input_audio_buffer.speech_started"], [], [], [], [], [],
                     ["input_audio_buffer.speech_stopped"]]  # fmt: skip
    started, stopped = steps[3].events[0], steps[9].events[0]
    assert (started["audio_start_ms"], stopped["audio_end_ms"]) == (200, 1000)  # the prefix padding, the silence
    assert started["item_id"] == stopped["item_id"]
    assert steps[9].commit and steps[9].respond == {} and not any(st.commit for st in steps[:9])
    events = realtime.commit_audio(s, "What does an A sound like?")  # as the consumer does on the stop
    committed, added = events[0], events[1]
    assert committed["type"] == "input_audio_buffer.committed" and committed["item_id"] == started["item_id"]
    assert added["item"]["content"] == [{"type": "input_audio", "transcript": "What does an A sound like?"}]
    assert events[-1]["usage"] == {"type": "duration", "seconds": 1.0} and not s.audio
    (after,) = append(s, audio[10 * 4800 :])
    assert not after.events and not after.commit and len(s.audio) == 4800  # the next turn's buffer
    assert realtime.chat_request(s).last_user == "What does an A sound like?"


def test_the_same_audio_cut_differently_gives_the_same_events() -> None:
    audio = pcm(300, 500, 300)
    whole = session(type="server_vad", silence_duration_ms=200, prefix_padding_ms=100)
    odd = session(type="server_vad", silence_duration_ms=200, prefix_padding_ms=100)
    strip = ("event_id", "item_id")
    one = [{k: v for k, v in e.items() if k not in strip} for st in append(whole, audio, 10**6) for e in st.events]
    many = [{k: v for k, v in e.items() if k not in strip} for st in append(odd, audio, 777) for e in st.events]
    assert (
        one
        == many
        == [
            {"type": "input_audio_buffer.speech_started", "audio_start_ms": 200},
            {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": 1000},
        ]
    )


def test_create_response_false_commits_without_a_response() -> None:
    s = session(type="server_vad", silence_duration_ms=100, create_response=False)
    stops = [step for step in append(s, pcm(0, 200, 200)) if step.commit]
    assert len(stops) == 1 and stops[0].respond is None


def test_two_turns_in_one_append_are_told_one_append_at_a_time() -> None:
    s = session(type="server_vad", silence_duration_ms=100)
    (first,) = append(s, pcm(0, 200, 200) + pcm(0, 200, 200), 10**6)
    assert [e["type"] for e in first.events][-1] == "input_audio_buffer.speech_stopped" and first.commit
    realtime.commit_audio(s, "one")
    second = send(s, {"type": "input_audio_buffer.append", "audio": ""})  # the rest is scanned with the next append
    assert second.commit and second.events[-1]["audio_end_ms"] == 700
    realtime.commit_audio(s, "two")
    assert [m.text for m in realtime.chat_request(s).messages] == ["one", "two"]
    assert len(s.audio) == 2400 * 2  # the last 100 ms of silence: unheard, kept


def test_quiet_audio_and_no_turn_detection_make_no_events() -> None:
    s = session(type="server_vad")
    assert all(not step.events and not step.commit for step in append(s, array("h", [499, -499] * 24000).tobytes()))
    manual = session()
    assert all(not step.events and not step.commit for step in append(manual, pcm(100, 500, 900)))


def test_a_client_commit_during_speech_takes_the_whole_buffer_as_the_announced_item() -> None:
    s = session(type="server_vad")
    (started,) = [e for step in append(s, pcm(0, 300, 0)) for e in step.events]
    assert send(s, {"type": "input_audio_buffer.commit"}).commit
    events = realtime.commit_audio(s, "hi")
    assert events[0]["item_id"] == started["item_id"] and not s.audio and not s.detector.speaking


def test_clear_forgets_the_speech_under_way() -> None:
    s = session(type="server_vad", silence_duration_ms=100)
    append(s, pcm(0, 300, 0))
    (cleared,) = send(s, {"type": "input_audio_buffer.clear"}).events
    assert cleared["type"] == "input_audio_buffer.cleared" and not s.audio and s.speech_item is None
    steps = append(s, bytes(9600))
    assert not any(step.events for step in steps)


def test_a_bad_turn_detection_is_refused_naming_the_field() -> None:
    s = realtime.open_session("sess_vad", "gpt-realtime")[0]
    param = "session.audio.input.turn_detection"
    for vad, field in [
        ({"type": "loud"}, f"{param}.type"),
        ({"type": "server_vad", "silence_duration_ms": -1}, f"{param}.silence_duration_ms"),
        ({"type": "server_vad", "threshold": 2}, f"{param}.threshold"),
        ({"type": "server_vad", "eagerness": "low"}, f"{param}.eagerness"),
    ]:
        (error,) = send(s, {"type": "session.update", "session": {"audio": {"input": {"turn_detection": vad}}}}).events
        assert error["type"] == "error" and error["error"]["param"] == field
    assert s.config["audio"]["input"]["turn_detection"] is None


def test_the_detector_counts_samples_across_the_session() -> None:
    d = Detector()
    assert d.feed(bytes(100) + b"\xf4\x01", 4) == Speech(50, None)  # 500: the speech level
    assert d.feed(b"\x00", 4) == Speech()  # half a sample waits for its other byte
    assert d.feed(bytes(7), 4) == Speech(None, 55)
    assert d.pending == b"\x00" * 0 and d.at == 55


def test_speech_starting_asks_to_interrupt_a_response_unless_the_session_says_not() -> None:
    steps = append(session(type="server_vad", silence_duration_ms=100), pcm(100, 200, 100))
    assert [step.interrupt for step in steps] == [False, True, False, False]
    quiet = append(session(type="server_vad", silence_duration_ms=100, interrupt_response=False), pcm(100, 200, 100))
    assert not any(step.interrupt for step in quiet) and quiet[-1].commit


def test_an_interrupted_response_is_done_as_cancelled_by_the_turn_detected() -> None:
    s = session(type="server_vad")
    response, _ = realtime.begin_response(s, {})
    done = realtime.cancelled(s, response, "turn_detected")
    assert done["response"]["status_details"] == {"type": "cancelled", "reason": "turn_detected"}


def test_a_higher_threshold_needs_louder_speech() -> None:
    soft = array("h", [800, -800] * 4800).tobytes() + bytes(24000)  # 200 ms at 800, then silence
    assert any(step.commit for step in append(session(type="server_vad", silence_duration_ms=100), soft))
    strict = session(type="server_vad", silence_duration_ms=100, threshold=0.9, prefix_padding_ms=None)
    assert strict.config["audio"]["input"]["turn_detection"]["prefix_padding_ms"] == 300  # null: the default
    assert not any(step.events for step in append(strict, soft))  # 0.9 needs 900
