"""OpenAI's transcriptions and translations (``POST /v1/audio/transcriptions``, ``/v1/audio/translations``), as the
``openai`` SDK uploads them: a ``multipart/form-data`` form with the audio ``file``, ``model``, ``language``,
``prompt``, ``response_format`` and ``timestamp_granularities[]``. The audio is not listened to: the request is
played like a conversation (the scenario the ``X-Harness-Scenario`` header names, its turn's text; else the engine's
deterministic text, a matching scenario's first), so runs, expectations and injected failures work as on chat.

The text goes out as ``response_format`` asks: ``json`` (``{"text"}``, the default), ``text``, ``srt``, ``vtt`` or
``verbose_json`` (its segments, and words when asked, timed at ``SECONDS_PER_WORD``). Errors are OpenAI's. Pure.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from harnessweb.engine.exchange import ChatRequest, Message, Reply
from harnessweb.engine.wire import openai
from harnessweb.engine.wire.common import JSON_HEADERS, Encoded, WireError, dumps

PROTOCOL = openai.PROTOCOL  # OpenAI's API: its keys, its errors, its failures
LABEL = "OpenAI Audio transcriptions"
PATH = "/v1/audio/transcriptions"
TRANSLATIONS_PATH = "/v1/audio/translations"
REQUEST_ID_HEADER = openai.REQUEST_ID_HEADER
encode_error = openai.encode_error
encode_failure = openai.encode_failure
encode_model = openai.encode_model
encode_models = openai.encode_models
FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
SECONDS_PER_WORD = 0.4
TEXT_HEADERS = ((b"content-type", b"text/plain; charset=utf-8"),)
LANGUAGES = {  # ISO-639-1 → the name verbose_json says
    "en": "english", "fr": "french", "de": "german", "es": "spanish", "it": "italian", "pt": "portuguese",
    "nl": "dutch", "ja": "japanese", "zh": "chinese", "ko": "korean", "ru": "russian", "pl": "polish",
}  # fmt: skip


@dataclass(frozen=True)
class AudioRequest(ChatRequest):
    """A transcription (``task`` ``transcribe``) or translation (``translate``) as a conversation of one user
    message, with how its answer is written."""

    task: str = "transcribe"
    response_format: str = "json"
    language: str = ""
    granularities: tuple[str, ...] = ()


def read_body(body: bytes) -> dict[str, Any]:
    """The upload's fields (the file as ``{"filename", "bytes"}``: its size, not its content), read from the
    multipart form (the boundary is its first line); raises :class:`WireError` naming what is wrong."""
    first = body.split(b"\r\n", 1)[0]
    if not first.startswith(b"--") or len(first) < 3:
        raise WireError("Upload the audio as multipart/form-data (a 'file' and a 'model' field)", "file")
    head = b'Content-Type: multipart/form-data; boundary="' + first[2:].strip() + b'"\r\n\r\n'
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise WireError("The body is not a multipart form: upload a 'file' and a 'model' field", "file")
    fields: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = part.get_payload(decode=True)
        content = payload if isinstance(payload, bytes) else b""
        if name == "file":
            fields["file"] = {"filename": part.get_filename() or "file", "bytes": len(content)}
        elif name.endswith("[]"):
            fields.setdefault(name[:-2], []).append(content.decode("utf-8", "replace"))
        else:
            fields[name] = content.decode("utf-8", "replace")
    return fields


def path_fields(param: str, query: Any = None) -> dict[str, str]:
    """What the path says of the request: ``translations`` translate into English, ``transcriptions`` transcribe."""
    return {"task": "translate" if param == "translations" else "transcribe"}


def parse_request(body: Any) -> AudioRequest:
    """A form's fields (as :func:`read_body` gives them) → the request to play (the route sets its ``task``)."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a multipart form")
    upload = body.get("file")
    if not isinstance(upload, dict):
        raise WireError("Missing required parameter: 'file'.", "file")
    if not upload.get("bytes"):
        raise WireError("The audio file is empty: upload a file with content", "file")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("Missing required parameter: 'model'.", "model")
    response_format = body.get("response_format") or "json"
    if response_format not in FORMATS:
        listed = ", ".join(f"'{f}'" for f in FORMATS)
        message = f"Invalid value for 'response_format': '{str(response_format)[:40]}'. Supported values are: {listed}."
        raise WireError(message, "response_format")
    granularities = tuple(body.get("timestamp_granularities") or ())
    if unknown := set(granularities) - {"word", "segment"}:
        raise WireError(f"Invalid timestamp granularity: '{sorted(unknown)[0][:20]}'.", "timestamp_granularities")
    if granularities and response_format != "verbose_json":
        message = "timestamp_granularities are only supported with response_format 'verbose_json'."
        raise WireError(message, "timestamp_granularities")
    language = str(body.get("language") or "")
    if language and not re.fullmatch(r"[a-z]{2,3}", language):
        raise WireError(f"Invalid language '{language[:20]}': use an ISO-639-1 code such as 'en'.", "language")
    temperature = body.get("temperature")
    try:
        temperature = float(temperature) if temperature not in (None, "") else None
    except ValueError:
        raise WireError(f"Invalid value for 'temperature': '{str(temperature)[:20]}'.", "temperature") from None
    text = str(body.get("prompt") or "") or f"[audio: {upload.get('filename') or 'file'}]"
    return AudioRequest(
        protocol=PROTOCOL,
        model=model,
        messages=(Message("user", text),),
        temperature=temperature,
        response_format=response_format,
        language=language,
        granularities=granularities,
    )


def _stamp(seconds: float, separator: str) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}{separator}{ms % 1000:03d}"


def segments(text: str) -> list[tuple[float, float, str]]:
    """The text as timed segments, a sentence each: (start, end, text)."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s] or [""]
    timed, start = [], 0.0
    for sentence in sentences:
        end = round(start + max(1, len(sentence.split())) * SECONDS_PER_WORD, 3)
        timed.append((start, end, sentence))
        start = end
    return timed


def _verbose(request: AudioRequest, text: str) -> dict[str, Any]:
    timed = segments(text)
    duration = timed[-1][1]
    language = (
        "english" if request.task == "translate" else LANGUAGES.get(request.language, request.language or "english")
    )
    answer: dict[str, Any] = {"task": request.task, "language": language, "duration": duration, "text": text}
    if "word" in request.granularities:
        words, at = [], 0.0
        for word in text.split():
            words.append({"word": word.strip(".,!?;:"), "start": at, "end": round(at + SECONDS_PER_WORD, 3)})
            at = round(at + SECONDS_PER_WORD, 3)
        answer["words"] = words
    if not request.granularities or "segment" in request.granularities:
        answer["segments"] = [
            {
                "id": i,
                "seek": 0,
                "start": start,
                "end": end,
                "text": " " + sentence,
                "tokens": [],
                "temperature": 0.0,
                "avg_logprob": -0.1,
                "compression_ratio": 1.0,
                "no_speech_prob": 0.0,
            }  # fmt: skip
            for i, (start, end, sentence) in enumerate(timed)
        ]
    answer["usage"] = {"type": "duration", "seconds": math.ceil(duration)}
    return answer


def encode_text(request: AudioRequest, text: str) -> Encoded:
    """The text as ``request.response_format`` writes it."""
    form = request.response_format
    if form == "json":
        return Encoded(200, JSON_HEADERS, (dumps({"text": text}),))
    if form == "verbose_json":
        return Encoded(200, JSON_HEADERS, (dumps(_verbose(request, text)),))
    if form == "text":
        return Encoded(200, TEXT_HEADERS, ((text + "\n").encode(),))
    if form == "srt":
        cues = [f"{i}\n{_stamp(s, ',')} --> {_stamp(e, ',')}\n{t}\n" for i, (s, e, t) in enumerate(segments(text), 1)]
        return Encoded(200, TEXT_HEADERS, (("\n".join(cues) + "\n").encode(),))
    cues = [f"{_stamp(s, '.')} --> {_stamp(e, '.')}\n{t}\n" for s, e, t in segments(text)]
    return Encoded(200, ((b"content-type", b"text/vtt; charset=utf-8"),), (("WEBVTT\n\n" + "\n".join(cues)).encode(),))


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """A played reply's text as the transcript (or translation)."""
    audio = request if isinstance(request, AudioRequest) else AudioRequest(request.protocol, request.model)
    return encode_text(audio, reply.text)


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure."""
    return Encoded(200, JSON_HEADERS, (b'{"text": "the transcript brea',))
