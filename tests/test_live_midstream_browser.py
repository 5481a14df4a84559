"""A run page opened in the middle of a paced stream, in a real browser: it shows what streamed before it opened (the
reasoning, the text so far, the waterfall so far), then goes on live, and ends with the whole answer exactly once."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import openai

from tests.conftest import log_in, make_scenario, wait_for

ANSWER = " ".join(f"word{i}" for i in range(80))
REASONING = "Eighty words, two at a time."


def stream_and_keep(server: Any, run_id: uuid.UUID) -> tuple[threading.Thread, list[str]]:
    """Stream the scenario's answer in a thread; the list grows with the text the client has received so far."""
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=f"sk-test-{uuid.uuid4().hex}", max_retries=0)
    received: list[str] = []

    def stream() -> None:
        chunks = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "midstream-demo"}],
            stream=True,
            extra_headers={"X-Harness-Run": str(run_id)},
        )
        for chunk in chunks:
            if chunk.choices and chunk.choices[0].delta.content:
                received.append(chunk.choices[0].delta.content)

    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    return thread, received


def test_it_shows_what_streamed_before_the_page_opened_then_goes_on_live(browser, paced_server, transactional_db):
    # 80 words in 2-word chunks every 150 ms: about six seconds, so a slow machine still opens the page mid-stream.
    make_scenario(
        "midstream-demo",
        [
            {
                "turn": 1,
                "response": {"kind": "text", "assistant_text": ANSWER, "reasoning": [{"text": REASONING}]},
            }
        ],
        pacing={"chunk_words": 2, "interval_ms": 150},
    )
    page = log_in(browser, paced_server)
    run_id = uuid.uuid4()
    thread, received = stream_and_keep(paced_server, run_id)
    # Well into the stream before the page opens: a fifth of the text is out.
    wait_for(lambda: len("".join(received).split()) >= 16, timeout=15, message="a fifth of the answer")
    before = "".join(received)
    page.goto(f"{paced_server.url}/runs/{run_id}/")
    page.wait_for_selector('[data-live-state="open"]')
    text = page.locator("#turn-1-live .kind-text")

    def shown() -> str:
        return text.inner_text() if text.count() else ""

    # The text streamed before the page opened is there from the start, after the reasoning.
    wait_for(lambda: shown().startswith(before.strip()), timeout=2, message="the text streamed before opening")
    assert thread.is_alive(), "the stream ended before the page could show it in the middle"
    assert page.inner_text("#turn-1-live .kind-reasoning") == REASONING
    # The waterfall so far: the request's row streaming, with its first byte and the frames received.
    row = page.locator("#waterfall-row-1")
    assert "streaming" in (row.locator(".wf-status").text_content() or "")
    assert row.locator(".wf-dot").count() > 0

    # Live from there on: whatever the page shows is the answer's beginning, never a gap or a piece twice.
    seen = []
    while thread.is_alive():
        now = shown()
        assert ANSWER.startswith(now.strip()), f"not the answer's beginning: {now!r}"
        seen.append(len(now))
        time.sleep(0.1)
    assert seen[-1] > seen[0], "the text did not grow live"
    thread.join(10)
    assert "".join(received) == ANSWER

    page.wait_for_selector("#run-header .badge.passed", timeout=10_000)
    assert shown().strip() == ANSWER
    assert page.inner_text("#turn-1-live").count(ANSWER) == 1
    page.context.close()
