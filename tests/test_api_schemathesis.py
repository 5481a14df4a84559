"""Property-based tests of every API operation from the OpenAPI schema: whatever the input, no 500.

The schema is read from the api object (the served one is for staff only) and requests go through Django's WSGI
handler in-process, on the test database. Examples are bounded and derandomized so that the run is quick and
repeatable.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from harnessweb.api import api
from runs_app import tokens
from runs_app.models import Cassette
from tests.conftest import VCR_DIR, make_ci_run

schema = schemathesis.openapi.from_dict(api.get_openapi_schema())
schema.app = WSGIHandler()


def make_targets() -> dict[str, str]:
    """An existing run and cassette, so that generated bodies reach the code behind the 404."""
    run = make_ci_run()
    data = (VCR_DIR / "openai_simple_text.json").read_bytes()
    cassette = Cassette.objects.create(
        name="openai_simple_text.json", provider="openai", scenario="simple_text", content=data, digest="0" * 64, size=1
    )
    return {"run_id": str(run.id), "cassette_id": str(cassette.id)}


@pytest.fixture
def keep_connection() -> Iterator[None]:
    """Keep the test's database connection (and its transaction) across requests, as Django's test client does:
    the WSGI handler would close it when a request starts and finishes."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def write_token(db: None, keep_connection: None) -> str:
    return tokens.issue("schemathesis", "write")[1]


@pytest.fixture
def targets(db: None) -> dict[str, str]:
    return make_targets()


@schema.parametrize()
@settings(
    max_examples=15,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
)
def test_it_never_answers_500(case: Any, write_token: str, targets: dict[str, str]) -> None:
    # Half the generated ids point at existing rows, half stay random (and are answered 404).
    if case.path_parameters and zlib.crc32(repr(case.body).encode()) % 2 == 0:
        for name, value in targets.items():
            if name in case.path_parameters:
                case.path_parameters[name] = value
    response = case.call(headers={"Authorization": f"Bearer {write_token}"})
    case.validate_response(response, checks=[not_a_server_error])
