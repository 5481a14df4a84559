"""The key a scenario (or a run's script) expects, through the openai and anthropic SDKs against the real server: the
right key plays the turn; another key or none is a validation failure on the run that names the header the key came
in and its fingerprint, shown on the run page; the key itself is stored and shown nowhere."""

from __future__ import annotations

import json
import uuid

import anthropic
import httpx2
import openai

from harnessweb.engine import keys
from runs_app.models import Run, RunEvent
from tests.conftest import make_client, make_scenario, recorded_run

SECRET = f"sk-test-{uuid.uuid4().hex}"
OTHER = f"sk-test-{uuid.uuid4().hex}"
FP, OTHER_FP = keys.fingerprint(SECRET), keys.fingerprint(OTHER)
TURNS = [{"turn": 1, "response": {"kind": "text", "assistant_text": "The expected key."}}]


def run_of(raw) -> Run:
    return recorded_run(raw.headers["x-harness-run"], events=4)


def openai_ask(url: str, key: str, text: str, **kw) -> tuple[str, Run]:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, **kw)
    raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=[{"role": "user", "content": text}])
    return raw.parse().choices[0].message.content, run_of(raw)


def test_the_expected_key_plays_the_turn_through_openai(harness_server, transactional_db) -> None:
    make_scenario("expects-openai-key", TURNS, expect_key={"fingerprint": FP})
    text, run = openai_ask(harness_server.url, SECRET, "expects-openai-key")
    assert text == "The expected key."
    assert recorded_run(str(run.id), status="passed").status_reason == ""


def test_another_key_fails_the_run_naming_its_header_and_fingerprint(
    harness_server, transactional_db, admin_client
) -> None:
    make_scenario("expects-openai-key-2", TURNS, expect_key={"fingerprint": FP})
    text, run = openai_ask(harness_server.url, OTHER, "expects-openai-key-2")
    assert text == "Scenario validation failed."
    run = recorded_run(str(run.id), status="failed")
    expected = (
        f"Expected the API key with fingerprint {FP} but the request carried the key with fingerprint {OTHER_FP} "
        "in the authorization header"
    )
    assert expected in run.status_reason
    validation = RunEvent.objects.get(run_id=run.id, kind="validation")
    assert validation.data == {"ok": False, "problem": expected}
    page = admin_client.get(f"/runs/{run.id}/").content.decode()
    assert "API key" in page and f"fingerprint {OTHER_FP} in the authorization header" in page
    assert f"fingerprint {FP}" in page
    stored = json.dumps(list(RunEvent.objects.filter(run_id=run.id).values_list("data", flat=True)))
    for secret in (SECRET, OTHER):
        assert secret not in page and secret not in stored and secret not in run.status_reason


def test_a_missing_key_fails_the_run(harness_server, transactional_db) -> None:
    make_scenario("expects-a-key", TURNS, expect_key={"fingerprint": FP})
    body = {"model": "m", "messages": [{"role": "user", "content": "expects-a-key"}]}
    response = httpx2.post(f"{harness_server.url}/v1/chat/completions", json=body, timeout=20)
    assert response.status_code == 200
    run = recorded_run(response.headers["x-harness-run"], status="failed")
    assert run.status_reason.endswith(f"with fingerprint {FP} but the request carried no API key")


def test_anthropic_the_right_key_in_the_wrong_header_fails_when_the_place_is_named(
    harness_server, transactional_db
) -> None:
    make_scenario("expects-anthropic-key", TURNS, expect_key={"fingerprint": FP, "place": "x-api-key"})
    messages = [{"role": "user", "content": "expects-anthropic-key"}]
    ask = {"model": "claude-sonnet-4-6", "max_tokens": 50, "messages": messages}
    # The key sent in Anthropic's own header; then as the SDK sends an api_key today (a bearer token).
    good = anthropic.Anthropic(base_url=harness_server.url, default_headers={"X-Api-Key": SECRET}, max_retries=0)
    with good.messages.stream(**ask) as stream:
        assert stream.get_final_text() == "The expected key."
    bearer = anthropic.Anthropic(base_url=harness_server.url, api_key=SECRET, max_retries=0)
    raw = bearer.messages.with_raw_response.create(**ask)
    assert raw.parse().content[0].text == "Scenario validation failed."
    run = recorded_run(raw.headers["x-harness-run"], status="failed")
    assert (
        f"Expected the API key with fingerprint {FP} in the x-api-key header but the request carried the key with "
        f"fingerprint {FP} in the authorization header"
    ) in run.status_reason


def test_a_runs_script_expects_the_key_of_every_request(harness_server, transactional_db) -> None:
    run_id = uuid.uuid4()
    script = {"answers": [{"text": "scripted"}], "expect_key": {"fingerprint": FP}}
    stored = make_client().put(f"/runs/{run_id}/script", json=script)
    assert stored.status_code == 200 and stored.json()["expect_key"] == {"fingerprint": FP}
    headers = {"X-Harness-Run": str(run_id)}
    text, _ = openai_ask(harness_server.url, SECRET, "anything", default_headers=headers)
    assert text == "scripted"
    headers = {**headers, "X-Api-Key": OTHER}
    claude = anthropic.Anthropic(base_url=harness_server.url, default_headers=headers, max_retries=0)
    message = claude.messages.create(model="m", max_tokens=20, messages=[{"role": "user", "content": "x"}])
    assert message.content[0].text == "Scenario validation failed."
    run = recorded_run(str(run_id), status="failed")
    assert f"fingerprint {OTHER_FP} in the x-api-key header" in run.status_reason


def test_a_configured_failure_gives_way_to_the_keys_validation_failure(harness_server, transactional_db) -> None:
    run_id = uuid.uuid4()
    script = {"errors": [{"kind": "rate_limit", "times": 1}], "expect_key": {"fingerprint": FP}}
    make_client().put(f"/runs/{run_id}/script", json=script)
    text, _ = openai_ask(harness_server.url, OTHER, "x", default_headers={"X-Harness-Run": str(run_id)})
    assert text == "Scenario validation failed."


def test_a_script_with_a_key_in_place_of_a_fingerprint_is_refused_naming_the_field(transactional_db) -> None:
    response = make_client().put(f"/runs/{uuid.uuid4()}/script", json={"expect_key": {"fingerprint": SECRET}})
    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert error["field"] == "body.expect_key.fingerprint" and "12 hexadecimal digits" in error["message"]
    assert SECRET not in response.content.decode()
