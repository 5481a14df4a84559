"""The live run pages in a real browser, against a paced server: watch an answer type, see a new run arrive, see a
run's timing drawn as it happens."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import openai

from tests.conftest import log_in, make_scenario, screenshot_path, wait_for

ANSWER = " ".join(f"word{i}" for i in range(40))


def make_openai_client(server: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=f"sk-test-{uuid.uuid4().hex}", max_retries=0, timeout=30)


def stream_in_background(
    client: openai.OpenAI, scenario_id: str, run_id: uuid.UUID, **params: Any
) -> tuple[threading.Thread, dict]:
    """Start a streaming request pinned to ``run_id`` in a thread; the dict gets the text once it is done."""
    result: dict[str, Any] = {}

    def stream() -> None:
        chunks = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": scenario_id}],
            stream=True,
            extra_headers={"X-Harness-Run": str(run_id)},
            **params,
        )
        result["text"] = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    return thread, result


def test_it_shows_the_answer_growing_on_a_live_run_page(browser, paced_server, transactional_db, tmp_path):
    # 40 words in 2-word chunks every 150 ms: about three seconds of typing.
    make_scenario(
        "typing-demo",
        [
            {
                "turn": 1,
                "expected_temperature": 0.3,
                "response": {
                    "kind": "text",
                    "assistant_text": ANSWER,
                    "reasoning": [{"text": "The user wants forty words, slowly."}],
                },
            }
        ],
        description="Types slowly",
        pacing={"chunk_words": 2, "interval_ms": 150},
    )
    page = log_in(browser, paced_server)
    run_id = uuid.uuid4()
    page.goto(f"{paced_server.url}/runs/{run_id}/?live=1")  # before the run exists
    page.wait_for_selector('[data-live-state="open"]')

    thread, result = stream_in_background(make_openai_client(paced_server), "typing-demo", run_id, temperature=0.3)

    def streamed() -> int:
        return len(page.inner_text("#turn-1-live")) if page.locator("#turn-1-live").count() else 0

    first = wait_for(lambda: streamed() > 0 and streamed(), timeout=10, message="the first chunks on the page")
    time.sleep(0.6)
    second = streamed()
    assert thread.is_alive(), "the request finished before the page could be watched"
    assert second > first
    page.screenshot(path=str(screenshot_path("screenshot-run-live.png", tmp_path)))

    thread.join(30)
    assert result["text"] == ANSWER
    # Once recorded, the run and its turn are rendered from the events: the same page as a finished run shows.
    page.wait_for_selector("#run-header .badge.passed", timeout=10_000)
    assert ANSWER in page.inner_text("#turn-1-live")
    assert "The user wants forty words, slowly." in page.inner_text("#turn-1-live")
    assert page.locator("#turn-1-events .kind-response").count() == 1
    assert page.locator("#turn-1-expectations tr.ok").count() == 1  # the expected temperature came
    page.reload()
    assert ANSWER in page.inner_text("#turn-1-live")
    page.context.close()


def test_it_shows_a_new_run_on_the_list_without_reload(browser, paced_server, transactional_db):
    make_scenario("list-demo", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Listed."}}])
    page = log_in(browser, paced_server)
    page.goto(f"{paced_server.url}/runs/?status=passed")
    page.wait_for_selector('[data-live-state="open"]')
    page.evaluate("window.notReloaded = true")
    run_id = uuid.uuid4()

    thread, result = stream_in_background(make_openai_client(paced_server), "list-demo", run_id)
    thread.join(30)
    assert result["text"] == "Listed."
    row = page.wait_for_selector(f"#run-row-{run_id}", timeout=10_000)
    assert "list-demo" in row.inner_text()
    page.wait_for_selector(f"#run-row-{run_id} .badge.passed", timeout=10_000)
    assert page.locator("#runs-body tr").first.get_attribute("id") == f"run-row-{run_id}"
    assert page.locator(f"#run-row-{run_id}").count() == 1
    assert page.evaluate("window.notReloaded") is True

    # Filters swap the table in place and keep their state in the address.
    page.select_option("select[name=protocol]", "anthropic")
    page.wait_for_url(lambda url: "protocol=anthropic" in url)
    page.wait_for_selector(f"#run-row-{run_id}", state="detached")
    # The table's socket was replaced with one for the new filters: it still brings new runs.
    page.select_option("select[name=protocol]", "openai")
    page.wait_for_url(lambda url: "protocol=openai" in url)
    page.wait_for_selector(f"#run-row-{run_id}")
    page.wait_for_selector('[data-live-state="open"]')
    later = uuid.uuid4()
    thread, _ = stream_in_background(make_openai_client(paced_server), "list-demo", later)
    thread.join(30)
    page.wait_for_selector(f"#run-row-{later} .badge.passed", timeout=10_000)
    assert page.evaluate("window.notReloaded") is True
    page.context.close()


def test_it_draws_a_live_run_s_timing_with_the_retry_s_wait_beside_its_retry_after(
    browser, paced_server, transactional_db, tmp_path
):
    # A 429 advising 300 ms, then 24 words in 2-word frames every 120 ms: the SDK waits retry-after-ms, then reads.
    make_scenario(
        "waterfall-demo",
        [
            {
                "turn": 1,
                "failures_before_success": 1,
                "failure_status": "rate_limit",
                "failure_retry_after_ms": 300,
                "response": {"kind": "text", "assistant_text": ANSWER[: ANSWER.index("word24") - 1]},
            }
        ],
        pacing={"chunk_words": 2, "interval_ms": 120},
    )
    page = log_in(browser, paced_server)
    run_id = uuid.uuid4()
    page.goto(f"{paced_server.url}/runs/{run_id}/?live=1")
    page.wait_for_selector('[data-live-state="open"]')
    assert "No request yet" in page.inner_text("#run-waterfall")

    client = openai.OpenAI(base_url=f"{paced_server.url}/v1", api_key=f"sk-{uuid.uuid4().hex}", max_retries=1)
    thread, result = stream_in_background(client, "waterfall-demo", run_id)
    # Live: the 429 is drawn, then the retry's row while its frames are still coming.
    page.wait_for_selector("#waterfall-row-1.state-failed", timeout=10_000)
    page.wait_for_selector("#waterfall-row-2", timeout=10_000)
    assert thread.is_alive(), "the retry finished before its row could be watched"
    thread.join(30)
    assert result["text"] == ANSWER[: ANSWER.index("word24") - 1]
    page.wait_for_selector("#waterfall-row-2.state-ok", timeout=10_000)
    wait = page.locator("#waterfall-row-2 .wf-wait")
    assert wait.get_attribute("class") == "wf-wait honoured"  # green: it waited at least the 300 ms
    assert "for a Retry-After of 300 ms" in wait.text_content()
    fill = page.eval_on_selector("#waterfall-row-2 .wf-wait-bar", "bar => getComputedStyle(bar).fill")
    assert fill == "rgb(31, 138, 76)"  # --pass
    assert page.locator("#waterfall-row-2 .wf-dot").count() >= 12  # a dot per frame, 120 ms apart
    assert page.locator("#waterfall-row-2 .wf-gap").count() >= 11
    page.click("#run-waterfall summary")
    assert "honoured" in page.inner_text("#run-waterfall .waterfall-table")
    page.locator("#run-waterfall").screenshot(path=str(screenshot_path("screenshot-waterfall.png", tmp_path)))
    page.context.close()
