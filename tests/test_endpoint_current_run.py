"""The session run (``PUT /api/current-run``, runs_app/endpoint/current.py): only a server a pytest session owns
(``HARNESS_SESSION_SERVER``) takes it, with a write token, a UUID or null, and a 422 naming ``body.run_id``
otherwise; a shared server answers 409. Requests naming no run then belong to it (tests/test_plugin_server.py
drives it end to end through the plugin)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from runs_app.endpoint import current
from tests.conftest import make_client, make_token


@pytest.fixture
def session_server(settings: Any) -> Iterator[None]:
    settings.HARNESS_SESSION_SERVER = True
    current.set_current(None)  # whatever an earlier test of the API named
    yield
    current.set_current(None)


@pytest.mark.django_db
def test_a_session_server_takes_the_run_and_clears_it(session_server: None) -> None:
    run_id = uuid.uuid4()

    response = make_client().put("/current-run", json={"run_id": str(run_id)})

    assert (response.status_code, response.json()) == (200, {"run_id": str(run_id)})
    assert current.current() == run_id
    assert current.run_of(None) == run_id
    named = uuid.uuid4()
    assert current.run_of(named) == named  # a request that names its run keeps it
    assert make_client().put("/current-run", json={"run_id": None}).json() == {"run_id": None}
    assert current.run_of(None) is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"run_id": "not-a-uuid"}, "must be a UUID or null, not 'not-a-uuid'"),
        ({"run_id": 12}, "must be a UUID or null, not '12'"),
        ({}, "required"),
    ],
)
def test_it_refuses_a_bad_run_naming_the_field(session_server: None, body: object, message: str) -> None:
    current.set_current(uuid.uuid4())
    before = current.current()

    response = make_client().put("/current-run", json=body)

    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert error["field"] == "body.run_id" and message in error["message"]
    assert current.current() == before  # unchanged


@pytest.mark.django_db
def test_it_refuses_a_body_that_is_no_object(session_server: None) -> None:
    response = make_client().put("/current-run", json=["5f0c6a1e-3b59-4d5e-9a63-0c2f4f1b7d10"])

    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert error["field"] == "body" and "must be an object" in error["message"]


@pytest.mark.django_db
def test_it_needs_a_write_token(session_server: None) -> None:
    body = {"run_id": str(uuid.uuid4())}
    assert make_client("read").put("/current-run", json=body).status_code == 403
    assert current.current() is None


@pytest.mark.django_db
def test_a_shared_server_never_has_one() -> None:
    response = make_client().put("/current-run", json={"run_id": str(uuid.uuid4())})

    assert response.status_code == 409
    assert "HARNESS_SESSION_SERVER is off" in response.json()["detail"]
    assert current.current() is None


def test_the_served_app_refuses_anonymous_and_shared_use(harness_server, transactional_db: None) -> None:
    url = f"{harness_server.url}/api/current-run"
    body = {"run_id": str(uuid.uuid4())}
    assert httpx.put(url, json=body).status_code == 401
    refused = httpx.put(url, json=body, headers={"Authorization": f"Bearer {make_token('write')}"})
    assert refused.status_code == 409 and "X-Harness-Run" in refused.json()["detail"]
