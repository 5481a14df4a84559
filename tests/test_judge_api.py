"""The judge over REST, as a CI job calls it with a plain HTTP client: ``POST /api/runs/{id}/judge`` queues a judge
job on a run played through the openai SDK on a real daphne, the harness's own endpoint stands in for the judge
model, and ``GET /api/judge/{id}?wait=`` reads the job until its verdict; the verdict waits in the review queue with
the prompt that was sent. Scopes, bad input and a skipped judge too."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from runs_app.judging import api as judge_api
from runs_app.models import ApiToken, CriteriaSet, JudgeBatch, JudgeVerdict, Run
from tests.conftest import make_token, text
from tests.judging import CRITERIA, judge_scenario, play, point_judge_at, subject_scenario, verdict_json

pytestmark = pytest.mark.django_db(transaction=True)


def bearer(scope: str = "judge") -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token(scope)}"}


def post_judge(run_id: Any, body: Any, scope: str = "judge") -> Any:
    data = body if isinstance(body, str) else json.dumps(body)
    return Client().post(f"/api/runs/{run_id}/judge", data=data, content_type="application/json", headers=bearer(scope))


def get_job(job_id: Any, query: str = "wait=30", scope: str = "read") -> Any:
    return Client().get(f"/api/judge/{job_id}?{query}", headers=bearer(scope))


@pytest.fixture
def subject(settings, harness_server) -> Run:
    """A run of a fresh subject scenario, and the judge pointed at the harness itself."""
    point_judge_at(settings, harness_server)
    return play(harness_server, subject_scenario())


def test_it_queues_the_judge_and_answers_the_verdict_when_waited_for(subject) -> None:
    judge_scenario(subject.scenario_id, verdict_json("FAIL", summary="No city was named."))

    queued = post_judge(subject.pk, {"criteria": CRITERIA})

    assert queued.status_code == 202, queued.content
    job = queued.json()
    assert job["state"] in ("queued", "running", "done")
    assert (job["run_ids"], job["criteria"], job["total"]) == ([str(subject.pk)], CRITERIA, 1)
    assert job["url"] == f"http://testserver/api/judge/{job['id']}" == queued["Location"]
    assert job["page_url"] == f"http://testserver/runs/judge/{job['id']}/"

    done = get_job(job["id"])
    assert done.status_code == 200
    job = done.json()
    assert (job["state"], job["done"], job["detail"]) == ("done", 1, "")
    verdict = job["verdict"]
    assert (verdict["state"], verdict["overall"], verdict["effective"]) == ("judged", "FAIL", "FAIL")
    assert verdict["summary"] == "No city was named."
    assert [(c["criterion"], c["verdict"], c["reason"]) for c in verdict["criteria"]] == [
        (CRITERIA[0], "PASS", "It gave the weather."),
        (CRITERIA[1], "FAIL", "No city was named."),
    ]
    assert verdict["judge_model"] == "judge-model"
    assert verdict["input_tokens"] > 0 and verdict["output_tokens"] > 0  # the fake endpoint's usage
    assert (verdict["skipped_reason"], verdict["judge_error"], verdict["prompt"]) == ("", "", None)

    # The verdict is stored as every verdict is: waiting in the review queue, with the prompt sent and the tokens.
    stored = JudgeVerdict.objects.get(pk=verdict["id"])
    assert list(JudgeVerdict.objects.review_queue()) == [stored]
    assert stored.prompt.startswith("[system]\nYou are the judge of a recorded conversation")
    assert f"[user] {subject.scenario_id}" in stored.prompt and "1. " + CRITERIA[0] in stored.prompt
    assert (stored.input_tokens, stored.output_tokens) == (verdict["input_tokens"], verdict["output_tokens"])
    batch = JudgeBatch.objects.get(pk=job["id"])
    assert batch.api_token.scope == "judge" and batch.started_at is not None
    # ?prompt=true adds the exact prompt.
    assert get_job(job["id"], "prompt=true").json()["verdict"]["prompt"] == stored.prompt


def test_it_shows_the_prompt_model_and_tokens_where_the_verdict_is_reviewed(subject, staff_client) -> None:
    judge_scenario(subject.scenario_id, verdict_json("FAIL"))
    job = get_job(post_judge(subject.pk, {"criteria": CRITERIA}).json()["id"]).json()
    stored = JudgeVerdict.objects.get(pk=job["verdict"]["id"])
    tokens = f"{stored.input_tokens} in / {stored.output_tokens} out"

    queue = text(staff_client.get("/admin/runs_app/judgeverdict/queue/"))
    assert f"judge judge-model · tokens {tokens}" in queue
    assert 'id="queue-prompt"' in queue and "You are the judge of a recorded conversation" in queue
    change = text(staff_client.get(f"/admin/runs_app/judgeverdict/{stored.pk}/change/"))
    assert tokens in change and "Prompt sent" in change and f"1. {CRITERIA[0]}" in change


def test_it_takes_criteria_one_per_line_or_a_saved_set(subject) -> None:
    judge_scenario(subject.scenario_id, verdict_json("PASS"))
    CriteriaSet.objects.create(name="weather", criteria="\n".join(CRITERIA))

    by_lines = post_judge(subject.pk, {"criteria": "- " + CRITERIA[0] + "\n\n- " + CRITERIA[1] + "\n"}).json()
    by_set = post_judge(subject.pk, {"criteria_set": "weather"}).json()

    assert by_lines["criteria"] == CRITERIA and by_lines["criteria_set"] is None
    assert by_set["criteria"] == CRITERIA and by_set["criteria_set"] == "weather"
    for job in (by_lines, by_set):
        verdict = get_job(job["id"]).json()["verdict"]
        assert verdict["effective"] == "PASS"
    assert not JudgeVerdict.objects.review_queue().exists()


def test_it_answers_the_state_so_far_when_the_wait_runs_out(subject, monkeypatch) -> None:
    # The judge answers after 1.5 s: a short wait sees the job unfinished, a longer one its verdict.
    judge_scenario(
        subject.scenario_id,
        verdict_json("PASS"),
        failures_before_success="always",
        failure_status="slow_first_byte",
        failure_retry_after_ms=1500,
    )
    job_id = post_judge(subject.pk, {"criteria": CRITERIA}).json()["id"]

    now = get_job(job_id, "wait=0").json()
    assert now["state"] in ("queued", "running") and now["verdict"] is None and now["done"] == 0
    monkeypatch.setattr(judge_api, "MAX_WAIT_S", 0.3)  # ?wait= is capped: 1000 s waits 0.3 s here
    began = time.monotonic()
    capped = get_job(job_id, "wait=1000").json()
    assert time.monotonic() - began < 1.2 and capped["state"] != "done"
    monkeypatch.setattr(judge_api, "MAX_WAIT_S", 60.0)
    assert get_job(job_id, "wait=30").json()["verdict"]["effective"] == "PASS"


def test_it_refuses_read_and_write_tokens_and_lets_a_judge_token_write(subject) -> None:
    for scope in ("read", "write"):
        refused = post_judge(subject.pk, {"criteria": CRITERIA}, scope=scope)
        assert refused.status_code == 403
        detail = refused.json()["detail"]
        assert detail.startswith(f"This token has {scope} scope; queuing the judge")
        assert "--scope judge" in detail
    assert Client().post(f"/api/runs/{subject.pk}/judge").status_code == 401
    assert not JudgeBatch.objects.exists()
    # judge ⊃ write ⊃ read: one token serves a CI job's uploads and its judge.
    judge = bearer("judge")
    created = Client().post("/api/runs", data={"name": "ci"}, content_type="application/json", headers=judge)
    assert created.status_code == 201
    assert Client().get("/api/runs", headers=judge).status_code == 200


def test_it_creates_a_judge_token_from_the_command_line(capsys) -> None:
    call_command("create_api_token", "ci-judge", "--scope", "judge")
    token = capsys.readouterr().out.strip()
    assert ApiToken.objects.get(name="ci-judge").scope == "judge"
    assert Client().get("/api/runs", headers={"Authorization": f"Bearer {token}"}).status_code == 200


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({}, "body.criteria", "Give criteria (a list of strings, or one per line) or criteria_set."),
        ({"criteria": []}, "body.criteria", "has no criteria."),
        ({"criteria": " \n - \n"}, "body.criteria", "has no criteria."),
        ({"criteria": ["ok", "  "]}, "body.criteria.1", "A criterion cannot be blank."),
        ({"criteria": ["one\ntwo"]}, "body.criteria.0", "One criterion per item: it holds a line break."),
        ({"criteria_set": "nope"}, "body.criteria_set", "No criteria set named 'nope' (known: none saved)."),
        ({"criteria": 3}, "body.criteria", "must be a list of strings, or one string with one criterion per line"),
        ({"criteria": ["ok", 3]}, "body.criteria.1", "must be a string (one criterion)"),
        ({"criteria": "a\u0000b"}, "body.criteria", "contains a NUL character"),
        ({"criteria": ["ok"], "extra": 1}, "body.extra", "Extra inputs are not permitted"),
        ([1, 2], "body", "must be an object: {criteria: [...]} or {criteria_set: name}"),
        ("{not json", "body", "Malformed JSON"),
    ],
)
def test_it_refuses_bad_input_naming_the_field(subject, body, field, message) -> None:
    refused = post_judge(subject.pk, body)
    assert refused.status_code == 422, refused.content
    errors = refused.json()["errors"]
    assert errors[0]["field"] == field and errors[0]["message"].startswith(message), errors
    assert not JudgeBatch.objects.exists()


def test_it_answers_404_and_422_for_unknown_runs_jobs_and_bad_parameters(subject) -> None:
    missing = post_judge("00000000-0000-0000-0000-000000000000", {"criteria": CRITERIA})
    assert missing.status_code == 404
    assert missing.json()["detail"] == "No run 00000000-0000-0000-0000-000000000000."
    assert post_judge("not-a-uuid", {"criteria": CRITERIA}).json()["errors"][0]["field"] == "path.run_id"
    assert get_job(999999).status_code == 404 and get_job(999999).json()["detail"] == "No judge job 999999."
    assert get_job("x").json()["errors"][0]["field"] == "path.job_id"
    for query in ("wait=soon", "wait=-1"):
        refused = get_job(1, query)
        assert refused.status_code == 422 and refused.json()["errors"][0]["field"] == "query.wait", query
    assert not JudgeBatch.objects.exists()


def test_it_answers_503_when_no_judge_is_configured(subject, settings) -> None:
    settings.HARNESS_JUDGE_BASE_URL = ""
    refused = post_judge(subject.pk, {"criteria": CRITERIA})
    assert refused.status_code == 503
    assert refused.json()["detail"].startswith("No judge is configured on this server: set HARNESS_JUDGE_BASE_URL")
    assert not JudgeBatch.objects.exists()


@pytest.mark.parametrize("key", ["test-api-key", "", "${OPENAI_API_KEY}"])
def test_it_skips_the_judge_without_a_real_key_never_a_fail(subject, settings, staff_client, key) -> None:
    settings.HARNESS_JUDGE_API_KEY = key
    judge_id = judge_scenario(subject.scenario_id, verdict_json("FAIL"))

    job = get_job(post_judge(subject.pk, {"criteria": CRITERIA}).json()["id"]).json()

    verdict = job["verdict"]
    assert (job["state"], verdict["state"], verdict["effective"]) == ("done", "skipped", "SKIPPED")
    assert (verdict["overall"], verdict["judge_error"], verdict["criteria"]) == ("", "", [])
    assert verdict["skipped_reason"].startswith("the judge's API key is")
    assert not Run.objects.filter(scenario_id=judge_id).exists()  # nothing was sent to the judge
    stored = JudgeVerdict.objects.get(pk=verdict["id"])
    assert stored.prompt.startswith("[system]")  # what would have been sent
    # Not a failure anywhere: not in the review queue, not an effective FAIL nor a judge error; filtered as skipped.
    assert not JudgeVerdict.objects.review_queue().exists()
    assert not JudgeVerdict.objects.effective("FAIL").exists()
    assert not JudgeVerdict.objects.effective("ERROR").exists()
    assert not JudgeVerdict.objects.judge_failed().exists()
    assert list(JudgeVerdict.objects.effective("SKIPPED")) == [stored]
    # Shown as skipped on the batch page, the run page and in the admin.
    batch_page = text(staff_client.get(f"/runs/judge/{job['id']}/"))
    assert '<span class="badge SKIPPED">skipped</span>' in batch_page
    assert "1 skipped (the judge was not asked): not counted as FAIL." in batch_page
    assert "No FAIL verdicts to review." in batch_page
    run_page = text(staff_client.get(f"/runs/{subject.pk}/"))
    assert '<span class="badge SKIPPED">skipped</span>' in run_page and "the judge&#x27;s API key is" in run_page
    listing = text(staff_client.get("/admin/runs_app/judgeverdict/?effective=SKIPPED"))
    assert ">skipped</span>" in listing and f"#{stored.pk}" in listing
    assert f"#{stored.pk}" not in text(staff_client.get("/admin/runs_app/judgeverdict/?judge_error=yes"))
    change = text(staff_client.get(f"/admin/runs_app/judgeverdict/{stored.pk}/change/"))
    assert ">skipped</span>" in change and "JUDGE ERROR" not in change
