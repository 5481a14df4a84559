"""An uploaded artifact in a real browser: a hostile page (a script reading ``document.cookie`` and writing to the
dashboard, ``onerror`` handlers, a message to the parent) shows its static text in the run page's sandboxed frame,
and nothing of it runs, there or opened on its own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import log_in, make_ci_run, make_client, screenshot_path, wait_for
from tests.test_ci_message_shapes import ANTHROPIC

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = """<!doctype html>
<html><head><title>Grocery list</title>
<style>h1 { color: rgb(200, 0, 0); }</style>
<script>
  window.hostileRan = true;
  document.documentElement.dataset.ran = "script";
  try { parent.document.body.dataset.pwned = document.cookie; } catch (e) {}
  try { parent.postMessage("cookie:" + document.cookie, "*"); } catch (e) {}
</script>
</head><body>
<h1>Grocery list</h1>
<ul><li>eggs</li><li>milk</li><li>bread</li></ul>
<img src="/missing.png" onerror="document.documentElement.dataset.ran = 'onerror'; parent.document.title = 'pwned'">
<img src="data:," onerror="window.onerrorRan = true; parent.postMessage('onerror', '*')">
</body></html>
"""

# Put into the dashboard's page before it loads: whatever the frame posts to its parent is kept here.
LISTEN = "window.__posted = []; addEventListener('message', (e) => window.__posted.push(String(e.data)));"


def test_the_run_page_shows_an_uploaded_conversation_in_turns(browser, harness_server, tmp_path) -> None:
    run = make_ci_run(name="e2e grocery list")
    make_client().post(f"/runs/{run.id}/messages", json={"messages": ANTHROPIC, "system": "You make grocery lists."})
    page = log_in(browser, harness_server)

    page.goto(f"{harness_server.url}/runs/{run.id}/")

    section = page.locator("#run-conversation")
    section.screenshot(path=str(screenshot_path("screenshot-conversation.png", tmp_path)))
    assert section.locator("h3").all_inner_texts() == ["Before the first turn", "Turn 1"]
    roles = section.locator(".message .role").all_inner_texts()
    assert [role.lower() for role in roles] == ["system", "user", "assistant", "tool", "assistant"]
    call = section.locator(".part-tool_call")
    assert "generate_ui" in call.inner_text() and '"eggs"' in call.inner_text()
    assert "/u/abc" in section.locator(".part-tool_result").inner_text()
    page.context.close()


def _frame(page: Any, raw_url: str) -> Any:
    return wait_for(lambda: next((f for f in page.frames if f.url.endswith(raw_url)), None), message="the frame")


def test_a_hostile_artifact_shows_its_text_and_runs_nothing(browser, harness_server, tmp_path) -> None:
    run = make_ci_run(name="hostile page")
    uploaded = make_client().post(f"/runs/{run.id}/artifacts", json={"name": "/u/hostile", "content": HOSTILE})
    raw_url = uploaded.json()["raw_url"]
    page = log_in(browser, harness_server)
    page.context.add_init_script(LISTEN)
    logged: list[str] = []
    page.on("console", lambda message: logged.append(message.text))
    cdp = page.context.new_cdp_session(page)  # the browser's own log: where a refused script is reported
    cdp.on("Log.entryAdded", lambda event: logged.append(event["entry"]["text"]))
    cdp.send("Log.enable")

    page.goto(f"{harness_server.url}/runs/{run.id}/")
    page.locator("#run-artifacts").screenshot(path=str(screenshot_path("screenshot-artifacts.png", tmp_path)))
    frame_element = page.locator("iframe.artifact-frame")
    assert frame_element.get_attribute("sandbox") == ""
    frame = _frame(page, raw_url)
    frame.wait_for_load_state("load")

    # The static page is shown, styles included.
    assert frame.locator("h1").inner_text() == "Grocery list"
    assert frame.locator("li").all_inner_texts() == ["eggs", "milk", "bread"]
    assert frame.locator("h1").evaluate("h => getComputedStyle(h).color") == "rgb(200, 0, 0)"
    page.wait_for_timeout(300)  # time for an onerror to fire, were it allowed to
    # Nothing of it ran: its own flags are unset, the dashboard is untouched, nothing was posted to it.
    assert frame.evaluate("() => [window.hostileRan, window.onerrorRan, document.documentElement.dataset.ran]") == [
        None,
        None,
        None,
    ]
    assert page.evaluate("() => document.body.dataset.pwned") is None
    assert page.title() != "pwned"
    assert page.evaluate("() => window.__posted") == []
    # The browser says why: the frame's sandbox and the content's CSP refused its scripts.
    wait_for(lambda: any("Blocked script execution" in text or "Content Security Policy" in text for text in logged),
             message=f"the browser's refusal in its log, got {logged}")  # fmt: skip
    page.context.close()


def test_the_artifact_opened_on_its_own_still_runs_nothing(browser, harness_server) -> None:
    run = make_ci_run()
    raw_url = (
        make_client().post(f"/runs/{run.id}/artifacts", json={"name": "/u/h", "content": HOSTILE}).json()["raw_url"]
    )
    page = log_in(browser, harness_server)

    response = page.goto(f"{harness_server.url}{raw_url}")

    assert response.headers["content-security-policy"].endswith("sandbox")
    assert page.locator("h1").inner_text() == "Grocery list"
    page.wait_for_timeout(300)
    assert page.evaluate("() => [window.hostileRan, window.onerrorRan, document.documentElement.dataset.ran]") == [
        None,
        None,
        None,
    ]
    # The CSP's sandbox puts it in an opaque origin: even a script there could not read the dashboard's cookies.
    assert page.evaluate("() => { try { return document.cookie; } catch (e) { return e.name; } }") == "SecurityError"
    # Logged out, the content is not served.
    anonymous = browser.new_context()
    assert "/login/" in anonymous.new_page().goto(f"{harness_server.url}{raw_url}").url
    anonymous.close()
    page.context.close()
