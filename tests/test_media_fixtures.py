"""A scenario turn's image fixture (``image``: a .png path relative to the scenario file, or base64) read and checked
where scenarios are validated, its problems naming the field (the loader, ``harness check``), and answered by an
images generation that plays the turn (b64_json and URL, through the openai SDK); speech as FLAC (its STREAMINFO and
frames, their CRCs checked), and opus / aac refused naming ``response_format``."""

from __future__ import annotations

import base64
import struct

import httpx
import openai
import orjson
import pytest
from pydantic import ValidationError

from harnessweb.engine import image_fixtures
from harnessweb.engine.exchange import Reply, Usage
from harnessweb.engine.filecheck import check_paths
from harnessweb.engine.loader import ScenarioFileError, read_scenario_files
from harnessweb.engine.schemas import Scenario
from harnessweb.engine.wire import media, media_bytes
from tests.client_runs import played
from tests.conftest import make_scenario
from tests.test_wire_media import answer, decoded

PNG = media_bytes.png("a fixture", 8, 5)


def turn(image: str) -> dict:
    return {"turn": 1, "image": image, "response": {"kind": "text", "assistant_text": "A picture."}}


def write(folder, name: str, image: str) -> None:
    (folder / name).write_text(f'{{"id": "pictures",\n "turns": [\n  {{"turn": 1, "image": "{image}",\n'
                               '   "response": {"kind": "text", "assistant_text": "A picture."}}]}\n')  # fmt: skip


def test_it_reads_a_png_path_relative_to_the_scenario_file_into_base64(tmp_path):
    (tmp_path / "art").mkdir()
    (tmp_path / "art" / "cat.png").write_bytes(PNG)
    write(tmp_path, "pictures.json", "art/cat.png")
    [(_, scenario)] = read_scenario_files([tmp_path / "pictures.json"])
    assert base64.b64decode(scenario.turns[0].image) == PNG
    assert scenario.canonical()["turns"][0]["image"] == base64.b64encode(PNG).decode()
    assert check_paths([tmp_path]).problems == []


def test_it_takes_base64_and_knows_the_fixture_by_its_digest():
    encoded = base64.b64encode(PNG).decode()
    scenario = Scenario.model_validate({"id": "b64", "turns": [turn(encoded)]})
    assert scenario.turns[0].image == encoded
    assert image_fixtures.named(image_fixtures.digest(encoded)) == PNG
    assert image_fixtures.named("0" * 32) is None


@pytest.mark.parametrize(
    ("image", "said"),
    [
        ("missing.png", "cannot read 'missing.png'"),
        ("notes.png", "'notes.png' is not a PNG image"),
        (base64.b64encode(b"GIF89a....").decode(), "is not a PNG image"),
        ("not base64!", "neither a path to a .png file nor valid base64"),
    ],
)
def test_a_bad_fixture_is_a_load_error_naming_the_field_and_the_line(tmp_path, image, said):
    (tmp_path / "notes.png").write_text("not a picture")
    write(tmp_path, "pictures.json", image)
    with pytest.raises(ScenarioFileError) as caught:
        read_scenario_files([tmp_path])
    assert "pictures.json: turns.0.image: " in str(caught.value) and said in str(caught.value)
    [problem] = check_paths([tmp_path]).problems
    assert problem.startswith(f"{tmp_path / 'pictures.json'}:3: turns.0.image: ") and said in problem


def test_a_path_needs_a_scenario_file():
    with pytest.raises(ValidationError) as caught:
        Scenario.model_validate({"id": "api", "turns": [turn("cat.png")]})
    assert caught.value.errors()[0]["loc"] == ("turns", 0, "image")
    assert "give the PNG as base64" in str(caught.value)


def test_a_fixture_too_big_is_refused(monkeypatch):
    monkeypatch.setattr(image_fixtures, "MAX_BYTES", 20)
    with pytest.raises(ValidationError, match="at most 20 bytes"):
        Scenario.model_validate({"id": "big", "turns": [turn(base64.b64encode(PNG).decode())]})


def test_the_encoder_answers_the_fixture_inline_and_by_its_url():
    encoded = base64.b64encode(PNG).decode()
    Scenario.model_validate({"id": "known", "turns": [turn(encoded)]})  # known here, as a catalog build makes it
    reply = Reply((), "stop", Usage(0, 0, 0), image=encoded)
    body = {"prompt": "known", "n": 2, "response_format": "b64_json"}
    inline = answer("POST", "/v1/images/generations", body, reply)
    assert [item["b64_json"] for item in orjson.loads(inline.body)["data"]] == [encoded, encoded]
    linked = orjson.loads(answer("POST", "/v1/images/generations", {"prompt": "known"}, reply).body)["data"][0]["url"]
    assert linked == f"http://harness.test:8000/v1/images/files/img-fx-{image_fixtures.digest(encoded)}.png"
    assert answer("GET", linked.removeprefix("http://harness.test:8000")).body == PNG


def test_images_generate_answers_the_scenarios_fixture_through_the_sdk(oai):
    make_scenario("picture", [turn(base64.b64encode(PNG).decode())])
    inline = oai.images.generate(model="gpt-image-1", prompt="picture")
    assert base64.b64decode(inline.data[0].b64_json) == PNG
    assert paths_of(played("picture", [1])) == ["/v1/images/generations"]
    make_scenario("picture-url", [turn(base64.b64encode(PNG).decode())])
    url = oai.images.generate(model="dall-e-3", prompt="picture-url").data[0].url
    fetched = httpx.get(url, timeout=10)
    assert fetched.status_code == 200 and fetched.headers["content-type"] == "image/png"
    assert fetched.content == PNG and decoded(fetched.content)[:2] == (8, 5)


def paths_of(run) -> list[str]:
    return [event.data["path"] for event in run.events.filter(kind="request")]


def test_images_generate_gets_the_turns_injected_failure(oai):
    failing = {**turn(base64.b64encode(PNG).decode()), "failure_status": "rate_limit", "failures_before_success": 1}
    make_scenario("picture-429", [failing])
    with pytest.raises(openai.RateLimitError):
        oai.with_options(max_retries=0).images.generate(prompt="picture-429")
    assert base64.b64decode(oai.images.generate(prompt="picture-429", response_format="b64_json").data[0].b64_json)


# -- speech as FLAC ----------------------------------------------------------------------------------------------------


def test_flacs_crcs_are_the_catalogued_ones():
    # CRC-8 (poly 0x07) and CRC-16/UMTS (poly 0x8005), both initial 0: their check values on "123456789".
    assert media_bytes._crc8(b"123456789") == 0xF4 and media_bytes._crc16(b"123456789") == 0xFEE8


def flac_frames(data: bytes) -> tuple[dict, list[int]]:
    """STREAMINFO's fields and each frame's sample count, every CRC checked; each subframe the constant 0."""
    assert data[:4] == b"fLaC" and data[4] == 0x80 and int.from_bytes(data[5:8], "big") == 34
    info = data[8:42]
    packed = int.from_bytes(info[10:18], "big")
    fields = {"rate": packed >> 44, "channels": (packed >> 41 & 7) + 1, "bits": (packed >> 36 & 31) + 1,
              "samples": packed & (1 << 36) - 1, "block": struct.unpack(">HH", info[:4])}  # fmt: skip
    sizes, at = [], 42
    while at < len(data):
        assert data[at : at + 4] == b"\xff\xf8\x77\x08"
        number = 6 if data[at + 4] < 0x80 else 7
        (size,) = struct.unpack(">H", data[at + number - 1 : at + number + 1])
        head = data[at : at + number + 1]
        assert media_bytes._crc8(head) == data[at + number + 1]
        frame_end = at + number + 2 + 3
        assert data[at + number + 2 : frame_end] == b"\x00\x00\x00"  # CONSTANT subframe, value 0
        assert media_bytes._crc16(data[at:frame_end]) == int.from_bytes(data[frame_end : frame_end + 2], "big")
        sizes.append(size + 1)
        at = frame_end + 2
    return fields, sizes


def test_speech_as_flac_is_silence_of_the_inputs_length(oai):
    flac = oai.audio.speech.create(model="tts-1", voice="alloy", input="Hello there, friend.", response_format="flac")
    assert flac.response.headers["content-type"] == "audio/flac"
    fields, sizes = flac_frames(flac.content)
    samples = round(media.speech_seconds("Hello there, friend.") * 24_000)
    assert (fields["rate"], fields["channels"], fields["bits"], fields["samples"]) == (24_000, 1, 16, samples)
    assert sum(sizes) == samples and all(size == 4096 for size in sizes[:-1])
    assert flac_frames(media_bytes.flac_silence(2.0))[1] == [4096] * 11 + [48_000 - 11 * 4096]


@pytest.mark.parametrize("unserved", ["opus", "aac"])
def test_opus_and_aac_are_refused_naming_the_field_and_the_formats_served(oai, unserved):
    with pytest.raises(openai.BadRequestError) as caught:
        oai.audio.speech.create(model="tts-1", voice="alloy", input="Hi", response_format=unserved)
    assert caught.value.body["param"] == "response_format"
    assert "'mp3', 'wav', 'flac', 'pcm'" in caught.value.body["message"]


def test_the_plugin_answers_the_fixture_in_process(harness):
    harness.use_scenario({"id": "in-process-picture", "turns": [turn(base64.b64encode(PNG).decode())]})
    answered = harness.openai_client().images.generate(prompt="draw", response_format="b64_json")
    assert base64.b64decode(answered.data[0].b64_json) == PNG


@pytest.mark.django_db(transaction=True)
async def test_a_worker_that_built_no_catalog_yet_serves_the_fixtures_url(monkeypatch):
    from asgiref.sync import sync_to_async
    from channels.testing import ApplicationCommunicator

    from runs_app.endpoint.consumer import FakeEndpointConsumer
    from scenarios_app import catalog

    encoded = base64.b64encode(media_bytes.png("another worker", 6, 6)).decode()
    await sync_to_async(make_scenario)("elsewhere", [turn(encoded)])
    monkeypatch.setattr(image_fixtures, "_known", {})  # as in a worker that never validated the scenario
    monkeypatch.setattr(catalog, "_cached", None)
    path = f"/v1/images/files/img-fx-{image_fixtures.digest(encoded)}.png"
    scope = {"type": "http", "method": "GET", "path": path, "headers": [(b"host", b"h")], "query_string": b""}
    communicator = ApplicationCommunicator(FakeEndpointConsumer.as_asgi(), scope)
    await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await communicator.receive_output(5)
    body = (await communicator.receive_output(5))["body"]
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(5)
    assert start["status"] == 200 and base64.b64encode(body).decode() == encoded
