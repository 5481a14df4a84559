"""OpenAI's images and audio, pure: the PNG decodes (signature, IHDR, CRCs, pixels through zlib), the WAV opens with
``wave``, the MP3 frames are MPEG-1 Layer III headers, the requests are checked naming the field, and the
transcription formats (json, text, srt, vtt, verbose_json) say the played text."""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib

import orjson
import pytest

from harnessweb.engine import respond, routes
from harnessweb.engine.exchange import Reply, Usage
from harnessweb.engine.wire import media, media_bytes, transcription
from harnessweb.engine.wire.common import WireError

HOST = {"host": "harness.test:8000"}
NO_SCENARIO = Reply((), "stop", Usage(0, 0, 0))


def answer(method: str, path: str, body: dict | None = None, reply: Reply = NO_SCENARIO):
    """What the route answers; a generation (played) as ``reply`` encodes (by default a reply with no fixture)."""
    route = routes.resolve(method, path, HOST)
    assert isinstance(route, routes.Route), route
    request = respond.read_request(route, orjson.dumps(body) if body is not None else b"")[1]
    return media.encode_reply(reply, request) if isinstance(request, media.ImageRequest) else request


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The chunks of a PNG, each CRC checked."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, payload = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + payload), kind
        chunks.append((kind, payload))
        at += 12 + length
    return chunks


def decoded(data: bytes) -> tuple[int, int, list[bytes]]:
    chunks = png_chunks(data)
    assert [kind for kind, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    width, height, depth, colour, *_ = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour) == (8, 2)
    raw = zlib.decompress(chunks[1][1])
    stride = 1 + 3 * width
    rows = [raw[y * stride : (y + 1) * stride] for y in range(height)]
    assert len(raw) == stride * height and all(row[0] == 0 for row in rows)
    return width, height, [row[1:] for row in rows]


def test_the_png_decodes_with_the_requested_aspect_and_is_the_same_for_the_same_prompt():
    first = answer(
        "POST", "/v1/images/generations", {"prompt": "a red fox", "size": "1792x1024", "response_format": "b64_json"}
    )
    again = answer(
        "POST", "/v1/images/generations", {"prompt": "a red fox", "size": "1792x1024", "response_format": "b64_json"}
    )
    other = answer(
        "POST", "/v1/images/generations", {"prompt": "a blue fox", "size": "1792x1024", "response_format": "b64_json"}
    )
    image = base64.b64decode(orjson.loads(first.body)["data"][0]["b64_json"])
    width, height, rows = decoded(image)
    assert (width, height) == (64, 37)  # 1792:1024 kept
    assert len({rows[0][i : i + 3] for i in range(0, len(rows[0]), 3)}) > 1  # cells of different colours
    assert first.body == again.body and first.body != other.body


def test_an_image_url_is_served_by_the_harness_and_draws_the_same_png():
    sent = orjson.loads(answer("POST", "/v1/images/generations", {"prompt": "a fox", "n": 3}).body)
    urls = [item["url"] for item in sent["data"]]
    assert len(set(urls)) == 3 and all(url.startswith("http://harness.test:8000/v1/images/files/") for url in urls)
    served = answer("GET", urls[0].removeprefix("http://harness.test:8000"))
    assert served.headers[0] == (b"content-type", b"image/png")
    assert decoded(served.body)[:2] == (64, 64)
    inline = answer("POST", "/v1/images/generations", {"prompt": "a fox", "n": 3, "response_format": "b64_json"})
    assert base64.b64decode(orjson.loads(inline.body)["data"][0]["b64_json"]) == served.body


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "prompt"),
        ({"prompt": "x", "size": "100x100"}, "size"),
        ({"prompt": "x", "n": 11}, "n"),
        ({"prompt": "x", "n": True}, "n"),
        ({"prompt": "x", "response_format": "jpeg"}, "response_format"),
        ({"prompt": "x", "model": "gpt-image-1", "response_format": "url"}, "response_format"),
    ],
)
def test_a_bad_image_request_names_its_field(body, field):
    with pytest.raises(WireError) as caught:
        answer("POST", "/v1/images/generations", body)
    assert caught.value.param == field and caught.value.status == 400


def test_an_image_name_no_generation_gives_is_a_404():
    for name in ("nothing.png", "img-" + "0" * 32 + "-500x500.png", "img-" + "0" * 32 + "-0x4.png"):
        with pytest.raises(WireError) as caught:
            answer("GET", f"/v1/images/files/{name}")
        assert caught.value.status == 404


def test_speech_is_silence_in_the_asked_format():
    wav = answer(
        "POST",
        "/v1/audio/speech",
        {"model": "tts-1", "voice": "alloy", "input": "Hello there, friend.", "response_format": "wav"},
    )
    assert dict(wav.headers)[b"content-type"] == b"audio/wav"
    with wave.open(io.BytesIO(wav.body)) as opened:
        assert (opened.getnchannels(), opened.getsampwidth(), opened.getframerate()) == (1, 2, 24_000)
        frames = opened.readframes(opened.getnframes())
    assert opened.getnframes() == round(media.speech_seconds("Hello there, friend.") * 24_000) and not any(frames)
    pcm = answer(
        "POST",
        "/v1/audio/speech",
        {"model": "tts-1", "voice": "alloy", "input": "Hello there, friend.", "response_format": "pcm"},
    )
    assert dict(pcm.headers)[b"content-type"] == b"audio/pcm" and pcm.body == frames
    mp3 = answer("POST", "/v1/audio/speech", {"model": "tts-1", "voice": "alloy", "input": "Hi"})  # mp3 by default
    assert dict(mp3.headers)[b"content-type"] == b"audio/mpeg"
    assert len(mp3.body) % 144 == 0 and mp3.body[:4] == b"\xff\xfb\x18\xc0"
    assert all(mp3.body[i : i + 4] == b"\xff\xfb\x18\xc0" for i in range(0, len(mp3.body), 144))


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"voice": "alloy", "input": "x"}, "model"),
        ({"model": "tts-1", "input": "x"}, "voice"),
        ({"model": "tts-1", "voice": "alloy"}, "input"),
        ({"model": "tts-1", "voice": "alloy", "input": "x", "response_format": "opus"}, "response_format"),
        ({"model": "tts-1", "voice": "alloy", "input": "x", "response_format": "aac"}, "response_format"),
        ({"model": "tts-1", "voice": "alloy", "input": "x", "speed": 9}, "speed"),
        ({"model": "tts-1", "voice": "alloy", "input": "x" * 4097}, "input"),
    ],
)
def test_a_bad_speech_request_names_its_field(body, field):
    with pytest.raises(WireError) as caught:
        answer("POST", "/v1/audio/speech", body)
    assert caught.value.param == field


def form(**fields: str) -> bytes:
    parts = [b'--B0\r\nContent-Disposition: form-data; name="file"; filename="hello.wav"\r\n'
             b"Content-Type: audio/wav\r\n\r\n" + media_bytes.wav_silence(0.1) + b"\r\n"]  # fmt: skip
    parts += [f'--B0\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()]
    return b"".join(parts) + b"--B0--\r\n"


def played(path: str, text: str, **fields: str):
    route = routes.resolve("POST", path, HOST)
    payload, request = respond.read_request(route, form(**fields))
    assert payload["file"] == {"filename": "hello.wav", "bytes": len(media_bytes.wav_silence(0.1))}
    return request, transcription.encode_text(request, text)


TEXT = "Hello there. How are you today?"


def test_a_transcription_says_the_text_in_each_format():
    _, as_json = played("/v1/audio/transcriptions", TEXT, model="whisper-1")
    assert orjson.loads(as_json.body) == {"text": TEXT}
    _, as_text = played("/v1/audio/transcriptions", TEXT, model="whisper-1", response_format="text")
    assert as_text.body == (TEXT + "\n").encode()
    _, srt = played("/v1/audio/transcriptions", TEXT, model="whisper-1", response_format="srt")
    assert srt.body.decode() == (
        "1\n00:00:00,000 --> 00:00:00,800\nHello there.\n\n2\n00:00:00,800 --> 00:00:02,400\nHow are you today?\n\n"
    )
    _, vtt = played("/v1/audio/transcriptions", TEXT, model="whisper-1", response_format="vtt")
    assert vtt.body.decode().startswith("WEBVTT\n\n00:00:00.000 --> 00:00:00.800\nHello there.\n")
    request, verbose = played(
        "/v1/audio/transcriptions", TEXT, model="whisper-1", response_format="verbose_json", language="fr",
        **{"timestamp_granularities[]": "word"},
    )  # fmt: skip
    body = orjson.loads(verbose.body)
    assert (body["task"], body["language"], body["duration"], body["text"]) == ("transcribe", "french", 2.4, TEXT)
    assert body["words"][0] == {"word": "Hello", "start": 0.0, "end": 0.4} and "segments" not in body
    assert request.messages[0].text == "[audio: hello.wav]"


def test_a_translation_is_english_and_a_prompt_is_the_message_played():
    request, verbose = played(
        "/v1/audio/translations", TEXT, model="whisper-1", response_format="verbose_json", prompt="Bonjour"
    )
    body = orjson.loads(verbose.body)
    assert (body["task"], body["language"]) == ("translate", "english")
    assert [s["text"] for s in body["segments"]] == [" Hello there.", " How are you today?"]
    assert request.messages[0].text == "Bonjour"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({}, "model"),
        ({"model": "whisper-1", "response_format": "mp3"}, "response_format"),
        ({"model": "whisper-1", "timestamp_granularities[]": "word"}, "timestamp_granularities"),
        ({"model": "whisper-1", "language": "English"}, "language"),
    ],
)
def test_a_bad_transcription_names_its_field(fields, field):
    with pytest.raises(WireError) as caught:
        played("/v1/audio/transcriptions", TEXT, **fields)
    assert caught.value.param == field


def test_a_body_that_is_no_form_is_refused_naming_the_file():
    route = routes.resolve("POST", "/v1/audio/transcriptions", HOST)
    with pytest.raises(WireError) as caught:
        respond.read_request(route, b'{"model": "whisper-1"}')
    assert caught.value.param == "file"
