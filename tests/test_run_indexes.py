"""The run table's indexes: each one written on every run the endpoint records, so only those a page, the API or
the endpoint reads are kept, and every list and lookup still goes through one."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from runs_app.models import Run

pytestmark = pytest.mark.django_db


def _indexed_columns() -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, Run._meta.db_table)
    return {name: c["columns"] for name, c in found.items() if c["index"] or c["unique"] or c["primary_key"]}


def test_only_the_read_indexes_are_written() -> None:
    columns = sorted({tuple(c) for c in _indexed_columns().values()})
    assert ("protocol",) not in columns and ("source",) not in columns
    for kept in ("id", "started_at", "conversation_key", "scenario_id", "status", "commit", "external_id"):
        assert (kept,) in columns, kept


def test_external_id_is_unique_only_where_given() -> None:
    now = timezone.now()
    Run.objects.create(protocol="openai", started_at=now, source="ci", external_id="ci-1")
    Run.objects.create(protocol="openai", started_at=now)  # the endpoint's runs: none
    Run.objects.create(protocol="openai", started_at=now)
    with pytest.raises(IntegrityError), transaction.atomic():
        Run.objects.create(protocol="openai", started_at=now, source="ci", external_id="ci-1")
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'run_external_id_unique'")
            assert "WHERE" in cursor.fetchone()[0]  # the runs without one are not in it


@pytest.mark.parametrize(
    "filters",
    [{}, {"source": "ci"}, {"protocol": "openai"}, {"status": "passed"}, {"scenario": "s"}, {"conversation": "k"}],
)
def test_the_runs_list_reads_an_index(filters: dict[str, str]) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's plan")
    sql, params = Run.objects.filtered(**filters).order_by("-started_at", "-id")[:50].query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        plan = " ".join(row[-1] for row in cursor.fetchall())
    assert "USING INDEX" in plan, plan
