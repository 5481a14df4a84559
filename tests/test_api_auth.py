"""Auth on every route, derived from the API itself: no token 401, a read token writing 403, nothing written.

The routes come from the OpenAPI schema of the live api object, so a route added later is covered without
touching this file; a POST that writes nothing says so with the ``x-required-scope: read`` mark.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from ninja.testing import TestClient

from harnessweb import apikit
from harnessweb.api import api
from runs_app import tokens
from runs_app.models import ApiToken, Cassette, JudgeBatch, Run, RunScript
from scenarios_app.models import Scenario
from tests.conftest import VCR_DIR, make_ci_run, make_client, make_scenario, make_token, vcr_fixture

pytestmark = pytest.mark.django_db

SAFE = {"get", "head", "options"}
JUNIT = Path(__file__).resolve().parent / "fixtures" / "junit" / "pytest.xml"


def make_targets() -> dict[str, Any]:
    """Rows for the path parameters, so that a request that got past auth would really write."""
    make_scenario("demo")
    run = make_ci_run()
    # One served exchange, so that the run has stream summaries and exports as a cassette.
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    request = {"method": "POST", "path": "/v1/chat/completions", "headers": {}, "body": body}
    run.events.create(seq=1, timestamp=run.started_at, kind="request", turn=1, data=request)
    run.events.create(seq=2, timestamp=run.started_at, kind="response", turn=1, data={"text": "hi", "status": 200})
    RunScript.objects.create(run_id=run.id, script={"answers": [], "errors": []})
    data = (VCR_DIR / "openai_simple_text.json").read_bytes()
    cassette = Cassette.objects.create(
        name="openai_simple_text.json", provider="openai", scenario="simple_text", content=data, digest="0" * 64, size=1
    )
    job = JudgeBatch.objects.create(criteria="c", run_ids=[str(run.id)], total=1)
    return {"run_id": run.id, "scenario_id": "demo", "cassette_id": cassette.id, "job_id": job.id}


def make_request(method: str, path: str) -> dict[str, Any]:
    """A body that the route would accept, so that a missing check shows up as a write, not as a 422."""
    scenario = {"turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "changed"}}]}
    examples: dict[tuple[str, str], dict[str, Any]] = {
        ("post", "/api/runs"): {"json": {"name": "written", "external_id": "auth-test"}},
        ("post", "/api/runs/{run_id}/finish"): {"json": {"status": "passed"}},
        ("put", "/api/runs/{run_id}/script"): {"json": {"answers": [{"text": "scripted"}]}},
        ("put", "/api/current-run"): {"json": {"run_id": None}},
        ("post", "/api/runs/{run_id}/calls"): {
            "json": {
                "calls": [{"protocol": "openai", "path": "/v1/chat/completions", "timestamp": "2026-11-23T00:00:00Z"}]
            }
        },
        ("post", "/api/runs/{run_id}/trace-logs"): {"json": {"turn_number": 1, "file_path": "a", "content": "b"}},
        ("post", "/api/runs/{run_id}/messages"): {"json": [{"role": "user", "content": "hi"}]},
        ("post", "/api/runs/{run_id}/artifacts"): {"json": {"name": "/u/abc", "content": "<p>page</p>"}},
        ("post", "/api/runs/{run_id}/judge"): {"json": {"criteria": ["c"]}},
        ("post", "/api/runs/{run_id}/verdicts"): {
            "json": {"criteria": [{"criterion": "c", "verdict": "PASS"}], "overall": "PASS"}
        },
        ("post", "/api/runs/{run_id}/junit"): {
            "data": JUNIT.read_bytes(),
            "headers": {"Content-Type": "application/xml"},
        },
        ("post", "/api/cassettes"): {
            "data": vcr_fixture("gemini_simple_text.json"),
            "headers": {"Content-Type": "application/json"},
            "query_params": {"name": "gemini_simple_text.json"},
        },
        ("put", "/api/scenarios/{scenario_id}"): {"json": scenario},
        ("post", "/api/scenarios/{scenario_id}/validate"): {"json": scenario},
    }
    return examples.get((method, path), {"json": {}})


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in api.get_openapi_schema()["paths"].items():
        for method, operation in methods.items():
            yield method, path, operation


def write_operations() -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for method, path, op in operations() if method not in SAFE]


def fill(path: str, targets: dict[str, Any]) -> str:
    """The schema path with its parameters filled in, relative to the api (as TestClient wants it)."""
    filled = re.sub(r"\{(\w+)\}", lambda m: str(targets.get(m.group(1), uuid.uuid4())), path)
    return filled.removeprefix("/api")


def snapshot() -> dict[str, Any]:
    """Everything the API could write: row counts of both apps and the rows the requests aim at."""
    models = [*apps.get_app_config("runs_app").get_models(), *apps.get_app_config("scenarios_app").get_models()]
    # Tokens record their last use on every request: that bookkeeping is not a write of the request.
    counts = {model.__name__: model.objects.count() for model in models if model is not ApiToken}
    return {
        "counts": counts,
        "runs": list(Run.objects.values_list("id", "status", "finished_at")),
        "scenarios": list(Scenario.objects.values_list("id", "revision", "data")),
    }


def call(client: TestClient, method: str, path: str, targets: dict[str, Any], **extra: Any) -> Any:
    request = make_request(method, path)
    headers = {**request.pop("headers", {}), **extra.pop("headers", {})}
    return client.request(method.upper(), fill(path, targets), headers=headers, **request, **extra)


def test_it_derives_the_write_routes_from_the_api() -> None:
    routes = {(method, path) for method, path, _ in write_operations()}

    assert {
        ("post", "/api/runs"),
        ("post", "/api/runs/{run_id}/finish"),
        ("post", "/api/runs/{run_id}/trace-logs"),
        ("post", "/api/runs/{run_id}/verdicts"),
        ("post", "/api/runs/{run_id}/junit"),
        ("post", "/api/cassettes"),
        ("put", "/api/scenarios/{scenario_id}"),
        ("delete", "/api/scenarios/{scenario_id}"),
        ("post", "/api/scenarios/{scenario_id}/validate"),
    } <= routes


@pytest.mark.parametrize("authorization", [None, "Bearer hrn_not-a-token", "Basic dXNlcjpwYXNz", "Bearer "])
def test_it_answers_401_json_on_every_route_without_a_valid_token(authorization: str | None) -> None:
    targets = make_targets()
    before = snapshot()
    client = TestClient(api, headers={"Authorization": authorization} if authorization else {})

    for method, path, _ in operations():
        response = call(client, method, path, targets)
        assert response.status_code == 401, (method, path)
        assert response.json()["detail"].startswith("Missing or invalid API token"), (method, path)

    assert snapshot() == before


def test_it_answers_403_to_a_read_token_on_every_write_route_and_writes_nothing() -> None:
    targets = make_targets()
    before = snapshot()
    client = make_client("read")

    for method, path, operation in write_operations():
        response = call(client, method, path, targets)
        if operation.get(apikit.SCOPE_MARK) == "read":
            assert response.status_code == 200, (method, path)
        else:
            assert response.status_code == 403, (method, path)
            assert "write scope" in response.json()["detail"], (method, path)

    assert snapshot() == before


def test_it_lets_a_write_token_through_every_write_route(settings: Any) -> None:
    targets = make_targets()
    client = make_client("write")
    judge = make_client("judge")  # queuing the judge needs judge scope (runs_app/judging/api.py tests it)
    settings.HARNESS_JUDGE_BASE_URL = "http://127.0.0.1:9/v1"
    settings.HARNESS_SESSION_SERVER = True  # PUT /api/current-run: only a pytest session's own server takes it

    for method, path, operation in write_operations():
        needs_judge = operation.get(apikit.SCOPE_MARK) == "judge"
        assert call(judge if needs_judge else client, method, path, targets).status_code < 400, (method, path)


def test_it_lets_a_read_token_read_every_read_route() -> None:
    targets = make_targets()
    client = make_client("read")

    for method, path, _ in operations():
        if method in SAFE:
            assert call(client, method, path, targets).status_code == 200, (method, path)


def test_it_refuses_a_revoked_token_and_records_last_use() -> None:
    row, token = tokens.issue("ci", "write")
    client = TestClient(api, headers={"Authorization": f"Bearer {token}"})

    assert client.get("/runs").status_code == 200
    row.refresh_from_db()
    assert row.last_used_at is not None
    ApiToken.objects.filter(pk=row.pk).update(revoked_at=timezone.now())
    assert client.get("/runs").status_code == 401
    assert client.post("/runs", json={"name": "late"}).status_code == 401
    assert not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_it_answers_401_and_403_over_http(harness_server: Any) -> None:
    url = f"{harness_server.url}/api/runs"
    read = {"Authorization": f"Bearer {make_token('read')}"}

    anonymous = httpx2.post(url, json={"name": "x"}, timeout=20)
    wrong = httpx2.get(url, headers={"Authorization": "Bearer nope"}, timeout=20)
    reader_writes = httpx2.post(url, json={"name": "x"}, headers=read, timeout=20)
    reader_reads = httpx2.get(url, headers=read, timeout=20)

    assert (anonymous.status_code, wrong.status_code, reader_writes.status_code) == (401, 401, 403)
    assert anonymous.headers["content-type"].startswith("application/json")
    assert reader_writes.json()["detail"].startswith("This token has read scope")
    assert reader_reads.status_code == 200
    assert not Run.objects.exists()


def test_it_shows_the_api_docs_to_staff_only() -> None:
    browser = Client()
    anonymous_docs = browser.get("/api/docs")
    anonymous_schema = browser.get("/api/openapi.json")
    User.objects.create_user("visitor", password="pw-visitor-123")
    browser.login(username="visitor", password="pw-visitor-123")
    visitor_docs = browser.get("/api/docs")
    User.objects.create_user("staff", password="pw-staff-123", is_staff=True)
    browser.login(username="staff", password="pw-staff-123")
    staff_docs = browser.get("/api/docs")
    staff_schema = browser.get("/api/openapi.json")

    assert anonymous_docs.status_code == 302
    assert anonymous_docs["Location"].startswith("/admin/login/")
    assert anonymous_schema.status_code == 302
    assert visitor_docs.status_code == 302
    assert staff_docs.status_code == 200
    assert staff_schema.status_code == 200
    assert "/api/runs/{run_id}/junit" in staff_schema.json()["paths"]
