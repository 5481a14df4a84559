"""Realtime's conversation items after they are made (harnessweb/engine/wire/realtime.py): deleted, truncated and
retrieved as the GA API answers, each refusal an ``error`` event naming the field and the client's event id."""

from __future__ import annotations

import base64
from typing import Any

import orjson

from harnessweb.engine.exchange import Block, Message, Reply, Usage
from harnessweb.engine.wire import realtime

SPOKEN = Reply((Block("text", text="Like this."),), "stop", Usage(3, 4, 7))
PCM = b"\x00\x10" * 12000  # 500 ms of 24 kHz PCM16


def session() -> realtime.Session:
    return realtime.open_session("sess_items", "gpt-realtime")[0]


def send(s: realtime.Session, event: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    return realtime.receive(s, orjson.dumps(event)).events


def user(text: str, item_id: str) -> dict[str, Any]:
    content = [{"type": "input_text", "text": text}]
    return {"type": "conversation.item.create", "item": {"id": item_id, "type": "message", "role": "user",
                                                         "content": content}}  # fmt: skip


def spoken(s: realtime.Session) -> str:
    """A response that speaks :data:`PCM`: its assistant item's id."""
    response, _ = realtime.begin_response(s, {})
    events = realtime.response_events(s, response, SPOKEN, base64.b64encode(PCM).decode(), "Like this: an A.")
    return str(events[-1][0]["response"]["output"][0]["id"])


def test_a_deleted_item_leaves_the_conversation_the_next_response_reads() -> None:
    s = session()
    send(s, user("first", "item_a"))
    send(s, user("second", "item_b"))
    (deleted,) = send(s, {"type": "conversation.item.delete", "item_id": "item_a", "event_id": "evt_1"})
    assert orjson.dumps(deleted) == (
        b'{"type":"conversation.item.deleted","event_id":"' + deleted["event_id"].encode() + b'","item_id":"item_a"}'
    )
    assert realtime.chat_request(s).messages == (Message("user", "second"),)
    assert [item["id"] for item in realtime.recorded_body(s)["input"]] == ["item_b"]


def test_deleting_an_unknown_item_is_an_error_event_with_the_client_s_event_id() -> None:
    s = session()
    send(s, user("first", "item_a"))
    (error,) = send(s, {"type": "conversation.item.delete", "item_id": "item_zz", "event_id": "evt_7"})
    assert error["type"] == "error" and error["error"] == {
        "message": "Error deleting item: the item with id 'item_zz' does not exist.",
        "type": "invalid_request_error", "param": "item_id", "code": "item_not_found", "event_id": "evt_7",
    }  # fmt: skip
    (error,) = send(s, {"type": "conversation.item.delete"})
    assert (error["error"]["param"], error["error"]["code"]) == ("item_id", "missing_required_parameter")
    assert len(s.items) == 1


def test_retrieve_answers_the_server_s_copy_of_the_item() -> None:
    s = session()
    send(s, user("first", "item_a"))
    (retrieved,) = send(s, {"type": "conversation.item.retrieve", "item_id": "item_a"})
    assert retrieved["type"] == "conversation.item.retrieved"
    assert retrieved["item"] == {
        "object": "realtime.item", "status": "completed", "id": "item_a", "type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "first"}],
    }  # fmt: skip
    (error,) = send(s, {"type": "conversation.item.retrieve", "item_id": "item_b"})
    assert error["error"]["code"] == "item_not_found" and "retrieving" in error["error"]["message"]


def test_truncating_spoken_audio_cuts_it_where_the_user_stopped_hearing_and_drops_its_transcript() -> None:
    s = session()
    send(s, user("What does an A sound like?", "item_q"))
    item_id = spoken(s)
    assert realtime.chat_request(s).messages[-1] == Message("assistant", "Like this: an A.")
    event = {"type": "conversation.item.truncate", "item_id": item_id, "content_index": 0, "audio_end_ms": 200}
    (truncated,) = send(s, event)
    assert orjson.dumps(truncated) == (
        b'{"type":"conversation.item.truncated","event_id":"' + truncated["event_id"].encode() + b'","item_id":"'
        + item_id.encode() + b'","content_index":0,"audio_end_ms":200}'
    )  # fmt: skip
    # The API removes the server-side transcript: the next response reads no text the user did not hear.
    assert realtime.chat_request(s).messages[-1] == Message("assistant", "")
    (retrieved,) = send(s, {"type": "conversation.item.retrieve", "item_id": item_id})
    assert retrieved["item"]["content"] == [{"type": "output_audio", "transcript": ""}]
    assert s.spoken_ms[item_id] == 200


def test_truncate_refuses_what_the_api_refuses_naming_the_field() -> None:
    s = session()
    send(s, user("hi", "item_q"))
    item_id = spoken(s)
    cases = [
        ({"item_id": "item_q", "content_index": 0, "audio_end_ms": 0}, "item_id"),  # a user message
        ({"item_id": item_id, "content_index": 1, "audio_end_ms": 0}, "content_index"),
        ({"item_id": item_id, "content_index": 0, "audio_end_ms": 501}, "audio_end_ms"),  # beyond 500 ms
        ({"item_id": item_id, "content_index": 0, "audio_end_ms": "10"}, "audio_end_ms"),
        ({"item_id": "item_nope", "content_index": 0, "audio_end_ms": 0}, "item_id"),
    ]
    for fields, param in cases:
        (error,) = send(s, {"type": "conversation.item.truncate", "event_id": "evt_t", **fields})
        assert (error["type"], error["error"]["param"], error["error"]["event_id"]) == ("error", param, "evt_t")
    assert realtime.chat_request(s).messages[-1] == Message("assistant", "Like this: an A.")
    (ok,) = send(s, {"type": "conversation.item.truncate", "item_id": item_id, "content_index": 0, "audio_end_ms": 500})
    assert ok["type"] == "conversation.item.truncated"


def test_a_text_answer_has_no_audio_to_truncate() -> None:
    s = session()
    response, _ = realtime.begin_response(s, {"output_modalities": ["text"]})
    events = realtime.response_events(s, response, SPOKEN)
    item_id = events[-1][0]["response"]["output"][0]["id"]
    (error,) = send(
        s, {"type": "conversation.item.truncate", "item_id": item_id, "content_index": 0, "audio_end_ms": 0}
    )
    assert error["error"]["param"] == "content_index"
