"""Judging from the admin and the dashboard, in-process (the browser test drives the same pages on a server): the
criteria sets, the Run action, the judge page's form and its errors, the background batch and its page, and a judge
error shown as one."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from runs_app.models import CriteriaSet, JudgeBatch, JudgeVerdict
from tests.conftest import changelist, make_run, make_user, text, wait_for
from tests.judging import CRITERIA, judge_scenario, play, point_judge_at, subject_scenario, verdict_json

pytestmark = pytest.mark.django_db(transaction=True)
JUDGE_URL = "/runs/judge/"


def finished(batch_id: int) -> JudgeBatch:
    return wait_for(
        lambda: JudgeBatch.objects.filter(pk=batch_id, finished_at__isnull=False).first(),
        timeout=30,
        message=f"judge batch {batch_id} to finish",
    )


def test_it_saves_a_criteria_set_in_the_admin(staff_client) -> None:
    response = staff_client.post(
        reverse("admin:runs_app_criteriaset_add"), {"name": "weather", "criteria": "\n".join(CRITERIA)}
    )
    assert response.status_code == 302
    saved = CriteriaSet.objects.get(name="weather")
    assert saved.criteria.splitlines() == CRITERIA
    listing = text(staff_client.get(changelist("runs_app_criteriaset")))
    assert "weather" in listing
    # The name is unique: a second set of that name is refused with the field's error, not a 500.
    again = staff_client.post(reverse("admin:runs_app_criteriaset_add"), {"name": "weather", "criteria": "x"})
    assert again.status_code == 200
    assert "Criteria set with this Name already exists." in text(again)


def test_it_judges_the_runs_chosen_in_the_admin(settings, harness_server, staff_client) -> None:
    point_judge_at(settings, harness_server)
    failing, passing = subject_scenario(), subject_scenario()
    failing_run, passing_run = play(harness_server, failing), play(harness_server, passing)
    judge_scenario(failing, verdict_json("FAIL", summary="No city <b>named</b>."))
    judge_scenario(passing, verdict_json("PASS"))
    weather = CriteriaSet.objects.create(name="weather", criteria="\n".join(CRITERIA))

    form = staff_client.post(
        changelist("runs_app_run"),
        {"action": "judge_these_runs", "_selected_action": [str(failing_run.pk), str(passing_run.pk)]},
    )
    assert form.status_code == 200
    body = text(form)
    assert "2 runs" in body
    assert f'name="run" value="{failing_run.pk}"' in body and f'name="run" value="{passing_run.pk}"' in body

    started = staff_client.post(
        JUDGE_URL, {"run": [str(failing_run.pk), str(passing_run.pk)], "criteria_set": weather.pk}
    )
    batch = JudgeBatch.objects.get()
    assert started.status_code == 302 and started["Location"] == f"/runs/judge/{batch.pk}/"
    batch = finished(batch.pk)
    assert (batch.done, batch.total, batch.criteria_set) == (2, 2, weather)

    page = text(staff_client.get(started["Location"]))
    assert "2 of 2 judged" in page
    assert "No city &lt;b&gt;named&lt;/b&gt;." in page  # the judge's words are escaped
    assert 'class="badge FAIL"' in page and 'class="badge PASS"' in page
    assert "Review the 1 FAIL verdict in the review queue" in page
    # The FAIL verdict is the one waiting in the review queue.
    queued = JudgeVerdict.objects.review_queue().get()
    assert queued.run == failing_run
    queue = text(staff_client.get(reverse("admin:runs_app_judgeverdict_queue")))
    assert CRITERIA[1] in queue and "No city was named." in queue
    # The batch is listed in the admin, read-only, with a link to its page.
    batches = text(staff_client.get(changelist("runs_app_judgebatch")))
    assert "2 of 2" in batches and f'href="/runs/judge/{batch.pk}/"' in batches


def test_it_shows_a_judge_error_as_a_judge_error(settings, harness_server, staff_client) -> None:
    point_judge_at(settings, harness_server)
    scenario_id = subject_scenario()
    run = play(harness_server, scenario_id)
    judge_scenario(scenario_id, failures_before_success="always", failure_status="server_error")

    started = staff_client.post(JUDGE_URL, {"run": str(run.pk), "criteria": "The assistant answered"})
    batch = finished(JudgeBatch.objects.get().pk)
    verdict = JudgeVerdict.objects.get(pk=batch.verdict_ids[0])
    assert verdict.judge_error.startswith("HTTP 500 from")
    assert verdict.overall == ""

    page = text(staff_client.get(started["Location"]))
    assert ">JUDGE ERROR</span>" in page
    assert "The judge failed, so this says nothing about the run: HTTP 500 from" in page
    assert "No FAIL verdicts to review." in page and "1 judge error: not counted as FAIL." in page
    assert not JudgeVerdict.objects.review_queue().exists()
    verdicts = text(staff_client.get(changelist("runs_app_judgeverdict")))
    assert ">JUDGE ERROR</span>" in verdicts
    # The run itself keeps its own status: the judge failing says nothing about it.
    run.refresh_from_db()
    assert run.status == "passed"


def test_it_offers_the_judge_page_from_the_runs_list_and_a_run_page(staff_client) -> None:
    run = make_run(scenario_id="listed")
    listing = text(staff_client.get("/runs/?scenario=listed"))
    assert 'href="/runs/judge/?scenario=listed&amp;">Judge these runs</a>' in listing
    assert f'href="/runs/judge/?run={run.pk}">Judge this run</a>' in text(staff_client.get(f"/runs/{run.pk}/"))

    form = text(staff_client.get("/runs/judge/?scenario=listed"))
    assert "1 run" in form and "listed" in form
    assert '<input type="hidden" name="scenario" value="listed">' in form


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"run": "not-a-uuid", "criteria": "x"}, "&#x27;not-a-uuid&#x27; is not a run id (a UUID)."),
        ({"criteria": "  \n "}, "Type at least one criterion, or choose a saved criteria set."),
        ({"criteria": "x", "criteria_set": "999"}, "Select a valid choice."),
        ({"criteria": "x", "limit": "many"}, "limit must be a whole number from 1 to 500, not &#x27;many&#x27;."),
        ({"criteria": "x", "scenario": "nothing-here"}, "There are no runs to judge."),
    ],
)
def test_it_refuses_a_bad_judge_request_precisely(settings, harness_server, staff_client, data, message) -> None:
    point_judge_at(settings, harness_server)
    response = staff_client.post(JUDGE_URL, data)
    assert response.status_code == 400
    assert message in text(response)
    assert not JudgeBatch.objects.exists()


def test_it_refuses_to_judge_without_a_judge(settings, staff_client) -> None:
    settings.HARNESS_JUDGE_BASE_URL = ""
    run = make_run()
    form = text(staff_client.get(f"{JUDGE_URL}?run={run.pk}"))
    assert "No judge is configured: set <code>HARNESS_JUDGE_BASE_URL</code>" in form
    response = staff_client.post(JUDGE_URL, {"run": str(run.pk), "criteria": "x"})
    assert response.status_code == 400
    assert "No judge is configured: set HARNESS_JUDGE_BASE_URL" in text(response)
    assert not JudgeBatch.objects.exists()


def test_it_keeps_judging_from_anonymous_visitors_and_non_staff() -> None:
    anonymous = Client()
    for url in (JUDGE_URL, "/runs/judge/1/"):
        response = anonymous.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    user = Client()
    user.force_login(make_user("viewer"))
    assert user.get(JUDGE_URL).status_code == 403
    assert user.post(JUDGE_URL, {"criteria": "x"}).status_code == 403
