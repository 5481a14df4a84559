"""The runs list in a real browser: pytest runs show their test name and outcome, the list narrows to a test name
and to the fingerprint of the key an SDK sent, and a key typed where a fingerprint goes is never sent."""

from __future__ import annotations

import datetime as dt
import time
import uuid

import openai
from django.utils import timezone

from harnessweb.engine import keys
from tests.conftest import log_in, make_ci_run, make_scenario, recorded_run, screenshot_path

KEY_A = f"sk-team-a-{uuid.uuid4().hex}"
KEY_B = f"sk-team-b-{uuid.uuid4().hex}"


def send(server_url: str, api_key: str, run_id: uuid.UUID) -> None:
    client = openai.OpenAI(base_url=f"{server_url}/v1", api_key=api_key, max_retries=0, timeout=30)
    client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "keyed-demo"}],
        extra_headers={"X-Harness-Run": str(run_id)},
    )


def row_ids(page) -> list[str]:
    return page.eval_on_selector_all("#runs-body tr.run-row", "rows => rows.map(row => row.id)")


def test_it_filters_the_runs_list_by_test_name_and_by_key_fingerprint(
    browser, harness_server, transactional_db, tmp_path
):
    make_scenario("keyed-demo", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Keyed."}}])
    run_a, run_b = uuid.uuid4(), uuid.uuid4()
    send(harness_server.url, KEY_A, run_a)
    send(harness_server.url, KEY_B, run_b)
    recorded_run(str(run_a), status="passed", events=2)
    recorded_run(str(run_b), status="passed", events=2)
    now = timezone.now()
    pays = make_ci_run(name="tests/test_checkout.py::test_pays", source="pytest", status="passed", started_at=now)
    refunds = make_ci_run(
        name="tests/test_checkout.py::test_refunds",
        source="pytest",
        status="skipped",
        status_reason="Skipped: no sandbox",
        started_at=now - dt.timedelta(seconds=1),
    )
    earlier = now - dt.timedelta(seconds=2)
    finds = make_ci_run(name="tests/test_search.py::test_finds", source="pytest", status="errored", started_at=earlier)

    page = log_in(browser, harness_server)
    page.goto(f"{harness_server.url}/runs/")
    page.wait_for_selector('[data-live-state="open"]')
    assert set(row_ids(page)) >= {f"run-row-{r}" for r in (run_a, run_b, pays.id, refunds.id, finds.id)}
    assert page.inner_text(f"#run-row-{finds.id} td.test").split() == ["tests/test_search.py::test_finds", "ERROR"]

    # By any part of the test name: the table is swapped in place and the address keeps the filter.
    page.fill("input[name=test]", "CHECKOUT")
    page.wait_for_url(lambda url: "test=CHECKOUT" in url)
    page.wait_for_selector(f"#run-row-{finds.id}", state="detached")
    assert row_ids(page) == [f"run-row-{pays.id}", f"run-row-{refunds.id}"]
    skipped = page.locator(f"#run-row-{refunds.id} .outcome")
    assert skipped.inner_text() == "SKIPPED" and skipped.get_attribute("class") == "outcome outcome-skipped"
    page.screenshot(path=str(screenshot_path("screenshot-runs-filtered.png", tmp_path)))

    # By the fingerprint of the key team A's SDK sent, which the run page shows beside the request's key.
    page.goto(f"{harness_server.url}/runs/{run_a}/")
    page.click("a.key-runs")
    page.wait_for_url(lambda url: f"fingerprint={keys.fingerprint(KEY_A)}" in url)
    assert row_ids(page) == [f"run-row-{run_a}"]
    assert page.input_value("input[name=fingerprint]") == keys.fingerprint(KEY_A)
    page.fill("input[name=fingerprint]", keys.fingerprint(KEY_B))
    page.wait_for_url(lambda url: f"fingerprint={keys.fingerprint(KEY_B)}" in url)
    page.wait_for_selector(f"#run-row-{run_b}")
    assert row_ids(page) == [f"run-row-{run_b}"]

    # A key pasted where its fingerprint goes is refused by the form: never sent, never in the address.
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.fill("input[name=fingerprint]", KEY_A)
    time.sleep(0.8)  # past the form's 300 ms input delay
    assert not any(KEY_A in url for url in requests) and KEY_A not in page.url
    assert page.eval_on_selector("input[name=fingerprint]", "input => input.validity.patternMismatch") is True
    assert row_ids(page) == [f"run-row-{run_b}"]
    page.context.close()
