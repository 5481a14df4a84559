"""The pure cassette rules (harnessweb.engine.vcr): modes and strictness, matching by method, path and body, the
mismatch message, the replayed bytes, and a forwarded exchange written down with its secrets redacted."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from harnessweb.engine import vcr
from harnessweb.engine.redaction import SECRET_HEADERS, marker
from tests.conftest import VCR_DIR


def make_cassette(*bodies: Any, url: str = "https://api.anthropic.com/v1/messages") -> dict[str, Any]:
    interactions = []
    for index, body in enumerate(bodies):
        request: dict[str, Any] = {"method": "POST", "url": url, "headers": []}
        if body is not None:
            request["body"] = body
        response = {"status": 200, "headers": [["Content-Type", "application/json"]], "body_chunks": [f"#{index}"]}
        interactions.append({"request": request, "response": response})
    return {"version": "1.0", "interactions": interactions}


@pytest.mark.parametrize(
    ("mode", "exists", "record", "strict", "fallback", "action"),
    [
        ("playback", True, False, False, False, "replay"),
        ("playback", False, False, False, False, "missing"),  # named by a request: that cassette or an error
        ("playback", False, False, False, True, "engine"),  # a scenario's own cassette: the scenario answers
        ("playback", False, False, True, True, "missing"),
        ("playback", True, True, False, False, "record"),
        ("record", True, False, False, False, "record"),
        ("record", False, False, True, False, "record"),
        ("auto", True, False, True, False, "replay"),
        ("auto", False, False, True, False, "record"),
    ],
)
def test_it_plans_by_mode_and_strictness(mode, exists, record, strict, fallback, action):
    assert vcr.plan(mode, exists=exists, record=record, strict=strict, fallback=fallback) == action


def test_it_refuses_a_mismatch_in_playback_and_falls_through_to_the_provider_in_auto_mode_when_not_strict():
    assert vcr.on_mismatch("auto", strict=False) == "record"
    assert vcr.on_mismatch("auto", strict=True) == "refuse"
    assert vcr.on_mismatch("playback", strict=False) == "refuse"
    assert vcr.on_mismatch("playback", strict=False, fallback=True) == "engine"
    assert vcr.on_mismatch("playback", strict=True, fallback=True) == "refuse"


def test_the_one_rule_replays_refuses_or_records():
    cassette = make_cassette({"model": "a"}, None)
    stored = ("tape.json", cassette)
    body = json.dumps({"model": "a"}).encode()
    replayed = vcr.outcome("tape", stored, "POST", "/v1/messages", body, mode="playback", strict=False)
    assert (replayed.action, replayed.name, replayed.replay.chunks) == ("replay", "tape.json", (b"#0",))
    missing = vcr.outcome("gone", None, "POST", "/v1/messages", body, mode="playback", strict=False,
                          header="x-harness-cassette", where="looked in /tapes")  # fmt: skip
    assert (missing.action, missing.status, missing.param) == ("refuse", 404, "x-harness-cassette")
    assert missing.message == "Cassette 'gone' is not stored: looked in /tapes"
    broken = vcr.outcome("bad", "bad.json is not a VCR cassette", "POST", "/", b"", mode="playback", strict=False)
    assert (broken.action, broken.status, broken.message) == ("refuse", 400, "bad.json is not a VCR cassette")
    elsewhere = vcr.outcome("tape", stored, "POST", "/v1/chat/completions", body, mode="playback", strict=False)
    assert (elsewhere.action, elsewhere.status) == ("refuse", 400)
    assert "No interaction of cassette 'tape.json' (2 recorded)" in elsewhere.message
    assert vcr.outcome("tape", stored, "POST", "/v1/x", body, mode="auto", strict=False).action == "record"
    assert vcr.outcome("tape", None, "POST", "/v1/x", body, mode="playback", strict=False, fallback=True).action == (
        "engine"
    )


def test_it_reads_the_mode():
    assert vcr.parse_mode("") == "playback"
    assert vcr.parse_mode(" Auto ") == "auto"
    with pytest.raises(ValueError, match="playback, record, auto"):
        vcr.parse_mode("replay")


def test_it_reads_a_name_with_or_without_json():
    assert vcr.cassette_names("a_b") == ("a_b", "a_b.json")
    assert vcr.cassette_names("a_b.json") == ("a_b.json", "a_b")
    assert vcr.file_name("a_b") == "a_b.json"


def test_it_matches_by_body_and_takes_the_first_that_matches():
    cassette = make_cassette({"n": 1}, {"n": 2, "x": [1.0]}, {"n": 2, "x": [1]})
    assert vcr.find(cassette, "POST", "/v1/messages", {"n": 2, "x": [1]}) == 1  # 1 and 1.0 are one JSON number
    assert vcr.find(cassette, "post", "/v1/messages/", {"n": 1}) == 0
    assert vcr.find(cassette, "POST", "/v1/messages", {"n": 3}) is None
    assert vcr.find(cassette, "GET", "/v1/messages", {"n": 1}) is None
    assert vcr.find(cassette, "POST", "/v1/chat/completions", {"n": 1}) is None


def test_it_matches_any_body_when_none_was_recorded_and_ignores_host_and_query():
    cassette = make_cassette(None, url="https://g.example/v1beta/models/m:streamGenerateContent?alt=sse&key=k")
    assert vcr.find(cassette, "POST", "/v1beta/models/m:streamGenerateContent", {"anything": True}) == 0
    assert vcr.find(cassette, "POST", "/v1beta/models/m:streamGenerateContent", None) == 0


def test_it_shows_the_request_and_the_closest_recorded_one():
    cassette = make_cassette({"model": "a", "system": "s"}, {"model": "b", "max_tokens": 9, "top_p": 1})
    sent = {"model": "b", "max_tokens": 10, "top_k": 3}
    message = vcr.mismatch_message("c.json", cassette, "POST", "/v1/messages", sent)
    assert message.startswith("No interaction of cassette 'c.json' (2 recorded) matches this request")
    assert 'Sent: POST /v1/messages {"model": "b", "max_tokens": 10, "top_k": 3}' in message
    assert "Closest recorded: #1 POST https://api.anthropic.com/v1/messages" in message
    assert message.endswith(
        "Differs at: body.max_tokens: recorded 9, sent 10; body.top_k: not recorded, sent 3; "
        "body.top_p: recorded 1, not sent"
    )


def test_it_replays_the_recorded_bytes_without_the_connections_headers():
    cassette = json.loads((VCR_DIR / "anthropic_simple_text.json").read_text())
    replay = vcr.replay(cassette["interactions"][0])
    recorded = cassette["interactions"][0]["response"]
    assert replay.status == 200
    assert replay.chunks == tuple(chunk.encode() for chunk in recorded["body_chunks"])
    names = [name for name, _ in replay.headers]
    assert b"request-id" in names and b"cf-ray" in names
    assert b"transfer-encoding" not in names and b"connection" not in names
    assert (b"request-id", b"req_011CXpDw2fefG6BP8gaJYnBG") in replay.headers


def test_it_decodes_base64_chunks():
    interaction = {"request": {}, "response": {"status": 200, "headers": [], "body_chunks_base64": ["/w==", "YQ=="]}}
    assert vcr.replay(interaction).chunks == (b"\xff", b"a")


def test_it_writes_down_an_exchange_with_its_secrets_redacted():
    headers = [("authorization", "Bearer sk-1"), ("x-goog-api-key", "k"), ("cookie", "s=1"), ("accept", "*/*")]
    request = vcr.recorded_request(
        "POST", "https://h/v1beta/models/m:streamGenerateContent?alt=sse&key=AIza", headers, b'{"a": 1}', SECRET_HEADERS
    )
    assert request == {
        "method": "POST",
        "url": f"https://h/v1beta/models/m:streamGenerateContent?alt=sse&key={marker('AIza')}",
        "headers": [
            ["authorization", f"Bearer {marker('sk-1')}"],  # the scheme kept, the token's fingerprint
            ["x-goog-api-key", marker("k")],
            ["cookie", marker("s=1")],
            ["accept", "*/*"],
        ],
        "body": {"a": 1},
    }
    response = vcr.recorded_response(
        200, [("set-cookie", "id=2"), ("x-request-id", "r")], [b"a", b"", b"b"], SECRET_HEADERS
    )
    assert response == {
        "status": 200,
        "headers": [["set-cookie", marker("id=2")], ["x-request-id", "r"]],
        "body_chunks": ["a", "b"],
    }
    binary = vcr.recorded_response(200, [], [b"\xff"], SECRET_HEADERS)
    assert binary["body_chunks_base64"] == [base64.b64encode(b"\xff").decode()]


def test_it_adds_a_new_interaction_and_replaces_one_recorded_again():
    first = {"request": {"method": "POST", "url": "https://h/v1/x", "headers": [], "body": {"n": 1}}, "response": {}}
    second = {"request": {"method": "POST", "url": "https://h/v1/x", "headers": [], "body": {"n": 2}}, "response": {}}
    again = {**first, "response": {"status": 201}}
    cassette = vcr.with_interaction(None, "c.json", first, "t1")
    assert cassette == {"version": "1.0", "test_name": "c", "recorded_at": "t1", "interactions": [first]}
    cassette = vcr.with_interaction(cassette, "c.json", second, "t2")
    cassette = vcr.with_interaction(cassette, "c.json", again, "t3")
    assert cassette["interactions"] == [again, second]
    assert json.loads(vcr.dump(cassette)) == cassette
