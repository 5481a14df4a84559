"""The error pages in a real browser on daphne: the dashboard's 404 with its navigation, a way back and the icon;
JSON for a mistyped /api/ path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import LiveServer, screenshot_path


def test_it_shows_its_own_404_with_the_navigation_and_a_way_back(
    admin_page: Any, harness_server: LiveServer, tmp_path: Path
) -> None:
    response = admin_page.goto(f"{harness_server.url}/scenarios/no-such-scenario/history/extra/")
    assert response.status == 404
    assert admin_page.title() == "Not found · Scenario harness"
    assert admin_page.locator("h1").inner_text() == "Page not found"
    nav = admin_page.locator(".topbar nav a")
    assert nav.all_inner_texts()[:4] == ["Overview", "Scenarios", "Runs", "Coverage"]
    assert "Traceback" not in admin_page.content()
    # The icon the page names loads as an image.
    icon = admin_page.locator("link[rel=icon]").get_attribute("href")
    loaded = admin_page.evaluate(
        "href => new Promise(done => { const i = new Image(); i.onload = () => done(i.naturalWidth > 0);"
        " i.onerror = () => done(false); i.src = href; })",
        icon,
    )
    assert icon == "/static/favicon-1.svg" and loaded is True
    admin_page.screenshot(path=str(screenshot_path("not-found.png", tmp_path)))

    admin_page.get_by_role("link", name="Back to Scenarios").click()
    admin_page.wait_for_url(f"{harness_server.url}/scenarios/")
    assert admin_page.locator("h1").first.is_visible()


def test_it_answers_json_for_a_mistyped_api_path_in_the_browser(admin_page: Any, harness_server: LiveServer) -> None:
    response = admin_page.goto(f"{harness_server.url}/api/run")
    assert response.status == 404 and response.headers["content-type"] == "application/json"
    body = json.loads(admin_page.locator("body").inner_text())
    assert body == {"detail": "Not Found: Nothing is served at GET /api/run. Did you mean GET /api/runs?"}
