"""OpenAI Realtime (the GA protocol over a WebSocket at ``/v1/realtime?model=…``): one session's state and what
each client event makes of it, as the server events that answer it.

Pure: the consumer (``runs_app/endpoint/realtime_consumer.py``) receives and sends, decides each response with
:func:`harnessweb.engine.playback.decide` on :func:`chat_request` (the session's conversation as the neutral
request, so a turn is chosen as over HTTP) and sends what :func:`response_events` or :func:`failure_events` build.
Errors are ``error`` events in the API's shape, whose ``error`` is OpenAI's HTTP error object.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

import orjson

from harnessweb.engine.exchange import ChatRequest, Failure, Message, Reply, short_id, word_chunks
from harnessweb.engine.wire import openai
from harnessweb.engine.wire.common import WireError, argument_chunks

PROTOCOL = "realtime"
LABEL = "OpenAI Realtime"
PATH = "/v1/realtime"
AUDIO_CHUNK_BYTES = 4800  # 100 ms of 24 kHz mono PCM16 per response.output_audio.delta
_FORMAT = {"type": "audio/pcm", "rate": 24000}
HANDLED = (
    "session.update", "conversation.item.create", "input_audio_buffer.append",
    "input_audio_buffer.commit", "input_audio_buffer.clear", "response.create", "response.cancel",
)  # fmt: skip
_SESSION_FIELDS = frozenset(
    {"type", "model", "instructions", "tools", "tool_choice", "output_modalities", "audio", "max_output_tokens",
     "tracing", "truncation", "prompt", "include"}
)  # fmt: skip


class RealtimeError(Exception):
    """A client event the API refuses: an ``error`` event naming the field, the session goes on."""

    def __init__(self, message: str, param: str | None = None, code: str = "invalid_value"):
        super().__init__(message)
        self.message, self.param, self.code = message, param, code


@dataclass
class Session:
    """One socket's session: its configuration as ``session.created`` shows it, the conversation's items (each with
    the response that made it, "" for the client's), the input audio buffer, and the count of events sent."""

    id: str
    config: dict[str, Any]
    items: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    audio: bytearray = field(default_factory=bytearray)
    sent: int = 0
    responses: int = 0

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        """A server event with the next deterministic ``event_id``."""
        self.sent += 1
        return {"type": kind, "event_id": f"event_{short_id(f'{self.id}:{self.sent}', 20)}", **fields}

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{short_id(f'{self.id}:{prefix}:{len(self.items)}:{self.responses}:{self.sent}', 20)}"

    @property
    def last_item_id(self) -> str | None:
        return self.items[-1][0]["id"] if self.items else None


@dataclass(frozen=True)
class Step:
    """What a client event asks beyond the events answering it at once: a response (its ``response`` parameters),
    its cancellation, or the input audio committed (the consumer then gives :func:`commit_audio` its transcript)."""

    events: tuple[dict[str, Any], ...] = ()
    respond: dict[str, Any] | None = None
    cancel: bool = False
    commit: bool = False


def open_session(session_id: str, model: str) -> tuple[Session, dict[str, Any]]:
    """A new session for ``model`` and its ``session.created`` event (turn detection off: clients commit)."""
    config = {
        "type": "realtime", "object": "realtime.session", "id": session_id, "model": model,
        "output_modalities": ["audio"], "instructions": "", "tools": [], "tool_choice": "auto",
        "max_output_tokens": "inf", "tracing": None, "truncation": "auto", "prompt": None, "expires_at": 0,
        "include": None,
        "audio": {
            "input": {"format": _FORMAT, "transcription": None, "noise_reduction": None, "turn_detection": None},
            "output": {"format": _FORMAT, "voice": "alloy", "speed": 1.0},
        },
    }  # fmt: skip
    session = Session(session_id, config)
    return session, session.event("session.created", session=config)


def error_event(session: Session, error: dict[str, Any], client_event_id: str | None = None) -> dict[str, Any]:
    """An ``error`` event carrying OpenAI's error object (``message``, ``type``, ``param``, ``code``)."""
    return session.event("error", error={**error, "event_id": client_event_id})


def http_error(encoded_body: bytes) -> dict[str, Any]:
    """The error object of an OpenAI HTTP error body (a key refusal, a failure), for an ``error`` event."""
    return dict(orjson.loads(encoded_body)["error"])


def refused(session: Session, exc: RealtimeError, client_event_id: str | None) -> dict[str, Any]:
    """The ``error`` event of a refused client event (``client_event_id``: the event it answers)."""
    error = {"message": exc.message, "type": "invalid_request_error", "param": exc.param, "code": exc.code}
    return error_event(session, error, client_event_id)


def receive(session: Session, raw: str | bytes) -> Step:
    """One client event: the events answering it now and what else it asks. A refused event gets an ``error``."""
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return Step((refused(session, RealtimeError(f"Invalid JSON: {exc}", code="invalid_json"), None),))
    client_id = event.get("event_id") if isinstance(event, dict) else None
    try:
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise RealtimeError(
                "The event must be a JSON object with a string 'type'", "type", "missing_required_parameter"
            )
        return _handle(session, event)
    except RealtimeError as exc:
        return Step((refused(session, exc, client_id if isinstance(client_id, str) else None),))


def _handle(session: Session, event: dict[str, Any]) -> Step:
    kind = event["type"]
    if kind == "session.update":
        _update(session.config, _object(event, "session"))
        return Step((session.event("session.updated", session=session.config),))
    if kind == "conversation.item.create":
        return Step(tuple(_added(session, _item(_object(event, "item")), "")))
    if kind == "input_audio_buffer.append":
        audio = event.get("audio")
        try:
            session.audio += base64.b64decode(audio if isinstance(audio, str) else "", validate=True)
        except binascii.Error:
            raise RealtimeError("Invalid 'audio': not base64-encoded audio", "audio") from None
        return Step()
    if kind == "input_audio_buffer.clear":
        session.audio.clear()
        return Step((session.event("input_audio_buffer.cleared"),))
    if kind == "input_audio_buffer.commit":
        if not session.audio:
            message = "Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, "
            message += "but buffer only has 0.00ms of audio."
            raise RealtimeError(message, code="input_audio_buffer_commit_empty")
        return Step(commit=True)
    if kind == "response.create":
        params = event.get("response") or {}
        if not isinstance(params, dict):
            raise RealtimeError("Invalid type for 'response': expected an object", "response")
        return Step(respond=params)
    if kind == "response.cancel":
        return Step(cancel=True)
    supported = ", ".join(HANDLED)
    raise RealtimeError(f"Invalid value: '{kind}'. Supported values are: {supported}.", "type")


def _object(event: dict[str, Any], name: str) -> dict[str, Any]:
    value = event.get(name)
    if not isinstance(value, dict):
        raise RealtimeError(f"Missing required parameter: '{name}'.", name, "missing_required_parameter")
    return value


def _update(config: dict[str, Any], changes: dict[str, Any]) -> None:
    """``session.update``: the fields given replace the session's (``audio`` merged a level down)."""
    for name in changes:
        if name not in _SESSION_FIELDS:
            raise RealtimeError(f"Unknown parameter: 'session.{name}'.", f"session.{name}", "unknown_parameter")
    if changes.get("type", "realtime") != "realtime":
        raise RealtimeError("Invalid value: session.type must be 'realtime'", "session.type")
    if not isinstance(changes.get("instructions", ""), str):
        raise RealtimeError("Invalid type for 'session.instructions': expected a string", "session.instructions")
    modalities = changes.get("output_modalities", ["audio"])
    if not isinstance(modalities, list) or not set(modalities) <= {"text", "audio"}:
        raise RealtimeError("Invalid 'session.output_modalities': 'text' or 'audio'", "session.output_modalities")
    for i, tool in enumerate(changes.get("tools") or []):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise RealtimeError(f"Missing required parameter: 'session.tools[{i}].name'.", f"session.tools[{i}].name")
    for name, value in changes.items():
        if name == "audio" and isinstance(value, dict):
            for side in ("input", "output"):
                if isinstance(value.get(side), dict):
                    config["audio"][side] = {**config["audio"][side], **value[side]}
        else:
            config[name] = value


_PARTS = {
    "user": ("input_text", "input_audio", "input_image"), "system": ("input_text",),
    "assistant": ("output_text", "output_audio"),
}  # fmt: skip


def _item(item: dict[str, Any]) -> dict[str, Any]:
    """A client's conversation item checked, as the conversation holds it (an id, ``completed``)."""
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        if role not in _PARTS:
            raise RealtimeError("Invalid value for 'item.role': user, assistant or system", "item.role")
        content = item.get("content")
        if not isinstance(content, list):
            raise RealtimeError(
                "Missing required parameter: 'item.content'.", "item.content", "missing_required_parameter"
            )
        for i, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") not in _PARTS[role]:
                allowed = ", ".join(_PARTS[role])
                raise RealtimeError(
                    f"Invalid 'item.content[{i}].type' for role {role}: {allowed}", f"item.content[{i}].type"
                )
    elif kind == "function_call":
        for name in ("name", "arguments"):
            if not isinstance(item.get(name), str):
                raise RealtimeError(
                    f"Missing required parameter: 'item.{name}'.", f"item.{name}", "missing_required_parameter"
                )
    elif kind == "function_call_output":
        for name in ("call_id", "output"):
            if not isinstance(item.get(name), str):
                raise RealtimeError(
                    f"Missing required parameter: 'item.{name}'.", f"item.{name}", "missing_required_parameter"
                )
    else:
        raise RealtimeError(
            "Invalid value for 'item.type': message, function_call or function_call_output", "item.type"
        )
    return {"object": "realtime.item", "status": "completed", **item}


def _added(session: Session, item: dict[str, Any], by: str) -> list[dict[str, Any]]:
    """The item joined to the conversation: ``conversation.item.added`` and ``.done``, as the GA API says it."""
    item = {**item, "id": item.get("id") or session.new_id("item")}
    previous = session.last_item_id
    session.items.append((item, by))
    return [
        session.event("conversation.item.added", previous_item_id=previous, item=item),
        session.event("conversation.item.done", previous_item_id=previous, item=item),
    ]


def commit_audio(session: Session, transcript: str) -> list[dict[str, Any]]:
    """The input audio buffer committed as a user message whose transcription is ``transcript`` (the scenario's)."""
    seconds = round(len(session.audio) / (2 * _FORMAT["rate"]), 3)
    session.audio.clear()
    item = {"type": "message", "role": "user", "content": [{"type": "input_audio", "transcript": transcript}]}
    item_id = session.new_id("item")
    committed = session.event("input_audio_buffer.committed", previous_item_id=session.last_item_id, item_id=item_id)
    events = [committed, *_added(session, _item({**item, "id": item_id}), "")]
    usage = {"type": "duration", "seconds": seconds}
    done = {"item_id": item_id, "content_index": 0, "transcript": transcript, "usage": usage}
    return [*events, session.event("conversation.item.input_audio_transcription.completed", **done)]


def _text_of(item: dict[str, Any]) -> str:
    parts = item.get("content") or []
    return "\n".join(str(p.get("text") or p.get("transcript") or "") for p in parts if isinstance(p, dict))


def chat_request(session: Session, params: dict[str, Any] | None = None) -> ChatRequest:
    """The session's conversation as the neutral request a response plays: the items' messages (one assistant
    message per response, its text and calls), the instructions as the system prompt, the function tools."""
    params = params or {}
    system = [str(params.get("instructions", session.config.get("instructions") or ""))]
    messages: list[Message] = []
    last_by = None
    for item, by in session.items:
        kind, role = item["type"], item.get("role")
        if kind == "message" and role == "system":
            system.append(_text_of(item))
        elif kind == "message" and role == "user":
            messages.append(Message("user", _text_of(item)))
        elif kind == "function_call_output":
            messages.append(Message("tool", item["output"], result_ids=(item["call_id"],)))
        else:  # an assistant message or a function call: one message per response
            text, calls = (_text_of(item), ()) if kind == "message" else ("", (item.get("call_id") or item["id"],))
            if by and by == last_by and messages and messages[-1].role == "assistant":
                prior = messages.pop()
                text, calls = prior.text + text, prior.call_ids + calls
            messages.append(Message("assistant", text, call_ids=calls))
        last_by = by
    tools = params.get("tools", session.config.get("tools")) or []
    return ChatRequest(
        protocol=PROTOCOL,
        model=str(session.config.get("model") or ""),
        system="\n".join(s for s in system if s),
        messages=tuple(messages),
        tools=tuple(t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)),
        stream=True,
    )


def recorded_body(session: Session, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a response was asked with, as a run records its request: the session's model, instructions and tools,
    the conversation's items (input audio left out; a response's items name it as ``response_id``) and the
    ``response.create`` parameters."""
    items = [{**(item if item["type"] != "message" else {**item, "content": [
                 {k: v for k, v in p.items() if k != "audio"} for p in item["content"]]}),
              **({"response_id": by} if by else {})} for item, by in session.items]  # fmt: skip
    config = session.config
    return {"model": config["model"], "instructions": config["instructions"], "tools": config["tools"],
            "input": items, "response": params or {}}  # fmt: skip


def parse_request(body: Any) -> ChatRequest:
    """A recorded request (:func:`recorded_body`) read back as the neutral request (the run page, the judge)."""
    if not isinstance(body, dict) or not isinstance(body.get("input"), list):
        raise WireError("A realtime request records its session's items under 'input'", "input")
    session = Session("recorded", {"model": body.get("model", ""), "instructions": body.get("instructions", ""),
                                   "tools": body.get("tools") or []})  # fmt: skip
    items = [item for item in body["input"] if isinstance(item, dict) and "type" in item]
    session.items = [(item, str(item.get("response_id") or "")) for item in items]
    return chat_request(session, body.get("response") or {})


@dataclass
class Response:
    """A response under way: its id, the parameters it was created with, and the items it has made."""

    id: str
    params: dict[str, Any]
    modalities: list[str]
    output: list[dict[str, Any]] = field(default_factory=list)

    def object(self, status: str, usage: dict[str, Any] | None = None, details: Any = None) -> dict[str, Any]:
        audio = {"output": {"format": _FORMAT, "voice": "alloy"}}
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
    words = word_chunks(said, reply.chunk_words)
    deltas: list[tuple[str, dict[str, Any]]] = []
    for i in range(max(len(sound), len(words))):
        if i < len(words):
            deltas.append(("response.output_audio_transcript.delta", {"delta": words[i]}))
        if i < len(sound):
            deltas.append(("response.output_audio.delta", {"delta": sound[i]}))
    return {"part": {"type": "audio", "transcript": said}, "content": {"type": "output_audio", "transcript": said},
            "deltas": deltas,
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


def cancelled(session: Session, response: Response) -> dict[str, Any]:
    """``response.done`` for a response the client cancelled, with the items it made so far."""
    details = {"type": "cancelled", "reason": "client_cancelled"}
    return session.event("response.done", response=response.object("cancelled", None, details))
