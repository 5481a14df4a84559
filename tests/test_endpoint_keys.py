"""Keys that must arrive (seed 003 tier 1 check 3, tier 2 check 3): off by default; on with the
``X-Harness-Require-Key`` header, ``HARNESS_REQUIRE_KEY`` or a scenario's ``require_key``, a request whose key is
missing or in a header its provider does not read gets that provider's own refusal. Every request records where its
key came and its fingerprint, never the key."""

from __future__ import annotations

import json
import uuid

import anthropic
import httpx2
import openai
import pytest

from harnessweb.engine import keys
from harnessweb.engine.redaction import marker
from runs_app.models import RunEvent
from tests.conftest import make_scenario

REQUIRE = {"X-Harness-Require-Key": "1"}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def post(url: str, path: str, body: dict, headers: dict[str, str]) -> httpx2.Response:
    return httpx2.post(f"{url}{path}", json=body, headers=headers, timeout=20)


def test_it_answers_without_a_key_by_default(harness_server, transactional_db) -> None:
    assert post(harness_server.url, "/v1/chat/completions", CHAT, {}).status_code == 200


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "message"),
    [
        ("/v1/chat/completions", CHAT, {}, 401, "You didn't provide an API key."),
        ("/v1/chat/completions", CHAT, {"api-key": "k"}, 401, "You didn't provide an API key."),  # Azure's header
        ("/v1/messages", {**CHAT, "max_tokens": 9}, {"anthropic-version": "2023-06-01"}, 401, "x-api-key header is"),
        ("/v1/messages", {**CHAT, "max_tokens": 9}, {"x-api-key": "k"}, 400, "anthropic-version: header is required"),
        ("/v1beta/models/g:generateContent", {"contents": [{"parts": [{"text": "hi"}]}]}, {"authorization": "Bearer k"},
         403, "Method doesn't allow unregistered callers"),
        ("/openai/deployments/d/chat/completions?api-version=2024-10-21", {"messages": CHAT["messages"]},
         {"x-api-key": "k"}, 401, "Access denied due to missing subscription key."),
    ],
    ids=["openai-none", "openai-api-key", "anthropic-none", "anthropic-no-version", "gemini-bearer", "azure-x-api-key"],
)  # fmt: skip
def test_it_refuses_a_key_that_did_not_arrive_as_the_provider_does(
    harness_server, transactional_db, path, body, headers, status, message
) -> None:
    response = post(harness_server.url, path, body, {**REQUIRE, **headers})
    assert response.status_code == status and message in response.text


@pytest.mark.parametrize(
    ("path", "body", "headers"),
    [
        ("/v1/chat/completions", CHAT, {"authorization": "Bearer k"}),
        ("/v1/messages", {**CHAT, "max_tokens": 9}, {"x-api-key": "k", "anthropic-version": "2023-06-01"}),
        ("/v1beta/models/g:generateContent?key=k", {"contents": [{"parts": [{"text": "hi"}]}]}, {}),
        ("/openai/deployments/d/chat/completions", {"messages": CHAT["messages"]}, {"api-key": "k"}),
        ("/openai/deployments/d/chat/completions", {"messages": CHAT["messages"]}, {"authorization": "Bearer entra"}),
    ],
    ids=["openai", "anthropic", "gemini-query", "azure-key", "azure-entra"],
)  # fmt: skip
def test_it_lets_a_key_in_the_providers_own_place_through(
    harness_server, transactional_db, path, body, headers
) -> None:
    assert post(harness_server.url, path, body, {**REQUIRE, **headers}).status_code == 200


def test_it_reads_the_anthropic_sdks_key_as_a_bearer_token_too(harness_server, transactional_db) -> None:
    """The anthropic SDK (2.x) sends its api_key as ``Authorization: Bearer``, which the API reads as it reads
    ``x-api-key``; a key sent in another provider's header is still refused."""
    messages = [{"role": "user", "content": "hi"}]
    kept = anthropic.Anthropic(base_url=harness_server.url, api_key="sk-ant-k", default_headers=REQUIRE, max_retries=0)
    assert kept.messages.create(model="m", max_tokens=9, messages=messages).content
    misplaced = anthropic.Anthropic(
        base_url=harness_server.url,
        api_key="sk-ant-k",
        default_headers={**REQUIRE, "Authorization": anthropic.Omit(), "api-key": "sk-ant-k"},
        max_retries=0,
    )
    with pytest.raises(anthropic.AuthenticationError, match="x-api-key header is required"):
        misplaced.messages.create(model="m", max_tokens=9, messages=messages)


def test_it_requires_the_key_for_a_scenario_that_says_so(harness_server, transactional_db) -> None:
    make_scenario("keyed", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Keyed."}}], require_key=True)
    body = {"model": "m", "messages": [{"role": "user", "content": "keyed"}]}
    refused = post(harness_server.url, "/v1/chat/completions", body, {})
    assert refused.status_code == 401
    run = refused.headers["x-harness-run"]
    assert RunEvent.objects.filter(run_id=run, kind="rejected").exists()
    client = openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key="sk-present", max_retries=0)
    assert client.chat.completions.create(**body).choices[0].message.content == "Keyed."


def test_it_records_where_the_key_came_and_its_fingerprint_never_the_key(harness_server, transactional_db) -> None:
    secret = f"sk-live-{uuid.uuid4().hex}"
    run = str(uuid.uuid4())
    response = post(harness_server.url, "/v1/messages", {**CHAT, "max_tokens": 9},
                    {"x-api-key": secret, "anthropic-version": "2023-06-01", "x-harness-run": run})  # fmt: skip
    assert response.status_code == 200
    request = RunEvent.objects.get(run_id=run, kind="request")
    assert request.data["key"] == {"place": "x-api-key", "fingerprint": keys.fingerprint(secret)}
    stored = json.dumps(list(RunEvent.objects.filter(run_id=run).values_list("data", flat=True)))
    assert secret not in stored and len(keys.fingerprint(secret)) == 12


def test_it_shows_where_the_key_came_on_the_run_page(harness_server, transactional_db, admin_client) -> None:
    secret = f"sk-live-{uuid.uuid4().hex}"
    run = str(uuid.uuid4())
    post(harness_server.url, "/v1/chat/completions", CHAT, {"authorization": f"Bearer {secret}", "x-harness-run": run})
    page = admin_client.get(f"/runs/{run}/").content.decode()
    assert f"authorization, fingerprint {keys.fingerprint(secret)}" in page and secret not in page


def test_it_keeps_a_query_key_out_of_the_servers_access_log(harness_server, transactional_db) -> None:
    secret = f"AIza{uuid.uuid4().hex}"
    body = {"contents": [{"parts": [{"text": "hi"}]}]}
    assert post(harness_server.url, f"/v1beta/models/g:generateContent?key={secret}", body, {}).status_code == 200
    from tests.conftest import wait_for

    wait_for(lambda: f"/v1beta/models/g:generateContent?key={marker(secret)}" in harness_server.output(), timeout=5,
             message="the request in daphne's access log")  # fmt: skip
    assert secret not in harness_server.output()
