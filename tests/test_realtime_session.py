"""The Realtime session engine byte for byte (harnessweb/engine/wire/realtime.py): client events in, server events
out, the session's conversation as the neutral request, no socket and no database."""

from __future__ import annotations

import base64
from typing import Any

import orjson

from harnessweb.engine.exchange import Block, Message, Reply, Usage
from harnessweb.engine.playback import failure_of
from harnessweb.engine.wire import realtime


def session() -> realtime.Session:
    return realtime.open_session("sess_1", "gpt-realtime")[0]


def send(s: realtime.Session, event: dict[str, Any]) -> realtime.Step:
    return realtime.receive(s, orjson.dumps(event))


def user(text: str) -> dict[str, Any]:
    return {
        "type": "conversation.item.create",
        "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
    }


TEXT = Reply((Block("text", text="Hello there, friend."),), "stop", Usage(3, 4, 7), chunk_words=2)
CALL = Reply(
    (
        Block("text", text="Checking."),
        Block("tool_call", call_id="call_1", name="get_weather", arguments='{"city":"Paris"}'),
    ),
    "tool_calls",
    Usage(5, 6, 11),
)


def test_it_opens_with_session_created_in_the_ga_shape() -> None:
    s, created = realtime.open_session("sess_1", "gpt-realtime")
    assert orjson.dumps(created) == (
        b'{"type":"session.created","event_id":"event_8034862ebd4108c40319","session":{"type":"realtime",'
        b'"object":"realtime.session","id":"sess_1","model":"gpt-realtime","output_modalities":["audio"],'
        b'"instructions":"","tools":[],"tool_choice":"auto","max_output_tokens":"inf","tracing":null,'
        b'"truncation":"auto","prompt":null,"expires_at":0,"include":null,"audio":{"input":{"format":'
        b'{"type":"audio/pcm","rate":24000},"transcription":null,"noise_reduction":null,"turn_detection":null},'
        b'"output":{"format":{"type":"audio/pcm","rate":24000},"voice":"alloy","speed":1.0}}}}'
    )
    assert s.sent == 1


def test_session_update_changes_what_it_names_and_merges_audio() -> None:
    s = session()
    step = send(
        s,
        {
            "type": "session.update",
            "session": {"type": "realtime", "instructions": "Be brief.", "audio": {"output": {"voice": "marin"}}},
        },
    )
    (updated,) = step.events
    assert updated["type"] == "session.updated" and updated["session"]["instructions"] == "Be brief."
    assert updated["session"]["audio"]["output"] == {
        "format": {"type": "audio/pcm", "rate": 24000},
        "voice": "marin",
        "speed": 1.0,
    }


def test_a_text_response_streams_its_deltas_between_item_and_part_events() -> None:
    s = session()
    send(s, user("hi"))
    response, created = realtime.begin_response(s, {})
    assert created["type"] == "response.created" and created["response"]["status"] == "in_progress"
    events = realtime.response_events(s, response, TEXT)
    assert [(e["type"], delta) for e, delta in events] == [
        ("response.output_item.added", False),
        ("conversation.item.added", False),
        ("response.content_part.added", False),
        ("response.output_text.delta", True),
        ("response.output_text.delta", True),
        ("response.output_text.done", False),
        ("response.content_part.done", False),
        ("response.output_item.done", False),
        ("conversation.item.done", False),
        ("response.done", False),
    ]
    delta = events[3][0]
    assert orjson.dumps(delta) == (
        b'{"type":"response.output_text.delta","event_id":"'
        + delta["event_id"].encode()
        + b'","response_id":"'
        + response.id.encode()
        + b'","output_index":0,"item_id":"'
        + events[0][0]["item"]["id"].encode()
        + b'","content_index":0,"delta":"Hello there,"}'
    )
    done = events[-1][0]["response"]
    assert done["status"] == "completed" and done["output"][0]["content"] == [
        {"type": "output_text", "text": "Hello there, friend."}
    ]
    assert done["usage"] == {
        "total_tokens": 7, "input_tokens": 3, "output_tokens": 4,
        "input_token_details": {"text_tokens": 3, "audio_tokens": 0, "cached_tokens": 0},
        "output_token_details": {"text_tokens": 4, "audio_tokens": 0},
    }  # fmt: skip


def test_a_tool_call_streams_its_arguments_and_joins_the_conversation_as_one_assistant_message() -> None:
    s = session()
    send(
        s,
        {
            "type": "session.update",
            "session": {"instructions": "Use tools.", "tools": [{"type": "function", "name": "get_weather"}]},
        },
    )
    send(s, user("weather?"))
    response, _ = realtime.begin_response(s, {})
    events = [e for e, _ in realtime.response_events(s, response, CALL)]
    args = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert "".join(e["delta"] for e in args) == '{"city":"Paris"}' and args[0]["call_id"] == "call_1"
    done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert (done["name"], done["arguments"], done["output_index"]) == ("get_weather", '{"city":"Paris"}', 1)
    send(
        s,
        {
            "type": "conversation.item.create",
            "item": {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        },
    )
    request = realtime.chat_request(s)
    assert request.system == "Use tools." and request.tools == ("get_weather",) and request.stream
    assert request.messages == (
        Message("user", "weather?"),
        Message("assistant", "Checking.", call_ids=("call_1",)),
        Message("tool", "sunny", result_ids=("call_1",)),
    )
    assert request.turn == 2
    assert realtime.parse_request(realtime.recorded_body(s)) == request


def test_committed_audio_becomes_a_user_message_transcribed_as_the_scenario_says() -> None:
    s = session()
    assert (
        send(s, {"type": "input_audio_buffer.append", "audio": base64.b64encode(b"\x00\x01" * 2400).decode()}).events
        == ()
    )
    assert send(s, {"type": "input_audio_buffer.commit"}).commit
    events = realtime.commit_audio(s, "What time is it?")
    assert [e["type"] for e in events] == [
        "input_audio_buffer.committed", "conversation.item.added", "conversation.item.done",
        "conversation.item.input_audio_transcription.completed",
    ]  # fmt: skip
    assert (
        events[-1]["usage"] == {"type": "duration", "seconds": 0.1} and events[-1]["transcript"] == "What time is it?"
    )
    assert realtime.chat_request(s).last_user == "What time is it?" and not s.audio


def test_a_turn_with_audio_speaks_it_in_chunks_beside_its_transcript() -> None:
    s = session()
    pcm = bytes(range(256)) * 40  # 10240 bytes: three chunks of at most 4800
    response, _ = realtime.begin_response(s, {})
    events = [e for e, _ in realtime.response_events(s, response, TEXT, base64.b64encode(pcm).decode(), "Hi, spoken.")]
    audio = [e["delta"] for e in events if e["type"] == "response.output_audio.delta"]
    assert b"".join(base64.b64decode(a) for a in audio) == pcm and len(audio) == 3
    said = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    assert said == "Hi, spoken." and not any(e["type"].startswith("response.output_text") for e in events)
    assert events[-1]["response"]["output"][0]["content"] == [{"type": "output_audio", "transcript": "Hi, spoken."}]
    assert events[-1]["response"]["usage"]["output_token_details"] == {"text_tokens": 0, "audio_tokens": 4}
    response, _ = realtime.begin_response(s, {"output_modalities": ["text"]})  # a text-only response reads its text
    events = [e for e, _ in realtime.response_events(s, response, TEXT, base64.b64encode(pcm).decode(), "Hi")]
    assert not any(e["type"] == "response.output_audio.delta" for e in events)


def test_refused_events_get_an_error_naming_the_field_and_the_client_s_event_id() -> None:
    s = session()
    (error,) = realtime.receive(s, b"{not json").events
    assert error["type"] == "error" and error["error"]["code"] == "invalid_json"
    (error,) = send(s, {"type": "session.create", "event_id": "evt_9"}).events
    assert (error["error"]["param"], error["error"]["code"], error["error"]["event_id"]) == (
        "type",
        "invalid_value",
        "evt_9",
    )
    (error,) = send(s, {"type": "session.update", "session": {"voice": "x"}}).events
    assert error["error"]["param"] == "session.voice" and error["error"]["type"] == "invalid_request_error"
    (error,) = send(
        s,
        {
            "type": "conversation.item.create",
            "item": {"type": "message", "role": "user", "content": [{"type": "output_text"}]},
        },
    ).events
    assert error["error"]["param"] == "item.content[0].type"
    (error,) = send(s, {"type": "input_audio_buffer.append", "audio": "!!"}).events
    assert error["error"]["param"] == "audio"
    assert not s.items and not s.audio


def test_a_scripted_failure_is_an_error_event_then_a_failed_response() -> None:
    s = session()
    response, _ = realtime.begin_response(s, {})
    error, done = realtime.failure_events(s, response, failure_of("rate_limit"))
    assert error["error"] == {
        "message": "Rate limit exceeded (simulated)", "type": "requests", "param": None,
        "code": "rate_limit_exceeded", "event_id": None,
    }  # fmt: skip
    assert done["response"]["status"] == "failed"
    assert done["response"]["status_details"]["error"] == {
        "type": "requests",
        "code": "rate_limit_exceeded",
        "message": "Rate limit exceeded (simulated)",
    }
    cancelled = realtime.cancelled(s, response)
    assert cancelled["response"]["status_details"] == {"type": "cancelled", "reason": "client_cancelled"}
