"""A Realtime session watched on its run page in a real browser: the page is open before the session, the official
openai SDK's realtime client drives two responses, and each turn appears as it is answered, its timeline saying
the messages in and out and the timing chart drawing the socket's responses on one time axis."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import openai

from tests.conftest import LiveServer, log_in, make_scenario, screenshot_path, wait_for
from tests.test_realtime_sdk import until_done, user_text

FIRST, SECOND = "Hello from the socket.", "And a second answer, on the same socket."


def drive_session(server: LiveServer, run_id: uuid.UUID, go_on: threading.Event) -> tuple[threading.Thread, dict]:
    """A Realtime session in a thread: one response, then (once ``go_on`` is set) a second; the dict gets their
    texts."""
    result: dict[str, Any] = {}
    client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=f"sk-test-{uuid.uuid4().hex}")

    async def session() -> None:
        headers = {"X-Harness-Run": str(run_id)}
        async with client.realtime.connect(model="gpt-realtime", extra_headers=headers) as connection:
            await connection.session.update(session={"type": "realtime", "output_modalities": ["text"]})
            texts = []
            for prompt in ("rt-browser", "And then?"):
                if texts and not await asyncio.to_thread(go_on.wait, 20):
                    raise AssertionError("the page never showed the first turn")
                await connection.conversation.item.create(item=user_text(prompt))
                await connection.response.create()
                done = await until_done(connection)
                texts.append(done[-1].response.output[0].content[0].text)
            result["texts"] = texts

    def run() -> None:
        try:
            asyncio.run(session())
        except BaseException as exc:  # seen by the test, not lost in the thread
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def test_a_realtime_session_s_turns_appear_live_on_its_run_page(
    browser: Any, harness_server: LiveServer, transactional_db: None, tmp_path: Any
) -> None:
    make_scenario(
        "rt-browser",
        [
            {"turn": 1, "response": {"kind": "text", "assistant_text": FIRST}},
            {"turn": 2, "response": {"kind": "text", "assistant_text": SECOND}},
        ],
    )
    page = log_in(browser, harness_server)
    run_id = uuid.uuid4()
    page.goto(f"{harness_server.url}/runs/{run_id}/?live=1")  # before the session exists
    page.wait_for_selector('[data-live-state="open"]')
    page.evaluate("window.notReloaded = true")

    go_on = threading.Event()
    thread, result = drive_session(harness_server, run_id, go_on)
    page.wait_for_selector("#turn-1-events .kind-response", timeout=15_000)
    wait_for(lambda: FIRST in page.inner_text("#turn-1-live"), timeout=10, message="turn 1's answer on the page")
    assert page.locator("#turn-2-events").count() == 0  # the second response is not asked for yet
    turn_1 = page.inner_text("#turn-1-events")
    assert "client → server: response.create on /v1/realtime (socket)" in turn_1
    assert "server → client:" in turn_1 and "HTTP" not in turn_1
    go_on.set()

    page.wait_for_selector("#turn-2-events .kind-response", timeout=15_000)
    wait_for(lambda: SECOND in page.inner_text("#turn-2-live"), timeout=10, message="turn 2's answer on the page")
    thread.join(30)
    assert "error" not in result, result.get("error")
    assert result["texts"] == [FIRST, SECOND]
    page.wait_for_selector("#waterfall-row-2", state="attached", timeout=10_000)
    chart = page.inner_text("#run-waterfall")
    assert "A socket session: each response on one time axis" in chart
    assert page.get_attribute("#waterfall-row-1", "class") == "wf-row state-ok"
    sentence = page.text_content("#waterfall-row-2 > title") or ""
    assert sentence.startswith("Turn 2: response.create at +") and sentence.endswith("sent on the socket.")
    assert "2 responses on a socket" in (page.text_content("#waterfall-desc") or "")
    assert page.evaluate("window.notReloaded") is True  # all of it arrived over the page's socket
    page.screenshot(path=str(screenshot_path("screenshot-run-realtime.png", tmp_path)), full_page=True)
    page.context.close()
