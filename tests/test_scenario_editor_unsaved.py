"""The editor keeps unsaved work, in a real browser: it asks before the page is left with changes, Ctrl+S (⌘S) saves,
and Save is disabled while the editor's validation finds problems."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from scenarios_app.models import Scenario
from tests.conftest import make_scenario


def watch_dialogs(page: Any, accept: bool = False) -> list[str]:
    """Every dialog the page opens, by type; each is dismissed (the page stays) unless ``accept``."""
    seen: list[str] = []

    def on_dialog(dialog: Any) -> None:
        seen.append(dialog.type)
        dialog.accept() if accept else dialog.dismiss()

    page.on("dialog", on_dialog)
    return seen


def test_it_asks_before_leaving_the_editor_with_unsaved_changes(admin_page: Any, harness_server: Any) -> None:
    make_scenario("leave-me", description="As stored")
    page = admin_page
    url = f"{harness_server.url}/scenarios/leave-me/"
    page.goto(url)
    dialogs = watch_dialogs(page)

    page.fill("#f-description", "Changed, not saved")
    # Left once the validation has answered, so that the status line below changes back from this (the page asks
    # whether or not it has answered: see the other test's Ctrl+S).
    expect(page.locator("#validation")).to_have_text("Valid · unsaved changes")
    with page.expect_event("dialog"):
        page.click(".page-head a:has-text('All scenarios')")
    assert dialogs == ["beforeunload"]
    assert page.url == url  # the author said stay
    expect(page.locator("#f-description")).to_have_value("Changed, not saved")

    # Typed back to what is stored: the validation says nothing is unsaved, and the page is left without asking.
    page.fill("#f-description", "As stored")
    expect(page.locator("#validation")).to_contain_text("no unsaved changes")
    page.click(".page-head a:has-text('All scenarios')")
    page.wait_for_url(f"{harness_server.url}/scenarios/")
    assert dialogs == ["beforeunload"]


def test_it_saves_with_ctrl_s_and_leaves_without_asking(admin_page: Any, harness_server: Any) -> None:
    make_scenario("keyboard-save", description="Before")
    page = admin_page
    page.goto(f"{harness_server.url}/scenarios/keyboard-save/")
    dialogs = watch_dialogs(page)

    page.fill("#f-description", "Saved from the keyboard")
    page.keyboard.press("Control+s")
    expect(page.locator(".messages")).to_contain_text("Saved keyboard-save (version 2)")
    assert Scenario.objects.get(id="keyboard-save").data["description"] == "Saved from the keyboard"
    expect(page.locator("#validation")).to_contain_text("no unsaved changes")
    page.click(".page-head a:has-text('All scenarios')")
    page.wait_for_url(f"{harness_server.url}/scenarios/")
    assert dialogs == []  # neither the save's own navigation nor leaving the saved page asked


def test_it_disables_save_while_the_form_is_invalid(admin_page: Any, harness_server: Any) -> None:
    make_scenario("invalid-save")
    page = admin_page
    page.goto(f"{harness_server.url}/scenarios/invalid-save/")
    save = page.locator("#save-button")
    expect(save).to_be_enabled()

    page.select_option("#f-turns-0-kind", "tool-call")  # a tool call without a name
    expect(page.locator("#validation")).to_contain_text("1 problem")
    expect(save).to_be_disabled()
    # Neither ⌘S / Ctrl+S nor Enter in a field submits it; the browser's own save dialog is not opened either.
    page.evaluate("window.addEventListener('keydown', (e) => { window.savePrevented = e.defaultPrevented; })")
    page.keyboard.press("Meta+s")
    assert page.evaluate("window.savePrevented") is True
    page.keyboard.press("Control+s")
    assert page.evaluate("window.savePrevented") is True
    page.press("#f-tags", "Enter")
    page.wait_for_timeout(600)
    assert page.url == f"{harness_server.url}/scenarios/invalid-save/"
    assert Scenario.objects.get(id="invalid-save").data["turns"][0]["response"]["kind"] == "text"

    page.fill("#f-turns-0-tool_calls-0-tool_name", "get_weather")
    expect(page.locator("#validation")).to_contain_text("Valid · unsaved changes")
    expect(save).to_be_enabled()
    # A new scenario cannot be saved before it has an id.
    page.goto(f"{harness_server.url}/scenarios/new/")
    expect(page.locator("#save-button")).to_be_disabled()
