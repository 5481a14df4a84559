"""The in-memory catalog the fake endpoints serve from, rebuilt when any process changes the scenarios table.

Every request must see the scenarios as stored, whichever process saved them (the dashboard, the API,
``load_scenarios``, another worker). Asking the database on every request costs a query and a thread hop, a large
share of a fake response's budget; so each committed change also rewrites a small stamp file (by atomic rename,
which changes its inode), and the endpoint compares the file's stat with the one the cached catalog was built
under: one ``stat`` call per request, on the event loop. The database is asked only when the stamp moved, or on
every request when there is no stamp to trust (``HARNESS_CATALOG_STAMP=off``).

Workers on several hosts share the database but not a file system: with ``REDIS_URL`` set (the cluster's channel
layer), the stamp is a Redis counter instead (``HARNESS_CATALOG_STAMP=redis``, the default then), read with one
``GET`` per request and moved with ``INCR``; when Redis does not answer, the database is asked.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from pydantic import ValidationError

from harnessweb.engine.playback import Catalog
from harnessweb.engine.schemas import Scenario
from scenarios_app import models

log = logging.getLogger(__name__)
_lock = threading.Lock()


@dataclass(frozen=True)
class _Cached:
    path: Path | None
    db_stamp: tuple[int, str, int]
    file_stamp: tuple[int, int] | None
    catalog: Catalog


_cached: _Cached | None = None


class RedisStamp:
    """The stamp as a Redis counter, for workers that share no disk (one client, and its connection pool, per
    process)."""

    def __init__(self, url: str, key: str) -> None:
        import redis

        self.key = key
        self.client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        self.errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)
        self.quiet_until = 0.0  # after a failed read, Redis is not asked again before then (a hung one costs 0.5 s)

    def read(self) -> tuple[int, int] | None:
        if time.monotonic() < self.quiet_until:
            return None
        try:
            value = self.client.get(self.key)
        except self.errors:
            self.quiet_until = time.monotonic() + REDIS_QUIET_S
            return None
        return (0, int(value or 0))

    def move(self) -> None:
        try:
            self.client.incr(self.key)
        except self.errors:
            log.exception("Could not move the catalog stamp in Redis; servers fall back to asking the database")


_redis_stamps: dict[tuple[str, str], RedisStamp] = {}
REDIS_QUIET_S = 5.0


def redis_stamp() -> RedisStamp | None:
    """The Redis stamp of the database in use, when the catalog's stamp lives in Redis."""
    configured = settings.HARNESS_CATALOG_STAMP or ("redis" if os.environ.get("REDIS_URL") else "")
    if configured != "redis":
        return None
    db = connection.settings_dict
    key = f"harness:catalog-stamp:{db.get('HOST') or 'local'}:{db.get('PORT') or ''}:{db['NAME']}"
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    if (url, key) not in _redis_stamps:
        _redis_stamps[(url, key)] = RedisStamp(url, key)
    return _redis_stamps[(url, key)]


def stamp_path() -> Path | None:
    """The stamp file of the database in use (the same path in every process that uses that database)."""
    configured = settings.HARNESS_CATALOG_STAMP or ("redis" if os.environ.get("REDIS_URL") else "")
    if configured in ("off", "redis"):
        return None
    if configured:
        return Path(configured)
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return Path(f"{db['NAME']}.catalog-stamp")
    return settings.BASE_DIR / f".catalog-stamp-{db.get('HOST') or 'local'}-{db.get('PORT') or ''}-{db['NAME']}"


def _file_stamp(path: Path | None) -> tuple[int, int] | None:
    if path is None:
        stamp = redis_stamp()
        return stamp.read() if stamp is not None else None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def touch_stamp() -> None:
    """Move the stamp: every server process reloads its catalog on its next request."""
    path = stamp_path()
    if path is None:
        if (stamp := redis_stamp()) is not None:
            stamp.move()
        return
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(secrets.token_hex(8))
        os.replace(tmp, path)
    except OSError:
        log.exception("Could not move the catalog stamp %s; servers fall back to asking the database", path)


def scenarios_changed(**_: Any) -> None:
    """post_save/post_delete receiver: move the stamp once the change is committed (visible to other processes)."""
    transaction.on_commit(touch_stamp)


def current_catalog() -> Catalog:
    """The catalog as stored now: one cheap aggregate query, a full reload only when it changed."""
    global _cached
    path = stamp_path()
    file_stamp = _file_stamp(path)  # read before the database: a change committed after it moves it again
    if file_stamp is None and path is not None:  # (a Redis counter never set reads as 0)
        touch_stamp()
        file_stamp = _file_stamp(path)
    cached = _cached
    try:
        db_stamp = models.catalog_stamp()
    except DatabaseError:
        if cached is None:
            raise
        log.warning("The database did not answer: serving the scenarios as last read")
        return cached.catalog
    if cached is not None and cached.db_stamp == db_stamp:
        _cached = _Cached(path, db_stamp, file_stamp, cached.catalog)
        return cached.catalog
    with _lock:
        scenarios = []
        for row in models.Scenario.objects.all():
            try:
                scenarios.append(Scenario.model_validate(row.data))
            except ValidationError as exc:  # only reachable by editing the table by hand
                log.error("Stored scenario %s does not validate and is not served: %s", row.id, exc)
        catalog = Catalog.build(scenarios)
        _cached = _Cached(path, db_stamp, file_stamp, catalog)
    return catalog


def cached_catalog() -> Catalog | None:
    """The cached catalog when the stamp file says it is current; None when the database must be asked."""
    cached = _cached
    if cached is None or cached.file_stamp is None:
        return None
    return cached.catalog if _file_stamp(cached.path) == cached.file_stamp else None
