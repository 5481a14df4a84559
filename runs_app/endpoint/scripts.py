"""Run scripts: answers and failure kinds configured for one named run (``X-Harness-Run``), taken one request at a
time. Stored in the database and counted in one transaction, so that any number of workers serve each configured
answer as a single process would.

Every request that names a run asks for its script (the pytest plugin's server mode names its session run on every
call). On a SQLite file it is asked on the event loop's own connection (``loop_sqlite``): a run without a script
costs one indexed read, a script is taken under ``BEGIN IMMEDIATE``, and no request waits for asgiref's thread (a
request naming a run cost 0.7 ms more than one that did not). Elsewhere, and when another connection holds SQLite's
write lock, it is taken through Django on asgiref's thread, as before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import close_old_connections, transaction

from harnessweb.engine.chaos import Hit
from harnessweb.engine.configured import Answer, Answers, Error
from harnessweb.engine.schemas import ExpectKey
from runs_app.endpoint import loop_sqlite
from runs_app.endpoint.recorder import while_up
from runs_app.endpoint.writes import _sqlite_datetime, json_text
from runs_app.models import RunScript

log = logging.getLogger(__name__)
TABLE = RunScript._meta.db_table
SELECT = f'SELECT "scenario", "script" FROM "{TABLE}" WHERE "run_id" = ?'
UPDATE = f'UPDATE "{TABLE}" SET "script" = ?, "updated_at" = ? WHERE "run_id" = ?'


@dataclass(frozen=True)
class Taken:
    """What a script gives one request: a configured entry (or None) and the scenario to play (or "")."""

    entry: Answer | Error | None
    scenario: str
    index: int  # how many entries the script had served before: seeds the reply's ids
    expect_key: ExpectKey | None = None  # the key every request of the run must carry
    chaos: Hit | None = None  # the failure the script's chaos gives this request (then no entry is taken)


async def taken(run_id: uuid.UUID, model: str, chaos: bool = False, failing: Hit | None = None) -> Taken | None:
    """:func:`take` for a request on the event loop: on the loop's own SQLite connection when it can, else on
    Django's thread; None without a script, or while the database does not answer."""
    if loop_sqlite.here():
        try:
            return take_here(run_id, model, chaos, failing)
        except loop_sqlite.Busy:
            pass  # another writer holds the lock: Django's thread waits for it
        except sqlite3.Error as exc:
            log.warning("The run script of %s was not read on the loop (%s): reading it on a thread", run_id, exc)
    return await while_up(take, run_id, model, chaos, failing)


def take(run_id: uuid.UUID, model: str, chaos: bool = False, failing: Hit | None = None) -> Taken | None:
    """The next configured error or answer for ``model`` in this run's script, counted; None without a script.
    With ``chaos`` (the HTTP endpoint's requests), the script's chaos numbers the request first (in the same
    transaction: exact across workers), and a request it fails takes no entry, so the client's retry gets it; nor
    does a request ``failing`` already (the header's chaos)."""
    close_old_connections()
    with transaction.atomic():
        row = RunScript.objects.select_for_update().filter(run_id=run_id).first()
        if row is None:
            return None
        answers = Answers.from_data(row.script)
        served, changed = _serve(answers, row.scenario, model, chaos, failing)
        if changed:
            row.script = answers.to_data()
            row.save(update_fields=["script", "updated_at"])
        return served


def take_here(run_id: uuid.UUID, model: str, chaos: bool = False, failing: Hit | None = None) -> Taken | None:
    """:func:`take` on this thread's own connection to the SQLite file (``loop_sqlite.writer``): the script looked
    for first outside any transaction (most runs have none), then read again and counted under ``BEGIN
    IMMEDIATE``. :class:`loop_sqlite.Busy` when another connection holds the write lock (nothing taken)."""
    db = loop_sqlite.writer().db
    key = (run_id.hex,)
    if db.execute(SELECT, key).fetchone() is None:
        return None
    loop_sqlite.begin(db)
    try:
        row = db.execute(SELECT, key).fetchone()
        served = None
        if row is not None:
            answers = Answers.from_data(json.loads(row[1]))  # (as Django reads it: any integer's size)
            served, changed = _serve(answers, row[0], model, chaos, failing)
            if changed:
                db.execute(UPDATE, (json_text(answers.to_data()), _sqlite_datetime(datetime.now(UTC)), run_id.hex))
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
    return served


def _serve(answers: Answers, scenario: str, model: str, chaos: bool, failing: Hit | None) -> tuple[Taken, bool]:
    """What the script gives this request, its counts moved on in ``answers``; and whether they moved."""
    index = sum(item.used for item in (*answers.answers, *answers.errors))
    hit = failing or (answers.take_chaos() if chaos else None)
    entry: Answer | Error | None = None
    if hit is None:
        entry = answers.take_error(model) or answers.take_answer(model)
    changed = entry is not None or (chaos and not failing and answers.chaos is not None)
    return Taken(entry, scenario, index, answers.expect_key, hit), changed


def store(run_id: uuid.UUID, answers: Answers, scenario: str) -> RunScript:
    row, _ = RunScript.objects.update_or_create(
        run_id=run_id, defaults={"script": answers.to_data(), "scenario": scenario}
    )
    return row
