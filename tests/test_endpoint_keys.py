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
from tests.conftest import make_scenario, recorded_run

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
        ("/api/v1/chat/completions", CHAT, {"x-api-key": "k"}, 401, "No auth credentials found"),  # OpenRouter's
    ],
    ids=["openai-none", "openai-api-key", "anthropic-none", "anthropic-no-version", "gemini-bearer", "azure-x-api-key",
         "openrouter-x-api-key"],
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
        ("/api/v1/chat/completions", CHAT, {"authorization": "Bearer k"}),
    ],
    ids=["openai", "anthropic", "gemini-query", "azure-key", "azure-entra", "openrouter"],
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


# -- every route that plays a provider checks keys the same way: embeddings, token counts, model lists ---------------

EMBED = {"model": "text-embedding-3-small", "input": "hi"}
COHERE_EMBED = {"model": "embed-v4.0", "texts": ["hi"], "input_type": "search_document"}
# (method, path, body, where the provider reads its key, the refusal's status and message)
ROUTES = [
    ("POST", "/v1/embeddings", EMBED, {"authorization": "Bearer k"}, 401, "You didn't provide an API key."),
    ("POST", "/v2/embed", COHERE_EMBED, {"authorization": "Bearer k"}, 401, "no api key supplied"),
    ("POST", "/openai/deployments/e/embeddings?api-version=2024-10-21", {"input": "hi"}, {"api-key": "k"}, 401,
     "Access denied due to missing subscription key."),
    ("POST", "/v1/messages/count_tokens", {**CHAT, "max_tokens": 9}, {"x-api-key": "k"}, 401, "x-api-key header is"),
    ("GET", "/v1/models", None, {"authorization": "Bearer k"}, 401, "You didn't provide an API key."),
]  # fmt: skip
ROUTE_IDS = ["openai-embeddings", "cohere-embed", "azure-embeddings", "anthropic-count-tokens", "openai-models"]


@pytest.mark.parametrize(("method", "path", "body", "key", "status", "message"), ROUTES, ids=ROUTE_IDS)
def test_every_route_refuses_a_key_that_did_not_arrive(
    harness_server, transactional_db, method, path, body, key, status, message
) -> None:
    version = {"anthropic-version": "2023-06-01"} if "count_tokens" in path else {}
    send = lambda headers: httpx2.request(method, f"{harness_server.url}{path}", json=body, headers=headers, timeout=20)  # noqa: E731
    refused = send({**REQUIRE, **version})
    assert refused.status_code == status and message in refused.text
    elsewhere = {"x-api-key": "k"} if "api-key" in key else {"api-key": "k"}  # a header the provider does not read
    assert send({**REQUIRE, **version, **elsewhere}).status_code == status
    assert send({**REQUIRE, **version, **key}).status_code == 200
    assert send(version).status_code == 200  # off by default


@pytest.fixture(scope="module")
def keyed_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """A server started with ``HARNESS_REQUIRE_KEY=1``."""
    from tests.conftest import running_server

    env = {"HARNESS_PACING": "off", "HARNESS_REQUIRE_KEY": "1"}
    with running_server(tmp_path_factory.mktemp("keyed"), env) as server:
        yield server


def test_a_server_that_requires_keys_refuses_embeddings_without_one(keyed_server, transactional_db) -> None:
    import cohere

    url = keyed_server.url
    keyed = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-embed", max_retries=0)
    assert len(keyed.embeddings.create(model="text-embedding-3-small", input="hi").data) == 1
    with pytest.raises(openai.AuthenticationError, match="You didn't provide an API key"):
        keyed.embeddings.create(model="text-embedding-3-small", input="hi", extra_headers=NO_BEARER)
    azure = openai.AzureOpenAI(azure_endpoint=url, api_key="azure-key", api_version="2024-10-21", max_retries=0)
    assert len(azure.embeddings.create(model="embedding-deployment", input=["a", "b"]).data) == 2
    entra = openai.AzureOpenAI(azure_endpoint=url, azure_ad_token="entra-token", api_version="2024-10-21",
                               max_retries=0)  # fmt: skip
    assert len(entra.embeddings.create(model="embedding-deployment", input="a").data) == 1
    with pytest.raises(openai.AuthenticationError) as caught:  # the key in a header Azure does not read
        azure.embeddings.create(model="embedding-deployment", input="a",
                                extra_headers={"api-key": openai.Omit(), "x-api-key": "azure-key"})  # fmt: skip
    assert caught.value.body == {"code": "401", "message": keys.MISSING["azure"][1]}
    co = cohere.ClientV2(api_key="co-key", base_url=url, max_retries=0, timeout=20)
    assert len(co.embed(model="embed-v4.0", texts=["a"], input_type="search_document").embeddings.float_) == 1
    with pytest.raises(cohere.UnauthorizedError) as refused:
        cohere.ClientV2(api_key="", base_url=url, max_retries=0, timeout=20).embed(
            model="embed-v4.0", texts=["a"], input_type="search_document"
        )
    assert refused.value.body["message"] == "no api key supplied"


# -- Azure's v1 routes read Azure's keys and refuse in Azure's format ----------------------------------------------

V1_CALLS = ("chat", "responses")
NO_BEARER = {"Authorization": openai.Omit()}  # the openai client's own bearer left out of a request


def v1_call(client: openai.OpenAI, kind: str, **headers: object) -> str:
    if kind == "chat":
        reply = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hello"}], extra_headers=headers or None
        )
        return reply.choices[0].message.content
    return client.responses.create(model="gpt-4o", input="hello", extra_headers=headers or None).output_text


@pytest.mark.parametrize("kind", V1_CALLS)
def test_azures_v1_routes_read_the_api_key_header_and_an_entra_token(harness_server, transactional_db, kind) -> None:
    base_url = f"{harness_server.url}/openai/v1/"
    # Azure's v1 docs: OpenAI's client on the v1 base URL, with the key (or an Entra token) as its api_key.
    by_token = openai.OpenAI(base_url=base_url, api_key="entra-token", max_retries=0, default_headers=REQUIRE)
    assert v1_call(by_token, kind).endswith("hello")
    # A client that sends the key in Azure's own header (as on the deployment routes) and no bearer.
    by_key = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0,
                           default_headers={**REQUIRE, "api-key": "azure-v1-key"})  # fmt: skip
    assert v1_call(by_key, kind, **NO_BEARER).endswith("hello")
    raw = by_key.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "keyed"}], extra_headers=NO_BEARER
    )
    request = recorded_run(raw.headers["x-harness-run"]).events.get(kind="request")
    assert request.data["key"] == {"place": "api-key", "fingerprint": keys.fingerprint("azure-v1-key")}


@pytest.mark.parametrize("kind", V1_CALLS)
@pytest.mark.parametrize("headers", [{}, {"x-api-key": "k"}], ids=["none", "x-api-key"])
def test_azures_v1_routes_refuse_a_missing_key_in_azures_format(
    harness_server, transactional_db, kind, headers
) -> None:
    client = openai.OpenAI(base_url=f"{harness_server.url}/openai/v1/", api_key="unused", max_retries=0,
                           default_headers={**REQUIRE, **headers})  # fmt: skip
    with pytest.raises(openai.AuthenticationError) as caught:
        v1_call(client, kind, **NO_BEARER)
    assert caught.value.body == {"code": "401", "message": keys.MISSING["azure"][1]}
    run = caught.value.response.headers["x-harness-run"]
    assert recorded_run(run).events.filter(kind="rejected").exists()


def test_in_process_a_refusal_carries_the_request_id_as_the_servers_does(harness_server, transactional_db) -> None:
    """Anthropic's errors carry the request id in the body as in the ``request-id`` header: the in-process refusal
    is the server's, byte for byte but the id."""
    from harnessweb.testing.harness import Harness

    body = {**CHAT, "max_tokens": 9}
    headers = {**REQUIRE, "anthropic-version": "2023-06-01"}
    served = post(harness_server.url, "/v1/messages", body, headers)
    in_process = Harness().http_client().post(Harness.base_url + "/v1/messages", json=body, headers=headers)
    for response in (served, in_process):
        assert response.status_code == 401
        assert response.json()["request_id"] == response.headers["request-id"] != ""
    assert {**in_process.json(), "request_id": "-"} == {**served.json(), "request_id": "-"}
