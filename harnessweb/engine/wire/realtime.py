"""OpenAI Realtime (the GA protocol over a WebSocket at ``/v1/realtime?model=…``): one session's state and what
each client event makes of it, as the server events that answer it.

Pure: the consumer (``runs_app/endpoint/realtime_consumer.py``) receives and sends, decides each response with
:func:`harnessweb.engine.playback.decide` on :func:`chat_request` (the session's conversation as the neutral
request, so a turn is chosen as over HTTP) and sends what :func:`response_events` or :func:`failure_events` build
(in :mod:`~harnessweb.engine.wire.realtime_response`, re-exported here). Errors are ``error`` events in the API's
shape, whose ``error`` is OpenAI's HTTP error object. Server VAD's speech detection is
:mod:`~harnessweb.engine.wire.realtime_vad`'s.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

import orjson

from harnessweb.engine.exchange import ChatRequest, Message, short_id
from harnessweb.engine.wire.common import WireError
from harnessweb.engine.wire.realtime_response import AUDIO_CHUNK_BYTES as AUDIO_CHUNK_BYTES
from harnessweb.engine.wire.realtime_response import FORMAT, error_event
from harnessweb.engine.wire.realtime_response import Response as Response
from harnessweb.engine.wire.realtime_response import begin_response as begin_response
from harnessweb.engine.wire.realtime_response import cancelled as cancelled
from harnessweb.engine.wire.realtime_response import failure_events as failure_events
from harnessweb.engine.wire.realtime_response import http_error as http_error
from harnessweb.engine.wire.realtime_response import response_events as response_events
from harnessweb.engine.wire.realtime_vad import Detector, Speech, level_of, ms

PROTOCOL = "realtime"
LABEL = "OpenAI Realtime"
PATH = "/v1/realtime"
HANDLED = (
    "session.update", "conversation.item.create", "input_audio_buffer.append",
    "input_audio_buffer.commit", "input_audio_buffer.clear", "response.create", "response.cancel",
    "conversation.item.delete", "conversation.item.truncate", "conversation.item.retrieve",
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
    the response that made it, "" for the client's), the input audio buffer with its speech detector (and the id
    of the item the speech under way will become), each spoken item's audio length in ms, and the count of events
    sent."""

    id: str
    config: dict[str, Any]
    items: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    audio: bytearray = field(default_factory=bytearray)
    sent: int = 0
    responses: int = 0
    detector: Detector = field(default_factory=Detector)
    speech_item: str | None = None
    spoken_ms: dict[str, int] = field(default_factory=dict)

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        """A server event with the next deterministic ``event_id``."""
        self.sent += 1
        return {"type": kind, "event_id": f"event_{short_id(f'{self.id}:{self.sent}', 20)}", **fields}

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{short_id(f'{self.id}:{prefix}:{len(self.items)}:{self.responses}:{self.sent}', 20)}"

    @property
    def last_item_id(self) -> str | None:
        return self.items[-1][0]["id"] if self.items else None

    def find(self, item_id: Any, verb: str) -> int:
        """The index of the item ``item_id`` names, else the API's error (``verb``: what was being done)."""
        if not isinstance(item_id, str):
            raise RealtimeError("Missing required parameter: 'item_id'.", "item_id", "missing_required_parameter")
        for index, (item, _) in enumerate(self.items):
            if item["id"] == item_id:
                return index
        message = f"Error {verb} item: the item with id '{item_id}' does not exist."
        raise RealtimeError(message, "item_id", "item_not_found")


@dataclass(frozen=True)
class Step:
    """What a client event asks beyond the events answering it at once: a response (its ``response`` parameters),
    its cancellation, the input audio committed (the consumer then gives :func:`commit_audio` its transcript), or
    the response under way interrupted (server VAD heard speech start and ``interrupt_response`` is on)."""

    events: tuple[dict[str, Any], ...] = ()
    respond: dict[str, Any] | None = None
    cancel: bool = False
    commit: bool = False
    interrupt: bool = False


def open_session(session_id: str, model: str) -> tuple[Session, dict[str, Any]]:
    """A new session for ``model`` and its ``session.created`` event (turn detection off: clients commit)."""
    config = {
        "type": "realtime", "object": "realtime.session", "id": session_id, "model": model,
        "output_modalities": ["audio"], "instructions": "", "tools": [], "tool_choice": "auto",
        "max_output_tokens": "inf", "tracing": None, "truncation": "auto", "prompt": None, "expires_at": 0,
        "include": None,
        "audio": {
            "input": {"format": FORMAT, "transcription": None, "noise_reduction": None, "turn_detection": None},
            "output": {"format": FORMAT, "voice": "alloy", "speed": 1.0},
        },
    }  # fmt: skip
    session = Session(session_id, config)
    return session, session.event("session.created", session=config)


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
            pcm = base64.b64decode(audio if isinstance(audio, str) else "", validate=True)
        except binascii.Error:
            raise RealtimeError("Invalid 'audio': not base64-encoded audio", "audio") from None
        session.audio += pcm
        return _detect(session, pcm)
    if kind == "input_audio_buffer.clear":
        session.audio.clear()
        session.detector.reset()
        session.speech_item = None
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
    if kind == "conversation.item.delete":
        del session.items[session.find(event.get("item_id"), "deleting")]
        return Step((session.event("conversation.item.deleted", item_id=event["item_id"]),))
    if kind == "conversation.item.retrieve":
        item = session.items[session.find(event.get("item_id"), "retrieving")][0]
        return Step((session.event("conversation.item.retrieved", item=item),))
    if kind == "conversation.item.truncate":
        return Step((_truncate(session, event),))
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
    audio_input = (changes.get("audio") or {}).get("input") if isinstance(changes.get("audio"), dict) else None
    if isinstance(audio_input, dict) and "turn_detection" in audio_input:
        audio_input = {**audio_input, "turn_detection": _turn_detection(audio_input["turn_detection"])}
    for name, value in changes.items():
        if name == "audio" and isinstance(value, dict):
            for side in ("input", "output"):
                if isinstance(value.get(side), dict):
                    given = audio_input if side == "input" else value[side]
                    config["audio"][side] = {**config["audio"][side], **given}
        else:
            config[name] = value


# The API's defaults for what a client leaves out of a turn detection it turns on.
_VAD_DEFAULTS: dict[str, dict[str, Any]] = {
    "server_vad": {"threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500, "idle_timeout_ms": None,
                   "create_response": True, "interrupt_response": True},
    "semantic_vad": {"eagerness": "auto", "create_response": True, "interrupt_response": True},
}  # fmt: skip


def _turn_detection(value: Any) -> dict[str, Any] | None:
    """``audio.input.turn_detection`` checked: null (clients commit) or a VAD, the API's defaults filled in."""
    param = "session.audio.input.turn_detection"
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("type") not in _VAD_DEFAULTS:
        raise RealtimeError(f"Invalid value for '{param}.type': server_vad or semantic_vad", f"{param}.type")
    defaults = _VAD_DEFAULTS[value["type"]]
    for name, given in value.items():
        if name != "type" and name not in defaults:
            raise RealtimeError(f"Unknown parameter: '{param}.{name}'.", f"{param}.{name}", "unknown_parameter")
        if name.endswith("_ms") and given is not None and (not isinstance(given, int) or given < 0):
            raise RealtimeError(f"Invalid '{param}.{name}': a whole number of ms, at least 0", f"{param}.{name}")
    threshold = 0.5 if value.get("threshold") is None else value["threshold"]
    if not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
        raise RealtimeError(f"Invalid '{param}.threshold': a number from 0.0 to 1.0", f"{param}.threshold")
    return {"type": value["type"], **defaults, **{name: given for name, given in value.items() if given is not None}}


def _detect(session: Session, pcm: bytes) -> Step:
    """Appended audio under server VAD: ``speech_started`` when a sample is loud, ``speech_stopped`` after the
    silence duration (counted in samples), then the buffer up to there committed and, with ``create_response``,
    a response. The rest of the buffer waits for the next turn. Speech starting over a response interrupts it
    (``interrupt_response``), as the API does."""
    vad, audio_format = (
        session.config["audio"]["input"].get("turn_detection"),
        session.config["audio"]["input"]["format"],
    )
    if not vad or audio_format.get("type", "audio/pcm") != "audio/pcm":  # G.711 bytes are no PCM16 samples to read
        return Step()
    rate = int(audio_format.get("rate") or FORMAT["rate"])
    silence = (vad.get("silence_duration_ms") or 500) * rate // 1000  # semantic_vad: the server_vad default
    speech: Speech = session.detector.feed(pcm, max(1, silence), level_of(vad.get("threshold", 0.5)))
    events = []
    if speech.started is not None:
        session.speech_item = session.new_id("item")
        start = max(0, speech.started - (vad.get("prefix_padding_ms") or 0) * rate // 1000)
        events.append(
            session.event(
                "input_audio_buffer.speech_started", audio_start_ms=ms(start, rate), item_id=session.speech_item
            )
        )
    interrupt = speech.started is not None and bool(vad.get("interrupt_response", True))
    if speech.stopped is None:
        return Step(tuple(events), interrupt=interrupt)
    stopped = {"audio_end_ms": ms(speech.stopped, rate), "item_id": session.speech_item}
    events.append(session.event("input_audio_buffer.speech_stopped", **stopped))
    respond = {} if vad.get("create_response", True) else None
    return Step(tuple(events), respond=respond, commit=True, interrupt=interrupt)


def _truncate(session: Session, event: dict[str, Any]) -> dict[str, Any]:
    """``conversation.item.truncate``: an assistant message's audio cut at ``audio_end_ms`` (what the user heard),
    its transcript removed from the server's copy as the API does, so the next response reads no unheard text."""
    item = session.items[session.find(event.get("item_id"), "truncating")][0]
    if item["type"] != "message" or item.get("role") != "assistant":
        raise RealtimeError("Only assistant messages can be truncated.", "item_id")
    index, end = event.get("content_index"), event.get("audio_end_ms")
    content = item.get("content") or []
    if not isinstance(index, int) or not 0 <= index < len(content) or content[index].get("type") != "output_audio":
        raise RealtimeError("Invalid 'content_index': the item has no audio content part there.", "content_index")
    heard = session.spoken_ms.get(item["id"], 0)
    if not isinstance(end, int) or not 0 <= end <= heard:
        message = f"Invalid 'audio_end_ms': {end} is beyond the audio's duration of {heard} ms."
        raise RealtimeError(message, "audio_end_ms")
    content[index] = {**content[index], "transcript": ""}
    session.spoken_ms[item["id"]] = end
    return session.event("conversation.item.truncated", item_id=item["id"], content_index=index, audio_end_ms=end)


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
    """The input audio buffer committed as a user message whose transcription is ``transcript`` (the scenario's):
    all of it (a client's commit), or up to where server VAD heard speech stop (its item the one speech announced).
    """
    if session.speech_item is not None and not session.detector.speaking:  # VAD heard speech stop: up to there
        taken = len(session.audio) - len(session.detector.pending)
    else:  # a client's commit: all of the buffer
        session.detector.reset()
        taken = len(session.audio)
    seconds = round(taken / (2 * FORMAT["rate"]), 3)
    del session.audio[:taken]
    item = {"type": "message", "role": "user", "content": [{"type": "input_audio", "transcript": transcript}]}
    item_id, session.speech_item = session.speech_item or session.new_id("item"), None
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
