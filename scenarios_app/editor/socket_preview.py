"""The editor's preview for the providers' sockets (OpenAI Realtime, Gemini Live): the client messages that play a
turn of a scenario and, in order, exactly the server messages the session engine sends for them (pacing off),
failures first.

The engine is driven as the consumers (``runs_app/endpoint/realtime_consumer.py``, ``live_consumer.py``) drive it:
each client message through the session's ``receive``, the response decided by ``playback.decide`` on the session's
``chat_request``, then the engine's own events for a reply or a failure. The conversation is the one the HTTP
preview's request carries (:func:`scenarios_app.editor.preview.try_body`), so both meet the same expectations.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings

from harnessweb.engine.exchange import ALWAYS, Decision, InvalidRequest, NothingMatched
from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario as ScenarioSchema
from harnessweb.engine.wire import gemini_live, openai, realtime
from harnessweb.engine.wire.common import WireError
from harnessweb.text import pretty_json
from scenarios_app.editor.preview import PREVIEW_MODEL, try_body
from scenarios_app.models import Scenario

SOCKET_PROTOCOLS = {realtime.PROTOCOL: realtime.LABEL, gemini_live.PROTOCOL: gemini_live.LABEL}
PREVIEW_SESSION = "sess_preview"
CUT = "The socket is cut here: no close frame, the client sees 1006."
CLOSE_CODE = 1000  # the code the Live consumer closes a refused or failed session with (its reason says why)
_EMPTY_TOOL = {"type": "object", "properties": {}}
SILENCE = base64.b64encode(bytes(4800)).decode()  # 100 ms of 24 kHz PCM16, the least the API commits


@dataclass(frozen=True)
class Frame:
    """One message on the socket: the client's (``side`` "client") or the server's, as sent."""

    side: str
    message: dict[str, Any]

    @property
    def kind(self) -> str:
        """Realtime's event ``type``; for Live the message's field (and ``serverContent``'s)."""
        if isinstance(self.message.get("type"), str):
            return str(self.message["type"])
        name = next(iter(self.message), "")
        inner = self.message.get(name)
        return f"{name}.{next(iter(inner))}" if name == "serverContent" and isinstance(inner, dict) and inner else name

    @property
    def text(self) -> str:
        return pretty_json(self.message)


@dataclass(frozen=True)
class SocketPreview:
    """A turn on a socket: every frame in order, the end of the session when it ends (a cut, a close), the problem
    the engine found, and the simulated failure the first attempts get (each as on a socket of its own)."""

    protocol: str
    turn: int
    path: str
    frames: tuple[Frame, ...]
    end: str = ""
    problem: str = ""
    failure_count: int = 0
    failure_status: str = ""
    failure_frames: tuple[Frame, ...] = ()
    failure_end: str = ""
    failure_hold_ms: int = 0  # a timeout's: how long the server waits before it fails the attempt
    response_at: int = 0  # where in ``frames`` the response begins

    @property
    def opening(self) -> tuple[Frame, ...]:
        """The frames before the response: the client's messages and what answers them at once."""
        return self.frames[: self.response_at]

    @property
    def failure_always(self) -> bool:
        """Whether every attempt fails (``failures_before_success: always``): the turn itself is never served."""
        return self.failure_count >= ALWAYS


def _sent(message: dict[str, Any]) -> Frame:
    """A server message as it goes out: serialised now, since the engine's later events change objects an earlier
    one holds (a response's ``output`` list grows after ``response.created`` went out with it empty)."""
    return Frame("server", orjson.loads(orjson.dumps(message)))


def _decide(scenario: ScenarioSchema, request: Any) -> Decision:
    return decide(
        Catalog.build([scenario]),
        request,
        header_scenario=scenario.id,
        pacing_enabled=False,
        signature_key=settings.HARNESS_SIGNATURE_KEY,
        default_usage=settings.HARNESS_DEFAULT_USAGE,
    )


def realtime_client(scenario: ScenarioSchema, turn: int) -> list[dict[str, Any]]:
    """The Realtime client events that play ``turn``: ``session.update`` (instructions, tools, text out unless the
    turn speaks), a ``conversation.item.create`` per message of the HTTP preview's conversation (the last one as
    input audio appended and committed when the turn has an ``input_transcript``), ``response.create``."""
    body = try_body(scenario, turn, "openai")
    step = scenario.turn(turn)
    config: dict[str, Any] = {"type": "realtime", "output_modalities": ["audio" if step and step.audio else "text"]}
    messages = body["messages"]
    if messages and messages[0]["role"] == "system":
        config["instructions"] = messages.pop(0)["content"]
    if body.get("tools"):
        config["tools"] = [
            {"type": "function", "name": t["function"]["name"], "parameters": _EMPTY_TOOL} for t in body["tools"]
        ]
    events: list[dict[str, Any]] = [{"type": "session.update", "session": config}]
    for message in messages:
        part = "output_text" if message["role"] == "assistant" else "input_text"
        item = {"type": "message", "role": message["role"], "content": [{"type": part, "text": message["content"]}]}
        events.append({"type": "conversation.item.create", "item": item})
    if step is not None and step.input_transcript is not None and messages and messages[-1]["role"] == "user":
        # The turn hears speech: its last user message arrives as audio, which the scenario's transcript stands for.
        events[-1:] = [{"type": "input_audio_buffer.append", "audio": SILENCE}, {"type": "input_audio_buffer.commit"}]
    return [*events, {"type": "response.create"}]


def realtime_preview(scenario: ScenarioSchema, turn: int) -> SocketPreview:
    """The Realtime session that plays ``turn``: ``session.created``, each client event with the events answering
    it (committed audio transcribed as the consumer does), then the response: ``response.created`` and the reply's
    events (the turn's audio and transcript when it speaks), or the ``error`` event of a request refused. A
    scripted failure's attempt comes first: its ``error`` event and failed ``response.done``, or
    (``network_error``) half its events, then the cut."""
    session, created = realtime.open_session(PREVIEW_SESSION, PREVIEW_MODEL)
    frames = [_sent(created)]
    params: dict[str, Any] = {}
    for message in realtime_client(scenario, turn):
        frames.append(Frame("client", message))
        step = realtime.receive(session, orjson.dumps(message))
        frames += [_sent(event) for event in step.events]
        if step.commit:  # what the audio says: the input transcript of the turn the next response plays
            heard = scenario.turn(realtime.chat_request(session).turn)
            transcript = heard.input_transcript if heard is not None else None
            frames += [_sent(event) for event in realtime.commit_audio(session, transcript or "")]
        params = step.respond if step.respond is not None else params
    shown = SocketPreview(realtime.PROTOCOL, turn, f"{realtime.PATH}?model={PREVIEW_MODEL}", ())
    try:
        decision = _decide(scenario, realtime.chat_request(session, params))
    except (InvalidRequest, NothingMatched) as exc:
        error = realtime.http_error(openai.encode_error(400, str(exc)).body)
        return _with(shown, frames + [_sent(realtime.error_event(session, error))])
    failure_frames: list[Frame] = []
    failure_end = ""
    if decision.failure is not None:
        # An attempt of its own: the session as it stood, so the frames after it are those of a first attempt.
        failed = copy.deepcopy(session)
        response, opened = realtime.begin_response(failed, params)
        failure_frames.append(_sent(opened))
        if decision.failure.status == "network_error":
            events = realtime.response_events(failed, response, decision.reply)
            failure_frames += [_sent(e) for e, _ in events[: max(1, len(events) // 2)]]
            failure_end = CUT
        else:
            failure_frames += [_sent(e) for e in realtime.failure_events(failed, response, decision.failure)]
    response_at = len(frames)
    response, opened = realtime.begin_response(session, params)
    frames.append(_sent(opened))
    step = scenario.turn(decision.turn) if not decision.problem else None
    audio, transcript = (step.audio, step.transcript) if step is not None else (None, None)
    frames += [_sent(e) for e, _ in realtime.response_events(session, response, decision.reply, audio, transcript)]
    return _with(shown, frames, decision, failure_frames, failure_end, response_at=response_at)


def live_client(scenario: ScenarioSchema, turn: int) -> list[dict[str, Any]]:
    """The Live client messages that play ``turn``: ``setup`` (the model, system instruction, tools, generation
    config) and one ``clientContent`` holding the HTTP preview's conversation with ``turnComplete``."""
    body = try_body(scenario, turn, "openai")
    setup: dict[str, Any] = {"model": f"models/{PREVIEW_MODEL}"}
    config: dict[str, Any] = {"responseModalities": ["TEXT"]}
    if "temperature" in body:
        config["temperature"] = body["temperature"]
    if "top_p" in body:
        config["topP"] = body["top_p"]
    setup["generationConfig"] = config
    messages = body["messages"]
    if messages and messages[0]["role"] == "system":
        setup["systemInstruction"] = {"parts": [{"text": messages.pop(0)["content"]}]}
    if body.get("tools"):
        declarations = [{"name": t["function"]["name"], "parameters": _EMPTY_TOOL} for t in body["tools"]]
        setup["tools"] = [{"functionDeclarations": declarations}]
    turns = [
        {"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]} for m in messages
    ]
    return [{"setup": setup}, {"clientContent": {"turns": turns, "turnComplete": True}}]


def live_preview(scenario: ScenarioSchema, turn: int) -> SocketPreview:
    """The Live session that plays ``turn``: each client message with the messages answering it, then the model's
    turn (``serverContent`` parts and ``turnComplete`` with ``usageMetadata``, or a ``toolCall``), or the close that
    refuses it. A scripted failure's attempt comes first: the session closed with Gemini's status and message, or
    (``network_error``) half the turn's messages, then the cut."""
    session = gemini_live.LiveSession(PREVIEW_SESSION)
    frames: list[Frame] = []
    shown = SocketPreview(gemini_live.PROTOCOL, turn, gemini_live.PATH, ())
    for message in live_client(scenario, turn):
        frames.append(Frame("client", message))
        step = gemini_live.receive(session, orjson.dumps(message))
        frames += [_sent(m) for m in step.messages]
        if step.close:
            return _with(shown, frames, end=_closed(step.close))
    try:
        decision = _decide(scenario, gemini_live.chat_request(session))
    except (WireError, InvalidRequest, NothingMatched) as exc:
        reason = exc.message if isinstance(exc, WireError) else str(exc)
        return _with(shown, frames, end=_closed(gemini_live.close_reason(reason)))
    failure_frames: list[Frame] = []
    failure_end = ""
    if decision.failure is not None:
        if decision.failure.status == "network_error":
            messages = gemini_live.response_messages(copy.deepcopy(session), decision.reply)
            failure_frames = [_sent(m) for m, _ in messages[: max(1, len(messages) // 2)]]
            failure_end = CUT
        else:
            failure_end = _closed(gemini_live.failure_reason(decision.failure))
    response_at = len(frames)
    frames += [_sent(m) for m, _ in gemini_live.response_messages(session, decision.reply)]
    return _with(shown, frames, decision, failure_frames, failure_end, response_at=response_at)


def _hold_ms(failure: Any) -> int:
    """How long a ``timeout`` holds the socket before the failure, as the consumers wait."""
    if failure is None or failure.status != "timeout":
        return 0
    return failure.retry_after_ms if failure.retry_after_ms is not None else settings.HARNESS_TIMEOUT_HOLD_MS


def _closed(reason: str) -> str:
    return f'The server closes the session: code {CLOSE_CODE}, reason "{reason}"'


def _with(
    shown: SocketPreview,
    frames: list[Frame],
    decision: Decision | None = None,
    failure_frames: list[Frame] | None = None,
    failure_end: str = "",
    end: str = "",
    response_at: int | None = None,
) -> SocketPreview:
    failure = decision.failure if decision is not None else None
    return SocketPreview(
        protocol=shown.protocol,
        turn=shown.turn,
        path=shown.path,
        frames=tuple(frames),
        end=end,
        problem=decision.problem if decision is not None else "",
        failure_count=decision.failures_before_success if failure is not None else 0,
        failure_status=failure.status if failure is not None else "",
        failure_frames=tuple(failure_frames or ()),
        failure_end=failure_end,
        failure_hold_ms=_hold_ms(failure),
        response_at=len(frames) if response_at is None else response_at,
    )


def build_socket_preview(scenario: ScenarioSchema, turn: int, protocol: str) -> SocketPreview:
    """The preview of ``turn`` over the socket ``protocol`` (a key of :data:`SOCKET_PROTOCOLS`)."""
    return realtime_preview(scenario, turn) if protocol == realtime.PROTOCOL else live_preview(scenario, turn)


def socket_preview_context(scenario: ScenarioSchema, row: Scenario | None, turn: int, protocol: str) -> dict[str, Any]:
    """The socket preview partial's context."""
    return {
        "preview": build_socket_preview(scenario, turn, protocol),
        "protocol_label": SOCKET_PROTOCOLS[protocol],
        "unsaved": row is not None and row.data != scenario.canonical(),
        "scenario_id": scenario.id,
    }
