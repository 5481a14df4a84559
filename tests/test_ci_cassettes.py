"""Cassette uploads: kept byte for byte, provider and scenario from the name, unredacted secrets refused."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.datastructures import MultiValueDict
from ninja.testing import TestClient

from runs_app.ci.cassettes import parse_cassette_name
from runs_app.models import Cassette, Provider
from tests.conftest import make_client, make_token, vcr_fixture

pytestmark = pytest.mark.django_db


def make_cassette(name: str = "anthropic_simple_text.json") -> bytes:
    return vcr_fixture(name)


def make_leaky(header: str, value: str, side: str = "request") -> bytes:
    cassette = json.loads(make_cassette("openai_simple_text.json"))
    cassette["interactions"][0][side]["headers"].append([header, value])
    return json.dumps(cassette, indent=2).encode()


def upload(client: TestClient, data: bytes, **query: str) -> Any:
    return client.post("/cassettes", data=data, query_params=query, headers={"Content-Type": "application/json"})


@pytest.mark.backends
@pytest.mark.parametrize(
    "name",
    [
        "anthropic_simple_text.json",
        "anthropic_unicode_content.json",
        "gemini_tool_call_single.json",
        "azure_bad_request_400.json",
    ],
)
def test_it_gives_back_the_uploaded_bytes_exactly(name: str) -> None:
    client = make_client()
    data = make_cassette(name)

    created = upload(client, data, name=name)
    download = client.get(f"/cassettes/{created.json()['id']}")

    assert created.status_code == 201
    assert created.json()["size"] == len(data)
    assert download.status_code == 200
    assert download.content == data
    assert download["Content-Type"] == "application/json"
    assert download["Content-Disposition"] == f'attachment; filename="{name}"'


def test_it_reads_provider_and_scenario_from_both_name_forms() -> None:
    client = make_client()

    old_form = upload(client, make_cassette("anthropic_rate_limit_429.json"), name="anthropic_rate_limit_429.json")
    seed_form = upload(client, make_cassette("openai_simple_text.json"), name="verify_openai_simple_text.json")

    assert (old_form.json()["provider"], old_form.json()["scenario"]) == ("anthropic", "rate_limit_429")
    assert (seed_form.json()["provider"], seed_form.json()["scenario"]) == ("openai", "simple_text")
    assert seed_form.json()["name"] == "verify_openai_simple_text.json"


def test_it_recognises_registered_providers_with_underscores() -> None:
    Provider.objects.get_or_create(name="sap_ai_core", defaults={"onboarding": "openai_compatible"})

    response = upload(
        make_client(), make_cassette("openai_simple_text.json"), name="verify_sap_ai_core_simple_text.json"
    )

    assert (response.json()["provider"], response.json()["scenario"]) == ("sap_ai_core", "simple_text")


def test_it_parses_cassette_names() -> None:
    assert parse_cassette_name("verify_openai_error_auth_401.json") == ("openai", "error_auth_401")
    assert parse_cassette_name("gemini_tool_call_single.json") == ("gemini", "tool_call_single")
    assert parse_cassette_name("verify_kimi-for-coding_simple_text.json") == ("kimi-for-coding", "simple_text")
    assert parse_cassette_name("fixtures/vcr/verify_zai_unicode_text.json") == ("zai", "unicode_text")
    assert parse_cassette_name("verify_sap_ai_core_simple_text.json", ["sap", "sap_ai_core"]) == (
        "sap_ai_core",
        "simple_text",
    )
    assert parse_cassette_name("manifest.json") is None
    assert parse_cassette_name("verify_.json") is None


def test_it_takes_explicit_provider_and_scenario_over_the_name() -> None:
    response = upload(
        make_client(),
        make_cassette("azure_simple_text.json"),
        name="recording.json",
        provider="azure",
        scenario="simple_text",
    )

    assert response.status_code == 201
    assert (response.json()["name"], response.json()["provider"], response.json()["scenario"]) == (
        "recording.json",
        "azure",
        "simple_text",
    )


def test_it_names_the_cassette_after_provider_and_scenario_when_no_name_is_given() -> None:
    response = upload(make_client(), make_cassette("azure_simple_text.json"), provider="azure", scenario="simple_text")

    assert response.json()["name"] == "verify_azure_simple_text.json"


def test_it_refuses_a_name_it_cannot_read() -> None:
    response = upload(make_client(), make_cassette(), name="recording.json")

    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "query.name"
    assert not Cassette.objects.exists()


def test_it_refuses_a_name_with_control_characters() -> None:
    response = upload(make_client(), make_cassette(), name="verify_openai_simple\n_text.json")

    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "query.name"


@pytest.mark.backends
def test_it_stores_the_same_bytes_once() -> None:
    client = make_client()

    first = upload(client, make_cassette(), name="anthropic_simple_text.json")
    again = upload(client, make_cassette(), name="verify_anthropic_simple_text.json")

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["duplicate"] is True
    assert Cassette.objects.count() == 1


@pytest.mark.parametrize(
    ("header", "value", "side"),
    [
        ("Authorization", "Bearer sk-live-0123456789", "request"),
        ("x-api-key", "sk-ant-api03-abcdef", "request"),
        ("api-key", "0123456789abcdef", "request"),
        ("Cookie", "session=abc123", "request"),
        ("Set-Cookie", "__cf_bm=abc; path=/; HttpOnly", "response"),
    ],
)
def test_it_refuses_an_unredacted_secret_naming_the_header(header: str, value: str, side: str) -> None:
    response = upload(make_client(), make_leaky(header, value, side), name="verify_openai_simple_text.json")

    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert header in error["message"]
    assert error["field"].startswith(f"body.interactions.0.{side}.headers.")
    assert error["type"] == "unredacted_secret"
    assert not Cassette.objects.exists()


@pytest.mark.parametrize("value", ["[REDACTED]", "", "Bearer [REDACTED]"])
def test_it_accepts_redacted_secrets(value: str) -> None:
    response = upload(make_client(), make_leaky("Authorization", value), name="verify_openai_simple_text.json")

    assert response.status_code == 201


def test_it_names_the_field_path_of_a_malformed_cassette() -> None:
    client = make_client()
    cassette = json.loads(make_cassette())
    cassette["interactions"][0]["response"]["status"] = "ok"
    cassette["interactions"][0]["request"]["headers"][1] = ["Accept"]

    manifest = upload(client, make_cassette("anthropic_manifest.json"), name="anthropic_manifest.json")
    broken = upload(client, json.dumps(cassette).encode(), name="anthropic_simple_text.json")
    not_json = upload(client, b'{"version": "1.0",\n"interactions": [}', name="anthropic_simple_text.json")

    assert manifest.status_code == 422
    assert "body.interactions" in {error["field"] for error in manifest.json()["errors"]}
    assert {error["field"] for error in broken.json()["errors"]} == {
        "body.interactions.0.request.headers.1.1",
        "body.interactions.0.response.status",
    }
    assert (not_json.json()["errors"][0]["line"], not_json.json()["errors"][0]["column"]) == (2, 18)
    assert not Cassette.objects.exists()


def test_it_accepts_a_multipart_file_named_by_its_file_name() -> None:
    files = MultiValueDict(
        {"file": [SimpleUploadedFile("verify_gemini_simple_text.json", make_cassette("gemini_simple_text.json"))]}
    )

    response = make_client().post(
        "/cassettes",
        data={"commit": "3f9c2e1"},
        FILES=files,
        headers={"Content-Type": "multipart/form-data; boundary=x"},
    )

    assert response.status_code == 201
    body = response.json()
    assert (body["provider"], body["scenario"], body["commit"]) == ("gemini", "simple_text", "3f9c2e1")


def test_it_lists_cassettes_by_provider_and_scenario() -> None:
    client = make_client()
    for name in ("openai_simple_text.json", "openai_tool_call_single.json", "gemini_simple_text.json"):
        upload(client, make_cassette(name), name=name)

    openai = client.get("/cassettes?provider=openai").json()
    simple = client.get("/cassettes?scenario=simple_text").json()

    assert [item["scenario"] for item in openai["items"]] == ["simple_text", "tool_call_single"]
    assert [item["provider"] for item in simple["items"]] == ["gemini", "openai"]
    assert "content" not in openai["items"][0]
    assert client.get("/cassettes/999999").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_it_round_trips_a_cassette_over_http(harness_server: Any) -> None:
    data = make_cassette("anthropic_unicode_content.json")
    headers = {"Authorization": f"Bearer {make_token()}"}
    with httpx2.Client(base_url=f"{harness_server.url}/api", headers=headers, timeout=20) as client:
        created = client.post(
            "/cassettes",
            params={"name": "verify_anthropic_unicode_text.json"},
            content=data,
            headers={"Content-Type": "application/json"},
        )
        uploaded = client.post("/cassettes", files={"file": ("verify_anthropic_unicode_text.json", data)})
        download = client.get(f"/cassettes/{created.json()['id']}")
        leaky = client.post(
            "/cassettes",
            params={"name": "verify_openai_simple_text.json"},
            content=make_leaky("X-Api-Key", "sk-live-1"),
        )

    assert (created.status_code, uploaded.status_code) == (201, 200)
    assert download.content == data
    assert download.headers["content-type"] == "application/json"
    assert download.headers["content-disposition"] == 'attachment; filename="verify_anthropic_unicode_text.json"'
    assert leaky.status_code == 422
    assert "X-Api-Key" in leaky.json()["errors"][0]["message"]
    assert Cassette.objects.count() == 1
