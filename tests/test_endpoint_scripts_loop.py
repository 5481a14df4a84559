"""A request that names a run asks for the run's script on the event loop's own SQLite connection
(``runs_app/endpoint/scripts.py``, ``taken``): no thread hop, the counts stored as Django's path stores them, and
another connection's write lock sends it to Django's thread rather than blocking the loop."""

from __future__ import annotations

import sqlite3
import threading
import uuid

import pytest
from asgiref.sync import sync_to_async

from harnessweb.engine.configured import Answers
from runs_app.endpoint import loop_sqlite, scripts
from runs_app.models import RunScript

pytestmark = pytest.mark.django_db(transaction=True)


def script(*texts: str) -> Answers:
    return Answers.from_data({"answers": [{"model": None, "text": text} for text in texts], "errors": []})


def refuse_the_thread_path(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    tried: list[str] = []

    def take(*args: object, **kwargs: object) -> None:
        tried.append(threading.current_thread().name)
        raise AssertionError("taken through Django's thread")

    monkeypatch.setattr(scripts, "take", take)
    return tried


async def test_it_takes_a_script_s_answers_in_order_on_the_loop_and_stores_the_counts(monkeypatch) -> None:
    tried = refuse_the_thread_path(monkeypatch)
    run = uuid.uuid4()
    await sync_to_async(scripts.store)(run, script("first", "second"), "a-scenario")
    got = [await scripts.taken(run, "gpt-4o-mini") for _ in range(3)]
    assert [t.entry.text for t in got] == ["first", "second", "second"]  # in order, then the last one stays
    assert [t.index for t in got] == [0, 1, 2] and {t.scenario for t in got} == {"a-scenario"}
    assert tried == [] and loop_sqlite.writer().thread == threading.get_ident()
    stored = Answers.from_data((await RunScript.objects.aget(run_id=run)).script)
    assert [a.used for a in stored.answers] == [1, 2]  # what Django's path reads next, in any worker


async def test_a_run_without_a_script_costs_one_read_and_takes_nothing(monkeypatch) -> None:
    tried = refuse_the_thread_path(monkeypatch)
    assert await scripts.taken(uuid.uuid4(), "gpt-4o-mini") is None
    assert tried == []


async def test_another_writer_s_lock_sends_the_take_to_django_s_thread(monkeypatch) -> None:
    run = uuid.uuid4()
    await sync_to_async(scripts.store)(run, script("only"), "")
    holder = sqlite3.connect(loop_sqlite.path(), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(loop_sqlite.Busy):
            scripts.take_here(run, "m")
        asked: list[str] = []
        monkeypatch.setattr(scripts, "take", lambda run_id, *rest: asked.append(str(run_id)))
        assert await scripts.taken(run, "m") is None and asked == [str(run)]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (await scripts.taken(run, "m")).entry.text == "only"  # the lock gone, the loop takes it again


async def test_a_json_answer_beyond_64_bits_is_taken_and_stored_as_django_stores_it(monkeypatch) -> None:
    refuse_the_thread_path(monkeypatch)
    run = uuid.uuid4()
    configured = Answers.from_data({"answers": [{"model": None, "json": {"n": 2**70 + 1}}], "errors": []})
    await sync_to_async(scripts.store)(run, configured, "")
    assert (await scripts.taken(run, "m")).entry.json == {"n": 2**70 + 1}
    stored = Answers.from_data((await RunScript.objects.aget(run_id=run)).script)
    assert stored.answers[0].json == {"n": 2**70 + 1} and stored.answers[0].used == 1
