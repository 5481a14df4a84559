"""Scenario authoring in a real browser: the form validated as you type, saving, and "Try it" streaming live."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import openai
from playwright.sync_api import expect

from scenarios_app.models import Scenario
from tests.conftest import log_in, make_scenario, recorded_run, screenshot_path


def fill_turn_text(page: Any, index: int, text: str) -> None:
    page.fill(f"#f-turns-{index}-assistant_text", text)


def test_it_creates_a_scenario_through_the_form_fixing_an_error_in_place(
    admin_page: Any, harness_server: Any, tmp_path: Path
) -> None:
    page = admin_page
    page.goto(f"{harness_server.url}/scenarios/new/")
    expect(page.locator("#f-id")).to_be_focused()

    # An invalid id: the model's message appears beside the field as it is typed, then clears once fixed.
    page.fill("#f-id", "trip planner")
    id_errors = page.locator("#err-id")
    expect(id_errors).to_contain_text("String should match pattern")
    expect(page.locator("#validation")).to_contain_text("1 problem")
    page.fill("#f-id", "trip-planner")
    expect(id_errors).to_be_empty()
    expect(page.locator("#validation")).to_contain_text("Valid")

    page.fill("#f-description", "Plans a trip: thinks, searches flights, then files a report.")
    page.fill("#f-tags", "travel, tools")
    page.fill("#f-system_prompt_must_include", "You are a travel agent")
    fill_turn_text(page, 0, "Let me look for flights to Lisbon.")
    page.click("#card-0 summary:has-text('Reasoning')")
    page.click("#card-0 >> text=+ Reasoning segment")
    page.fill("#f-turns-0-reasoning-0-text", "The user wants Lisbon in May; search before answering.")

    page.click("text=+ Add turn")
    expect(page.locator(".turn-card")).to_have_count(2)
    page.select_option("#f-turns-1-kind", "tool-call")
    page.fill("#f-turns-1-tool_calls-0-tool_name", "search_flights")
    arguments_errors = page.locator("#err-turns-1-tool_calls-0-arguments")
    page.fill("#f-turns-1-tool_calls-0-arguments", '{"to": "LIS", "month": }')
    expect(arguments_errors).to_contain_text("Invalid JSON: Expecting value (line 1, column 24)")
    page.fill("#f-turns-1-tool_calls-0-arguments", '{"to": "LIS", "month": "May"}')
    expect(arguments_errors).to_be_empty()
    page.click("#card-1 summary:has-text('Expectations')")
    page.fill("#f-turns-1-expected_tools", "search_flights")

    page.click("text=+ Add turn")
    page.select_option("#f-turns-2-kind", "final-report")
    page.fill("#f-turns-2-report_content", "# Lisbon in May\n\nTAP 1234, 2 May, 189 EUR.")
    page.fill("#f-turns-2-report_content_json", '{"flight": "TP1234", "price_eur": 189}')
    # Text typed right after a turn operation stays in its field (the re-rendered panel must not take the focus).
    expect(page.locator("#f-id")).to_have_value("trip-planner")
    # A generous wait: validation is debounced and a loaded CI machine can be slow to answer.
    expect(page.locator("#validation")).to_contain_text("Valid · unsaved changes", timeout=15_000)

    page.click("#preview-form button[type=submit]")
    expect(page.locator("#preview-sse")).to_contain_text("The user wants Lisbon")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.locator(".turns").scroll_into_view_if_needed()
    page.evaluate("window.scrollTo(0, document.querySelector('.turns').offsetTop - 90)")
    page.screenshot(path=str(screenshot_path("screenshot-editor.png", tmp_path)))

    page.click(".savebar button:has-text('Save')")
    page.wait_for_url(f"{harness_server.url}/scenarios/trip-planner/")
    expect(page.locator(".messages")).to_contain_text("Saved trip-planner (version 1)")
    stored = Scenario.objects.get(id="trip-planner").to_schema()
    assert [t.response.kind for t in stored.turns] == ["text", "tool-call", "final-report"]
    assert stored.turns[1].response.tool_calls[0].arguments == {"to": "LIS", "month": "May"}
    assert stored.system_prompt_must_include == ["You are a travel agent"]

    page.goto(f"{harness_server.url}/scenarios/")
    page.fill("input[name=q]", "trip")
    expect(page.locator("#scenario-table tbody tr")).to_have_count(1)
    expect(page.locator("#scenario-table")).to_contain_text("trip-planner")
    expect(page.locator("#scenario-table")).to_contain_text("never run")


def test_it_refuses_to_save_and_shows_the_error_beside_its_field(admin_page: Any, harness_server: Any) -> None:
    make_scenario("refuse-me")
    page = admin_page
    page.goto(f"{harness_server.url}/scenarios/refuse-me/")

    page.select_option("#f-turns-0-kind", "tool-call")
    page.click(".savebar button:has-text('Save')")

    expect(page.locator("#err-turns-0-tool_calls-0-tool_name")).to_have_text("String should have at least 1 character")
    assert page.url == f"{harness_server.url}/scenarios/refuse-me/"
    assert Scenario.objects.get(id="refuse-me").data["turns"][0]["response"]["kind"] == "text"


def test_it_streams_try_it_into_the_page_as_it_arrives(browser: Any, paced_server: Any, transactional_db: None) -> None:
    words = " ".join(f"word{n}" for n in range(24))
    make_scenario(
        "try-live",
        pacing={"chunk_words": 2, "interval_ms": 80},
        turns=[{"turn": 1, "response": {"kind": "text", "assistant_text": words}}],
    )
    page = log_in(browser, paced_server)
    try:
        page.goto(f"{paced_server.url}/scenarios/try-live/")
        expect(page.locator("#preview-sse")).to_contain_text('"content":"word0 word1"')

        page.click("[data-try-it]")
        text = page.locator(".try-text")
        seen: list[str] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            current = text.inner_text()
            if not seen or current != seen[-1]:
                seen.append(current)
            if current == words:
                break
            time.sleep(0.02)

        assert seen[-1] == words
        partial = [s for s in seen if s and s != words]
        assert len(partial) >= 3, f"the answer arrived in one piece: {seen}"
        assert all(words.startswith(s) for s in partial)
        expect(page.locator(".try-attempts")).to_contain_text("attempt 1: done")
        run_link = page.locator(".try-meta a")
        run_id = run_link.inner_text()
        assert run_link.get_attribute("href") == f"/runs/{run_id}/"
        run = recorded_run(run_id, status="passed")
        assert run.scenario_id == "try-live"
    finally:
        page.context.close()


def test_it_keeps_edits_made_while_a_turn_operation_is_answered(admin_page: Any, harness_server: Any) -> None:
    """A burst: edits typed while a turn operation is on its way were overwritten by its answer (rendered from the
    form as it was when the button was clicked), and the status line showed the answer made before them."""
    page = admin_page
    page.goto(f"{harness_server.url}/scenarios/new/")
    page.fill("#f-id", "bad id")
    fill_turn_text(page, 0, "first")
    expect(page.locator("#validation")).to_contain_text("1 problem")

    # Hold each turn operation's answer long enough for the edits below to land while it is on its way.
    def held(route: Any) -> None:
        time.sleep(0.4)
        route.continue_()

    page.route("**/scenarios/editor/turns/", held)
    page.click("text=+ Add turn")
    page.fill("#f-id", "burst-fixed")
    fill_turn_text(page, 0, "first, edited")
    page.click("#card-0 button[title='Move down']")
    page.fill("#f-description", "typed during the move")

    expect(page.locator(".turn-card")).to_have_count(2)
    expect(page.locator("#validation")).to_have_text("Valid · unsaved changes", timeout=10_000)
    expect(page.locator("#f-id")).to_have_value("burst-fixed")
    expect(page.locator("#err-id")).to_be_empty()
    expect(page.locator("#f-description")).to_have_value("typed during the move")
    # The move applied to the edited turn: it is second now.
    expect(page.locator("#f-turns-1-assistant_text")).to_have_value("first, edited")
    page.wait_for_timeout(1000)  # nothing late (a queued validation, an operation sent again) changes it
    expect(page.locator("#validation")).to_have_text("Valid · unsaved changes")
    expect(page.locator("#f-id")).to_have_value("burst-fixed")


def test_it_keeps_a_selection_made_while_a_turn_operation_is_answered(admin_page: Any, harness_server: Any) -> None:
    """The author selects a whole value to type over it just before a turn operation's answer swaps the panel: the
    selection must survive the swap (htmx restores only one that starts past the first character), else the typed
    text lands in front of the old one ("burst-fixedbad id") and the status line shows a problem nobody typed. Held
    answers make the order certain: select, answer, type."""
    page = admin_page
    page.goto(f"{harness_server.url}/scenarios/new/")
    page.fill("#f-id", "bad id")
    fill_turn_text(page, 0, "first")
    expect(page.locator("#validation")).to_contain_text("1 problem")
    held: list[Any] = []
    page.route("**/scenarios/editor/turns/", lambda route: held.append(route))

    def answer_with_selected(selector: str) -> None:
        """Wait for the held operation, select the whole value of ``selector``, then let the answer through."""
        deadline = time.monotonic() + 10
        while not held and time.monotonic() < deadline:
            page.wait_for_timeout(20)
        assert len(held) == 1, "the turn operation was not sent"
        page.focus(selector)
        page.evaluate("(selector) => document.querySelector(selector).select()", selector)
        held.pop().continue_()

    page.click("text=+ Add turn")
    answer_with_selected("#f-id")
    expect(page.locator(".turn-card")).to_have_count(2)
    page.keyboard.insert_text("burst-fixed")
    expect(page.locator("#f-id")).to_have_value("burst-fixed")
    expect(page.locator("#validation")).to_have_text("Valid · unsaved changes", timeout=10_000)

    # A move renumbers the cards: the selection follows the text to the field that holds it now.
    fill_turn_text(page, 1, "second")
    expect(page.locator("#validation")).to_have_text("Valid · unsaved changes", timeout=10_000)
    page.click("#card-0 button[title='Move down']")
    answer_with_selected("#f-turns-0-assistant_text")
    expect(page.locator("#f-turns-0-assistant_text")).to_have_value("second")
    page.keyboard.insert_text("first, retyped")
    expect(page.locator("#f-turns-1-assistant_text")).to_have_value("first, retyped")
    expect(page.locator("#f-turns-0-assistant_text")).to_have_value("second")
    expect(page.locator("#validation")).to_have_text("Valid · unsaved changes", timeout=10_000)


def test_it_authors_a_conversation_check_flags_a_bad_pattern_live_and_the_saved_check_fails_a_turn(
    admin_page: Any, harness_server: Any
) -> None:
    page = admin_page
    page.goto(f"{harness_server.url}/scenarios/new/")
    page.fill("#f-id", "browser-expect")
    fill_turn_text(page, 0, "It is 21 °C in Lisbon.")
    page.click("#card-0 summary:has-text('Expectations')")
    pattern_errors = page.locator("#err-turns-0-expect_last_message_regex")
    page.fill("#f-turns-0-expect_last_message_regex", "weather in (")
    expect(pattern_errors).to_contain_text("not a valid regular expression: missing ), unterminated subpattern")
    expect(page.locator("#validation")).to_have_text("1 problem: nothing can be saved")
    page.fill("#f-turns-0-expect_last_message_regex", r"weather in \w+")
    page.fill("#f-turns-0-expect_system_prompt_must_include", "weather bot")
    expect(pattern_errors).to_be_empty()
    expect(page.locator("#validation")).to_have_text("Valid · unsaved changes", timeout=10_000)
    page.click(".savebar button:has-text('Save')")
    page.wait_for_url(f"{harness_server.url}/scenarios/browser-expect/")
    expect(page.locator("#f-turns-0-expect_last_message_regex")).to_have_value(r"weather in \w+")

    client = openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key="sk-browser-expect", max_retries=0)
    headers = {"X-Harness-Scenario": "browser-expect"}

    def ask(text: str) -> tuple[str, str]:
        messages = [{"role": "system", "content": "You are a weather bot."}, {"role": "user", "content": text}]
        raw = client.chat.completions.with_raw_response.create(model="m", messages=messages, extra_headers=headers)
        return raw.parse().choices[0].message.content or "", raw.headers["x-harness-run"]

    text, run_id = ask("How warm is it?")
    assert text == "Scenario validation failed."
    reason = recorded_run(run_id, status="failed").status_reason
    assert "Expected the last user or tool message to match 'weather in \\\\w+'" in reason
    page.goto(f"{harness_server.url}/runs/{run_id}/")
    expect(page.locator("table.expect tr.bad")).to_contain_text("Last message matches")
    expect(page.locator("table.expect tr.ok")).to_contain_text("System prompt includes")
    text, run_id = ask("What is the weather in Lisbon?")
    assert text == "It is 21 °C in Lisbon."
    recorded_run(run_id, status="passed")
