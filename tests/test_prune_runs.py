"""``manage.py prune_runs``: old runs go with their events, in batches; pinned and running runs stay."""

from __future__ import annotations

import datetime as dt
import uuid
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from runs_app.models import Run, RunEvent, TraceLog
from tests.conftest import make_client, make_run, make_trace_log

pytestmark = pytest.mark.django_db


def aged(days: float, **fields) -> Run:
    run = make_run(started_at=timezone.now() - dt.timedelta(days=days), status=Run.Status.PASSED, **fields)
    for seq in (1, 2, 3):
        RunEvent.objects.create(run=run, seq=seq, timestamp=run.started_at, kind="request", data={})
    return run


def prune(*args: str) -> str:
    out = StringIO()
    call_command("prune_runs", *args, stdout=out)
    return out.getvalue()


def test_it_deletes_old_runs_and_their_events_in_batches_keeping_pinned_and_running_ones() -> None:
    old = [aged(40) for _ in range(5)]
    make_trace_log(old[0], "a log")
    pinned = aged(90, pinned=True)
    running = aged(45)  # a run still served: its last request came just now
    Run.objects.filter(id=running.id).update(status=Run.Status.RUNNING)
    RunEvent.objects.create(run=running, seq=4, timestamp=timezone.now(), kind="request", data={})
    recent = aged(3)
    assert prune("--older-than", "30d", "--batch", "2") == (
        "Deleted 5 runs and 15 events started before "
        f"{(timezone.now() - dt.timedelta(days=30)):%Y-%m-%d %H:%M} UTC (1 pinned run kept).\n"
    )
    assert set(Run.objects.values_list("id", flat=True)) == {pinned.id, running.id, recent.id}
    assert RunEvent.objects.count() == 10 and not TraceLog.objects.exists()


def test_it_says_what_it_would_delete_on_a_dry_run() -> None:
    aged(10)
    assert prune("--older-than", "7d", "--dry-run").startswith("Would delete 1 run started before ")
    assert Run.objects.count() == 1
    assert prune("--older-than", "241h", "--dry-run").startswith("Would delete 0 runs")


@pytest.mark.parametrize("age", ["30", "30 days", "0d", "-1d", "3w"])
def test_it_refuses_an_age_it_cannot_read(age: str) -> None:
    with pytest.raises(CommandError, match=r"--older-than: .* is not an age like 30d, 12h or 90m"):
        call_command("prune_runs", f"--older-than={age}")


def test_it_pins_and_unpins_a_run_over_the_api() -> None:
    run = aged(60)
    client = make_client("write")
    pinned = client.put(f"/runs/{run.id}/pin")
    assert pinned.status_code == 200 and pinned.json()["pinned"] is True
    assert prune("--older-than", "30d").startswith("Deleted 0 runs and 0 events")
    assert client.delete(f"/runs/{run.id}/pin").json()["pinned"] is False
    assert client.put(f"/runs/{uuid.uuid4()}/pin").status_code == 404
    assert make_client("read").put(f"/runs/{run.id}/pin").status_code == 403
    assert prune("--older-than", "30d").startswith("Deleted 1 run and 3 events")


def test_it_pins_a_run_from_its_page(staff_client) -> None:
    run = aged(1)
    page = staff_client.get(f"/runs/{run.id}/").content.decode()
    assert f'action="/runs/{run.id}/pin/"' in page and ">Pin</button>" in page
    response = staff_client.post(f"/runs/{run.id}/pin/", {"pinned": "1"})
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.id}/"
    assert Run.objects.get(id=run.id).pinned
    assert ">Unpin</button>" in staff_client.get(f"/runs/{run.id}/").content.decode()
    staff_client.post(f"/runs/{run.id}/pin/", {"pinned": "0"})
    assert not Run.objects.get(id=run.id).pinned
    assert staff_client.get(f"/runs/{run.id}/pin/").status_code == 405
