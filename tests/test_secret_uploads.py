"""Uploads that carry a secret: a cassette or a trace log holding one is refused (422) naming the file and the place
(the repository's own Gemini cassettes, recorded with ``?key=test-key``, first); JUnit output and uploaded calls are
stored redacted; cassette matching compares a request redacted, as it was recorded."""

from __future__ import annotations

import json

import pytest

from harnessweb.engine import vcr
from harnessweb.engine.redaction import fingerprint, marker
from runs_app.models import Cassette, RunEvent, TraceLog
from runs_app.models import TestCaseResult as CaseResult  # not "Test*": pytest would try to collect it
from tests.conftest import VCR_DIR, make_ci_run, make_client, vcr_fixture

pytestmark = pytest.mark.django_db

ANTHROPIC = "sk-ant-api03-Xq3vT9mWcR2pL8sKdN5fHj7gYb4uEa6zQo1iVt0wxyzA"
GOOGLE = "AIzaSyD3f8Gk2LmN9pQr5StUv7WxYz1AbCdEfGh"


def upload_cassette(data: bytes, name: str) -> object:
    return make_client().post(
        "/cassettes", data=data, query_params={"name": name}, headers={"Content-Type": "application/json"}
    )


def test_it_refuses_the_repositorys_own_gemini_cassette_naming_the_file_interaction_and_parameter() -> None:
    name = "gemini_simple_text.json"
    assert b"alt=sse&key=test-key" in (VCR_DIR / name).read_bytes()  # as the fixture was recorded

    response = upload_cassette((VCR_DIR / name).read_bytes(), name)

    assert response.status_code == 422
    (error,) = response.json()["errors"]
    assert error["field"] == "body.interactions.0.request.url" and error["type"] == "unredacted_secret"
    assert error["message"].startswith(f"{name}: query parameter key is not redacted")
    assert not Cassette.objects.exists()
    assert upload_cassette(vcr_fixture(name), name).status_code == 201  # with the key redacted it is taken


def test_it_refuses_a_cassette_with_a_key_in_its_request_body_naming_the_json_path() -> None:
    cassette = json.loads(vcr_fixture("anthropic_simple_text.json"))
    cassette["interactions"][0]["request"]["body"]["system"] = f"the key is {ANTHROPIC}"
    cassette["interactions"][0]["request"]["url"] += "?X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20240101"

    response = upload_cassette(json.dumps(cassette).encode(), "anthropic_leaky.json")

    assert response.status_code == 422
    found = {(e["field"], e["message"].partition(";")[0]) for e in response.json()["errors"]}
    assert found == {
        ("body.interactions.0.request.url", "anthropic_leaky.json: query parameter X-Amz-Credential is not redacted"),
        ("body.interactions.0.request.body",
         "anthropic_leaky.json: the request's body at $.system: an Anthropic key (sk-ant-…)"),
    }  # fmt: skip
    assert ANTHROPIC not in response.content.decode()  # the refusal names the place, never the key


def test_it_refuses_a_trace_log_holding_a_key_naming_the_file_and_line() -> None:
    run = make_ci_run()
    log = {"turn_number": 1, "file_path": "logs/turn-1.log", "content": f"start\nPOST /v1beta?key={GOOGLE}\nend"}

    one = make_client().post(f"/runs/{run.id}/trace-logs", json=log)
    many = make_client().post(f"/runs/{run.id}/trace-logs", json=[{**log, "content": "clean"}, log])

    assert one.status_code == 422
    (error,) = one.json()["errors"]
    assert error["field"] == "body.content"
    assert "logs/turn-1.log, line 2, holds a Google API key (AIza…)" in error["message"]
    assert GOOGLE not in one.content.decode()
    assert many.status_code == 207
    assert [item["accepted"] for item in many.json()["results"]] == [True, False]
    assert list(TraceLog.objects.values_list("content", flat=True)) == ["clean"]


def test_it_stores_junit_output_with_its_keys_redacted() -> None:
    run = make_ci_run()
    xml = f"""<testsuite name="s"><testcase name="t" classname="c">
        <failure message="401 for Bearer {ANTHROPIC}">trace</failure>
        <properties><property name="key" value="{GOOGLE}"/></properties></testcase></testsuite>"""

    response = make_client().post(
        f"/runs/{run.id}/junit", data=xml.encode(), headers={"Content-Type": "application/xml"}
    )

    assert response.status_code == 201, response.content
    case = CaseResult.objects.get(run=run)
    assert case.message == f"401 for Bearer sk-ant-{marker(ANTHROPIC)}"  # the key shape kept after the scheme
    assert case.properties["key"] == f"AIza[REDACTED:{fingerprint(GOOGLE)}]"


def test_it_stores_uploaded_calls_with_their_keys_redacted() -> None:
    run = make_ci_run()
    call = {
        "protocol": "openai",
        "model": "m",
        "path": f"/v1/chat/completions?api-key={GOOGLE}",
        "body": {"messages": [{"role": "system", "content": ANTHROPIC}]},
        "timestamp": "2026-11-23T10:00:00Z",
    }
    assert make_client().post(f"/runs/{run.id}/calls", json={"calls": [call]}).status_code == 201
    stored = json.dumps(list(RunEvent.objects.filter(run=run).values_list("data", flat=True)))
    assert ANTHROPIC not in stored and GOOGLE not in stored
    assert f"sk-ant-[REDACTED:{fingerprint(ANTHROPIC)}]" in stored


def test_cassette_matching_ignores_the_query_and_compares_the_body_redacted() -> None:
    recorded = {
        "method": "POST",
        "url": f"https://h/v1beta/models/m:generateContent?key={marker(GOOGLE)}",
        "body": {"system": f"sk-ant-[REDACTED:{fingerprint(ANTHROPIC)}]", "n": 1},
    }
    cassette = {"interactions": [{"request": recorded}]}
    path = "/v1beta/models/m:generateContent"
    assert vcr.find(cassette, "POST", path, {"system": ANTHROPIC, "n": 1}) == 0
    other = "sk-ant-api03-" + "b" * 40
    assert vcr.find(cassette, "POST", path, {"system": other, "n": 1}) is None  # another key differs
    message = vcr.mismatch_message("c", cassette, "POST", path, {"system": other, "n": 1})
    assert other not in message and f"sk-ant-[REDACTED:{fingerprint(other)}]" in message


def test_a_recorded_exchange_keeps_no_key_in_its_body_or_chunks_even_one_split_between_two() -> None:
    body = json.dumps({"system": ANTHROPIC, "contents": [{"parts": [{"text": GOOGLE}]}]}).encode()
    request = vcr.recorded_request("POST", f"https://h/v1/x?key={GOOGLE}", [], body, set())
    assert ANTHROPIC not in json.dumps(request) and GOOGLE not in json.dumps(request)
    assert request["body"]["system"] == f"sk-ant-[REDACTED:{fingerprint(ANTHROPIC)}]"
    half = len(GOOGLE) // 2
    response = vcr.recorded_response(200, [], [b"data: ok " + GOOGLE[:half].encode(), GOOGLE[half:].encode()], set())
    assert response["body_chunks"] == [f"data: ok AIza[REDACTED:{fingerprint(GOOGLE)}]"]
    kept = vcr.recorded_response(200, [], [b"data: a\n\n", b"data: b\n\n"], set())
    assert kept["body_chunks"] == ["data: a\n\n", "data: b\n\n"]  # chunks without a key keep their bounds
