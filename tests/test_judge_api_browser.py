"""A judge job queued over REST, as a CI job queues it (httpx2 against a real daphne, a judge-scoped token), watched
on its live page in a real browser: the page shows it judging, then its verdict arrives over the socket without a
reload, and the API's ``?wait=`` answers the same verdict.

The server under test is a daphne of its own whose judge is the session's harness server, answering from a scenario
that holds its answer 2 s, so the page is seen before the verdict."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from tests.conftest import LiveServer, log_in, make_token, running_server
from tests.judging import CRITERIA, judge_scenario, judging_env, play, subject_scenario, verdict_json


@pytest.fixture(scope="module")
def judging_server(harness_server: LiveServer, tmp_path_factory: Any) -> Iterator[LiveServer]:
    with running_server(tmp_path_factory.mktemp("judge-api"), judging_env(f"{harness_server.url}/v1")) as server:
        yield server


def test_it_shows_a_job_queued_over_rest_reaching_its_verdict(
    browser, harness_server, judging_server, transactional_db
) -> None:
    subject = subject_scenario()
    run = play(harness_server, subject)
    judge_scenario(
        subject,
        verdict_json("FAIL", summary="No city was named."),
        failures_before_success="always",
        failure_status="slow_first_byte",
        failure_retry_after_ms=2000,
    )
    page = log_in(browser, judging_server)
    headers = {"Authorization": f"Bearer {make_token('judge')}"}

    queued = httpx2.post(
        f"{judging_server.url}/api/runs/{run.pk}/judge", json={"criteria": CRITERIA}, headers=headers, timeout=20
    )
    assert queued.status_code == 202, queued.text
    job = queued.json()
    assert job["page_url"] == f"{judging_server.url}/runs/judge/{job['id']}/"

    page.goto(job["page_url"])
    page.wait_for_selector('[data-live-state="open"]')
    page.evaluate("window.notReloaded = true")
    assert "0 of 1 judged" in page.inner_text("#judge-progress")
    assert page.locator("#judge-progress .badge.running").inner_text() == "judging…"

    page.wait_for_selector('#judge-progress[data-finished="true"]', timeout=15_000)
    progress = page.inner_text("#judge-progress")
    assert "1 of 1 judged" in progress and "No city was named." in progress
    assert page.locator(".judge-verdicts .badge.FAIL").inner_text() == "FAIL"
    assert "Review the 1 FAIL verdict in the review queue" in progress
    assert page.evaluate("window.notReloaded") is True  # the verdict came over the socket

    done = httpx2.get(job["url"], params={"wait": 30}, headers=headers, timeout=40).json()
    assert (done["state"], done["verdict"]["effective"]) == ("done", "FAIL")
    assert done["verdict"]["summary"] == "No city was named."
    page.context.close()
