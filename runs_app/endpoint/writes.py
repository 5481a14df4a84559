"""How the recorder's batches reach the database: raw multi-row statements (an upsert of the runs, an insert of the
events, each a ``VALUES`` list of many rows), their values prepared per column once per batch, and the renumbering
of a batch whose sequence numbers collide with another process's events of the same runs."""

from __future__ import annotations

import json
import logging
import sqlite3
import uuid
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, NamedTuple

import orjson
from django.db import (
    DEFAULT_DB_ALIAS,
    IntegrityError,
    close_old_connections,
    connection,
    connections,
    models,
    transaction,
)
from django.db.models import F, Max

from harnessweb.engine.redaction import redact_data
from runs_app.models import AttemptCounter, Run, RunEvent

log = logging.getLogger(__name__)


class PendingEvent(NamedTuple):
    """An event queued for the next batch (a RunEvent row to be)."""

    run_id: uuid.UUID
    seq: int
    timestamp: datetime
    kind: str
    turn: int | None
    data: dict[str, Any]


RUN_UPDATED_ON_CONFLICT = ("scenario_id", "mode", "status", "status_reason", "turns_served", "finished_at", "closed")


MAX_ROWS_A_STATEMENT = 128  # (a power of two; fewer still when the database's bound on parameters says so)


def chunk_sizes(rows: int, columns: int, max_params: int | None) -> list[int]:
    """How a batch's rows are split into multi-row statements: powers of two, the largest first, each within the
    database's bound on a statement's parameters. A batch of 64 events is one statement; 70 are 64 + 4 + 2.

    One ``VALUES`` list a statement rather than ``executemany`` (a statement executed once a row): on PostgreSQL one
    round of parse, plan and execute instead of one a row; on SQLite about a tenth less CPU a row at 16 to 64 rows.
    Sizes in powers of two keep the distinct statements few (eight a table), so they stay in the driver's statement
    cache instead of being parsed again for every batch size."""
    cap = MAX_ROWS_A_STATEMENT if not max_params else max(1, min(MAX_ROWS_A_STATEMENT, max_params // columns))
    cap = 1 << (cap.bit_length() - 1)
    sizes = []
    while rows:
        size = min(cap, 1 << (rows.bit_length() - 1))
        sizes.append(size)
        rows -= size
    return sizes


def values_list(columns: int, rows: int, placeholder: str) -> str:
    """``(p, p), (p, p)``: the ``VALUES`` list of ``rows`` rows of ``columns`` parameters (``placeholder``: ``?``, or
    ``$`` for PostgreSQL's numbered ``$1, $2``)."""
    if placeholder == "$":
        return ", ".join(f"({', '.join(f'${row * columns + n + 1}' for n in range(columns))})" for row in range(rows))
    row = f"({', '.join([placeholder] * columns)})"
    return ", ".join([row] * rows)


PLACEHOLDERS = {"sqlite": "?", "postgresql": "$"}  # (the drivers' own: see _insert_rows)


@lru_cache(maxsize=64)
def _insert_sql(
    vendor: str, model: type[models.Model], columns: tuple[str, ...], update: tuple[str, ...], rows: int
) -> str:
    """The statement inserting ``rows`` rows, with the driver's own placeholders (``vendor``: which)."""
    qn = connection.ops.quote_name
    sql = f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(c) for c in columns)}) "
    sql += f"VALUES {values_list(len(columns), rows, PLACEHOLDERS.get(vendor, '%s'))}"
    if update:  # the same ON CONFLICT upsert on SQLite and PostgreSQL
        sql += f" ON CONFLICT ({qn('id')}) DO UPDATE SET " + ", ".join(f"{qn(c)} = excluded.{qn(c)}" for c in update)
    return sql


def _driver_cursor(cursor: Any) -> tuple[Any, Any]:
    """The cursor a multi-row statement runs on, and its ``execute``: the driver's own, in Django's transaction.

    Django's cursors parse every statement's placeholders on each execution: on SQLite its wrapper turns each
    ``%s`` into ``?`` with a regular expression (over a long VALUES list, 4.5 % of a batch's instructions); on
    PostgreSQL psycopg's client-side binding splits the statement in Python, cached only up to 50 parameters, then
    quotes every value into its text. psycopg's ``RawCursor`` sends the statement with PostgreSQL's ``$n``
    placeholders as it is and the values beside it: the client's CPU an event less than half of ``executemany``'s
    through Django, and PostgreSQL's own about half too (one statement parsed, planned and run, not 64)."""
    if connection.vendor == "sqlite":
        return cursor.cursor, sqlite3.Cursor.execute
    if connection.vendor == "postgresql":
        import psycopg  # (there whenever PostgreSQL is)

        raw = psycopg.RawCursor(connection.connection)
        return raw, psycopg.RawCursor.execute
    return cursor, type(cursor).execute


def _insert_rows(
    cursor: Any, model: type[models.Model], columns: list[str], params: list[list[Any]], update: tuple[str, ...] = ()
) -> None:
    """The rows inserted (or upserted) by as few multi-row statements as :func:`chunk_sizes` allows, on the
    driver's own cursor (:func:`_driver_cursor`), Django's errors raised for the database's."""
    start, key = 0, tuple(columns)
    raw, execute = _driver_cursor(cursor)
    try:
        for size in chunk_sizes(len(params), len(columns), connection.features.max_query_params):
            sql = _insert_sql(connection.vendor, model, key, update, size)
            with connection.wrap_database_errors:
                execute(raw, sql, [value for row in params[start : start + size] for value in row])
            start += size
    finally:
        if raw is not cursor and connection.vendor == "postgresql":  # (a cursor of its own, which is closed)
            raw.close()


def without_nul(value: Any) -> Any:
    """A JSON value with U+0000 in its strings (and keys) replaced by U+FFFD."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_nul(v) for v in value]
    return value


def json_text(value: Any) -> str:
    """A JSON value as stored: orjson (several times the standard library's speed, the batch's largest share), the
    standard library for what orjson refuses (an integer beyond 64 bits)."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value)


def jsonb_text(value: Any) -> str:
    """The same for PostgreSQL, whose jsonb refuses U+0000 (a client's JSON body may carry one): replaced by U+FFFD,
    walking the value only when its text shows one."""
    text = json_text(value)
    return json_text(without_nul(value)) if "\\u0000" in text else text


def _sqlite_datetime(value: datetime | None) -> str | None:
    """What Django's SQLite backend stores for an aware datetime (naive UTC, ``str``), without its per-value checks."""
    if value is None:
        return None
    if value.tzinfo is UTC:  # (the recorder's own times) the same text less the offset, at half the cost of a copy
        return value.isoformat(" ")[:-6]
    return str(value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value)


def _converter(field: models.Field, conn: Any) -> Any:
    """How one column's values become parameters: what ``get_db_prep_save`` does for the field types the recorder
    writes, without its per-value dispatch (the batch's largest cost)."""
    target = field.target_field if isinstance(field, models.ForeignKey) else field
    if isinstance(target, models.UUIDField):
        return (lambda v: v) if conn.features.has_native_uuid_field else (lambda v: v.hex)
    if isinstance(target, models.DateTimeField):
        return _sqlite_datetime if conn.vendor == "sqlite" else conn.ops.adapt_datetimefield_value
    if isinstance(target, models.JSONField) and target.encoder is None:
        if conn.vendor == "postgresql":
            from psycopg.types.json import Jsonb  # (psycopg is there whenever PostgreSQL is)

            return lambda v: Jsonb(v, dumps=jsonb_text)
        return json_text
    if isinstance(target, models.JSONField):
        return lambda v: conn.ops.adapt_json_value(v, target.encoder)
    if isinstance(target, models.CharField | models.TextField | models.IntegerField | models.BooleanField):
        return lambda v: v
    return lambda v: field.get_db_prep_save(v, conn)


def _prepared(model: type[models.Model], rows: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Rows as parameters, each value prepared for this database as its field would; model defaults for the rest
    (every row of a batch has the same keys, so a missing column's default is prepared once per batch)."""
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, models.AutoField))]
    conn = connections[DEFAULT_DB_ALIAS]
    columns = []
    for f in fields:
        if f.attname in rows[0]:
            columns.append((f.attname, _converter(f, conn), None))
        else:
            columns.append((None, None, f.get_db_prep_save(f.get_default(), conn)))
    params = [
        [convert(row[name]) if name is not None else default for name, convert, default in columns]  # type: ignore[misc]
        for row in rows
    ]
    return [f.column for f in fields], params


RENUMBER_ATTEMPTS = 5


def write(runs: list[dict[str, Any]], events: list[PendingEvent]) -> list[PendingEvent]:
    """One transaction, a multi-row statement a table (more for a large batch: :func:`chunk_sizes`): no model
    instances, no per-row signals, on the write thread; each event's secrets redacted first
    (:func:`~harnessweb.engine.redaction.redact_data`: a scan of its JSON, a walk only when it may hold one), so the
    events returned (and broadcast) are as stored.

    The batch is what every request of the last few milliseconds produced; building model objects for it cost
    more than the statements themselves. When its sequence numbers collide with another process's events of the
    same runs, it is written again, its runs' rows locked and its events numbered after each run's last one (the
    events as written are returned); a collision that outlasts a few attempts raises, and the batch is retried.
    """
    close_old_connections()
    events = redacted(events)
    for attempt in range(RENUMBER_ATTEMPTS):
        try:
            return insert(runs, events, renumber=attempt > 0)
        except IntegrityError:
            if attempt == RENUMBER_ATTEMPTS - 1:
                raise
    return events  # unreachable: the last attempt returns or raises


def redacted(events: list[PendingEvent]) -> list[PendingEvent]:
    """The events with their secrets redacted (:func:`~harnessweb.engine.redaction.redact_data`), as stored."""
    return [e if (data := redact_data(e.data)) is e.data else e._replace(data=data) for e in events]


def insert(runs: list[dict[str, Any]], events: list[PendingEvent], renumber: bool) -> list[PendingEvent]:
    with transaction.atomic(), connection.cursor() as cursor:
        if runs:
            columns, params = _prepared(Run, runs)
            _insert_rows(cursor, Run, columns, params, RUN_UPDATED_ON_CONFLICT)
        if events:
            if renumber:
                events = _numbered_after_the_last(events)
            columns, params = _prepared(RunEvent, [e._asdict() for e in events])
            _insert_rows(cursor, RunEvent, columns, params)
    return events


def _numbered_after_the_last(events: list[PendingEvent]) -> list[PendingEvent]:
    """The events, in their order, numbered from each run's last stored event on; the runs' rows are locked until
    the transaction ends, so that processes numbering the same run take turns."""
    run_ids = sorted({event.run_id for event in events})
    list(Run.objects.select_for_update().filter(id__in=run_ids).order_by("id").values_list("id", flat=True))
    last = dict(
        RunEvent.objects.filter(run_id__in=run_ids).values("run_id").annotate(m=Max("seq")).values_list("run_id", "m")
    )
    renumbered = []
    for event in events:
        last[event.run_id] = last.get(event.run_id, 0) + 1
        renumbered.append(event._replace(seq=last[event.run_id]))
    return renumbered


def take_attempt(run_id: uuid.UUID, turn: int, protocol: str, failures: int) -> int:
    """Count one attempt at a failing turn for one provider (``protocol``: the decision's ``counter``) atomically;
    returns the failure number (1..failures) or 0 to succeed.

    A conditional UPDATE is atomic on SQLite and PostgreSQL alike, so concurrent retries in any number of
    processes serve exactly ``failures`` failures between them.
    """
    close_old_connections()
    key = {"run_id": run_id, "turn": turn, "protocol": protocol}
    with transaction.atomic():
        try:
            with transaction.atomic():
                AttemptCounter.objects.get_or_create(**key)
        except IntegrityError:
            pass  # created concurrently by another request: fine
        if not AttemptCounter.objects.filter(**key, count__lt=failures).update(count=F("count") + 1):
            return 0
        return AttemptCounter.objects.get(**key).count
