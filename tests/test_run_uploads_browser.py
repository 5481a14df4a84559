"""What a CI job uploads beside its run, on the run page in a real browser, everything sent over HTTP to the live
server as a CI job sends it: the conversation (``POST /api/runs/{id}/messages``) shown in turns; an artifact listed,
its HTML only inside the sandboxed frame loaded from ``/artifacts/<id>/raw``; a hostile artifact (reading
``document.cookie``, reaching into ``parent`` and ``top``, fetching ``/api/runs`` with credentials, setting a marker
in the parent) that runs nothing with the dashboard's cookies, against a control where the same page, framed
without the sandbox, does all of it; and each turn's trace log with its outcome, a FAILED one visibly failed."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from tests.conftest import LiveServer, log_in, make_ci_run, make_token, screenshot_path, wait_for
from tests.test_ci_message_shapes import OPENAI

pytestmark = pytest.mark.django_db(transaction=True)

SECOND_TURN = [
    {"role": "user", "content": "Add hummus and regenerate the page"},
    {"role": "assistant", "content": "Done: /u/def"},
]

HOSTILE = """<!doctype html>
<html><head><title>Grocery list</title>
<script>
  var report = {cookie: document.cookie};
  try { parent.document.body.dataset.marker = "set by the artifact"; } catch (e) {}
  try { top.document.title = "taken over"; } catch (e) {}
  try { parent.window.__artifactMarker = document.cookie || "ran"; } catch (e) {}
  try { var p = parent.document.createElement("p"); p.id = "injected"; parent.document.body.appendChild(p); }
  catch (e) {}
  fetch("/api/runs?from=artifact", {credentials: "include"}).then(function (r) { return r.text(); })
    .then(function (body) { try { parent.window.__stolen = body; } catch (e) {} }, function () {});
  document.documentElement.dataset.ran = "yes";
</script>
</head><body><h1>Grocery list</h1><ul><li>eggs</li><li>milk</li></ul></body></html>
"""


def api(server: LiveServer) -> httpx2.Client:
    """The REST API as a CI job reaches it: over HTTP, with a write token."""
    return httpx2.Client(base_url=f"{server.url}/api", headers={"Authorization": f"Bearer {make_token()}"}, timeout=30)


def watch_requests(page: Any) -> list[dict[str, str]]:
    """Every request the page and its frames make, with the headers that went out (the cookie among them)."""
    seen: list[dict[str, str]] = []
    page.on("request", lambda request: seen.append({"url": request.url, **request.all_headers()}))
    return seen


def test_an_uploaded_conversation_is_shown_in_turns(browser: Any, harness_server: LiveServer, tmp_path: Any) -> None:
    run = make_ci_run(name="e2e grocery list")
    client = api(harness_server)
    assert client.post(f"/runs/{run.id}/messages", json=OPENAI).status_code in (200, 201)
    assert client.post(f"/runs/{run.id}/messages", json=OPENAI + SECOND_TURN).status_code in (200, 201)
    page = log_in(browser, harness_server)

    page.goto(f"{harness_server.url}/runs/{run.id}/")

    section = page.locator("#run-conversation")
    section.screenshot(path=str(screenshot_path("screenshot-uploaded-conversation.png", tmp_path)))
    assert section.locator("h3").all_inner_texts() == ["Before the first turn", "Turn 1", "Turn 2"]
    turn_1 = section.locator("#conversation-turn-1")
    roles = [role.lower() for role in turn_1.locator(".message .role").all_inner_texts()]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert "call generate_ui · call_1" in turn_1.locator(".part-tool_call").inner_text()
    assert '"eggs"' in turn_1.locator(".part-tool_call pre").inner_text()
    assert "result of generate_ui · call_1" in turn_1.locator(".part-tool_result").inner_text()
    assert "Add hummus" in section.locator("#conversation-turn-2 .role-user").inner_text()
    assert "Done: /u/def" in section.locator("#conversation-turn-2 .role-assistant").inner_text()
    page.context.close()


def test_an_artifact_s_html_is_only_in_the_sandboxed_frame(browser: Any, harness_server: LiveServer) -> None:
    run = make_ci_run()
    page_html = "<!doctype html><html><body><h1 id='made'>Made by the app</h1></body></html>"
    uploaded = api(harness_server).post(f"/runs/{run.id}/artifacts", json={"name": "/u/abc", "content": page_html})
    assert uploaded.status_code == 201
    raw_url = uploaded.json()["raw_url"]
    assert raw_url == f"/artifacts/{uploaded.json()['id']}/raw"
    page = log_in(browser, harness_server)

    page.goto(f"{harness_server.url}/runs/{run.id}/")

    listed = page.locator("#run-artifacts .artifact summary")
    assert listed.locator("code").all_inner_texts() == ["/u/abc"]
    assert page.locator("#made").count() == 0  # never in the dashboard's own document
    frame_element = page.locator("#run-artifacts iframe.artifact-frame")
    assert (frame_element.get_attribute("src"), frame_element.get_attribute("sandbox")) == (raw_url, "")
    frame = wait_for(lambda: next((f for f in page.frames if f.url.endswith(raw_url)), None), message="the frame")
    frame.wait_for_load_state("load")
    assert frame.locator("#made").inner_text() == "Made by the app"
    page.context.close()


def test_the_hostile_script_would_steal_without_the_sandbox(browser: Any, harness_server: LiveServer) -> None:
    """The control: the same page, framed on the dashboard's origin with no sandbox and no CSP, does everything the
    next test proves it cannot do there, so that test would see it."""
    page = log_in(browser, harness_server)
    sent = watch_requests(page)
    origin = harness_server.url
    page.route(f"{origin}/control/parent", lambda route: route.fulfill(
        content_type="text/html", body='<!doctype html><html><head><title>Control</title></head><body>'
        '<iframe src="/control/hostile"></iframe></body></html>'))  # fmt: skip
    page.route(f"{origin}/control/hostile", lambda route: route.fulfill(content_type="text/html", body=HOSTILE))

    page.goto(f"{origin}/control/parent")

    wait_for(lambda: page.evaluate("() => window.__stolen"), message="the control's fetch")
    assert page.evaluate("() => document.body.dataset.marker") == "set by the artifact"
    assert page.title() == "taken over"
    assert page.locator("#injected").count() == 1
    assert "csrftoken=" in page.evaluate("() => window.__artifactMarker")  # it read the dashboard's cookies
    fetched = [r for r in sent if "/api/runs?from=artifact" in r["url"]]
    assert len(fetched) == 1 and "sessionid=" in fetched[0].get("cookie", "")  # and sent the session with it
    page.context.close()


def test_no_script_of_a_hostile_artifact_runs_with_the_dashboard_s_cookies(
    browser: Any, harness_server: LiveServer, tmp_path: Any
) -> None:
    run = make_ci_run(name="hostile page")
    uploaded = api(harness_server).post(f"/runs/{run.id}/artifacts", json={"name": "/u/hostile", "content": HOSTILE})
    raw_url = uploaded.json()["raw_url"]
    page = log_in(browser, harness_server)
    sent = watch_requests(page)

    page.goto(f"{harness_server.url}/runs/{run.id}/")
    frame = wait_for(lambda: next((f for f in page.frames if f.url.endswith(raw_url)), None), message="the frame")
    frame.wait_for_load_state("load")
    before = page.locator("body").evaluate("b => b.querySelectorAll('*').length")
    page.wait_for_timeout(500)  # time for the script's fetch to go out and come back, were it run

    page.locator("#run-artifacts").screenshot(path=str(screenshot_path("screenshot-hostile-artifact.png", tmp_path)))
    assert frame.locator("h1").inner_text() == "Grocery list"  # shown, as static HTML
    assert frame.evaluate("() => document.documentElement.dataset.ran") is None  # none of its script ran
    # The marker is never set, the parent's DOM is untouched, nothing was fetched with the session.
    assert page.evaluate("() => [window.__artifactMarker, window.__stolen, document.body.dataset.marker]") == [
        None,
        None,
        None,
    ]
    assert page.title() != "taken over" and page.locator("#injected").count() == 0
    assert page.locator("body").evaluate("b => b.querySelectorAll('*').length") == before
    assert [r["url"] for r in sent if "/api/" in r["url"]] == []
    # Its content, from the frame's address, is served so that nothing in it may run and nothing may load.
    raw = [r for r in sent if r["url"].endswith(raw_url)]
    assert len(raw) == 1
    response = page.request.get(f"{harness_server.url}{raw_url}")
    assert "sandbox" in response.headers["content-security-policy"]
    assert "default-src 'none'" in response.headers["content-security-policy"]
    page.context.close()


def test_each_turn_s_trace_log_is_shown_with_its_outcome(
    browser: Any, harness_server: LiveServer, tmp_path: Any
) -> None:
    run = make_ci_run(name="traced run")
    logs = [
        {"turnNumber": 1, "filePath": "logs/2026-11-24/10-00-01_r1.log", "content": "planner ok\n=== SUCCESS ===\n"},
        {"turnNumber": 2, "filePath": "logs/2026-11-24/10-00-09_r2.log",
         "content": "<script>window.__ran = 1</script>\nFAILED: the reply was not sent\n"},
        {"turnNumber": 3, "filePath": "logs/2026-11-24/10-00-20_r3.log", "content": "still running"},
    ]  # fmt: skip
    assert api(harness_server).post(f"/runs/{run.id}/trace-logs", json=logs).status_code == 207
    page = log_in(browser, harness_server)

    page.goto(f"{harness_server.url}/runs/{run.id}/")

    section = page.locator("#run-trace-logs")
    section.screenshot(path=str(screenshot_path("screenshot-trace-logs.png", tmp_path)))
    rows = section.locator("details.trace-log")
    assert rows.evaluate_all("rows => rows.map(r => [r.dataset.turn, r.dataset.outcome, r.open])") == [
        ["1", "success", False],
        ["2", "failed", True],  # a failed turn is opened
        ["3", "none", False],
    ]
    assert section.locator(".badge").all_inner_texts() == ["SUCCESS", "FAILED", "no footer"]
    failed = section.locator("details.trace-log.outcome-failed")
    assert failed.locator(".badge").evaluate("b => getComputedStyle(b).backgroundColor") != "rgba(0, 0, 0, 0)"
    colours = rows.evaluate_all("rows => rows.map(r => getComputedStyle(r).borderLeftColor)")
    assert colours[1] not in (colours[0], colours[2])  # red, unlike the passed and the unfinished ones
    assert "<script>window.__ran = 1</script>" in failed.locator("pre").inner_text()  # shown as text
    assert page.evaluate("() => window.__ran") is None
    page.context.close()
