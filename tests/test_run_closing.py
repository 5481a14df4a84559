"""Runs that end stay ended: a run idle past ``HARNESS_RUN_IDLE_S`` is closed as abandoned (by the pages and
``prune_runs`` that read it, and by the endpoint when its conversation comes back), a request of an ended run's
conversation starts a new run, and a request naming a run still continues it."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from io import StringIO

import httpx2
import pytest
from django.core.management import call_command
from django.utils import timezone

from runs_app.closing import close_idle
from runs_app.endpoint.recorder import Recorder
from runs_app.models import Run, RunEvent
from tests.conftest import make_client, make_run, make_scenario, recorded_run

TWO_TURNS = [
    {"turn": 1, "response": {"kind": "text", "assistant_text": "first"}},
    {"turn": 2, "response": {"kind": "text", "assistant_text": "second"}},
]


def chat(server, first: str, *history: str, headers: dict[str, str] | None = None, key: str = "sk-closing"):
    """One request of a conversation: a system prompt, its first message (a scenario's id plays that scenario), then
    "go on" after each answer in ``history``."""
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": first}]
    for text in history:
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "go on"}]
    response = httpx2.post(
        f"{server.url}/v1/chat/completions",
        json={"model": "m", "messages": messages},
        headers={"Authorization": f"Bearer {key}", **(headers or {})},
        timeout=20,
    )
    assert response.status_code == 200, response.text
    return response


def aged(minutes: float, status: str = Run.Status.RUNNING, **fields) -> Run:
    """A run started ``minutes`` ago whose one request came then."""
    run = make_run(started_at=timezone.now() - dt.timedelta(minutes=minutes), status=status, **fields)
    RunEvent.objects.create(run=run, seq=1, timestamp=run.started_at, kind="request", turn=1, data={})
    return run


# -- the endpoint ----------------------------------------------------------------------------------------------------


def test_it_abandons_a_two_turn_try_it_run_that_served_turn_one_only(harness_server, transactional_db, admin_client,
                                                                     settings):  # fmt: skip
    make_scenario("try-two", TWO_TURNS)
    run_id = str(uuid.uuid4())  # what the editor's "Try it" sends: the scenario and a run of its own
    chat(harness_server, "hello", headers={"X-Harness-Scenario": "try-two", "X-Harness-Run": run_id})
    run = recorded_run(run_id, events=4)
    assert run.status == "running" and not run.closed
    settings.HARNESS_RUN_IDLE_S = 0.2
    time.sleep(0.3)
    page = admin_client.get("/")  # the overview counts it as abandoned, not running
    run.refresh_from_db()
    assert (run.status, run.closed) == ("abandoned", True)
    assert run.status_reason == "no request for 0.2 s after turn 1 of 2"
    assert run.finished_at == run.events.order_by("-seq").first().timestamp  # its last activity, not the sweep's time
    totals = page.context["chart"].totals
    assert (totals["abandoned"], totals["running"]) == (1, 0)
    listed = admin_client.get("/runs/?status=abandoned").content.decode()
    assert run_id in listed and "no request for 0.2 s after turn 1 of 2" in listed
    assert "no request for 0.2 s after turn 1 of 2" in admin_client.get(f"/runs/{run_id}/").content.decode()
    Run.objects.filter(id=run_id).update(started_at=timezone.now() - dt.timedelta(minutes=5))
    call_command("prune_runs", "--older-than", "1m", stdout=StringIO())  # no longer kept as running
    assert not Run.objects.filter(id=run_id).exists()


@pytest.mark.backends
def test_it_starts_a_new_run_when_a_passed_run_s_conversation_asks_again(harness_server, transactional_db):
    make_scenario("asked-again", TWO_TURNS)
    first = chat(harness_server, "asked-again").headers["x-harness-run"]
    assert chat(harness_server, "asked-again", "first").headers["x-harness-run"] == first
    passed = recorded_run(first, status="passed")
    assert passed.closed
    # An unrelated client with the same key, system prompt and first message, at its third turn.
    later = chat(harness_server, "asked-again", "first", "second").headers["x-harness-run"]
    assert later != first
    assert recorded_run(later, status="failed").turns_served == [3]
    again = Run.objects.get(id=first)
    assert (again.status, again.finished_at, again.turns_served) == ("passed", passed.finished_at, [1, 2])


def test_it_keeps_a_conversation_outside_any_scenario_in_one_run_while_it_goes_on(harness_server, transactional_db):
    first = chat(harness_server, "no scenario plays this")
    run_id = first.headers["x-harness-run"]
    answer = first.json()["choices"][0]["message"]["content"]
    assert chat(harness_server, "no scenario plays this", answer).headers["x-harness-run"] == run_id
    run = recorded_run(run_id, events=8)
    assert (run.mode, run.status, run.closed, run.turns_served) == ("lorem", "passed", False, [1, 2])


def test_it_continues_the_run_a_request_names_even_once_it_passed(harness_server, transactional_db):
    make_scenario("named", TWO_TURNS)
    run_id = str(uuid.uuid4())
    named = {"X-Harness-Scenario": "named", "X-Harness-Run": run_id}
    chat(harness_server, "hi", headers=named)
    chat(harness_server, "hi", "first", headers=named)
    recorded_run(run_id, status="passed")
    assert chat(harness_server, "hi", headers=named, key="sk-other").headers["x-harness-run"] == run_id
    assert recorded_run(run_id, events=12).events.filter(kind="response").count() == 3


# -- the recorder (one per server process) ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_it_closes_an_idle_run_when_its_conversation_comes_back_and_starts_a_new_one(settings):
    settings.HARNESS_RUN_IDLE_S = 0.2
    recorder = Recorder()
    run = await recorder.resolve(None, "idle-conversation", 1, "openai")
    recorder.event(run, "request", 1, {})
    recorder.update(run, turns_served={1})
    await recorder.flush()
    await asyncio.sleep(0.3)
    later = await recorder.resolve(None, "idle-conversation", 2, "openai")
    assert later.id != run.id
    closed = await Run.objects.aget(id=run.id)
    assert (closed.status, closed.closed) == ("abandoned", True)
    assert closed.status_reason == "no request for 0.2 s after turn 1"
    assert run.status == "abandoned"  # what this process remembers too: a later write keeps it closed
    named = await recorder.resolve(run.id, "idle-conversation", 2, "openai")  # a request naming it continues it
    assert named is run


@pytest.mark.backends
@pytest.mark.django_db(transaction=True)
async def test_it_keeps_open_a_run_another_process_served_meanwhile(settings):
    settings.HARNESS_RUN_IDLE_S = 1.0
    first, second = Recorder(), Recorder()
    run = await first.resolve(None, "moving-conversation", 1, "openai")
    first.event(run, "request", 1, {})
    first.update(run, turns_served={1})
    await first.flush()
    await asyncio.sleep(0.6)
    other = await second.resolve(None, "moving-conversation", 2, "openai")  # the conversation moved to a second worker
    assert other.id == run.id
    second.event(other, "request", 2, {})
    second.update(other, turns_served={1, 2})
    await second.flush()
    await asyncio.sleep(0.6)  # idle for the first worker, which last saw it 1.2 s ago, but not in the database
    back = await first.resolve(None, "moving-conversation", 3, "openai")
    assert back.id == run.id and back.turns_served == {1, 2} and back.next_seq == 3
    assert (await Run.objects.aget(id=run.id)).status == "running"


# -- closing --------------------------------------------------------------------------------------------------------


@pytest.mark.backends
@pytest.mark.django_db
def test_it_closes_only_running_endpoint_runs_with_no_request_since_the_limit(settings):
    settings.HARNESS_RUN_IDLE_S = 300
    make_scenario("demo", TWO_TURNS)
    idle = aged(6, turns_served=[1])
    fresh = aged(4)
    busy = aged(60)
    RunEvent.objects.create(run=busy, seq=2, timestamp=timezone.now(), kind="request", turn=2, data={})
    others = [aged(60, Run.Status.PASSED), aged(60, Run.Status.ERRORED), aged(60, source="ci")]
    assert close_idle() == 1
    assert close_idle() == 0  # once: the UPDATE is conditional on the run still being running
    idle.refresh_from_db()
    assert (idle.status, idle.status_reason) == ("abandoned", "no request for 5 min after turn 1 of 2")
    assert idle.closed and idle.finished_at == idle.started_at
    statuses = {r.id: r.status for r in Run.objects.all()}
    assert [statuses[r.id] for r in (fresh, busy, *others)] == ["running", "running", "passed", "errored", "running"]


@pytest.mark.django_db
def test_it_says_when_no_turn_was_served(settings):
    settings.HARNESS_RUN_IDLE_S = 90
    run = aged(2, scenario_id="")
    close_idle()
    run.refresh_from_db()
    assert run.status_reason == "no request for 1.5 min before any turn was served"


@pytest.mark.django_db
def test_the_api_lists_abandoned_runs_and_a_scenarios_pass_rate_leaves_them_out(admin_client) -> None:
    make_scenario("two-turns")
    make_run(scenario_id="two-turns", status=Run.Status.PASSED)
    abandoned = make_run(scenario_id="two-turns", status=Run.Status.ABANDONED)
    listed = make_client().get("/runs?status=abandoned")
    assert listed.status_code == 200 and [row["id"] for row in listed.json()["items"]] == [str(abandoned.id)]
    assert make_client().post("/runs", json={"name": "x", "status": "abandoned"}).status_code == 422
    assert "100%" in admin_client.get("/scenarios/").content.decode()  # 1 of 1 finished, not 1 of 2
