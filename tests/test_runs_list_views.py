"""The runs list's test name and outcome, its test-name and key-fingerprint filters (shared by the list, the judge's
selection and the API through ``Run.objects.filtered``), skipped runs, and the empty states of the dashboard's
lists."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from harnessweb.engine import keys
from runs_app.judging.forms import Selection
from runs_app.lifecycle import Change, Reported, next_status
from runs_app.models import CriteriaSet, JudgeBatch, Provider, Run, RunEvent
from tests.conftest import make_ci_run, make_client, make_run, make_scenario

pytestmark = pytest.mark.django_db

SECRET = "sk-live-do-not-show-0123456789"


def make_keyed_run(secret: str | None, **fields: Any) -> Run:
    """An endpoint run whose one request presented ``secret`` in the Authorization header (none when None), as the
    consumer records it."""
    run = make_run(**{"status": "passed", **fields})
    key = {"place": "authorization", "fingerprint": keys.fingerprint(secret)} if secret is not None else None
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}
    data = {"method": "POST", "path": "/v1/chat/completions", "headers": {}, "body": body, "key": key}
    RunEvent.objects.create(run=run, seq=1, timestamp=run.started_at, kind="request", turn=1, data=data)
    return run


def names(response: Any) -> list[str]:
    return [row["run"].name or row["run"].scenario_id for row in response.context["rows"]]


# -- the test name and the outcome --------------------------------------------------------------------------------


def test_it_shows_a_ci_or_pytest_run_s_test_name_and_outcome_in_its_row(admin_client):
    now = timezone.now()
    outcomes = {"passed": "passed", "failed": "failed", "skipped": "skipped", "errored": "error"}
    for i, status in enumerate(outcomes):
        started = now - dt.timedelta(seconds=i)
        make_ci_run(name=f"tests/test_chat.py::test_{status}", source="pytest", status=status, started_at=started)
    make_run(scenario_id="weather", status="passed", started_at=now - dt.timedelta(minutes=1))
    response = admin_client.get("/runs/")
    html = response.content.decode()
    rows = {row["run"].name or row["run"].scenario_id: row for row in response.context["rows"]}
    for status, outcome in outcomes.items():
        row = rows[f"tests/test_chat.py::test_{status}"]
        assert (row["test"], row["outcome"]) == (f"tests/test_chat.py::test_{status}", outcome)
        assert f'<span class="outcome outcome-{status}">{outcome}</span>' in html
    assert rows["weather"]["test"] == "" and rows["weather"]["outcome"] == ""
    assert '<th scope="col">Test</th>' in html
    assert '<span class="badge skipped">skipped</span>' in html


def test_it_escapes_a_test_name(admin_client):
    make_ci_run(name="tests/x.py::test_<script>alert(1)</script>", source="pytest", status="failed")
    html = admin_client.get("/runs/").content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "test_&lt;script&gt;alert(1)&lt;/script&gt;" in html


# -- the filters --------------------------------------------------------------------------------------------------


def test_it_filters_by_any_part_of_the_test_name_whatever_its_case(admin_client):
    now = timezone.now()
    make_ci_run(name="tests/test_chat.py::test_streams_a_reply", source="pytest", started_at=now)
    make_ci_run(name="tests/test_chat.py::test_refuses", source="ci", started_at=now - dt.timedelta(seconds=1))
    make_run(scenario_id="streams", started_at=now - dt.timedelta(seconds=2))  # a scenario, not a test name
    response = admin_client.get("/runs/?test=STREAMS_A")
    assert names(response) == ["tests/test_chat.py::test_streams_a_reply"]
    assert names(admin_client.get("/runs/?test=test_chat.py")) == [
        "tests/test_chat.py::test_streams_a_reply",
        "tests/test_chat.py::test_refuses",
    ]
    assert 'name="test" value="STREAMS_A"' in response.content.decode()


@pytest.mark.backends
def test_it_filters_by_a_key_s_fingerprint_never_the_key(admin_client):
    now = timezone.now()
    make_keyed_run(SECRET, scenario_id="with-the-key", started_at=now)
    make_keyed_run("sk-another-key", scenario_id="another-key", started_at=now - dt.timedelta(seconds=1))
    make_keyed_run(None, scenario_id="no-key", started_at=now - dt.timedelta(seconds=2))
    make_run(scenario_id="no-request", started_at=now - dt.timedelta(seconds=3))
    fingerprint = keys.fingerprint(SECRET)
    assert names(admin_client.get(f"/runs/?fingerprint={fingerprint}")) == ["with-the-key"]
    assert names(admin_client.get(f"/runs/?fingerprint={fingerprint.upper()}")) == ["with-the-key"]
    assert list(Run.objects.filtered(fingerprint=f" {fingerprint} ")) == [Run.objects.get(scenario_id="with-the-key")]
    # The key itself finds nothing (only its fingerprint was ever recorded), and the list says it is no fingerprint.
    response = admin_client.get(f"/runs/?fingerprint={SECRET}")
    assert response.status_code == 400 and names(response) == []
    assert "fingerprint: not a key&#x27;s fingerprint" in response.content.decode()
    assert names(admin_client.get("/runs/?fingerprint=0123456789ab")) == []  # a fingerprint no request presented
    # Both filters with the others: every one must hold.
    assert names(admin_client.get(f"/runs/?fingerprint={fingerprint}&status=failed")) == []


def test_it_looks_the_fingerprint_up_with_one_exists_subquery(django_assert_max_num_queries):
    for i in range(5):
        make_keyed_run(f"sk-{i}", scenario_id=f"run-{i}")
    runs = Run.objects.filtered(fingerprint=keys.fingerprint("sk-3"))
    sql = str(runs.query).upper()
    assert "EXISTS" in sql and "JOIN" not in sql  # a semi-join: no row is repeated per matching event
    with django_assert_max_num_queries(1):
        assert [run.scenario_id for run in runs] == ["run-3"]


def test_the_source_filter_offers_pytest_and_finds_the_plugin_s_runs(admin_client):
    make_ci_run(name="tests/test_a.py::test_one", source="pytest")
    make_ci_run(name="build 12", source="ci")
    response = admin_client.get("/runs/?source=pytest")
    assert names(response) == ["tests/test_a.py::test_one"]
    assert "<option selected>pytest</option>" in response.content.decode()


def test_the_form_keeps_both_filters_and_the_pager_and_socket_carry_them(admin_client):
    fingerprint = keys.fingerprint(SECRET)
    response = admin_client.get(f"/runs/?test=chat&fingerprint={fingerprint}")
    html = response.content.decode()
    assert f'name="fingerprint" value="{fingerprint}"' in html
    assert 'pattern="[0-9A-Fa-f]{1,64}"' in html  # a pasted key is never sent
    assert response.context["filters"] == {"test": "chat", "fingerprint": fingerprint}
    assert f"fingerprint={fingerprint}" in response.context["socket_url"]


def test_the_judge_selection_shares_the_filters(admin_client):
    now = timezone.now()
    make_keyed_run(SECRET, name="tests/test_chat.py::test_keyed", source="pytest", started_at=now)
    make_keyed_run("sk-other", name="tests/test_chat.py::test_other_key", source="pytest", started_at=now)
    make_ci_run(name="tests/test_misc.py::test_keyed_too", source="pytest")
    selection = Selection.of_runs([])
    selection.filters = {"test": "keyed", "fingerprint": keys.fingerprint(SECRET)}
    assert [run.name for run in selection.runs()] == ["tests/test_chat.py::test_keyed"]
    page = admin_client.get(f"/runs/judge/?test=keyed&fingerprint={keys.fingerprint(SECRET)}")
    assert page.context["count"] == 1
    assert 'name="fingerprint" value="' + keys.fingerprint(SECRET) + '"' in page.content.decode()


def test_the_api_filters_by_test_name_and_fingerprint():
    now = timezone.now()
    keyed = make_keyed_run(SECRET, name="tests/test_api.py::test_keyed", source="pytest", started_at=now)
    make_ci_run(name="tests/test_api.py::test_plain", source="pytest", started_at=now - dt.timedelta(seconds=1))
    client = make_client("read")
    listed = client.get("/runs?test=TEST_API").json()["items"]
    assert [run["name"] for run in listed] == ["tests/test_api.py::test_keyed", "tests/test_api.py::test_plain"]
    listed = client.get(f"/runs?fingerprint={keys.fingerprint(SECRET)}").json()["items"]
    assert [run["id"] for run in listed] == [str(keyed.id)]
    assert client.get("/runs?fingerprint=" + "a" * 65).status_code == 422


def test_a_request_s_key_links_to_the_runs_of_that_key(admin_client):
    run = make_keyed_run(SECRET)
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    assert f'href="/runs/?fingerprint={keys.fingerprint(SECRET)}">runs with this key</a>' in html
    assert SECRET not in html


# -- skipped ------------------------------------------------------------------------------------------------------


def test_ci_may_report_a_skipped_run_which_finishes_it():
    client = make_client("write")
    response = client.post("/runs", json={"name": "t::skipped", "source": "pytest", "status": "skipped"})
    assert response.status_code == 201
    run = Run.objects.get(id=response.json()["id"])
    assert run.status == Run.Status.SKIPPED and run.finished_at is not None
    opened = client.post("/runs", json={"name": "t::later"}).json()
    finished = client.post(f"/runs/{opened['id']}/finish", json={"status": "skipped", "status_reason": "no GPU"})
    assert finished.status_code == 200 and finished.json()["status"] == "skipped"
    assert client.get("/runs?status=skipped").json()["count"] == 2
    assert next_status(Run.Status.RUNNING, Reported(Run.Status.SKIPPED, "why")) == Change(
        Run.Status.SKIPPED, "why", finished=True
    )


def test_a_skipped_run_counts_neither_way_in_a_scenario_s_pass_rate(admin_client):
    make_scenario("weather")
    make_run(scenario_id="weather", status="passed")
    make_run(scenario_id="weather", status="skipped", started_at=timezone.now() - dt.timedelta(minutes=1))
    row = admin_client.get("/scenarios/").context["rows"][0]
    assert (row["pass_rate"], row["finished"]) == (100, 1)


# -- empty states -------------------------------------------------------------------------------------------------


def test_an_empty_runs_list_says_where_to_point_each_sdk_on_this_host(admin_client, settings):
    settings.ALLOWED_HOSTS = ["harness.example"]
    html = admin_client.get("/runs/", HTTP_HOST="harness.example:8123").content.decode()
    assert "No runs yet: point your SDK at http://harness.example:8123/v1" in html
    assert 'OpenAI(base_url="http://harness.example:8123/v1"' in html
    assert 'Anthropic(base_url="http://harness.example:8123"' in html
    assert 'http_options={"base_url": "http://harness.example:8123"}' in html
    assert "pytest --harness-upload http://harness.example:8123" in html
    # The htmx swap of the table (a cleared filter) says the same.
    partial = admin_client.get("/runs/", HTTP_HOST="harness.example:8123", headers={"HX-Request": "true"})
    assert "point your SDK at http://harness.example:8123/v1" in partial.content.decode()


def test_a_filtered_empty_runs_list_says_how_to_widen_it(admin_client):
    make_run()
    html = admin_client.get("/runs/?test=nothing-like-this").content.decode()
    assert "No runs match these filters." in html and '<a href="/runs/">Clear them</a>' in html
    assert "point your SDK" not in html


def test_an_empty_scenario_list_says_how_to_add_one(admin_client):
    html = admin_client.get("/scenarios/").content.decode()
    assert "No scenarios yet" in html and "load_scenarios scenarios_app/examples" in html
    html = admin_client.get("/scenarios/?q=%3Cb%3Enope").content.decode()
    assert "No scenario matches “&lt;b&gt;nope”" in html and "Show them all" in html


def test_the_judge_page_says_what_to_do_without_runs_or_criteria_sets(admin_client):
    html = admin_client.get("/runs/judge/?test=%3Ci%3Enone").content.decode()
    assert "No runs match." in html and "Change the filters on the runs list" in html
    assert 'href="/runs/?test=%3Ci%3Enone&amp;"' in html
    assert "No saved criteria sets yet" in html
    CriteriaSet.objects.create(name="basics", criteria="Answered")
    assert "No saved criteria sets yet" not in admin_client.get("/runs/judge/").content.decode()


def test_a_judge_batch_without_verdicts_says_they_come(admin_client):
    batch = JudgeBatch.objects.create(criteria="answered", run_ids=[], total=2)
    html = admin_client.get(f"/runs/judge/{batch.pk}/").content.decode()
    assert "Each run's verdict appears here as the judge answers it." in html


def test_an_empty_coverage_cell_says_how_to_upload_evidence(admin_client):
    Provider.objects.create(name="acme", required_tiers=["unit"])
    html = admin_client.get("/coverage/acme/cassettes/").content.decode()
    assert "No evidence uploaded for this cell." in html
    assert "verify_acme_&lt;scenario&gt;.json" in html and "http://testserver/api/cassettes?name=" in html
    html = admin_client.get("/coverage/acme/unit/").content.decode()
    assert "POST /api/runs/&lt;run id&gt;/junit" in html


def test_an_empty_coverage_grid_says_how_to_register_a_provider(admin_client):
    Provider.objects.all().delete()
    html = admin_client.get("/coverage/").content.decode()
    assert "No providers registered:" in html and 'href="/admin/runs_app/provider/add/"' in html
