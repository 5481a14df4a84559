"""The recorder's batches committed on the event loop's own thread, for a SQLite file: a connection of the loop
thread's own (``sqlite3``, the settings' pragmas: WAL, ``synchronous=NORMAL``), the statements built once (a
multi-row insert a table, for each power-of-two number of rows a batch uses).

A response's last frame waits for the commit of its events. Through Django that commit runs on asgiref's executor
thread (``sync_to_async``): two thread hops around a commit of about 150 µs, each a wake-up that waits for a core
on a busy machine (tests/benchmarks/README.md, *Where a sequential call's recording wait goes*). Here the same
rows are committed where the response waits, with nothing in between, and so are the batches the flusher writes
(``Recorder._commit`` says why, even under load); the promises are the commit's, as before: a
WAL commit with ``synchronous=NORMAL`` is in the database file's log when it returns, so every other connection
(any worker) reads it, and it survives the process being killed (not the machine losing power: that was so before).

The loop never waits on a lock here: the connection does not wait when another writer (a request's own
transaction, another worker, a management command) holds the database; :class:`Busy` says so, and the recorder
writes that batch through Django's thread as before (which waits its timeout). The log is checkpointed by a
connection on another thread, never on the loop (a checkpoint syncs the file).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from django.db import DEFAULT_DB_ALIAS, DataError, IntegrityError, connections, models

from runs_app.endpoint.writes import (
    RENUMBER_ATTEMPTS,
    RUN_UPDATED_ON_CONFLICT,
    PendingEvent,
    _converter,
    _sqlite_datetime,
    chunk_sizes,
    json_text,
    redacted,
    values_list,
)
from runs_app.models import Run, RunEvent

PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON")
CHECKPOINT_EVERY = 500  # commits between two checkpoints of the log (on another thread)
# Set while a checkpoint's last step (FULL) waits for the write lock and holds it: the loop's connections leave the
# lock to it (``begin``). Taking it the moment it was free, a loop committing without pause starved its waits.
CHECKPOINTING = threading.Event()
CHECKPOINT_WAIT_S = 0.1  # how long a checkpoint waits for a reader of an older snapshot (writers wait meanwhile)


class Busy(Exception):
    """Another connection holds the database's write lock: this batch goes through the thread that may wait."""


def path() -> str | None:
    """The SQLite file the default database is, or None (another database, or one in memory)."""
    database = connections.settings[DEFAULT_DB_ALIAS]  # (the connection's settings_dict, without its Local)
    name = str(database.get("NAME") or "")
    if database.get("ENGINE") != "django.db.backends.sqlite3" or not name or name == ":memory:":
        return None
    return None if "mode=memory" in name or name.startswith("file:") else name


def here() -> bool:
    """Whether this thread runs an event loop and the database is a SQLite file: commit here, not on a thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return path() is not None


class Plan:
    """One model's insert: the statement with ``?`` placeholders and each column's conversion or default."""

    def __init__(self, model: type[models.Model], keys: tuple[str, ...], update: tuple[str, ...] = ()) -> None:
        conn = connections[DEFAULT_DB_ALIAS]
        fields = [f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, models.AutoField))]
        self.columns: list[tuple[str | None, Callable[[Any], Any] | None, Any]] = []
        self.cacheable = True
        for f in fields:
            if f.attname in keys:
                self.columns.append((f.attname, _converter(f, conn), None))
            else:
                # (a field without a default has NOT_PROVIDED, a class: callable, yet its default is fixed)
                self.cacheable = self.cacheable and not (f.has_default() and callable(f.default))
                self.columns.append((None, None, f.get_db_prep_save(f.get_default(), conn)))
        names = ", ".join(f'"{f.column}"' for f in fields)
        self.head = f'INSERT INTO "{model._meta.db_table}" ({names}) VALUES '
        self.tail = ""
        if update:
            self.tail = ' ON CONFLICT ("id") DO UPDATE SET ' + ", ".join(f'"{c}" = excluded."{c}"' for c in update)
        self.statements: dict[int, str] = {}  # by the rows a statement inserts (powers of two: writes.chunk_sizes)

    def statement(self, rows: int) -> str:
        """The statement inserting ``rows`` rows (one ``VALUES`` list), built once."""
        sql = self.statements.get(rows)
        if sql is None:
            sql = self.statements[rows] = self.head + values_list(len(self.columns), rows, "?") + self.tail
        return sql

    def params(self, rows: list[dict[str, Any]]) -> list[list[Any]]:
        columns = self.columns
        return [[convert(row[n]) if n is not None else d for n, convert, d in columns] for row in rows]  # type: ignore[misc]

    def insert(self, db: Any, params: list[Any], max_params: int) -> None:
        """The rows (their parameters) inserted by as few multi-row statements as ``writes.chunk_sizes`` allows."""
        start = 0
        for size in chunk_sizes(len(params), len(self.columns), max_params):
            db.execute(self.statement(size), [value for row in params[start : start + size] for value in row])
            start += size


RUN_OF_KEY = f'SELECT 1 FROM "{Run._meta.db_table}" WHERE "conversation_key" = ? AND "source" = ? LIMIT 1'


def may_have_run_of(key: str) -> bool:
    """Whether an endpoint run of this conversation may be stored, asked on the loop's own connection (one indexed
    read: a new conversation, a test's first call, does not wait for asgiref's thread to learn it has none); True
    when it cannot be asked here (the caller reads the run on Django's thread, as it would have)."""
    if not here():
        return True
    try:
        return writer().db.execute(RUN_OF_KEY, (key, "endpoint")).fetchone() is not None
    except sqlite3.Error:
        return True


def begin(db: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE`` on a loop's connection: the write lock taken now, or :class:`Busy` at once when another
    connection holds it, or while a checkpoint waits for it (``_checkpoint``)."""
    if CHECKPOINTING.is_set():
        raise Busy("a checkpoint of the log is under way")
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise Busy(str(exc)) from exc
        raise


def event_params(events: list[PendingEvent]) -> list[tuple[Any, ...]]:
    """The events' parameters in the event table's column order (``EVENT_COLUMNS``, checked against the model's
    by the tests): what ``Plan.params`` gives for them, without a dict and a converter call a value."""
    return [(e.run_id.hex, e.seq, _sqlite_datetime(e.timestamp), e.kind, e.turn, json_text(e.data)) for e in events]


EVENT_COLUMNS = ("run_id", "seq", "timestamp", "kind", "turn", "data")


class Writer:
    """The loop thread's connection to one SQLite file, and its prepared plans."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.thread = threading.get_ident()
        # timeout 0: never wait for a lock on the loop (Busy instead); autocommit, the transactions explicit.
        self.db = sqlite3.connect(file, timeout=0, isolation_level=None, check_same_thread=True)
        for pragma in PRAGMAS:
            self.db.execute(pragma)
        self.db.execute("PRAGMA wal_autocheckpoint=0")  # checkpoints run elsewhere (``_checkpoint``)
        self.max_params = self.db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        self.plans: dict[tuple[type[models.Model], tuple[str, ...]], Plan] = {}
        self.commits = 0

    def plan(self, model: type[models.Model], keys: tuple[str, ...], update: tuple[str, ...] = ()) -> Plan:
        plan = self.plans.get((model, keys))
        if plan is None:
            plan = Plan(model, keys, update)
            if plan.cacheable:
                self.plans[(model, keys)] = plan
        return plan

    def write(self, runs: list[dict[str, Any]], events: list[PendingEvent]) -> list[PendingEvent]:
        """Commit the batch (its events numbered again after each run's last one if another process's collide);
        :class:`Busy` when another connection holds the write lock, Django's errors for what the database refused."""
        for attempt in range(RENUMBER_ATTEMPTS):
            begin(self.db)
            try:
                events = self._insert(runs, events, renumber=attempt > 0)
                self.db.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.IntegrityError):
                    if attempt < RENUMBER_ATTEMPTS - 1:
                        continue
                    raise IntegrityError(*exc.args) from exc
                if isinstance(exc, sqlite3.DataError):
                    raise DataError(*exc.args) from exc
                raise
            self.commits += 1
            if self.commits % CHECKPOINT_EVERY == 0:
                _checkpoint(self.file)
            return events
        return events  # unreachable: the last attempt returns or raises

    def _insert(self, runs: list[dict[str, Any]], events: list[PendingEvent], renumber: bool) -> list[PendingEvent]:
        if runs:
            plan = self.plan(Run, tuple(runs[0]), RUN_UPDATED_ON_CONFLICT)
            plan.insert(self.db, plan.params(runs), self.max_params)
        if events:
            if renumber:
                events = self._numbered_after_the_last(events)
            self.plan(RunEvent, PendingEvent._fields).insert(self.db, event_params(events), self.max_params)
        return events

    def _numbered_after_the_last(self, events: list[PendingEvent]) -> list[PendingEvent]:
        """The events numbered from each run's last stored event on (``BEGIN IMMEDIATE`` holds the database's
        write lock, so no other process numbers meanwhile)."""
        run_ids = sorted({event.run_id.hex for event in events})
        sql = (
            f'SELECT "run_id", MAX("seq") FROM "{RunEvent._meta.db_table}" '
            f'WHERE "run_id" IN ({", ".join("?" * len(run_ids))}) GROUP BY "run_id"'
        )
        last = dict(self.db.execute(sql, run_ids).fetchall())
        renumbered = []
        for event in events:
            last[event.run_id.hex] = (last.get(event.run_id.hex) or 0) + 1
            renumbered.append(event._replace(seq=last[event.run_id.hex]))
        return renumbered

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.db.close()


def _checkpoint(file: str) -> None:
    """Move the log's committed pages into the database file, on a thread of its own with a connection of its
    own, so that the next commit writes the log from its start again; not while one is under way.

    PASSIVE first: the bulk of the log copied and the file synced (about 20 ms after 500 commits, nearly all of it
    the syncs) while the loop goes on committing. Then FULL for what came meanwhile, holding the write lock while
    it copies and syncs those few pages (1 to 4 ms): the loop's commits are :class:`Busy` meanwhile (``begin``:
    ``CHECKPOINTING``) and go through Django's thread, which waits for it. A PASSIVE checkpoint alone never copied
    the whole log under steady traffic, so the log never restarted and grew without end (170 MB after 6,000
    sequential calls), each commit extending the file (79 to 112 µs against 75 µs in a log written from its
    start); FULL alone held the write lock for the whole 20 ms, and every response meanwhile waited for it. FULL
    waits ``CHECKPOINT_WAIT_S`` at most for a reader of an older snapshot (then copies what it can, and the next
    checkpoint tries again).
    """
    if not _checkpointer.acquire(blocking=False):
        return

    def run() -> None:
        try:
            with (
                contextlib.suppress(sqlite3.Error),
                contextlib.closing(sqlite3.connect(file, timeout=CHECKPOINT_WAIT_S)) as db,
            ):
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                CHECKPOINTING.set()
                db.execute("PRAGMA wal_checkpoint(FULL)")
        finally:
            CHECKPOINTING.clear()
            _checkpointer.release()

    try:
        threading.Thread(target=run, name="sqlite-checkpoint", daemon=True).start()
    except BaseException:
        _checkpointer.release()
        raise


_checkpointer = threading.Lock()  # held by the checkpoint under way


_writers: dict[int, Writer] = {}


def write(runs: list[dict[str, Any]], events: list[PendingEvent]) -> list[PendingEvent]:
    """``writes.write`` on this thread's own connection: the events redacted, then committed (as written)."""
    return writer().write(runs, redacted(events))


def writer() -> Writer:
    """This thread's connection to the current database file (opened on first use, again when the file changes)."""
    file = path()
    if file is None:
        raise RuntimeError("the database is not a SQLite file")
    thread = threading.get_ident()
    current = _writers.get(thread)
    if current is None or current.file != file:
        if current is not None:
            current.close()
        current = _writers[thread] = Writer(file)
    return current
