"""Judging from the dashboard in a real browser: the runs list's button, the criteria form, the batch page counting
"n of m judged" live, and the FAIL verdicts waiting in the review queue.

The server under test is a daphne of its own whose judge (HARNESS_JUDGE_BASE_URL) is the session's harness server,
answering from a scenario that holds each answer 1.5 s, so the page is seen mid-way."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import LiveServer, log_in, running_server
from tests.judging import CRITERIA, judge_scenario, judging_env, play, subject_scenario, verdict_json


@pytest.fixture(scope="module")
def judging_server(harness_server: LiveServer, tmp_path_factory: Any) -> Iterator[LiveServer]:
    with running_server(tmp_path_factory.mktemp("judging"), judging_env(f"{harness_server.url}/v1")) as server:
        yield server


def test_it_judges_the_listed_runs_with_live_progress(
    browser, harness_server, judging_server, transactional_db
) -> None:
    subject = subject_scenario()
    first, second = play(harness_server, subject), play(harness_server, subject)
    # Every judge call waits 1.5 s before its answer: long enough to see the count between two verdicts.
    judge_scenario(
        subject,
        verdict_json("FAIL", summary="No city was named."),
        failures_before_success="always",
        failure_status="slow_first_byte",
        failure_retry_after_ms=1500,
    )
    page = log_in(browser, judging_server)
    page.goto(f"{judging_server.url}/runs/?scenario={subject}")
    page.click("text=Judge these runs")
    page.wait_for_url(re.compile(r"/runs/judge/\?"))
    assert "2 runs" in page.inner_text(".judge-selection h2")

    page.fill("textarea[name=criteria]", "\n".join(CRITERIA))
    page.click("button:has-text('Judge 2 runs')")
    page.wait_for_url(re.compile(r"/runs/judge/\d+/$"))
    page.wait_for_selector('[data-live-state="open"]')
    page.evaluate("window.notReloaded = true")

    # Between the two verdicts: one judged, still judging, the first verdict listed.
    page.wait_for_selector('#judge-progress[data-done="1"]', timeout=15_000)
    assert "1 of 2 judged" in page.inner_text("#judge-progress")
    assert page.locator("#judge-progress .badge.running").count() == 1
    assert page.locator(".judge-verdicts tbody tr").count() == 1
    page.wait_for_selector('#judge-progress[data-finished="true"]', timeout=15_000)
    assert "2 of 2 judged" in page.inner_text("#judge-progress")
    assert page.locator(".judge-verdicts .badge.FAIL").count() == 2
    assert page.evaluate("window.notReloaded") is True  # the count moved over the socket, not by reloading

    page.click("text=Review the 2 FAIL verdicts in the review queue")
    page.wait_for_url(re.compile(r"/admin/runs_app/judgeverdict/queue/"))
    queue = page.inner_text("body")
    assert "No city was named." in queue
    assert str(first.pk) in page.content() or str(second.pk) in page.content()
    page.context.close()


def test_it_judges_one_run_from_its_page(browser, harness_server, judging_server, transactional_db) -> None:
    subject = subject_scenario()
    run = play(harness_server, subject)
    judge_scenario(subject, "no verdict here")
    page = log_in(browser, judging_server)
    page.goto(f"{judging_server.url}/runs/{run.pk}/")
    page.click("text=Judge this run")
    page.wait_for_url(re.compile(r"/runs/judge/\?run="))
    page.fill("textarea[name=criteria]", CRITERIA[0])
    page.click("button:has-text('Judge 1 run')")
    page.wait_for_selector('#judge-progress[data-finished="true"]', timeout=15_000)
    # The judge answered garbage: a judge error, shown as the judge's failure, not the run's.
    assert page.locator(".judge-verdicts .badge.ERROR").inner_text() == "JUDGE ERROR"
    assert "The judge failed, so this says nothing about the run" in page.inner_text("#judge-progress")
    assert "No FAIL verdicts to review." in page.inner_text("#judge-progress")
    page.context.close()
