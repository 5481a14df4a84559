"""``manage.py check_cluster``: what ``make serve-cluster`` runs before it starts its workers. Several workers (on one
host or many) share their state through PostgreSQL (runs, events, attempt counters, scenarios) and Redis (the live
pages' channel layer, the scenario catalog's stamp): both must be configured and answering, or the command exits 2
saying which and how to fix it."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError, connection


def check_database() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url:
        raise CommandError(
            "DATABASE_URL is not set: workers share one PostgreSQL, e.g. postgres://user@host:5432/harness"
        )
    if connection.vendor != "postgresql":
        raise CommandError(
            f"DATABASE_URL must name a PostgreSQL database (workers share it); it names {connection.vendor}"
        )
    try:
        connection.ensure_connection()
    except OperationalError as exc:
        raise CommandError(f"DATABASE_URL: PostgreSQL does not answer: {str(exc).strip()}") from None
    return f"PostgreSQL {connection.settings_dict.get('HOST') or 'local'}/{connection.settings_dict['NAME']}"


def check_redis() -> str:
    import redis

    url = os.environ.get("REDIS_URL", "")
    if not url:
        raise CommandError("REDIS_URL is not set: workers share one Redis, e.g. redis://host:6379/0")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2).ping()
    except (redis.RedisError, OSError, ValueError) as exc:
        raise CommandError(f"REDIS_URL: Redis does not answer at {url}: {exc}") from None
    return f"Redis {url}"


class Command(BaseCommand):
    help = "Check that the cluster's PostgreSQL (DATABASE_URL) and Redis (REDIS_URL) are configured and answer."

    def handle(self, *args: Any, **options: Any) -> None:
        found = [check_database(), check_redis()]
        self.stdout.write("Cluster ready: " + "; ".join(found) + ".")
