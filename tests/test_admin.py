"""The admin through the Django test client as a staff user: every page, runs, trace logs, cassettes, API tokens."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from runs_app import tokens
from runs_app.models import ApiToken, Cassette, Provider, RunEvent, TierRule, Waiver
from scenarios_app.models import Scenario
from tests.conftest import change_url, changelist, listed_pks, make_run, make_trace_log, make_verdict, shows_badge, text

pytestmark = pytest.mark.django_db


# -- every page renders ----------------------------------------------------------------------------------------------


def test_it_renders_every_list_change_and_add_page(staff_client: Client) -> None:
    run = make_run()
    RunEvent.objects.create(run=run, seq=1, timestamp=timezone.now(), kind="request", turn=1, data={"a": [1, 2]})
    verdict = make_verdict(run=run)
    log = make_trace_log(run)
    provider = Provider.objects.create(name="acme", required_tiers=["unit", "e2e"])
    waiver = Waiver.objects.create(provider=provider, obligation="e2e", reason="no key", expires_on=dt.date(2099, 1, 1))
    cassette = Cassette.objects.create(
        name="verify_openai_simple_text.json",
        provider="openai",
        scenario="simple_text",
        content=b"{}",
        digest="d1",
        size=2,
    )
    token, _ = tokens.issue("ci", "write")
    rule = TierRule.objects.create(tier="acme-tier", patterns=["acme_"])
    scenario = Scenario.objects.create(id="demo", data={"id": "demo", "turns": []})
    for obj in (run, verdict, log, provider, waiver, cassette, token, rule, scenario):
        model = f"{obj._meta.app_label}_{obj._meta.model_name}"
        assert staff_client.get(changelist(model)).status_code == 200, model
        assert staff_client.get(change_url(obj)).status_code == 200, model
    for model in (
        "runs_app_provider",
        "runs_app_waiver",
        "runs_app_apitoken",
        "runs_app_tierrule",
        "scenarios_app_scenario",
    ):
        assert staff_client.get(reverse(f"admin:{model}_add")).status_code == 200, model


# -- runs ------------------------------------------------------------------------------------------------------------


def test_it_shows_a_runs_events_logs_and_verdicts_on_its_page(staff_client: Client) -> None:
    run = make_run()
    RunEvent.objects.create(run=run, seq=1, timestamp=timezone.now(), kind="request", data={"model": "gpt"})
    verdict = make_verdict(run=run)
    log = make_trace_log(run)
    body = text(staff_client.get(change_url(run)))
    assert "&quot;model&quot;: &quot;gpt&quot;" in body  # pretty-printed, escaped JSON
    assert change_url(log) in body and change_url(verdict) in body
    assert shows_badge(body, "FAIL") and "1/2" in body


def test_it_lists_runs_with_their_build_and_duration_and_searches_them(staff_client: Client) -> None:
    now = timezone.now()
    build = {
        "source": "ci",
        "status": "failed",
        "started_at": now - dt.timedelta(seconds=75),
        "finished_at": now,
        "turns_served": [1, 2],
    }
    run = make_run(scenario_id="weather", name="release-build", commit="feedbeef1234", branch="main", **build)
    other = make_run(scenario_id="other", **build)
    response = staff_client.get(changelist("runs_app_run"))
    body = text(response)
    assert "release-build" in body and "feedbeef12" in body and "1 min 15 s" in body
    assert listed_pks(staff_client.get(changelist("runs_app_run", q="feedbeef"))) == {run.pk}
    assert listed_pks(staff_client.get(changelist("runs_app_run", q=str(other.pk)))) == {other.pk}
    assert listed_pks(staff_client.get(changelist("runs_app_run", status="failed"))) == {run.pk, other.pk}


# -- trace logs ------------------------------------------------------------------------------------------------------


def test_it_numbers_trace_log_lines_and_highlights_what_was_searched(staff_client: Client) -> None:
    log = make_trace_log(content="alpha\nbeta tool call\ngamma\nTOOL again")
    body = text(staff_client.get(change_url(log)))
    assert 'id="L4"' in body and "gamma" in body
    response = staff_client.get(change_url(log), {"q": "tool"})
    body = text(response)
    assert [line["number"] for line in response.context["lines"]] == [2, 4]
    assert "beta <mark>tool</mark> call" in body and "<mark>TOOL</mark> again" in body
    assert "gamma" not in body.split('class="hr-trace"')[1]
    assert "2 lines contain" in body


def test_it_searches_trace_logs_literally_and_escapes_them(staff_client: Client) -> None:
    log = make_trace_log(content="<script>alert(1)</script>\n(a+)+b")
    body = text(staff_client.get(change_url(log), {"q": "<script>"}))
    assert "<script>alert(1)" not in body
    assert "<mark>&lt;script&gt;</mark>alert(1)&lt;/script&gt;" in body
    response = staff_client.get(change_url(log), {"q": "(a+)+"})
    assert [line["number"] for line in response.context["lines"]] == [2]


def test_it_downloads_a_trace_log_as_a_text_attachment_named_after_its_file(staff_client: Client) -> None:
    log = make_trace_log(content="one\ntwo\n")
    response = staff_client.get(reverse("admin:runs_app_tracelog_download", args=[log.pk]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="10-00-00_r1.log"'
    assert response.content == b"one\ntwo\n"


# -- cassettes -------------------------------------------------------------------------------------------------------


def test_it_downloads_a_cassette_byte_for_byte_and_never_edits_its_content(staff_client: Client) -> None:
    content = b'{"interactions": [{"request": {"uri": "https://api.example/v1"}}]}\n'
    cassette = Cassette.objects.create(
        name="verify_openai_simple_text.json",
        provider="openai",
        scenario="simple_text",
        content=content,
        digest="d",
        size=len(content),
    )
    listing = text(staff_client.get(changelist("runs_app_cassette")))
    assert "verify_openai_simple_text.json" in listing and "67 B" in listing
    response = staff_client.get(reverse("admin:runs_app_cassette_download", args=[cassette.pk]))
    assert response.content == content
    assert response["Content-Disposition"] == 'attachment; filename="verify_openai_simple_text.json"'
    staff_client.post(
        change_url(cassette), {"name": "renamed.json", "provider": "openai", "scenario": "simple_text", "content": "x"}
    )
    cassette.refresh_from_db()
    assert bytes(cassette.content) == content and cassette.name == "renamed.json"


# -- API tokens ------------------------------------------------------------------------------------------------------


def test_it_shows_a_new_token_once_and_stores_only_its_digest(staff_client: Client) -> None:
    response = staff_client.post(reverse("admin:runs_app_apitoken_add"), {"name": "ci", "scope": "write"}, follow=True)
    assert response.status_code == 200
    row = ApiToken.objects.get()
    shown = [str(m) for m in response.context["messages"] if "copy it now" in str(m)]
    assert len(shown) == 1
    token = shown[0].split(": ", 1)[1].split(" ")[0]
    assert token.startswith(row.prefix) and tokens.digest(token) == row.digest
    assert tokens.authenticate(token) == row
    # Never again: not on the next page, not on the list or the change page, and the digest nowhere.
    for url in (changelist("runs_app_apitoken"), change_url(row)):
        body = text(staff_client.get(url))
        assert token not in body and row.digest not in body
    assert row.scope == "write" and row.name == "ci"


def test_it_revokes_the_selected_tokens(staff_client: Client) -> None:
    live, _ = tokens.issue("a")
    other, token = tokens.issue("b")
    staff_client.post(changelist("runs_app_apitoken"), {"action": "revoke", "_selected_action": [live.pk]})
    live.refresh_from_db()
    assert live.revoked_at is not None
    assert tokens.authenticate(token) == other
