"""OpenAI's images and audio through the ``openai`` SDK, unmodified, against a live harness: images.generate (b64 and
url, the url then fetched), audio.speech.create (wav, pcm, mp3), audio.transcriptions.create (json, text, srt,
verbose_json, the text a scenario's turn when the header names one) and translations, and OpenAI's error shape for a
bad field. The transcriptions need the consumer to let their multipart form through (the ``read_body`` hook)."""

from __future__ import annotations

import base64
import io
import wave

import httpx
import openai
import pytest

from harnessweb.engine.wire import media, media_bytes
from tests.client_runs import TEXT, text_scenario
from tests.conftest import make_scenario, recorded_run, wait_for
from tests.test_wire_media import decoded

AUDIO = ("hello.wav", media_bytes.wav_silence(0.2), "audio/wav")


def test_images_generate_as_b64_json_and_as_a_url_the_harness_serves(oai):
    inline = oai.images.generate(
        model="dall-e-3", prompt="a lighthouse at dusk", size="1792x1024", response_format="b64_json"
    )
    png = base64.b64decode(inline.data[0].b64_json)
    assert decoded(png)[:2] == (64, 37)
    linked = oai.images.generate(model="dall-e-3", prompt="a lighthouse at dusk", size="1792x1024")
    url = linked.data[0].url
    assert url.startswith(str(oai.base_url).rstrip("/") + "/images/files/")
    fetched = httpx.get(url, timeout=10)
    assert fetched.status_code == 200 and fetched.headers["content-type"] == "image/png"
    assert fetched.content == png  # the same prompt, model and size: the same picture


def test_a_bad_image_size_is_openais_error_naming_the_field(oai):
    with pytest.raises(openai.BadRequestError) as caught:
        oai.images.generate(prompt="a lighthouse", size="999x999")  # type: ignore[arg-type]
    assert caught.value.status_code == 400
    assert caught.value.body["param"] == "size" and "'999x999'" in caught.value.body["message"]


def test_speech_is_audio_with_its_content_type(oai):
    wav = oai.audio.speech.create(model="tts-1", voice="alloy", input="Hello there, friend.", response_format="wav")
    assert wav.response.headers["content-type"] == "audio/wav"
    with wave.open(io.BytesIO(wav.content)) as opened:
        assert opened.getframerate() == 24_000
        assert opened.getnframes() == round(media.speech_seconds("Hello there, friend.") * 24_000)
    pcm = oai.audio.speech.create(model="tts-1", voice="alloy", input="Hello there, friend.", response_format="pcm")
    assert pcm.response.headers["content-type"] == "audio/pcm" and len(pcm.content) == 2 * opened.getnframes()
    mp3 = oai.audio.speech.create(model="gpt-4o-mini-tts", voice="nova", input="Hi")
    assert mp3.response.headers["content-type"] == "audio/mpeg" and mp3.content[:2] == b"\xff\xfb"


def test_a_transcription_says_the_scenarios_turn_in_each_format(oai):
    scenario = text_scenario("transcription")
    headers = {"X-Harness-Scenario": scenario}
    said = oai.audio.transcriptions.create(model="whisper-1", file=AUDIO, extra_headers=headers)
    assert said.text == TEXT
    run = recorded_run(wait_for(lambda: _run_of(scenario), message="the run"), events=2)
    request = run.events.filter(kind="request").first().data
    assert request["path"] == "/v1/audio/transcriptions"
    assert request["body"]["file"] == {"filename": "hello.wav", "bytes": len(AUDIO[1])}
    text = oai.audio.transcriptions.create(model="whisper-1", file=AUDIO, response_format="text", extra_headers=headers)
    assert text.strip() == TEXT
    srt = oai.audio.transcriptions.create(model="whisper-1", file=AUDIO, response_format="srt", extra_headers=headers)
    assert srt.startswith("1\n00:00:00,000 --> ") and TEXT in srt
    verbose = oai.audio.transcriptions.create(
        model="whisper-1",
        file=AUDIO,
        response_format="verbose_json",
        timestamp_granularities=["word", "segment"],
        language="en",
        extra_headers=headers,
    )
    assert (verbose.text, verbose.language) == (TEXT, "english")
    assert verbose.words[0].word == "Hello" and verbose.segments[0].text.strip() == TEXT


def test_without_a_scenario_the_transcript_is_the_same_text_every_time(oai):
    first = oai.audio.transcriptions.create(model="whisper-1", file=AUDIO, prompt="Meeting notes")
    again = oai.audio.transcriptions.create(model="whisper-1", file=AUDIO, prompt="Meeting notes")
    assert first.text and first.text == again.text


def test_a_translation_is_played_and_says_english(oai):
    scenario = text_scenario("translation")
    verbose = oai.audio.translations.create(
        model="whisper-1", file=AUDIO, response_format="verbose_json", extra_headers={"X-Harness-Scenario": scenario}
    )
    assert (verbose.text, verbose.language) == (TEXT, "english")


def test_a_bad_transcription_format_is_openais_error_naming_the_field(oai):
    with pytest.raises(openai.BadRequestError) as caught:
        oai.audio.transcriptions.create(model="whisper-1", file=AUDIO, response_format="mp3")  # type: ignore[arg-type]
    assert caught.value.body["param"] == "response_format"


def _run_of(scenario_id: str) -> str:
    from runs_app.models import Run

    run = Run.objects.filter(scenario_id=scenario_id).first()
    return str(run.id) if run else ""


def test_a_transcription_gets_its_scenarios_injected_failure_and_the_sdk_retries(
    harness_server, api_key, transactional_db
):
    make_scenario(
        "transcription-429",
        [{"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit",
          "response": {"kind": "text", "assistant_text": TEXT}}],
    )  # fmt: skip
    headers = {"X-Harness-Scenario": "transcription-429"}
    strict = openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key=api_key, max_retries=0, timeout=20)
    with pytest.raises(openai.RateLimitError):
        strict.audio.transcriptions.create(model="whisper-1", file=AUDIO, extra_headers=headers)
    retried = strict.with_options(max_retries=1).audio.transcriptions.create(
        model="whisper-1", file=AUDIO, extra_headers=headers
    )
    assert retried.text == TEXT
