"""A request event's headers, redacted when the request came, are not scanned again when the event is stored, and
are redacted as strictly as a scan would have: every member named like a secret, key shapes in names and values."""

from __future__ import annotations

from harnessweb.engine import redaction
from harnessweb.engine.redaction import Redacted, redact_data, redact_headers, redact_json

OPENAI = "sk-" + "a1B2c3D4e5F6g7H8i9J0" * 2


def test_redacted_headers_are_what_the_walk_would_make_of_them() -> None:
    headers = redact_headers({"apikey": "plain-secret-value", "x-note": OPENAI, OPENAI: "v"})
    assert isinstance(headers, Redacted)
    assert headers["apikey"].startswith("[REDACTED:")  # named like a secret member, as redact_json redacts it
    assert OPENAI not in str(headers)  # in a value and in a name
    assert dict(redact_json(dict(headers))) == dict(headers)  # the walk would change nothing more
    assert redact_json(headers) is headers  # and does not walk them


def test_a_request_events_headers_are_not_scanned_again(monkeypatch) -> None:
    scanned: list[str] = []
    suspect = redaction._suspect
    monkeypatch.setattr(redaction, "_suspect", lambda text: scanned.append(text) or suspect(text))
    headers = redact_headers({"authorization": "Bearer " + OPENAI, "user-agent": "OpenAI/Python 1.0"})
    event = {"method": "POST", "headers": headers, "body": {"model": "m", "messages": []}}
    assert redact_data(event) is event  # nothing left to redact
    assert scanned and "OpenAI/Python" not in scanned[0] and '"headers":{}' in scanned[0]


def test_the_rest_of_the_event_is_still_redacted() -> None:
    event = {"headers": redact_headers({"x-api-key": OPENAI}), "body": {"note": OPENAI, "api_key": "plain"}}
    stored = redact_data(event)
    assert OPENAI not in str(stored) and stored["body"]["api_key"].startswith("[REDACTED")
    assert stored["headers"] is event["headers"]
