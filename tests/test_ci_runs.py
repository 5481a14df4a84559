"""The runs API: CI runs (idempotent on external_id), finishing, listing, trace logs, judge verdicts, batches."""

from __future__ import annotations

import datetime as dt
import json
import threading
import uuid
from typing import Any

import httpx2
import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from ninja.testing import TestClient

from harnessweb.api import api
from runs_app.models import JudgeVerdict, Run, RunEvent, TraceLog, VerdictCriterion
from tests.conftest import make_client, make_run, make_token

pytestmark = pytest.mark.django_db


def make_verdict(**fields: Any) -> dict[str, Any]:
    verdict = {
        "criteria": [
            {"criterion": "Did the assistant create the list?", "verdict": "PASS", "reason": "All four items."},
            {"criterion": "Was the link returned?", "verdict": "FAIL", "reason": "No /u/ link in turn 2."},
        ],
        "overall": "FAIL",
        "summary": "The list was created but the second link is missing.",
        "judge_model": "claude-sonnet-4-5",
        "prompt_hash": "sha256:0f3a",
    }
    return {**verdict, **fields}


# -- runs ------------------------------------------------------------------------------------------------------------


def test_it_opens_a_ci_run() -> None:
    response = make_client().post(
        "/runs",
        json={
            "name": "e2e nightly",
            "commit": "3f9c2e1",
            "branch": "main",
            "build_url": "https://ci.example.com/builds/812",
            "started_at": "2026-02-05T04:12:09Z",
        },
    )

    assert response.status_code == 201
    body = response.json()
    assert body["source"] == "ci"
    assert body["status"] == "running"
    assert (body["name"], body["commit"], body["branch"]) == ("e2e nightly", "3f9c2e1", "main")
    run = Run.objects.get(id=body["id"])
    assert run.started_at == dt.datetime(2026, 2, 5, 4, 12, 9, tzinfo=dt.UTC)
    assert run.finished_at is None


def test_it_sets_the_finish_time_of_a_run_opened_as_finished() -> None:
    response = make_client().post("/runs", json={"name": "unit", "status": "passed"})

    assert response.status_code == 201
    assert response.json()["finished_at"] is not None


def test_it_returns_the_same_run_for_a_retried_external_id() -> None:
    client = make_client()
    payload = {"name": "build 812", "external_id": "github:812:1"}

    first = client.post("/runs", json=payload)
    retry = client.post("/runs", json={**payload, "name": "build 812 (retry)"})

    assert (first.status_code, retry.status_code) == (201, 200)
    assert retry.json()["id"] == first.json()["id"]
    assert retry.json()["name"] == "build 812"
    assert Run.objects.filter(external_id="github:812:1").count() == 1


@pytest.mark.backends
@pytest.mark.django_db(transaction=True)
def test_it_never_duplicates_a_run_under_concurrent_retries() -> None:
    token = make_token()
    barrier = threading.Barrier(6)
    statuses: list[int] = []
    ids: set[str] = set()

    def upload() -> None:
        client = TestClient(api, headers={"Authorization": f"Bearer {token}"})
        try:
            barrier.wait()
            response = client.post("/runs", json={"name": "racing", "external_id": "race-1"})
            statuses.append(response.status_code)
            ids.add(response.json()["id"])
        finally:
            connection.close()

    threads = [threading.Thread(target=upload) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sorted(statuses) == [200, 200, 200, 200, 200, 201]
    assert len(ids) == 1
    assert Run.objects.filter(external_id="race-1").count() == 1


def test_it_names_the_field_of_an_invalid_run_and_stores_nothing() -> None:
    response = make_client().post("/runs", json={"name": "x", "status": "green", "build_url": "ftp://nope"})

    assert response.status_code == 422
    fields = {error["field"] for error in response.json()["errors"]}
    assert fields == {"body.run.status", "body.run.build_url"}
    assert not Run.objects.exists()


def test_it_answers_malformed_json_with_its_line_and_column() -> None:
    response = make_client().post("/runs", data=b'{"name": "x",\n "commit": }', content_type="application/json")

    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert error["field"] == "body"
    assert error["message"].startswith("Malformed JSON: Expecting value")
    assert (error["line"], error["column"]) == (2, 12)
    assert not Run.objects.exists()


@pytest.mark.backends
def test_it_refuses_a_date_that_cannot_be_stored() -> None:
    response = make_client().post("/runs", json={"started_at": "0001-01-01T00:00:00+01:00"})

    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.run.started_at"


def test_it_lists_runs_filtered_and_paginated() -> None:
    now = timezone.now()
    make_run(scenario_id="weather", status="passed", started_at=now - dt.timedelta(days=2))
    recent = make_run(scenario_id="weather", status="failed", started_at=now - dt.timedelta(hours=1))
    make_run(scenario_id="refund", status="failed", source="ci", started_at=now)
    client = make_client("read")

    everything = client.get("/runs").json()
    weather = client.get("/runs?scenario=weather").json()
    failed_since = client.get("/runs", query_params={"status": "failed", "since": (now - dt.timedelta(days=1))})
    ci = client.get("/runs?source=ci").json()
    page = client.get("/runs?limit=1&offset=1").json()

    assert everything["count"] == 3
    assert [run["scenario_id"] for run in everything["items"]] == ["refund", "weather", "weather"]
    assert weather["count"] == 2
    assert {run["id"] for run in failed_since.json()["items"]} == {str(recent.id), str(Run.objects.get(source="ci").id)}
    assert ci["count"] == 1
    assert [run["id"] for run in page["items"]] == [str(recent.id)]
    assert client.get("/runs?status=green").status_code == 422


def test_it_shows_a_run_with_its_events() -> None:
    run = make_run(scenario_id="weather")
    for seq, kind in enumerate(["request", "match", "response"], start=1):
        RunEvent.objects.create(run=run, seq=seq, timestamp=timezone.now(), kind=kind, turn=1, data={"n": seq})

    response = make_client("read").get(f"/runs/{run.id}")

    assert response.status_code == 200
    assert [(event["seq"], event["kind"]) for event in response.json()["events"]] == [
        (1, "request"),
        (2, "match"),
        (3, "response"),
    ]


def test_it_answers_404_for_an_unknown_run() -> None:
    client = make_client()

    assert client.get(f"/runs/{uuid.uuid4()}").status_code == 404
    assert client.post(f"/runs/{uuid.uuid4()}/trace-logs", json={}).status_code == 404
    assert client.get("/runs/not-a-uuid").status_code == 422


def test_it_finishes_a_run() -> None:
    run = make_run(source="ci")

    response = make_client().post(
        f"/runs/{run.id}/finish",
        json={"status": "failed", "status_reason": "2 tests failed", "finished_at": "2026-02-05T05:00:00+01:00"},
    )

    assert response.status_code == 200
    run.refresh_from_db()
    assert (run.status, run.status_reason) == ("failed", "2 tests failed")
    assert run.finished_at == dt.datetime(2026, 2, 5, 4, 0, tzinfo=dt.UTC)


def test_it_refuses_to_finish_a_run_as_running() -> None:
    run = make_run()

    response = make_client().post(f"/runs/{run.id}/finish", json={"status": "running"})

    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.finish.status"


# -- trace logs ------------------------------------------------------------------------------------------------------


def test_it_stores_one_trace_log_in_the_seeds_camel_case() -> None:
    run = make_run()
    turn_log = {"turnNumber": 1, "filePath": "/tmp/hermes-e2e-1a2b/logs/2026-02-05/0001.log", "content": "SUCCESS\n"}

    response = make_client().post(f"/runs/{run.id}/trace-logs", json=turn_log)

    assert response.status_code == 201
    assert (response.json()["turn_number"], response.json()["size"]) == (1, 8)
    log = TraceLog.objects.get(run=run)
    assert (log.turn_number, log.file_path, log.content) == (1, turn_log["filePath"], "SUCCESS\n")


@pytest.mark.backends
def test_it_keeps_the_good_items_of_a_batch_and_reports_the_bad_one() -> None:
    run = make_run()
    batch = [
        {"turn_number": 1, "file_path": "logs/0001.log", "content": "turn one"},
        {"turn_number": -1, "file_path": "logs/0002.log"},
        {"turnNumber": 3, "filePath": "logs/0003.log", "content": "turn three\x00"},
        {"turnNumber": 4, "filePath": "logs/0004.log", "content": "turn four"},
    ]

    response = make_client().post(f"/runs/{run.id}/trace-logs", json=batch)

    assert response.status_code == 207
    body = response.json()
    assert (body["accepted"], body["rejected"]) == (2, 2)
    results = body["results"]
    assert [result["index"] for result in results] == [0, 1, 2, 3]
    assert [result["accepted"] for result in results] == [True, False, False, True]
    assert {error["field"] for error in results[1]["errors"]} == {"turn_number", "content"}
    assert results[2]["errors"][0]["field"] == "content"
    assert "NUL" in results[2]["errors"][0]["message"]
    # "accepted" means stored and visible now.
    stored = TraceLog.objects.filter(run=run).order_by("turn_number")
    assert [log.id for log in stored] == [results[0]["id"], results[3]["id"]]


def test_it_refuses_a_single_invalid_trace_log_with_422_and_stores_nothing() -> None:
    run = make_run()

    response = make_client().post(f"/runs/{run.id}/trace-logs", json={"turnNumber": "one", "content": "x"})

    assert response.status_code == 422
    assert {error["field"] for error in response.json()["errors"]} == {"body.turn_number", "body.file_path"}
    assert not TraceLog.objects.exists()


def test_it_answers_a_malformed_batch_with_422() -> None:
    run = make_run()

    response = make_client().post(f"/runs/{run.id}/trace-logs", data=b"[{]", content_type="application/json")

    assert response.status_code == 422
    assert response.json()["errors"][0]["line"] == 1


def test_it_answers_413_past_the_size_limit(settings: Any) -> None:
    settings.HARNESS_API_MAX_BYTES = 200
    run = make_run()
    log = {"turn_number": 1, "file_path": "a.log", "content": "x" * 300}

    response = make_client().post(f"/runs/{run.id}/trace-logs", json=log)

    assert response.status_code == 413
    assert response.json()["detail"] == "Request body is larger than the limit of 200 bytes"
    assert not TraceLog.objects.exists()


def test_it_answers_413_when_django_refuses_a_body_ninja_parses(settings: Any) -> None:
    settings.HARNESS_API_MAX_BYTES = settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    browser = Client(HTTP_AUTHORIZATION=f"Bearer {make_token()}")

    response = browser.post("/api/runs", data=json.dumps({"name": "x" * 200}), content_type="application/json")

    assert response.status_code == 413
    assert response.json() == {"detail": "Request body is larger than the limit of 100 bytes"}
    assert not Run.objects.exists()


@pytest.mark.parametrize("path", ["/runs", "/runs/{run_id}/trace-logs"])
def test_it_answers_json_nested_too_deeply_with_422(path: str) -> None:
    run = make_run()

    response = make_client().post(
        path.format(run_id=run.id), data=b"[" * 100_000 + b"]" * 100_000, content_type="application/json"
    )

    assert response.status_code == 422
    assert response.json()["errors"][0]["message"] == "The JSON is nested too deeply."


# -- verdicts --------------------------------------------------------------------------------------------------------


@pytest.mark.backends
def test_it_stores_a_verdict_with_its_criteria() -> None:
    run = make_run()

    response = make_client().post(f"/runs/{run.id}/verdicts", json=make_verdict())

    assert response.status_code == 201
    body = response.json()
    assert (body["overall"], body["judge_error"], body["judge_model"]) == ("FAIL", "", "claude-sonnet-4-5")
    # Criteria are numbered from 1, as the prompt numbers them.
    assert [(c["position"], c["verdict"]) for c in body["criteria"]] == [(1, "PASS"), (2, "FAIL")]
    verdict = JudgeVerdict.objects.get(run=run)
    assert verdict.prompt_hash == "sha256:0f3a"
    assert list(verdict.criteria.values_list("criterion", "judge_verdict", "reason")) == [
        ("Did the assistant create the list?", "PASS", "All four items."),
        ("Was the link returned?", "FAIL", "No /u/ link in turn 2."),
    ]


def test_it_reads_verdict_values_case_insensitively_and_camel_case_names() -> None:
    run = make_run()
    verdict = make_verdict(overall="pass", judgeModel="sonnet")
    del verdict["judge_model"]
    verdict["criteria"][1]["verdict"] = "pass"

    response = make_client().post(f"/runs/{run.id}/verdicts", json=verdict)

    assert response.status_code == 201
    assert response.json()["overall"] == "PASS"
    assert response.json()["judge_model"] == "sonnet"


def test_it_stores_a_failed_judge_as_a_judge_error_never_as_fail() -> None:
    run = make_run()

    response = make_client().post(
        f"/runs/{run.id}/verdicts",
        json=make_verdict(judge_error="overloaded_error: 529 from the judge", overall="FAIL"),
    )

    assert response.status_code == 201
    verdict = JudgeVerdict.objects.get(run=run)
    assert verdict.overall == ""
    assert verdict.judge_error == "overloaded_error: 529 from the judge"


def test_it_treats_the_seeds_diagnostic_fail_without_criteria_as_a_judge_error() -> None:
    run = make_run()
    # The seed's safeParseJudgeVerdict answers a bare FAIL when it could not parse the judge's reply.
    diagnostic = {"criteria": [], "overall": "FAIL", "summary": "Failed to parse judge response"}

    response = make_client().post(f"/runs/{run.id}/verdicts", json=diagnostic)

    assert response.status_code == 201
    assert response.json()["overall"] == ""
    assert "no criteria" in response.json()["judge_error"]


def test_it_reads_the_verdict_from_raw_output_when_only_that_is_sent() -> None:
    run = make_run()
    raw = "Here is my evaluation:\n```json\n" + json.dumps(make_verdict(judge_model="", prompt_hash="")) + "\n```"

    response = make_client().post(f"/runs/{run.id}/verdicts", json={"raw_output": raw, "judge_model": "sonnet"})

    assert response.status_code == 201
    body = response.json()
    assert (body["overall"], body["judge_error"], len(body["criteria"])) == ("FAIL", "", 2)
    assert JudgeVerdict.objects.get(run=run).raw_output == raw


def test_it_stores_unparsable_raw_output_as_a_judge_error() -> None:
    run = make_run()

    response = make_client().post(f"/runs/{run.id}/verdicts", json={"raw_output": "I think it went fine."})

    assert response.status_code == 201
    verdict = JudgeVerdict.objects.get(run=run)
    assert (verdict.overall, verdict.judge_error) == ("", "No parsable verdict in the judge's raw output.")


def test_it_reports_each_verdict_of_a_batch() -> None:
    run = make_run()
    bad = make_verdict()
    bad["criteria"][0]["verdict"] = "MAYBE"

    response = make_client().post(f"/runs/{run.id}/verdicts", json=[make_verdict(), bad, "nonsense"])

    assert response.status_code == 207
    results = response.json()["results"]
    assert [result["accepted"] for result in results] == [True, False, False]
    assert results[1]["errors"][0]["field"] == "criteria.0.verdict"
    assert JudgeVerdict.objects.filter(run=run).count() == 1
    assert VerdictCriterion.objects.filter(verdict__run=run).count() == 2


# -- over real HTTP --------------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_it_serves_ci_uploads_over_http(harness_server: Any) -> None:
    headers = {"Authorization": f"Bearer {make_token()}"}
    with httpx2.Client(base_url=f"{harness_server.url}/api", headers=headers, timeout=20) as client:
        opened = client.post("/runs", json={"name": "http", "external_id": "http-1"})
        retried = client.post("/runs", json={"name": "http", "external_id": "http-1"})
        run_id = opened.json()["id"]
        logs = client.post(
            f"/runs/{run_id}/trace-logs",
            json=[{"turnNumber": 1, "filePath": "a.log", "content": "ok"}, {"turnNumber": 2}],
        )
        finished = client.post(f"/runs/{run_id}/finish", json={"status": "passed"})
        anonymous = client.get("/runs", headers={"Authorization": ""})

    assert (opened.status_code, retried.status_code) == (201, 200)
    assert retried.json()["id"] == run_id
    assert logs.status_code == 207
    assert [result["accepted"] for result in logs.json()["results"]] == [True, False]
    assert finished.json()["status"] == "passed"
    assert anonymous.status_code == 401
    assert anonymous.headers["content-type"] == "application/json; charset=utf-8"
    assert Run.objects.get(id=run_id).trace_logs.count() == 1


@pytest.mark.django_db(transaction=True)
def test_it_answers_413_over_http_past_ten_megabytes(harness_server: Any) -> None:
    run = make_run()
    headers = {"Authorization": f"Bearer {make_token()}", "Content-Type": "application/json"}
    body = b'{"turn_number": 1, "file_path": "a", "content": "' + b"x" * (10 * 1024 * 1024) + b'"}'

    response = httpx2.post(
        f"{harness_server.url}/api/runs/{run.id}/trace-logs", content=body, headers=headers, timeout=30
    )

    assert response.status_code == 413
    assert "larger than the limit" in response.json()["detail"]
    assert not TraceLog.objects.exists()


# -- coverage --------------------------------------------------------------------------------------------------------


def test_it_serves_coverage_as_json_to_any_token() -> None:
    anonymous = TestClient(api).get("/coverage")
    response = make_client("read").get("/coverage")
    another_day = make_client("read").get("/coverage?today=2026-01-01")

    assert anonymous.status_code == 401
    assert response.status_code == 200
    assert {"providers", "obligations"} <= set(response.json())
    assert another_day.status_code == 200
