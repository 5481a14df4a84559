"""One set of secret headers, redacted in runs and refused unredacted in cassettes (harnessweb/engine/redaction.py)."""

from __future__ import annotations

from harnessweb.engine.redaction import REDACTED, SECRET_HEADERS, redact_headers
from runs_app.ci.cassettes import CassetteFile, leaked_secrets


def test_it_redacts_every_secret_header_and_keeps_the_rest() -> None:
    headers = dict.fromkeys(SECRET_HEADERS, "secret-value") | {"content-type": "application/json"}
    recorded = redact_headers(headers)
    assert {name: recorded[name] for name in SECRET_HEADERS} == dict.fromkeys(SECRET_HEADERS, REDACTED)
    assert recorded["content-type"] == "application/json"


def test_it_knows_the_headers_both_the_endpoint_and_the_cassettes_checked() -> None:
    assert {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"} <= SECRET_HEADERS


def test_it_refuses_a_cassette_with_any_secret_header_left_in_clear() -> None:
    for name in sorted(SECRET_HEADERS):
        cassette = CassetteFile.model_validate(
            {
                "version": "1",
                "interactions": [
                    {
                        "request": {"method": "POST", "url": "https://x", "headers": [[name.title(), "sk-live"]]},
                        "response": {"status": 200, "headers": [], "body_chunks": []},
                    }
                ],
            }
        )
        leaks = list(leaked_secrets(cassette))
        assert [leak["loc"] for leak in leaks] == [("interactions", 0, "request", "headers", 0)], name
