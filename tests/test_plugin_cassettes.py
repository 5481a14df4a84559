"""The plugin and cassettes, as a team uses it (pytester, in a subprocess): a folder of seed 003's cassettes
(``harness_cassettes = DIR`` or ``--harness-cassettes DIR``) replayed in-process through the official openai and
anthropic SDKs, named by ``harness.use_cassette(stem)`` or the ``X-Harness-Cassette`` header, byte for byte as the
server replays them; a request naming a cassette gets that cassette or an error naming it and where it looked, never
the engine's lorem."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import VCR_DIR

pytest_plugins = ["pytester"]

FIXTURES = ("anthropic_simple_text.json", "openai_simple_text.json", "openai_rate_limit_429.json")

TESTS = """
import json
from pathlib import Path

import anthropic
import openai
import pytest

FOLDER = Path(__file__).parent / "cassettes"


def recorded(name, index=0):
    return json.loads((FOLDER / f"{name}.json").read_text())["interactions"][index]


def anthropic_body(name, index=0):
    body = dict(recorded(name, index)["request"]["body"])
    return body, {key: body.pop(key) for key in ("temperature", "top_p") if key in body}


def test_use_cassette_replays_a_real_recording_through_anthropic(harness):
    harness.use_cassette("anthropic_simple_text")
    body, extra = anthropic_body("anthropic_simple_text")
    assert body.pop("stream") is True  # recorded streamed: messages.stream sends it
    client = harness.anthropic_client(max_retries=0)
    with client.messages.stream(**body, extra_body=extra) as stream:
        text = "".join(stream.text_stream)
        message = stream.get_final_message()
    assert text == "pong"
    assert message.id == "msg_012AqWiBuWMPUqTHVRc7Xn1L"  # the recorded id: the provider's bytes, not the engine's
    assert message.usage.output_tokens == 5
    assert harness.last_call.answered_by == "cassette"
    assert harness.last_call.model == "claude-sonnet-4-20250514"


def test_the_header_replays_a_cassette_through_openai_byte_for_byte(harness):
    client = harness.openai_client(max_retries=0, default_headers={"X-Harness-Cassette": "openai_simple_text"})
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert raw.http_response.read() == "".join(recorded("openai_simple_text")["response"]["body_chunks"]).encode()
    assert "x-harness-run" not in raw.http_response.headers  # a replay is the provider's answer, not a run's


def test_the_header_streams_through_openai(harness):
    client = harness.openai_client(max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True,
        extra_headers={"X-Harness-Cassette": "openai_simple_text.json"},
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "pong"
    assert chunks[0].id == "chatcmpl-vcr001"


def test_a_recorded_failure_reaches_the_sdk_as_recorded(harness):
    harness.use_cassette("openai_rate_limit_429")
    with pytest.raises(openai.RateLimitError) as caught:
        harness.openai_client(max_retries=0).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 429


def test_a_request_the_cassette_did_not_record_is_refused_showing_the_closest(harness):
    harness.use_cassette("anthropic_simple_text")
    body, extra = anthropic_body("anthropic_simple_text")
    body["max_tokens"] = 65
    with pytest.raises(anthropic.BadRequestError) as caught:
        harness.anthropic_client(max_retries=0).messages.create(**body, extra_body=extra)
    message = caught.value.body["error"]["message"]
    assert "No interaction of cassette 'anthropic_simple_text.json' (2 recorded)" in message
    assert "body.max_tokens: recorded 64, sent 65" in message


def test_an_unknown_name_in_the_header_is_an_error_naming_it_and_the_folder(harness):
    client = harness.openai_client(max_retries=0)
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], extra_headers={"X-Harness-Cassette": "nowhere"}
        )
    message = caught.value.body["message"]
    assert "Cassette 'nowhere' is not stored" in message and str(FOLDER) in message
    assert caught.value.body["param"] == "x-harness-cassette"
    assert harness.calls == []  # never the lorem


def test_use_cassette_refuses_an_unknown_name_at_once(harness):
    with pytest.raises(Exception, match="Cassette 'nowhere' is not stored.*cassettes") as caught:
        harness.use_cassette("nowhere")
    assert type(caught.value).__name__ == "HarnessError"


def test_a_file_that_is_no_cassette_is_named_with_its_error(harness):
    with pytest.raises(Exception, match="broken.json.*not a VCR cassette"):
        harness.use_cassette("broken")


def test_recording_needs_the_server(harness):
    client = harness.openai_client(max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], extra_headers={"X-Harness-Record": "new_tape"}
        )
    assert "Recording cassette 'new_tape'" in caught.value.body["message"]


def test_a_scenario_naming_a_cassette_is_answered_from_it(harness):
    harness.use_scenario({"id": "taped", "cassette": "openai_simple_text",
                          "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "From the scenario."}}]})
    stream = harness.openai_client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "pong"


def test_a_scenario_whose_cassette_is_not_there_answers_itself(harness):
    harness.use_scenario({"id": "elsewhere", "cassette": "never_recorded",
                          "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "From the scenario."}}]})
    reply = harness.openai_client().chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "From the scenario."


def test_use_cassette_none_gives_the_engine_back(harness):
    harness.use_cassette("openai_simple_text")
    harness.use_cassette(None)
    harness.set_response(text="configured")
    reply = harness.openai_client().chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "configured"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_project=TESTS)
    folder = pytester.mkdir("cassettes")
    for name in FIXTURES:
        shutil.copy(VCR_DIR / name, folder / name)
    (folder / "broken.json").write_text('{"version": "1.0", "interactions": []}')
    return pytester


def test_it_replays_a_folder_of_cassettes_in_process_from_the_ini(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nharness_cassettes = cassettes\n")
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=12)


def test_it_takes_the_folder_from_the_command_line(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "--harness-cassettes", str(project.path / "cassettes"),
        "-k", "anthropic or unknown_name",
    )  # fmt: skip
    result.assert_outcomes(passed=3)


def test_without_a_folder_a_named_cassette_is_an_error_saying_where_to_set_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_x="""
import openai
import pytest


def test_x(harness):
    with pytest.raises(openai.NotFoundError) as caught:
        harness.openai_client(max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], extra_headers={"X-Harness-Cassette": "tape"}
        )
    assert "no cassette folder is set: harness_cassettes = DIR" in caught.value.body["message"]
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_it_refuses_a_folder_that_is_not_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(harness):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-cassettes", "missing")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*--harness-cassettes: *missing is not a folder*"])


def test_server_mode_refuses_a_cassette_rather_than_drop_it() -> None:
    from harnessweb.testing.harness import Harness, HarnessError, Options
    from harnessweb.testing.remote import RemoteHarness, switch

    harness = Harness(options=Options(cassettes=str(VCR_DIR)))
    harness.use_cassette("openai_simple_text")
    with pytest.raises(HarnessError, match="in-process only; in server mode store the cassette on the server"):
        switch(harness, server=None)  # type: ignore[arg-type]
    assert type(harness) is Harness
    with pytest.raises(HarnessError, match=r"load_cassettes DIR\) and name it with the X-Harness-Cassette header"):
        RemoteHarness().use_cassette("openai_simple_text")


CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def test_an_llm_model_under_use_cassette_is_an_error_never_another_answer() -> None:
    from harnessweb.testing.harness import Harness, HarnessError, Options

    harness = Harness(options=Options(cassettes=str(VCR_DIR)))
    harness.set_response(text="configured")
    harness.use_cassette("openai_simple_text")
    with pytest.raises(HarnessError, match=r"use_cassette\('openai_simple_text'\) answers wire clients only"):
        harness.get_model("gpt-4o-mini").prompt("hi").text()
    harness.use_cassette(None)  # the configured answer is still there for the llm boundary
    assert harness.get_model("gpt-4o-mini").prompt("hi").text() == "configured"


def test_a_scenarios_cassette_in_process_is_recorded_as_the_cassettes_answer() -> None:
    from harnessweb.testing.harness import Harness, Options

    harness = Harness(options=Options(cassettes=str(VCR_DIR)))
    turns = [{"turn": 1, "response": {"kind": "text", "assistant_text": "From the scenario."}}]
    harness.use_scenario({"id": "taped", "cassette": "openai_simple_text", "turns": turns})
    stream = harness.openai_client().chat.completions.create(**CHAT)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "pong"
    assert harness.last_call.answered_by == "cassette"  # as a header's or use_cassette's replay records it


@pytest.mark.parametrize("how", ["header", "option"])
def test_a_request_naming_a_cassette_must_carry_its_key_when_keys_must_arrive(how: str) -> None:
    from harnessweb.testing.harness import Harness, Options

    harness = Harness(options=Options(cassettes=str(VCR_DIR), require_key=how == "option"))
    http = harness.http_client()
    named = {"X-Harness-Cassette": "openai_simple_text"}
    headers = {**named, "X-Harness-Require-Key": "1"} if how == "header" else named
    url = harness.base_url + "/v1/chat/completions"
    refused = http.post(url, json=CHAT, headers=headers)
    assert refused.status_code == 401
    assert refused.json()["error"]["message"].startswith("You didn't provide an API key.")
    assert harness.calls == []  # refused before the cassette answered, as the server refuses it
    replayed = http.post(url, json=CHAT, headers={**headers, "authorization": "Bearer sk-replay"})
    assert replayed.status_code == 200 and b"chatcmpl-vcr001" in replayed.content  # the recording
    harness.use_cassette("openai_simple_text")  # named by the test rather than the request: the same check
    assert http.post(url, json=CHAT, headers={"X-Harness-Require-Key": "1"}).status_code == 401
