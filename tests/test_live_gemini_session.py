"""The Gemini Live session engine byte for byte (harnessweb/engine/wire/gemini_live.py): client messages in, server
messages out, the session's contents read by Gemini's own parser, no socket and no database."""

from __future__ import annotations

import orjson

from harnessweb.engine.exchange import Block, Message, Reply, Usage
from harnessweb.engine.playback import failure_of
from harnessweb.engine.wire import gemini_live

SETUP = {
    "setup": {
        "model": "models/gemini-live-2.5-flash",
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [{"functionDeclarations": [{"name": "get_weather"}]}],
    }
}


def opened() -> gemini_live.LiveSession:
    session = gemini_live.LiveSession("live_1")
    assert gemini_live.receive(session, orjson.dumps(SETUP)).messages == ({"setupComplete": {"sessionId": "live_1"}},)
    return session


def test_the_live_path_is_google_genai_s_for_every_api_version() -> None:
    for version in ("v1alpha", "v1beta", "v1"):
        assert gemini_live.is_live_path(
            f"/ws/google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContent"
        )
    assert gemini_live.is_live_path(gemini_live.PATH + "Constrained")
    assert not gemini_live.is_live_path("/ws/runs/")


def test_client_content_asks_for_a_turn_only_when_complete_and_reads_as_gemini_s_request() -> None:
    session = opened()
    first = {"clientContent": {"turns": [{"role": "user", "parts": [{"text": "Hi"}]}], "turnComplete": False}}
    assert not gemini_live.receive(session, orjson.dumps(first)).respond
    more = {"clientContent": {"turns": [{"role": "user", "parts": [{"text": "there"}]}], "turnComplete": True}}
    assert gemini_live.receive(session, orjson.dumps(more)).respond
    request = gemini_live.chat_request(session)
    assert (request.protocol, request.model, request.system, request.tools) == (
        "gemini_live", "gemini-live-2.5-flash", "Be brief.", ("get_weather",),
    )  # fmt: skip
    assert request.messages == (Message("user", "Hi"), Message("user", "there")) and request.stream


def test_a_text_reply_is_model_turn_chunks_then_generation_and_turn_complete_with_usage() -> None:
    session = opened()
    gemini_live.receive(session, b'{"realtimeInput": {"text": "Hi"}}')
    reply = Reply((Block("text", text="Hello there, friend."),), "stop", Usage(3, 4, 7), chunk_words=2)
    messages = gemini_live.response_messages(session, reply)
    assert [orjson.dumps(m) for m, _ in messages] == [
        b'{"serverContent":{"modelTurn":{"role":"model","parts":[{"text":"Hello there,"}]}}}',
        b'{"serverContent":{"modelTurn":{"role":"model","parts":[{"text":" friend."}]}}}',
        b'{"serverContent":{"generationComplete":true}}',
        b'{"serverContent":{"turnComplete":true},"usageMetadata":{"promptTokenCount":3,"responseTokenCount":4,'
        b'"totalTokenCount":7}}',
    ]
    assert [delta for _, delta in messages] == [True, True, False, False]
    assert gemini_live.chat_request(session).messages[-1] == Message("assistant", "Hello there, friend.")


def test_a_tool_call_waits_for_its_response_which_answers_it_by_id() -> None:
    session = opened()
    gemini_live.receive(
        session, b'{"clientContent": {"turns": [{"parts": [{"text": "weather?"}]}], "turnComplete": true}}'
    )
    call = Block("tool_call", call_id="call_x", name="get_weather", arguments='{"city":"Paris"}', derived_id=True)
    ((message, _),) = gemini_live.response_messages(session, Reply((call,), "tool_calls", Usage(2, 3, 5)))
    (function_call,) = message["toolCall"]["functionCalls"]
    assert function_call["name"] == "get_weather" and function_call["args"] == {"city": "Paris"}
    assert function_call["id"].startswith("function-call-") and "serverContent" not in message
    answer = {
        "toolResponse": {
            "functionResponses": [{"id": function_call["id"], "name": "get_weather", "response": {"sky": "sunny"}}]
        }
    }
    assert gemini_live.receive(session, orjson.dumps(answer)).respond
    request = gemini_live.chat_request(session)
    assert request.turn == 2 and request.messages[-1].result_ids == (function_call["id"],)
    assert gemini_live.parse_request(gemini_live.recorded_body(session)) == request


def test_a_refused_message_closes_the_session_naming_why() -> None:
    session = gemini_live.LiveSession("live_1")
    assert (
        gemini_live.receive(session, b'{"clientContent": {}}').close
        == "clientContent: the first message must be setup."
    )
    assert gemini_live.receive(session, b'{"setup": {}}').close == "setup.model: a model is required."
    session = opened()
    assert "setup must be sent only once" in gemini_live.receive(session, orjson.dumps(SETUP)).close
    assert gemini_live.receive(session, b'{"bogus": {}}').close.startswith(
        'Invalid JSON payload received. Unknown name "bogus"'
    )
    assert gemini_live.receive(session, b"{nope").close == "Invalid JSON payload received."
    assert gemini_live.failure_reason(failure_of("rate_limit")) == "RESOURCE_EXHAUSTED: Rate limit exceeded (simulated)"
    assert len(gemini_live.close_reason("é" * 100).encode()) <= 123
