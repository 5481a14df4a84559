"""One redaction (harnessweb/engine/redaction.py): secret headers and query parameters, key shapes in text and JSON,
the marker keeping the scheme and the fingerprint; cassettes with a secret left in them refused."""

from __future__ import annotations

import secrets
import string
from typing import Any

import pytest

from harnessweb.engine import keys, redaction
from harnessweb.engine.redaction import (
    REDACTED,
    SECRET_HEADERS,
    SECRET_QUERY,
    fingerprint,
    first_secret,
    is_redacted,
    marker,
    redact_headers,
    redact_json,
    redact_text,
    redact_url,
    secrets_in_json,
    secrets_in_url,
)
from runs_app.ci.cassettes import CassetteFile, leaked_secrets


def _random(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


ANTHROPIC = "sk-ant-api03-" + _random(40)
OPENAI = "sk-proj-" + _random(48)
OPENAI_OLD = "sk-" + _random(48)
GOOGLE = "AIza" + _random(35)
AWS = "AKIA" + _random(16, string.ascii_uppercase + string.digits)
AWS_SESSION = "ASIA" + _random(16, string.ascii_uppercase + string.digits)
KEYS = (ANTHROPIC, OPENAI, OPENAI_OLD, GOOGLE, AWS, AWS_SESSION)


def test_the_fingerprint_is_one_function_the_keys_use_too() -> None:
    assert keys.fingerprint is redaction.fingerprint
    assert fingerprint("Bearer abc") == fingerprint("abc") == __import__("hashlib").sha256(b"abc").hexdigest()[:12]
    assert marker("abc") == f"[REDACTED:{fingerprint('abc')}]" and marker("") == REDACTED


def test_it_redacts_every_secret_header_keeping_its_scheme_and_fingerprint() -> None:
    headers = dict.fromkeys(SECRET_HEADERS, "secret-value") | {"content-type": "application/json"}
    headers["authorization"] = "Bearer tok-123"
    recorded = redact_headers(headers)
    assert recorded["authorization"] == f"Bearer [REDACTED:{fingerprint('tok-123')}]"
    assert {name: recorded[name] for name in SECRET_HEADERS - {"authorization"}} == dict.fromkeys(
        SECRET_HEADERS - {"authorization"}, marker("secret-value")
    )
    assert recorded["content-type"] == "application/json"
    assert redact_headers(recorded) == recorded  # redacting again changes nothing (no fingerprint of a marker)
    sigv4 = "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20240101/us-east-1/bedrock/aws4_request, Signature=ab12"
    assert redact_headers({"authorization": sigv4})["authorization"].startswith("AWS4-HMAC-SHA256 [REDACTED:")


@pytest.mark.parametrize("secret", KEYS)
def test_a_key_shape_in_any_other_header_or_name_is_redacted_beside_plain_ones(secret: str) -> None:
    """The headers are first looked at together: one that holds a key shape is still found among plain ones, in a
    value or a name, and the plain ones are kept as they came."""
    plain = {"user-agent": "OpenAI/Python 2.8.1", "x-stainless-os": "Linux", "authorization": "Bearer tok-1"}
    assert redact_headers(plain) == {**plain, "authorization": f"Bearer [REDACTED:{fingerprint('tok-1')}]"}
    for extra in ({"x-debug": f"key {secret}"}, {secret: "1"}):
        recorded = redact_headers({**plain, **extra})
        assert recorded == {**redact_headers(plain), **{redact_text(n): redact_text(v) for n, v in extra.items()}}
        assert secret not in str(recorded) and recorded["user-agent"] == plain["user-agent"]


def test_it_knows_the_secret_headers_and_query_parameters_of_every_provider() -> None:
    assert {
        "authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "cookie",
    } <= SECRET_HEADERS
    assert {
        "key",
        "api-key",
        "api_key",
        "access_token",
        "token",
        "sig",
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
    } == SECRET_QUERY


@pytest.mark.parametrize(
    "name", ["key", "api-key", "api_key", "access_token", "token", "sig", "X-Amz-Signature", "X-Amz-Credential",
             "X-Amz-Security-Token", "KEY"],
)  # fmt: skip
def test_it_redacts_each_secret_query_parameter_whatever_its_case(name: str) -> None:
    url = f"https://h/p?alt=sse&{name}=s3cr3t-value&b=2"
    redacted = redact_url(url)
    assert redacted == f"https://h/p?alt=sse&{name}={marker('s3cr3t-value')}&b=2"
    assert "s3cr3t" not in redact_text(f"GET {url} 200")
    assert secrets_in_url(url) == [name] and secrets_in_url(redacted) == []


@pytest.mark.parametrize(
    ("key", "kept"),
    [(ANTHROPIC, "sk-ant-"), (OPENAI, "sk-proj-"), (OPENAI_OLD, "sk-"), (GOOGLE, "AIza"), (AWS, "AKIA"),
     (AWS_SESSION, "ASIA")],
)  # fmt: skip
def test_it_redacts_key_shapes_in_text_keeping_the_scheme_and_the_keys_fingerprint(key: str, kept: str) -> None:
    text = f'line one\nsent "{key}" to the provider, twice: {key}.\n'
    redacted = redact_text(text)
    assert key not in redacted
    assert redacted == text.replace(key, f"{kept}[REDACTED:{fingerprint(key)}]")
    assert redact_text(redacted) == redacted
    assert first_secret(text) is not None and first_secret(text)[0] == 2 and first_secret(redacted) is None


def test_two_keys_stay_apart_and_one_key_reads_the_same_everywhere() -> None:
    other = "sk-ant-api03-" + _random(40)
    assert redact_text(ANTHROPIC) != redact_text(other)
    header = redact_headers({"x-api-key": ANTHROPIC})["x-api-key"]
    assert header.removeprefix("[REDACTED:").rstrip("]") == fingerprint(ANTHROPIC) in redact_text(ANTHROPIC)


def test_it_redacts_bearer_tokens_in_text_and_urls_but_not_prose() -> None:
    token = "ya29.a0AfH6SMB" + _random(30)
    assert redact_text(f"Authorization: Bearer {token}") == f"Authorization: Bearer {marker(token)}"
    assert token not in redact_text(f"https://x/cb?access_token={token}&state=1")
    prose = "Use Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or the bearer token of your account."
    assert redact_text(prose) == prose
    for harmless in ("task-management-system-overview", "ask-me-anything-about-it-please", "AKIAlowercase000000"):
        assert redact_text(harmless) == harmless


def test_it_walks_json_values_redacting_strings_and_members_named_like_secrets() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": f"use {GOOGLE}"}],
        "tools": [{"args": {"k": [AWS]}}],
        "api_key": "plain",
        "n": 1,
        "ok": True,
    }
    redacted = redact_json(body)
    assert redacted["messages"][0]["content"] == f"use AIza[REDACTED:{fingerprint(GOOGLE)}]"
    assert redacted["tools"][0]["args"]["k"] == [f"AKIA[REDACTED:{fingerprint(AWS)}]"]
    assert redacted["api_key"] == marker("plain") and redacted["n"] == 1 and redacted["ok"] is True
    assert body["messages"][0]["content"] == f"use {GOOGLE}"  # the given value is left alone
    assert dict(secrets_in_json(body)) == {
        "$.messages[0].content": "a Google API key (AIza…)",
        "$.tools[0].args.k[0]": "an AWS access key id (AKIA…/ASIA…)",
        "$.api_key": "member api_key is not redacted",
    }
    assert list(secrets_in_json(redacted)) == []


def test_a_redacted_value_is_recognised_with_or_without_scheme() -> None:
    for value in (REDACTED, "", marker("x"), f"Bearer {marker('x')}", "%5BREDACTED%3Aabcdefabcdef%5D"):
        assert is_redacted(value), value
    for value in ("x", "Bearer x", "[REDACTED] and more"):
        assert not is_redacted(value), value


def _cassette(request: dict, response: dict | None = None) -> CassetteFile:
    empty = {"status": 200, "headers": [], "body_chunks": []}
    interaction = {"request": {"method": "POST", "url": "https://x/v1", "headers": [], **request}}
    return CassetteFile.model_validate(
        {"version": "1", "interactions": [{**interaction, "response": response or empty}]}
    )


def test_it_refuses_a_cassette_with_any_secret_header_left_in_clear() -> None:
    for name in sorted(SECRET_HEADERS):
        leaks = list(leaked_secrets(_cassette({"headers": [[name.title(), "sk-live"]]})))
        assert [leak["loc"] for leak in leaks] == [("interactions", 0, "request", "headers", 0)], name


def test_it_refuses_a_cassette_naming_each_place_a_secret_is_left() -> None:
    cassette = _cassette(
        {
            "url": f"https://x/v1beta/models/m:generateContent?alt=sse&key={GOOGLE}&X-Amz-Signature=abc",
            "headers": [["user-agent", f"tool {OPENAI}"], ["authorization", f"Bearer {marker('t')}"]],
            "body": {"system": f"key {ANTHROPIC}", "messages": [{"content": [{"text": "hi"}, {"text": AWS}]}]},
        },
        {"status": 200, "headers": [], "body_chunks": ["ok", f"data: {OPENAI_OLD}\n\n"]},
    )
    leaks = {(leak["loc"], leak["msg"].partition(";")[0]) for leak in leaked_secrets(cassette, "c.json")}
    assert leaks == {
        (("interactions", 0, "request", "url"), "c.json: query parameter key is not redacted"),
        (("interactions", 0, "request", "url"), "c.json: query parameter X-Amz-Signature is not redacted"),
        (("interactions", 0, "request", "headers", 0),
         "c.json: header user-agent holds an OpenAI project key (sk-proj-…)"),
        (("interactions", 0, "request", "body"), "c.json: the request's body at $.system: an Anthropic key (sk-ant-…)"),
        (("interactions", 0, "request", "body"),
         "c.json: the request's body at $.messages[0].content[1].text: an AWS access key id (AKIA…/ASIA…)"),
        (("interactions", 0, "response", "body_chunks", 1), "c.json: the chunk holds an OpenAI key (sk-…)"),
    }  # fmt: skip


@pytest.mark.parametrize(
    "value",
    [
        {"plain": "hello", "n": 3, "nested": [{"x": None}]},
        {"headers": {"authorization": "Bearer [REDACTED:0123456789ab]", "host": "h"}},
        {"headers": {"authorization": "Bearer not-redacted-yet"}},
        {"X-Api-Key": "k"},
        {"api_key": ""},
        {"text": "a key: sk-ant-api03-abcdefghijklmnopqrstuvwx"},
        {"text": "line\nBearer abcdef1234567890xyz"},
        {"text": "tab\tbearer abcdef1234567890xyz"},
        {"url": "https://h/v1?alt=sse&key=abcdef"},
        {"url": "https://h/v1?X-Amz-Signature=abc123"},
        {"aws": "AKIAABCDEFGHIJKLMNOP"},
        {"google": "AIza" + "a" * 35},
        ["sk-proj-abcdefghijklmnopqrstuv", {"deep": {"deeper": "ASIAABCDEFGHIJKLMNOP"}}],
        {"equation": "a=b", "bearer": "the word bearer alone"},
        {"API_KEY": "k", "Authorization": "Token abc"},
        {"api_\u212aey": "k"},  # a Kelvin sign, lowercased to k by the walk as by the look
        {"text": "BEARER abcdef1234567890xyz"},
        {"url": "https://h/v1?KEY=abc"},
    ],
)
def test_the_quick_look_redacts_exactly_what_the_walk_does(value: Any) -> None:
    """``redact_data`` (one scan of the JSON text, a walk only on suspicion) agrees with ``redact_json`` always."""
    from harnessweb.engine.redaction import redact_data, redact_json

    assert redact_data(value) == redact_json(value)


def test_the_quick_look_hands_back_an_event_with_nothing_to_redact_untouched() -> None:
    from harnessweb.engine.redaction import redact_data

    request = {"headers": {"authorization": "Bearer [REDACTED:0123456789ab]"}, "body": {"messages": ["hi a=b"]}}
    assert redact_data(request) is request
