"""Gemini Live (``BidiGenerateContent`` over a WebSocket, google-genai's ``client.aio.live.connect``): one session's
state and what each client message makes of it, as the server messages that answer it.

Pure: the consumer (``runs_app/endpoint/live_consumer.py``) receives and sends. The session keeps its
conversation as Gemini's ``contents``, so a response is decided on what :func:`chat_request` reads through
Gemini's own parser (:func:`harnessweb.engine.wire.gemini.parse_request`) and a turn is chosen as over HTTP.
A refused message ends the session as the API does: the socket closes, its reason naming the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from harnessweb.engine.exchange import ChatRequest, Failure, Reply, short_id, word_chunks
from harnessweb.engine.wire import gemini
from harnessweb.engine.wire.common import WireError

PROTOCOL = "gemini_live"
LABEL = "Gemini Live"
# google-genai's path for an API key (``…Constrained`` for an ephemeral token), under each API version.
PATH_PATTERN = (
    r"/ws/google\.ai\.generativelanguage\.(?:v1alpha|v1beta|v1)\.GenerativeService\.BidiGenerateContent(?:Constrained)?"  # noqa: E501
)
PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
CLOSE_REASON_BYTES = 123  # a close frame's reason is at most 123 bytes


def is_live_path(path: str) -> bool:
    """Whether a socket's path is the Live API's."""
    return re.fullmatch(PATH_PATTERN, path.rstrip("/")) is not None


@dataclass
class LiveSession:
    """One socket's session: its ``setup`` (None until it arrives) and the conversation as Gemini's contents."""

    id: str
    setup: dict[str, Any] | None = None
    contents: list[dict[str, Any]] = field(default_factory=list)
    turns: int = 0


@dataclass(frozen=True)
class Step:
    """The messages answering a client message now, whether it asks for a response, and (a refused message) the
    reason the socket closes with."""

    messages: tuple[dict[str, Any], ...] = ()
    respond: bool = False
    close: str = ""


def _get(raw: dict[str, Any], camel: str, snake: str) -> Any:
    return raw.get(camel, raw.get(snake))


def receive(session: LiveSession, raw: str | bytes) -> Step:
    """One client message: ``setup`` first, then ``clientContent``, ``realtimeInput`` (text) or ``toolResponse``."""
    try:
        message = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return Step(close="Invalid JSON payload received.")
    if not isinstance(message, dict) or len(message) != 1:
        return Step(close="Invalid message: send exactly one of setup, clientContent, realtimeInput, toolResponse.")
    kind, body = next(iter(message.items()))
    if not isinstance(body, dict):
        return Step(close=f"Invalid value at '{kind}': must be an object.")
    if kind == "setup":
        if session.setup is not None:
            return Step(close="setup must be sent only once, as the first message.")
        if not isinstance(body.get("model"), str) or not body["model"]:
            return Step(close="setup.model: a model is required.")
        session.setup = body
        return Step(({"setupComplete": {"sessionId": session.id}},))
    if session.setup is None:
        return Step(close=f"{kind}: the first message must be setup.")
    if kind in ("clientContent", "client_content"):
        turns = body.get("turns") or []
        if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
            return Step(close="clientContent.turns must be an array of contents.")
        session.contents += [{"role": t.get("role", "user"), "parts": t.get("parts") or []} for t in turns]
        return Step(respond=bool(_get(body, "turnComplete", "turn_complete")))
    if kind in ("realtimeInput", "realtime_input"):
        text = body.get("text")
        if isinstance(text, str) and text:
            session.contents.append({"role": "user", "parts": [{"text": text}]})
            return Step(respond=True)
        return Step()  # audio and video: accepted, answered only by text or an activity's end
    if kind in ("toolResponse", "tool_response"):
        responses = _get(body, "functionResponses", "function_responses")
        if not isinstance(responses, list) or not responses:
            return Step(close="toolResponse.functionResponses must be a non-empty array.")
        session.contents.append({"role": "user", "parts": [{"functionResponse": r} for r in responses]})
        return Step(respond=True)
    return Step(close=f'Invalid JSON payload received. Unknown name "{kind}": Cannot find field.')


def chat_request(session: LiveSession) -> ChatRequest:
    """The session's conversation as the neutral request a response plays, read by Gemini's parser (raises
    :class:`WireError` naming the field of a content it refuses)."""
    setup = session.setup or {}
    body = {
        "contents": session.contents,
        "systemInstruction": _get(setup, "systemInstruction", "system_instruction"),
        "tools": setup.get("tools"),
        "generationConfig": _get(setup, "generationConfig", "generation_config"),
    }
    request = gemini.parse_request({k: v for k, v in body.items() if v is not None})
    return replace(request, protocol=PROTOCOL, model=str(setup["model"]).removeprefix("models/"), stream=True)


def recorded_body(session: LiveSession) -> dict[str, Any]:
    """What a response was asked with, as a run records its request: Gemini's body (the setup's system
    instruction, tools and generation config with the contents so far)."""
    setup = session.setup or {}
    kept = {k: v for k, v in setup.items() if k != "model"}
    return {**kept, "model": setup.get("model", ""), "contents": list(session.contents)}


def parse_request(body: Any) -> ChatRequest:
    """A recorded request (:func:`recorded_body`) read back as the neutral request (the run page, the judge)."""
    if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
        raise WireError("contents must be a non-empty array", "contents")
    session = LiveSession("recorded", {**body, "model": str(body.get("model") or "")}, list(body["contents"]))
    return chat_request(session)


def _usage(reply: Reply) -> dict[str, int]:
    u = reply.usage
    return {
        "promptTokenCount": u.input_tokens,
        "responseTokenCount": u.output_tokens,
        "totalTokenCount": u.total_tokens,
    }


def response_messages(session: LiveSession, reply: Reply) -> list[tuple[dict[str, Any], bool]]:
    """A reply as the server's messages, each with whether it is a delta (pacing applies to deltas): its text as
    ``serverContent.modelTurn`` chunks; its calls as one ``toolCall`` (the turn goes on once their responses come),
    else ``generationComplete`` and ``turnComplete`` with ``usageMetadata``. The model's turn joins the contents."""
    session.turns += 1
    messages: list[tuple[dict[str, Any], bool]] = []
    parts: list[dict[str, Any]] = []
    calls = []
    for index, block in enumerate(reply.blocks):
        if block.type == "text":
            chunks = word_chunks(block.text, reply.chunk_words)
            messages += [
                ({"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": c}]}}}, True) for c in chunks
            ]
            parts.append({"text": block.text})
        elif block.type == "tool_call":
            call_id = (
                block.call_id
                if not block.derived_id
                else f"function-call-{short_id(f'{session.id}:{session.turns}:{index}', 20)}"
            )
            call = {"id": call_id, "name": block.name, "args": orjson.loads(block.arguments or "{}")}
            calls.append(call)
            parts.append({"functionCall": call})
    session.contents.append({"role": "model", "parts": parts})
    if calls:
        messages.append(({"toolCall": {"functionCalls": calls}, "usageMetadata": _usage(reply)}, False))
        return messages
    messages.append(({"serverContent": {"generationComplete": True}}, False))
    messages.append(({"serverContent": {"turnComplete": True}, "usageMetadata": _usage(reply)}, False))
    return messages


def failure_reason(failure: Failure) -> str:
    """The close reason of a failure a turn scripts: Gemini's status name and the message, as a close frame
    carries it (at most 123 bytes)."""
    error = orjson.loads(gemini.encode_failure(failure).body)["error"]
    return close_reason(f"{error['status']}: {error['message']}")


def close_reason(text: str) -> str:
    """A reason cut to what a close frame carries."""
    return text.encode()[:CLOSE_REASON_BYTES].decode(errors="ignore")
