"""Gemini Live (``BidiGenerateContent`` over a WebSocket, google-genai's ``client.aio.live.connect``): one session's
state and what each client message makes of it, as the server messages that answer it.

Pure: the consumer (``runs_app/endpoint/live_consumer.py``) receives and sends. The session keeps its
conversation as Gemini's ``contents``, so a response is decided on what :func:`chat_request` reads through
Gemini's own parser (:func:`harnessweb.engine.wire.gemini.parse_request`) and a turn is chosen as over HTTP.
A refused message ends the session as the API does: the socket closes, its reason naming the field. Audio in is
heard as Live's automatic activity detection hears it (:mod:`~harnessweb.engine.wire.realtime_vad`, in samples):
speech then silence ends the user's turn, whose words are the scenario's ``input_transcript``.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from harnessweb.engine.exchange import ChatRequest, Failure, Reply, short_id, word_chunks
from harnessweb.engine.wire import gemini
from harnessweb.engine.wire.common import WireError
from harnessweb.engine.wire.realtime_vad import Detector

PROTOCOL = "gemini_live"
LABEL = "Gemini Live"
# google-genai's path for an API key (``…Constrained`` for an ephemeral token), under each API version.
PATH_PATTERN = (
    r"/ws/google\.ai\.generativelanguage\.(?:v1alpha|v1beta|v1)\.GenerativeService\.BidiGenerateContent(?:Constrained)?"  # noqa: E501
)
PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
CLOSE_REASON_BYTES = 123  # a close frame's reason is at most 123 bytes
INPUT_RATE = 16000  # Live's input audio unless its MIME type says ``rate=``
OUTPUT_MIME = "audio/pcm;rate=24000"  # a scenario's audio fixtures are 24 kHz PCM16, as Live speaks
AUDIO_CHUNK_BYTES = 4800  # 100 ms of output audio per modelTurn message
SILENCE_MS = 500  # the end of speech unless the setup's automaticActivityDetection.silenceDurationMs says


def is_live_path(path: str) -> bool:
    """Whether a socket's path is the Live API's."""
    return re.fullmatch(PATH_PATTERN, path.rstrip("/")) is not None


@dataclass
class LiveSession:
    """One socket's session: its ``setup`` (None until it arrives), the conversation as Gemini's contents, and the
    user's audio: its speech detector, and (activity detection off) whether the client marked an activity."""

    id: str
    setup: dict[str, Any] | None = None
    contents: list[dict[str, Any]] = field(default_factory=list)
    turns: int = 0
    detector: Detector = field(default_factory=Detector)
    activity: bool = False

    def option(self, *path: str) -> Any:
        """A setup field by its camelCase path (google-genai may send snake_case)."""
        value: Any = self.setup or {}
        for camel in path:
            snake = re.sub(r"[A-Z]", lambda m: "_" + m.group().lower(), camel)
            value = _get(value, camel, snake) if isinstance(value, dict) else None
        return value

    @property
    def automatic(self) -> bool:
        """Whether Live detects the user's activity itself (the default) or the client marks it."""
        return not self.option("realtimeInputConfig", "automaticActivityDetection", "disabled")


@dataclass(frozen=True)
class Step:
    """The messages answering a client message now, whether it asks for a response, whether the user's spoken turn
    ended (the consumer then gives :func:`heard` its transcript, and responds), whether the user's speech began (a
    turn under way is then interrupted, unless the setup's ``activityHandling`` says ``NO_INTERRUPTION``), and (a
    refused message) the reason the socket closes with."""

    messages: tuple[dict[str, Any], ...] = ()
    respond: bool = False
    close: str = ""
    hear: bool = False
    interrupt: bool = False


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
        return _realtime_audio(session, body)
    if kind in ("toolResponse", "tool_response"):
        responses = _get(body, "functionResponses", "function_responses")
        if not isinstance(responses, list) or not responses:
            return Step(close="toolResponse.functionResponses must be a non-empty array.")
        session.contents.append({"role": "user", "parts": [{"functionResponse": r} for r in responses]})
        return Step(respond=True)
    return Step(close=f'Invalid JSON payload received. Unknown name "{kind}": Cannot find field.')


def _realtime_audio(session: LiveSession, body: dict[str, Any]) -> Step:
    """``realtimeInput`` beyond text: audio (``audio``, or audio ``mediaChunks``) heard by activity detection until
    speech stops, or ``audioStreamEnd`` during speech; with detection off, ``activityEnd`` after ``activityStart``
    ends the turn. Video and images are accepted and not answered."""
    start, end = _get(body, "activityStart", "activity_start"), _get(body, "activityEnd", "activity_end")
    if (start is not None or end is not None) and session.automatic:
        return Step(close="realtimeInput.activityStart/activityEnd need automaticActivityDetection.disabled.")
    if start is not None:
        session.activity = True
        return Step(interrupt=_interrupts(session))
    if end is not None:
        was, session.activity = session.activity, False
        return Step(hear=was)
    chunks = _get(body, "mediaChunks", "media_chunks") or []
    if not isinstance(chunks, list):
        return Step(close="realtimeInput.mediaChunks must be an array of blobs.")
    blobs = [("realtimeInput.audio", body["audio"])] if body.get("audio") is not None else []
    blobs += [(f"realtimeInput.mediaChunks[{i}]", blob) for i, blob in enumerate(chunks)]
    ended = began = False
    for where, blob in blobs:
        mime = str(_get(blob, "mimeType", "mime_type") or "") if isinstance(blob, dict) else ""
        if not mime.startswith("audio/"):
            if not isinstance(blob, dict) or not mime:
                return Step(close=f"{where}.mimeType: a blob needs a MIME type and data.")
            continue  # an image or a video frame: accepted, not answered
        if not mime.startswith("audio/pcm"):
            return Step(close=f"{where}.mimeType: audio must be audio/pcm (16-bit little-endian), not {mime}.")
        data = str(blob.get("data") or "").replace("-", "+").replace("_", "/")  # google-genai sends URL-safe
        try:
            pcm = base64.b64decode(data, validate=True)
        except binascii.Error:
            return Step(close=f"{where}.data: not base64-encoded audio.")
        if session.automatic:
            rate = int(found.group(1)) if (found := re.search(r"rate=(\d+)", mime)) else INPUT_RATE
            silence_ms = session.option("realtimeInputConfig", "automaticActivityDetection", "silenceDurationMs")
            silence = max(1, int(silence_ms or SILENCE_MS) * rate // 1000)
            speech = session.detector.feed(pcm, silence)
            ended, began = ended or speech.stopped is not None, began or speech.started is not None
    if _get(body, "audioStreamEnd", "audio_stream_end") and session.automatic and session.detector.speaking:
        session.detector.reset()  # the stream paused mid-speech: what was said is the turn
        ended = True
    return Step(hear=ended, interrupt=began and _interrupts(session))


def _interrupts(session: LiveSession) -> bool:
    return session.option("realtimeInputConfig", "activityHandling") != "NO_INTERRUPTION"


INTERRUPTED = {"serverContent": {"interrupted": True}}  # the model's turn under way stopped for the user's speech


def heard(session: LiveSession, transcript: str) -> list[dict[str, Any]]:
    """The user's spoken turn ended: its words (the scenario's ``input_transcript``) join the contents as the user's
    turn, told as ``inputTranscription`` when the setup asked for it."""
    session.contents.append({"role": "user", "parts": [{"text": transcript}]})
    if session.option("inputAudioTranscription") is None:
        return []
    return [{"serverContent": {"inputTranscription": {"text": transcript}}}]


def upcoming_request(session: LiveSession) -> ChatRequest:
    """The request of the turn the user is speaking, before its words are known (which scenario turn it plays, to
    take its ``input_transcript``)."""
    spoken = LiveSession(session.id, session.setup, [*session.contents, {"role": "user", "parts": [{"text": ""}]}])
    return chat_request(spoken)


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


def response_messages(
    session: LiveSession, reply: Reply, audio: str | None = None, transcript: str | None = None
) -> list[tuple[dict[str, Any], bool]]:
    """A reply as the server's messages, each with whether it is a delta (pacing applies to deltas): its text as
    ``serverContent.modelTurn`` chunks (spoken instead, when the setup asks for AUDIO and the turn has ``audio``:
    base64 PCM16 as ``inlineData`` chunks, its ``transcript`` as ``outputTranscription`` if asked for); its calls as
    one ``toolCall`` (the turn goes on once their responses come), else ``generationComplete`` and
    ``turnComplete`` with ``usageMetadata``. The model's turn joins the contents."""
    session.turns += 1
    modalities = session.option("generationConfig", "responseModalities") or []
    speak = bool(audio) and "AUDIO" in [str(m).upper() for m in modalities]
    messages: list[tuple[dict[str, Any], bool]] = []
    parts: list[dict[str, Any]] = []
    calls = []
    for index, block in enumerate(reply.blocks):
        if block.type == "text" and speak:
            speak = False  # the turn's audio says its first text once
            messages += _spoken(session, reply, audio or "", block.text if transcript is None else transcript)
            parts.append({"text": block.text})
        elif block.type == "text":
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


def _spoken(session: LiveSession, reply: Reply, audio: str, said: str) -> list[tuple[dict[str, Any], bool]]:
    """A turn's audio as ``modelTurn`` messages of 100 ms ``inlineData`` each, its transcript's words between
    them as ``outputTranscription`` when the setup asked for it."""
    pcm = base64.b64decode(audio)
    sound = [base64.b64encode(pcm[i : i + AUDIO_CHUNK_BYTES]).decode() for i in range(0, len(pcm), AUDIO_CHUNK_BYTES)]
    words = word_chunks(said, reply.chunk_words) if session.option("outputAudioTranscription") is not None else []
    messages: list[tuple[dict[str, Any], bool]] = []
    for i in range(max(len(sound), len(words))):
        if i < len(sound):
            part = {"inlineData": {"mimeType": OUTPUT_MIME, "data": sound[i]}}
            messages.append(({"serverContent": {"modelTurn": {"role": "model", "parts": [part]}}}, True))
        if i < len(words):
            messages.append(({"serverContent": {"outputTranscription": {"text": words[i]}}}, True))
    return messages


def failure_reason(failure: Failure) -> str:
    """The close reason of a failure a turn scripts: Gemini's status name and the message, as a close frame
    carries it (at most 123 bytes)."""
    error = orjson.loads(gemini.encode_failure(failure).body)["error"]
    return close_reason(f"{error['status']}: {error['message']}")


def close_reason(text: str) -> str:
    """A reason cut to what a close frame carries."""
    return text.encode()[:CLOSE_REASON_BYTES].decode(errors="ignore")
