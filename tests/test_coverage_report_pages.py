"""Provider test-obligation coverage: the grid and evidence pages, and the grid in the admin."""

from __future__ import annotations

import datetime
import re

from runs_app.coverage.report import provider_coverage
from runs_app.models import Provider
from tests.conftest import make_user
from tests.coverage_report_helpers import TODAY, at, make_build, make_case, make_cases, make_cassette, make_waiver
from tests.coverage_report_helpers import registry_fixture as registry_fixture  # a fixture: pytest finds it by name

# -- the pages -------------------------------------------------------------------------------------------------------


def test_it_sends_anonymous_visitors_to_the_admin_login(client, registry):
    response = client.get("/coverage/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/coverage/"
    assert client.get("/coverage/anthropic/unit/").status_code == 302


def test_it_draws_the_grid_with_counts_colours_and_hover_reasons(admin_client, registry):
    make_cases(
        make_build(commit="abc123", started_at=at(4)),
        "anthropic",
        "contract",
        ["passed", "failed", "passed", "failed", "passed"],
    )
    make_cases(make_build(commit="abc123", started_at=at(4)), "anthropic", "unit", ["passed"] * 6)
    response = admin_client.get("/coverage/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'title="2 of 5 contract tests failed in the latest run (commit abc123)"' in html
    assert 'title="All 6 unit tests passed in the latest run (commit abc123)"' in html
    assert 'title="No e2e test results for anthropic in any uploaded run"' in html
    assert 'class="cell state-failing"' in html and 'class="cell state-passing"' in html
    assert "3/5" in html and "6/6" in html
    assert 'href="/coverage/anthropic/contract/"' in html
    assert 'href="/coverage/kimi-for-coding/cassettes/"' in html
    # Works offline: every script and stylesheet is served by the app itself.
    assets = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', html)
    assert assets and all(a.startswith("/static/") for a in assets)


def test_it_shows_the_evidence_behind_a_cell(admin_client, registry):
    run = make_build(commit="deadbeef", started_at=at(7), branch="feature/x")
    make_case(
        run,
        "anthropic_tool_call",
        "provider_native_contract",
        "failed",
        message="expected ToolCallStart, got TextDelta",
        duration_s=0.25,
    )
    make_waiver("anthropic", "contract", TODAY + datetime.timedelta(days=400), "Tracked in PROJ-7")
    cassette = make_cassette("anthropic", "unicode_text")

    html = admin_client.get("/coverage/anthropic/contract/").content.decode()
    assert "anthropic_tool_call" in html
    assert "expected ToolCallStart, got TextDelta" in html
    assert "0.250 s" in html
    assert "deadbeef" in html and "feature/x" in html and "2026-05-07" in html
    assert "Tracked in PROJ-7" in html

    html = admin_client.get("/coverage/anthropic/cassettes/").content.decode()
    assert f'href="/admin/runs_app/cassette/{cassette.pk}/change/"' in html
    assert "verify_anthropic_unicode_text.json" in html and "unicode_text" in html


def test_it_answers_404_for_an_unknown_provider_or_obligation(admin_client, registry):
    assert admin_client.get("/coverage/nobody/unit/").status_code == 404
    assert admin_client.get("/coverage/anthropic/vibes/").status_code == 404


def test_it_escapes_what_uploads_and_the_admin_provide(admin_client, registry):
    make_case(
        make_build(),
        "<script>alert(1)</script>",
        "provider_native_contract",
        "failed",
        message="<img src=x onerror=alert(2)>",
        properties={"provider": "anthropic"},
    )
    make_waiver("anthropic", "contract", TODAY + datetime.timedelta(days=400), '"><script>alert(3)</script>')
    Provider.objects.create(name="<b>bold</b>", required_tiers=["unit"])

    grid = admin_client.get("/coverage/").content.decode()
    assert "<script>alert" not in grid and "<b>bold" not in grid
    assert "&lt;b&gt;bold&lt;/b&gt;" in grid
    assert "&quot;&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in grid

    evidence = admin_client.get("/coverage/anthropic/contract/").content.decode()
    assert "<script>alert" not in evidence and "<img" not in evidence
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in evidence
    assert "&lt;img src=x onerror=alert(2)&gt;" in evidence


def test_it_puts_the_same_grid_in_the_admin_for_staff_only(client, admin_client, registry):
    make_cases(make_build(commit="abc123", started_at=at(4)), "anthropic", "contract", ["passed", "failed"])
    # Mounted once, in ProviderAdmin; the shorter /admin/coverage/ leads there.
    assert admin_client.get("/admin/coverage/")["Location"] == "/admin/runs_app/provider/coverage/"
    for url in ("/admin/coverage/", "/admin/runs_app/provider/coverage/"):
        response = admin_client.get(url, follow=True)
        assert response.status_code == 200
        html = response.content.decode()
        assert "Provider test coverage" in html
        assert 'title="1 of 2 contract tests failed in the latest run (commit abc123)"' in html
        assert 'href="/coverage/anthropic/contract/"' in html
        assert client.get(url).status_code == 302

    user = make_user("viewer")
    client.force_login(user)
    for url in ("/admin/coverage/", "/admin/runs_app/provider/coverage/"):
        response = client.get(url, follow=True)
        assert response.redirect_chain[-1][1] == 302
        assert response.redirect_chain[-1][0].startswith("/admin/login/")


def test_it_counts_the_older_cassette_names_for_the_seed_scenarios(registry):
    for scenario in (
        "simple_text",
        "tool_call_single",
        "unicode_content",
        "auth_failure_401",
        "bad_request_400",
        "rate_limit_429",
    ):
        make_cassette("anthropic", scenario, name=f"anthropic_{scenario}.json")
    cell = provider_coverage(Provider.objects.get(name="anthropic"))["cells"]["cassettes"]
    assert cell["state"] == "passing" and cell["missing_scenarios"] == []
