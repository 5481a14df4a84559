"""The editor's preview for the providers' sockets in a real browser: choosing OpenAI Realtime or Gemini Live swaps
in the turn's messages in order, each opening to its JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.conftest import make_scenario, screenshot_path


def test_choosing_a_socket_protocol_shows_the_turn_s_messages(
    admin_page: Any, harness_server: Any, tmp_path: Path
) -> None:
    make_scenario("socket-look", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello over a socket."}}])
    page = admin_page
    page.goto(f"{harness_server.url}/scenarios/socket-look/")

    page.select_option("#preview-form select[name=preview_protocol]", "realtime")
    frames = page.locator("#preview-output .socket-frames summary")
    expect(frames.first).to_contain_text("session.created")
    expect(frames.last).to_contain_text("response.done")
    expect(page.locator("#preview-output")).to_contain_text("OpenAI Realtime, turn 1")
    page.locator("#preview-output summary:has-text('response.output_text.done')").click()
    expect(page.locator("#preview-output pre.sse:visible")).to_contain_text('"text": "Hello over a socket."')
    page.screenshot(path=str(screenshot_path("editor-socket-preview.png", tmp_path)), full_page=True)

    page.select_option("#preview-form select[name=preview_protocol]", "gemini_live")
    expect(page.locator("#preview-output")).to_contain_text("Gemini Live, turn 1")
    expect(frames.last).to_contain_text("serverContent.turnComplete")
    expect(page.locator("#preview-output .frame-client summary")).to_have_text(["→ setup", "→ clientContent"])
