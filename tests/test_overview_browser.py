"""The overview in a real browser against the real server: a run played through the endpoint by the OpenAI SDK
redraws the chart and the client widgets without a reload."""

from __future__ import annotations

import datetime as dt
import uuid

import httpx
import openai
from django.utils import timezone

from tests.conftest import make_run, make_scenario, make_verdict, screenshot_path


def seed_history() -> int:
    """A day of earlier runs (some failing), a scenario whose pass rate dropped, a verdict to review; how many runs
    the last 24 hours hold."""
    now = timezone.now()
    statuses = ["passed", "passed", "failed", "passed", "errored", "passed"]
    for hours in range(1, 23):
        for i in range(hours % 4 + 1):
            make_run(
                scenario_id="weather", status=statuses[(hours + i) % 6], started_at=now - dt.timedelta(hours=hours)
            )
    for hours in (30, 33, 40):
        make_run(scenario_id="checkout", status="passed", started_at=now - dt.timedelta(hours=hours))
    make_run(scenario_id="checkout", status="failed", started_at=now - dt.timedelta(hours=2))
    make_verdict(overall="FAIL")  # its run is one more, started now
    return sum(hours % 4 + 1 for hours in range(1, 23)) + 2


def described_total(page) -> int:
    return int(page.text_content("#chart-desc").split(" ")[0])


def test_it_redraws_the_overview_when_a_run_is_played(admin_page, harness_server, tmp_path):
    earlier = seed_history()
    make_scenario(
        "overview-retry",
        [
            {
                "turn": 1,
                "failures_before_success": 1,
                "failure_status": "rate_limit",
                "failure_retry_after_ms": 50,
                "response": {"kind": "text", "assistant_text": "Done after one retry."},
            }
        ],
    )
    page = admin_page
    page.goto(f"{harness_server.url}/")  # where the log-in landed too
    page.wait_for_selector('[data-live-state="open"]')
    page.evaluate("window.notReloaded = true")
    assert described_total(page) == earlier
    assert "No failures were injected" in page.inner_text("#widget-retried")
    assert "checkout" in page.inner_text("#widget-drops")

    client = openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key=f"sk-{uuid.uuid4().hex}", max_retries=2)
    answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "overview-retry"}])
    assert answer.choices[0].message.content == "Done after one retry."

    page.wait_for_function(
        f"document.getElementById('chart-desc').textContent.startsWith('{earlier + 1} runs')", timeout=10_000
    )
    page.wait_for_selector("#widget-retried >> text=OpenAI/Python", timeout=10_000)
    retried = page.inner_text("#widget-retried")
    assert "openai · endpoint" in retried
    assert "OpenAI/Python" in page.inner_text("#widget-slowest")

    # A second client, over plain HTTP: one more run, one more client on the slowest list.
    response = httpx.post(
        f"{harness_server.url}/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "hello from httpx"}]},
        headers={"Authorization": f"Bearer sk-{uuid.uuid4().hex}"},
        timeout=30,
    )
    assert response.status_code == 200
    page.wait_for_selector("#widget-slowest >> text=python-httpx", timeout=10_000)
    assert described_total(page) == earlier + 2
    assert page.evaluate("window.notReloaded") is True

    # The chart is drawn, titled and linked: the newest hour's bar leads to that hour's runs, not the whole day's.
    assert page.locator("svg.runs-chart title#chart-title").count() == 1
    href = page.locator("svg.runs-chart a").last.get_attribute("href")
    assert href.startswith(f"/runs/?hour={timezone.localtime().strftime('%Y-%m-%dT%H')}&status=")
    page.screenshot(path=str(screenshot_path("screenshot-overview.png", tmp_path)), full_page=True)
    page.goto(f"{harness_server.url}{href}")
    assert page.query_selector(".filter-problem") is None and page.query_selector("#runs-body tr.run-row")
