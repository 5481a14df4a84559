"""Run against run in a real browser: a client whose system prompt changed fails its run, and the failed run's page
diffs it against the last passing run in one click, the changed words marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
from playwright.sync_api import expect

from tests.conftest import make_scenario, recorded_run, screenshot_path


def play(oai: openai.OpenAI, system: str) -> str:
    raw = oai.chat.completions.with_raw_response.create(
        model="gpt-test",
        temperature=0.2,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": "forecast"}],
    )
    return raw.headers["x-harness-run"]


def test_it_diffs_a_failed_run_against_the_last_passing_one(
    admin_page: Any, harness_server: Any, oai: openai.OpenAI, tmp_path: Path
) -> None:
    make_scenario(
        "forecast",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": "Sunny all week in Lisbon."}}],
        system_prompt_must_include=["You are a weather assistant"],
    )
    passed = play(oai, "You are a weather assistant. Answer in one sentence.")
    recorded_run(passed, status="passed", events=2)
    failed = play(oai, "You are a travel assistant. Answer in one sentence.")
    recorded_run(failed, status="failed", events=2)

    page = admin_page
    page.goto(f"{harness_server.url}/runs/{failed}/")
    # The run page's expectation, diffed against what the prompt says in its place.
    expectations = page.locator("#turn-1-expectations .expect-diff")
    expect(expectations.locator("del")).to_have_text("weather")
    expect(expectations.locator("ins")).to_have_text("travel")

    page.click("text=Diff against the last passing run")
    page.wait_for_url(f"{harness_server.url}/runs/{passed}/diff/{failed}/")
    system_row = page.locator("#diff-turn-1 tr:has(th:text-is('System prompt'))")
    expect(system_row.locator(".side-a del")).to_have_text("weather")
    expect(system_row.locator(".side-b ins")).to_have_text("travel")
    expect(system_row.locator(".side-a")).to_have_text("You are a weather assistant. Answer in one sentence.")
    expect(page.locator("#diff-turn-1 tr:has(th:text-is('Message 1 (user)'))")).to_have_class("same")
    expect(page.locator(".different-scenarios")).to_have_count(0)
    page.set_viewport_size({"width": 1300, "height": 820})
    page.screenshot(path=str(screenshot_path("screenshot-diff.png", tmp_path)))

    # The picker reaches the same page from the other side.
    page.goto(f"{harness_server.url}/runs/{passed}/")
    page.select_option(".compare-with select[name=with]", failed)
    page.click(".compare-with button[type=submit]")
    page.wait_for_url(f"{harness_server.url}/runs/{passed}/diff/{failed}/")
    expect(page.locator(".diff-summary")).to_contain_text("difference")
