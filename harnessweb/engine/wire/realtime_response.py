"""OpenAI Realtime's responses: a reply a turn plays, as the server events of one response (``response.created``
to ``response.done``), a scripted failure as the API reports one, and the ``error`` event's shape.

Pure, like :mod:`harnessweb.engine.wire.realtime` (the session's state and the client events), which re-exports
these names so the consumer reads one module.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from harnessweb.engine.exchange import Failure, Reply, word_chunks
from harnessweb.engine.wire import openai
from harnessweb.engine.wire.common import argument_chunks

AUDIO_CHUNK_BYTES = 4800  # 100 ms of 24 kHz mono PCM16 per response.output_audio.delta
FORMAT = {"type": "audio/pcm", "rate": 24000}


class Session(Protocol):
    """What a response needs of :class:`harnessweb.engine.wire.realtime.Session` (which imports this module, so
    the type is described here rather than imported)."""

    config: dict[str, Any]
    items: list[tuple[dict[str, Any], str]]
    responses: int
    spoken_ms: dict[str, int]

    def event(self, kind: str, **fields: Any) -> dict[str, Any]: ...

    def new_id(self, prefix: str) -> str: ...

    @property
    def last_item_id(self) -> str | None: ...


def error_event(session: Session, error: dict[str, Any], client_event_id: str | None = None) -> dict[str, Any]:
    """An ``error`` event carrying OpenAI's error object (``message``, ``type``, ``param``, ``code``)."""
    return session.event("error", error={**error, "event_id": client_event_id})


def http_error(encoded_body: bytes) -> dict[str, Any]:
    """The error object of an OpenAI HTTP error body (a key refusal, a failure), for an ``error`` event."""
    return dict(orjson.loads(encoded_body)["error"])


@dataclass
class Response:
    """A response under way: its id, the parameters it was created with, and the items it has made."""

    id: str
    params: dict[str, Any]
    modalities: list[str]
    output: list[dict[str, Any]] = field(default_factory=list)

    def object(self, status: str, usage: dict[str, Any] | None = None, details: Any = None) -> dict[str, Any]:
        audio = {"output": {"format": FORMAT, "voice": "alloy"}}
        return {
            "object": "realtime.response", "id": self.id, "status": status, "status_details": details,
            "output": self.output, "conversation_id": "conv_" + self.id[5:], "output_modalities": self.modalities,
            "max_output_tokens": "inf", "audio": audio, "usage": usage, "metadata": self.params.get("metadata"),
        }  # fmt: skip


def begin_response(session: Session, params: dict[str, Any]) -> tuple[Response, dict[str, Any]]:
    """A new response and its ``response.created`` event."""
    session.responses += 1
    modalities = params.get("output_modalities") or session.config.get("output_modalities") or ["audio"]
    response = Response(session.new_id("resp"), params, list(modalities))
    return response, session.event("response.created", response=response.object("in_progress"))


def _usage(reply: Reply, audio_out: bool) -> dict[str, Any]:
    u = reply.usage
    out = {"text_tokens": 0 if audio_out else u.output_tokens, "audio_tokens": u.output_tokens if audio_out else 0}
    return {
        "total_tokens": u.total_tokens, "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
        "input_token_details": {"text_tokens": u.input_tokens, "audio_tokens": 0, "cached_tokens": 0},
        "output_token_details": out,
    }  # fmt: skip


def response_events(
    session: Session, response: Response, reply: Reply, audio: str | None = None, transcript: str | None = None
) -> list[tuple[dict[str, Any], bool]]:
    """A reply as a response's events after ``response.created``, each with whether it is a delta (pacing applies
    to deltas): a message item per text (spoken as ``audio``, base64 PCM16, with its ``transcript`` when the turn
    carries audio and the response may speak), a function call item per call, then ``response.done`` with usage."""
    events: list[tuple[dict[str, Any], bool]] = []
    speak = bool(audio) and "audio" in response.modalities
    for block in reply.blocks:
        if block.type == "reasoning":
            continue
        at = {"response_id": response.id, "output_index": len(response.output)}
        if block.type == "text":
            item: dict[str, Any] = {"id": session.new_id("item"), "type": "message", "role": "assistant"}
            events += _item_events(session, response, item, at, _spoken(reply, block.text, audio, transcript, speak))
        else:
            item = {"id": session.new_id("item"), "type": "function_call", "name": block.name, "call_id": block.call_id}
            events += _item_events(session, response, item, at, _call(block.call_id, block.name, block.arguments))
    done = response.object("completed", _usage(reply, speak), None)
    events.append((session.event("response.done", response=done), False))
    return events


def _spoken(reply: Reply, text: str, audio: str | None, transcript: str | None, speak: bool) -> dict[str, Any]:
    if not speak or audio is None:
        chunks = word_chunks(text, reply.chunk_words)
        return {"part": {"type": "text", "text": text}, "content": {"type": "output_text", "text": text},
                "deltas": [("response.output_text.delta", {"delta": c}) for c in chunks],
                "dones": [("response.output_text.done", {"text": text})]}  # fmt: skip
    said = text if transcript is None else transcript
    pcm = base64.b64decode(audio)
    sound = [base64.b64encode(pcm[i : i + AUDIO_CHUNK_BYTES]).decode() for i in range(0, len(pcm), AUDIO_CHUNK_BYTES)]
    spoken_ms = len(pcm) * 1000 // (2 * FORMAT["rate"])
    words = word_chunks(said, reply.chunk_words)
    deltas: list[tuple[str, dict[str, Any]]] = []
    for i in range(max(len(sound), len(words))):
        if i < len(words):
            deltas.append(("response.output_audio_transcript.delta", {"delta": words[i]}))
        if i < len(sound):
            deltas.append(("response.output_audio.delta", {"delta": sound[i]}))
    return {"part": {"type": "audio", "transcript": said}, "content": {"type": "output_audio", "transcript": said},
            "deltas": deltas, "ms": spoken_ms,
            "dones": [("response.output_audio.done", {}),
                      ("response.output_audio_transcript.done", {"transcript": said})]}  # fmt: skip


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    deltas = [
        ("response.function_call_arguments.delta", {"call_id": call_id, "delta": c}) for c in argument_chunks(arguments)
    ]
    done = ("response.function_call_arguments.done", {"call_id": call_id, "name": name, "arguments": arguments})
    return {"arguments": arguments, "deltas": deltas, "dones": [done]}


def _item_events(
    session: Session, response: Response, item: dict[str, Any], at: dict[str, Any], body: dict[str, Any]
) -> list[tuple[dict[str, Any], bool]]:
    """One output item's events: added, its content part (a message's) or arguments, done."""
    opening = {**item, "object": "realtime.item", "status": "in_progress"}
    opening.update(content=[]) if item["type"] == "message" else opening.update(arguments="")
    previous = session.last_item_id
    events = [
        (session.event("response.output_item.added", **at, item=opening), False),
        (session.event("conversation.item.added", previous_item_id=previous, item=opening), False),
    ]
    where = {**at, "item_id": item["id"]} | ({"content_index": 0} if item["type"] == "message" else {})
    if item["type"] == "message":
        empty = {"type": body["part"]["type"]} | {k: "" for k in body["part"] if k != "type"}
        events.append((session.event("response.content_part.added", **where, part=empty), False))
    events += [(session.event(kind, **where, **fields), True) for kind, fields in body["deltas"]]
    events += [(session.event(kind, **where, **fields), False) for kind, fields in body["dones"]]
    if item["type"] == "message":
        events.append((session.event("response.content_part.done", **where, part=body["part"]), False))
        finished = {**opening, "status": "completed", "content": [body["content"]]}
        if "ms" in body:  # how much a truncate may keep
            session.spoken_ms[item["id"]] = body["ms"]
    else:
        finished = {**opening, "status": "completed", "arguments": body["arguments"]}
    response.output.append(finished)
    session.items.append((finished, response.id))
    events.append((session.event("response.output_item.done", **at, item=finished), False))
    events.append((session.event("conversation.item.done", previous_item_id=previous, item=finished), False))
    return events


def failure_events(session: Session, response: Response, failure: Failure) -> list[dict[str, Any]]:
    """A failure a turn scripts, as the API reports one: an ``error`` event (OpenAI's error object for the kind),
    then ``response.done`` with status ``failed``."""
    error = http_error(openai.encode_failure(failure).body)
    details = {"type": "failed", "error": {"type": error["type"], "code": error["code"], "message": error["message"]}}
    return [
        error_event(session, error),
        session.event("response.done", response=response.object("failed", None, details)),
    ]


def cancelled(session: Session, response: Response, reason: str = "client_cancelled") -> dict[str, Any]:
    """``response.done`` for a response cancelled (by the client, or ``turn_detected``: server VAD heard the user
    speak over it), with the items it made so far."""
    details = {"type": "cancelled", "reason": reason}
    return session.event("response.done", response=response.object("cancelled", None, details))
