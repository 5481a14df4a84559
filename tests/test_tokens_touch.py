"""A token's last-used time is written at most once a minute (``tokens.TOUCH_EVERY``): a Prometheus scraper on
/metrics every 15 s, or a burst of API calls, does not write the token's row on every request."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs_app import tokens
from runs_app.models import ApiToken

pytestmark = pytest.mark.django_db


def writes(token: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert tokens.authenticate(token) is not None
    return sum(q["sql"].lstrip().upper().startswith("UPDATE") for q in queries.captured_queries)


def test_a_token_is_touched_once_a_minute(settings, client):
    settings.HARNESS_METRICS = True
    row, token = tokens.issue("scraper")
    assert writes(token) == 1  # never used: written
    first = ApiToken.objects.get(pk=row.pk).last_used_at
    for _ in range(3):
        assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
    assert writes(token) == 0 and ApiToken.objects.get(pk=row.pk).last_used_at == first
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=timezone.now() - dt.timedelta(seconds=61))
    assert writes(token) == 1
    assert timezone.now() - ApiToken.objects.get(pk=row.pk).last_used_at < dt.timedelta(seconds=5)


def test_a_revoked_token_is_refused_and_never_touched():
    row, token = tokens.issue("gone")
    ApiToken.objects.filter(pk=row.pk).update(revoked_at=timezone.now())
    assert tokens.authenticate(token) is None
    assert ApiToken.objects.get(pk=row.pk).last_used_at is None
