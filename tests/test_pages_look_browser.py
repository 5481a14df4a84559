"""How the dashboard looks in a real browser: usable at 420 px wide (no page scrolled sideways, the nav wraps, wide
tables scroll in their own box), a dark palette when the system asks for one, the run page's actions on one row
(gained live by a page opened before its run existed), a disabled button that looks it, the verdict list whole at
1,400 px, the runs list's count following a live insert, and a filter value the list does not take said so."""

from __future__ import annotations

import uuid
from typing import Any

import openai
from django.contrib.auth.models import User
from django.utils import timezone

from runs_app.models import JudgeBatch
from tests.conftest import make_run, make_scenario, make_verdict, recorded_run, screenshot_path

PASSWORD = "harness-look-pw"


def open_page(browser: Any, server: Any, *, width: int = 1400, scheme: str = "light") -> Any:
    """A page logged in as a staff user through the log-in form, at ``width`` px and in a colour scheme."""
    if not User.objects.filter(username="looker").exists():
        User.objects.create_superuser("looker", "", PASSWORD)
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(f"{server.url}/login/")
    page.fill("input[name=username]", "looker")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
    return page


def play(server: Any, scenario: str, run_id: uuid.UUID | None = None) -> None:
    """One request through the OpenAI SDK playing ``scenario``, in run ``run_id`` when given."""
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=f"sk-{uuid.uuid4().hex}", max_retries=0, timeout=30)
    headers = {"X-Harness-Scenario": scenario, **({"X-Harness-Run": str(run_id)} if run_id else {})}
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], extra_headers=headers)


def seed_pages() -> None:
    make_scenario(
        "narrow-demo",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": "A narrow answer. " * 20}}],
        description="A scenario whose description is long enough to wrap on a phone. " * 3,
    )


def luminance(css: str) -> float:
    """The relative luminance (WCAG) of a computed ``rgb(...)`` / ``rgba(...)`` colour."""
    values = [float(v) for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3]]

    def channel(value: float) -> float:
        value /= 255
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in values)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def style(page: Any, selector: str, prop: str) -> str:
    return page.eval_on_selector(selector, f"e => getComputedStyle(e).{prop}")


def test_every_page_fits_420_px_without_scrolling_sideways(browser, harness_server, transactional_db, tmp_path):
    seed_pages()
    run_id = uuid.uuid4()
    play(harness_server, "narrow-demo", run_id)
    recorded_run(str(run_id), status="passed", events=2)
    page = open_page(browser, harness_server, width=420)
    pages = {
        "overview": "/",
        "runs list": "/runs/",
        "run page": f"/runs/{run_id}/",
        "scenarios list": "/scenarios/",
        "editor": "/scenarios/narrow-demo/edit/",
        "coverage": "/coverage/",
    }
    for name, path in pages.items():
        page.goto(f"{harness_server.url}{path}")
        page.wait_for_load_state("networkidle")
        width = page.evaluate("document.scrollingElement.scrollWidth")
        assert width <= page.evaluate("innerWidth"), f"the {name} scrolls sideways at 420 px ({width} px wide)"
        # Every nav link is on screen: the nav wraps under the brand rather than running off the right.
        rights = page.eval_on_selector_all(".topbar nav a", "links => links.map(a => a.getBoundingClientRect().right)")
        assert rights and max(rights) <= 420, name
        page.screenshot(path=screenshot_path(f"narrow-{name.replace(' ', '-')}.png", tmp_path), full_page=True)
    # The runs table is wider than a phone: it scrolls inside its own box.
    page.goto(f"{harness_server.url}/runs/")
    table = page.eval_on_selector("table.runs", "t => [t.scrollWidth, t.clientWidth, getComputedStyle(t).overflowX]")
    assert table[0] > table[1] and table[2] == "auto"
    page.context.close()


def test_the_dashboard_follows_a_dark_colour_scheme(browser, harness_server, transactional_db):
    seed_pages()
    make_run(scenario_id="narrow-demo", status="failed")
    dark = open_page(browser, harness_server, scheme="dark")
    light = open_page(browser, harness_server, scheme="light")
    for path in ("/runs/", "/scenarios/narrow-demo/edit/", "/coverage/"):
        dark.goto(f"{harness_server.url}{path}")
        light.goto(f"{harness_server.url}{path}")
        background, text = style(dark, "body", "backgroundColor"), style(dark, "body", "color")
        assert luminance(background) < 0.05 and luminance(text) > 0.6, (path, background, text)
        assert contrast(background, text) >= 7, path
        card = dark.query_selector(".card, table.list")
        if card is not None:
            assert luminance(card.evaluate("e => getComputedStyle(e).backgroundColor")) < 0.05, path
        muted = dark.query_selector(".muted")
        if muted is not None:
            assert contrast(background, muted.evaluate("e => getComputedStyle(e).color")) >= 4.5, path
        # The light page is still light.
        assert (
            luminance(style(light, "body", "backgroundColor")) > 0.9 and luminance(style(light, "body", "color")) < 0.05
        )
    # Fields and badges: dark fields with light text, a badge's text readable on its colour.
    dark.goto(f"{harness_server.url}/scenarios/narrow-demo/edit/")
    field = dark.query_selector("textarea, input[type=text]")
    assert luminance(field.evaluate("e => getComputedStyle(e).backgroundColor")) < 0.05
    assert luminance(field.evaluate("e => getComputedStyle(e).color")) > 0.6
    dark.goto(f"{harness_server.url}/runs/")
    badge = dark.query_selector(".badge.failed")
    colours = badge.evaluate("e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).color]")
    assert contrast(*colours) >= 4.5
    dark.context.close()
    light.context.close()


def test_a_watch_page_gains_judge_pin_and_compare_once_its_run_exists(browser, harness_server, transactional_db):
    seed_pages()
    earlier = uuid.uuid4()
    play(harness_server, "narrow-demo", earlier)
    recorded_run(str(earlier), status="passed", events=2)
    page = open_page(browser, harness_server)
    page.goto(f"{harness_server.url}/runs/")
    page.click("text=Watch a new run")
    page.wait_for_selector('[data-live-state="open"]')
    run_id = page.url.split("/runs/")[1].split("/")[0]
    assert page.inner_text("#run-actions").strip() == ""
    play(harness_server, "narrow-demo", uuid.UUID(run_id))
    page.wait_for_selector("#run-actions[data-ready] >> text=Judge this run", timeout=10_000)
    actions = page.query_selector("#run-actions")
    assert actions.query_selector("button:has-text('Pin')") is not None
    assert actions.query_selector(f".compare-with option[value='{earlier}']") is not None
    # One row: the crumbs, the judge link, the pin button and the compare form share a line.
    tops = page.eval_on_selector_all(
        ".crumbs > a, #run-actions > a, #run-actions > form", "items => items.map(e => e.getBoundingClientRect().top)"
    )
    assert max(tops) - min(tops) < 20
    page.context.close()


def test_the_disabled_judge_button_looks_disabled(browser, harness_server, transactional_db, settings):
    page = open_page(browser, harness_server)
    page.goto(f"{harness_server.url}/runs/judge/?status=passed")  # no runs: nothing to judge
    button = page.query_selector(".judge-form button[type=submit]")
    assert button.is_disabled()
    assert float(button.evaluate("e => getComputedStyle(e).opacity")) <= 0.5
    assert button.evaluate("e => getComputedStyle(e).cursor") == "not-allowed"
    page.goto(f"{harness_server.url}/scenarios/")
    enabled = page.query_selector("button:not([disabled])")
    assert float(enabled.evaluate("e => getComputedStyle(e).opacity")) == 1
    page.context.close()


def test_the_verdict_lists_are_whole_at_1400_px(browser, harness_server, transactional_db):
    verdict = make_verdict(overall="FAIL", judge_model="a-judge-model-with-a-rather-long-name-2026-11-01")
    error = "HTTP 500: upstream said " + "0123456789abcdefABCDEF" * 12  # one word, wider than the page
    failed = make_verdict(overall="", judge_error=error)
    batch = JudgeBatch.objects.create(
        criteria="c", run_ids=[str(verdict.run_id), str(failed.run_id)], verdict_ids=[verdict.pk, failed.pk]
    )
    JudgeBatch.objects.filter(pk=batch.pk).update(
        total=2, done=2, started_at=timezone.now(), finished_at=timezone.now()
    )
    page = open_page(browser, harness_server)
    page.goto(f"{harness_server.url}/admin/runs_app/judgeverdict/")
    results = page.eval_on_selector("#changelist .results", "e => [e.scrollWidth, e.clientWidth]")
    assert results[0] <= results[1], f"the verdict list is cut: {results[0]} px in {results[1]}"
    # A judge batch's verdicts, a judge error holding a long token among them, stay inside their card.
    page.goto(f"{harness_server.url}/runs/judge/{batch.pk}/")
    table, card = page.eval_on_selector(
        "table.judge-verdicts",
        "t => [t.getBoundingClientRect().right, t.closest('.card').getBoundingClientRect().right]",
    )
    assert table <= card and page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")
    page.context.close()


def test_the_runs_count_follows_a_live_insert(browser, harness_server, transactional_db):
    seed_pages()
    make_run(scenario_id="narrow-demo", status="passed")
    page = open_page(browser, harness_server)
    page.goto(f"{harness_server.url}/runs/")
    page.wait_for_selector('[data-live-state="open"]')
    assert page.inner_text("#runs-count") == "1 run"
    play(harness_server, "narrow-demo")
    page.wait_for_function("document.getElementById('runs-count').textContent === '2 runs'", timeout=10_000)
    page.context.close()


def test_a_filter_value_the_list_does_not_take_is_said_so(browser, harness_server, transactional_db):
    make_run(scenario_id="narrow-demo", status="passed")
    page = open_page(browser, harness_server)
    page.goto(f"{harness_server.url}/runs/?hour=2026-11-27T10")
    page.wait_for_selector('[data-live-state="open"]')
    page.fill("input[name=hour]", "noon")  # the table is fetched again as the field changes
    page.wait_for_selector(".filter-problem", timeout=10_000)
    assert "hour: 'noon' is not an hour" in page.inner_text(".filter-problem")
    assert page.query_selector_all("#runs-body tr.run-row") == []
    page.context.close()
