"""OpenAI's image generation and speech, deterministic and small, as the ``openai`` SDK calls them:
``POST /v1/images/generations`` is played like a conversation (its prompt the user's message: a scenario's turn, its
runs and failures as on chat) and answers the turn's image fixture (``image``: :mod:`~harnessweb.engine.image_fixtures`)
or else a PNG drawn from the prompt's hash (:mod:`~harnessweb.engine.wire.media_bytes`), as ``b64_json`` or a ``url``
the harness serves: ``GET /v1/images/files/{name}`` draws it again from its name, or gives the fixture its digest
names, so no image is stored. ``POST /v1/audio/speech`` answers silence as WAV, raw PCM, FLAC or MP3 frames, as long
as the input would take to say. Speech and image files are ``answer`` routes of :mod:`harnessweb.engine.routes`;
errors are OpenAI's, naming the field. Transcriptions and translations: :mod:`harnessweb.engine.wire.transcription`.
Pure.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from harnessweb.engine import image_fixtures
from harnessweb.engine.exchange import ChatRequest, Message, Reply
from harnessweb.engine.wire import media_bytes, openai
from harnessweb.engine.wire.common import CREATED, JSON_HEADERS, Encoded, WireError, dumps

PROTOCOL = openai.PROTOCOL  # OpenAI's API: its keys, its errors
LABEL = "OpenAI Images and Audio"
REQUEST_ID_HEADER = openai.REQUEST_ID_HEADER
encode_error = openai.encode_error
encode_failure = openai.encode_failure
encode_model = openai.encode_model
encode_models = openai.encode_models
# An image file may be a scenario's fixture, known once the catalog holding it is built: the host builds it first.
ANSWERS_FIXTURES = True

IMAGES_PATH = "/v1/images/generations"
IMAGE_FILES = "/v1/images/files/"
SPEECH_PATH = "/v1/audio/speech"
SIZES = ("auto", "256x256", "512x512", "1024x1024", "1536x1024", "1024x1536", "1792x1024", "1024x1792")
IMAGE_FORMATS = ("url", "b64_json")
MAX_IMAGES = 10
MAX_PROMPT_CHARS = 32_000
FILE_NAME = re.compile(r"img-(?P<seed>[0-9a-f]{32})-(?P<width>[0-9]{1,3})x(?P<height>[0-9]{1,3})\.png")
FIXTURE_NAME = re.compile(r"img-fx-(?P<digest>[0-9a-f]{32})\.png")
# What each speech format is sent as. OpenAI's opus (in Ogg) and aac (in ADTS) need an encoder and a container no
# installed, well-kept library writes: they are refused, naming the field and the formats served.
AUDIO_TYPES = {"mp3": b"audio/mpeg", "wav": b"audio/wav", "flac": b"audio/flac", "pcm": b"audio/pcm"}
UNSERVED_AUDIO = ("opus", "aac")
MAX_SPEECH_CHARS = 4096
CHARS_PER_SECOND = 15  # how fast the silence "speaks" the input
MAX_SPEECH_S = 2.0


def answer_fields(headers: Mapping[str, str]) -> dict[str, str]:
    """What an answer needs from the request's headers: the address its image URLs start with."""
    scheme = headers.get("x-forwarded-proto", "http").split(",")[0].strip() or "http"
    return {"base_url": f"{scheme}://{headers.get('host', 'localhost')}"}


def encode_answer(param: str, body: bytes, base_url: str = "") -> Encoded:
    """The answer for the path's word: ``speech``, or an image file's name; raises :class:`WireError` naming the bad
    field."""
    if param == "speech":
        return encode_speech(_json(body))
    return encode_image_file(param)


def _json(body: bytes) -> dict[str, Any]:
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise WireError(f"The request body is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise WireError("The request body must be a JSON object")
    return payload


def _string(body: dict[str, Any], name: str, most: int) -> str:
    value = body.get(name)
    if value is None or value == "":
        raise WireError(f"Missing required parameter: '{name}'.", name)
    if not isinstance(value, str):
        raise WireError(f"Invalid type for '{name}': expected a string.", name)
    if len(value) > most:
        raise WireError(f"'{name}' is too long: at most {most} characters.", name)
    return value


def _choice(body: dict[str, Any], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = body.get(name)
    if value is None:
        return default
    if value not in allowed:
        listed = ", ".join(f"'{a}'" for a in allowed)
        raise WireError(f"Invalid value for '{name}': '{str(value)[:40]}'. Supported values are: {listed}.", name)
    return str(value)


# ---------------------------------------------------------------------------------------------------------------
# Images


def image_name(prompt: str, model: str, index: int, size: str) -> str:
    """The file name of one generated image: its seed (the prompt's hash, the model, its index) and drawn size."""
    width, height = (1024, 1024) if size == "auto" else map(int, size.split("x"))
    small = media_bytes.small_size(width, height)
    seed = hashlib.sha256(f"{model}\n{index}\n{prompt}".encode()).hexdigest()[:32]
    return f"img-{seed}-{small[0]}x{small[1]}.png"


def _drawn(name: str) -> bytes | None:
    if fixture := FIXTURE_NAME.fullmatch(name):
        return image_fixtures.named(fixture["digest"])
    match = FILE_NAME.fullmatch(name)
    if match is None:
        return None
    width, height = int(match["width"]), int(match["height"])
    if not (1 <= width <= media_bytes.SMALL_SIDE and 1 <= height <= media_bytes.SMALL_SIDE):
        return None
    return media_bytes.png(match["seed"], width, height)


@dataclass(frozen=True)
class ImageRequest(ChatRequest):
    """An images generation as a conversation of one user message (its prompt), with how its answer is written:
    ``count`` images (``n``) at ``size``, as ``response_format``; ``base_url`` starts their URLs."""

    count: int = 1
    size: str = "1024x1024"
    response_format: str = "url"
    base_url: str = ""


def asked_body(payload: dict[str, Any]) -> dict[str, Any]:
    """Nothing an images request says is a chat's demand: its ``response_format`` is a string, not a schema."""
    return {}


def parse_request(body: Any) -> ImageRequest:
    """A generation's JSON body → the request to play; raises :class:`WireError` naming the bad field: ``prompt``,
    ``n`` (1 to 10), ``size``, ``response_format`` (``url``, dall-e's default, or ``b64_json``, gpt-image models'
    only one)."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    prompt = _string(body, "prompt", MAX_PROMPT_CHARS)
    model = body.get("model") or "dall-e-2"
    if not isinstance(model, str):
        raise WireError("Invalid type for 'model': expected a string.", "model")
    n = body.get("n", 1) if body.get("n") is not None else 1
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_IMAGES:
        raise WireError(f"Invalid value for 'n': {str(n)[:20]}. Use an integer from 1 to {MAX_IMAGES}.", "n")
    size = _choice(body, "size", SIZES, "1024x1024")
    gpt_image = model.startswith("gpt-image")
    response_format = _choice(body, "response_format", IMAGE_FORMATS, "b64_json" if gpt_image else "url")
    if gpt_image and response_format == "url":
        message = f"Invalid value for 'response_format': 'url' is not supported for {model}: it returns b64_json."
        raise WireError(message, "response_format")
    return ImageRequest(
        protocol=PROTOCOL,
        model=model,
        messages=(Message("user", prompt),),
        count=n,
        size=size,
        response_format=response_format,
    )


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """``{"created", "data": [{"url"} or {"b64_json"}, ...], "usage"?}``: the played turn's image fixture, else
    ``count`` images drawn from the prompt."""
    images = request if isinstance(request, ImageRequest) else ImageRequest(request.protocol, request.model)
    prompt = images.messages[-1].text if images.messages else ""
    data = []
    for index in range(images.count):
        if reply.image:
            name, inline = f"img-fx-{image_fixtures.digest(reply.image)}.png", reply.image
        else:
            name = image_name(prompt, images.model, index, images.size)
            inline = base64.b64encode(_drawn(name) or b"").decode() if images.response_format == "b64_json" else ""
        if images.response_format == "url":
            data.append({"url": f"{images.base_url}{IMAGE_FILES}{name}", "revised_prompt": prompt})
        else:
            data.append({"b64_json": inline, "revised_prompt": prompt})
    answer: dict[str, Any] = {"created": CREATED, "data": data}
    if images.model.startswith("gpt-image"):
        tokens = max(1, len(prompt) // 4)
        answer["usage"] = {
            "input_tokens": tokens,
            "output_tokens": 272 * images.count,
            "total_tokens": tokens + 272 * images.count,
        }
    return Encoded(200, JSON_HEADERS, (dumps(answer),))


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure."""
    return Encoded(200, JSON_HEADERS, (b'{"created": 0, "data": [{"b64_json": "iVBO',))


def encode_image_file(name: str) -> Encoded:
    """``GET /v1/images/files/{name}``: the PNG the name draws; a name no generation gives is a 404."""
    drawn = _drawn(name)
    if drawn is None:
        raise WireError(f"No image named '{name[:80]}': image URLs come from POST {IMAGES_PATH}.", status=404)
    headers = ((b"content-type", b"image/png"), (b"cache-control", b"public, max-age=31536000, immutable"))
    return Encoded(200, headers, (drawn,))


# ---------------------------------------------------------------------------------------------------------------
# Speech


def speech_seconds(text: str, speed: float = 1.0) -> float:
    """How long the silence that says ``text`` lasts: ``CHARS_PER_SECOND`` at speed 1, 0.1 s to ``MAX_SPEECH_S``."""
    return round(min(MAX_SPEECH_S, max(0.1, len(text) / CHARS_PER_SECOND / speed)), 3)


def encode_speech(body: dict[str, Any]) -> Encoded:
    """The audio of ``input`` in ``voice``: silence as ``response_format`` (``mp3`` by default, ``wav``, ``flac``,
    ``pcm``); ``opus`` and ``aac`` are a 400 naming the field and the formats served."""
    _string(body, "model", 200)
    text = _string(body, "input", MAX_SPEECH_CHARS)
    voice = body.get("voice")
    if not voice or not isinstance(voice, str | dict):
        raise WireError("Missing required parameter: 'voice'.", "voice")
    response_format = _choice(body, "response_format", (*AUDIO_TYPES, *UNSERVED_AUDIO), "mp3")
    if response_format not in AUDIO_TYPES:
        listed = ", ".join(f"'{a}'" for a in AUDIO_TYPES)
        message = (
            f"Invalid value for 'response_format': '{response_format}' is not served by the harness (no encoder for "
            f"it is installed). Supported values are: {listed}."
        )
        raise WireError(message, "response_format")
    speed = body.get("speed", 1.0) if body.get("speed") is not None else 1.0
    if isinstance(speed, bool) or not isinstance(speed, int | float) or not 0.25 <= speed <= 4.0:
        raise WireError(f"Invalid value for 'speed': {str(speed)[:20]}. Use a number from 0.25 to 4.0.", "speed")
    seconds = speech_seconds(text, float(speed))
    make = {
        "mp3": media_bytes.mp3_silence,
        "wav": media_bytes.wav_silence,
        "flac": media_bytes.flac_silence,
        "pcm": media_bytes.pcm_silence,
    }
    audio = make[response_format](seconds)
    return Encoded(200, ((b"content-type", AUDIO_TYPES[response_format]),), (audio,))
