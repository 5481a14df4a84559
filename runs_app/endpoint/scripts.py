"""Run scripts: answers and failure kinds configured for one named run (``X-Harness-Run``), taken one request at a
time. Stored in the database and counted in one transaction, so that any number of workers serve each configured
answer as a single process would."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import close_old_connections, transaction

from harnessweb.engine.chaos import Hit
from harnessweb.engine.configured import Answer, Answers, Error
from harnessweb.engine.schemas import ExpectKey
from runs_app.models import RunScript


@dataclass(frozen=True)
class Taken:
    """What a script gives one request: a configured entry (or None) and the scenario to play (or "")."""

    entry: Answer | Error | None
    scenario: str
    index: int  # how many entries the script had served before: seeds the reply's ids
    expect_key: ExpectKey | None = None  # the key every request of the run must carry
    chaos: Hit | None = None  # the failure the script's chaos gives this request (then no entry is taken)


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
        index = sum(item.used for item in (*answers.answers, *answers.errors))
        hit = failing or (answers.take_chaos() if chaos else None)
        entry: Answer | Error | None = None
        if hit is None:
            entry = answers.take_error(model) or answers.take_answer(model)
        if entry is not None or (chaos and not failing and answers.chaos is not None):
            row.script = answers.to_data()
            row.save(update_fields=["script", "updated_at"])
        return Taken(entry, row.scenario, index, answers.expect_key, hit)


def store(run_id: uuid.UUID, answers: Answers, scenario: str) -> RunScript:
    row, _ = RunScript.objects.update_or_create(
        run_id=run_id, defaults={"script": answers.to_data(), "scenario": scenario}
    )
    return row
