"""The admin through the Django test client as a staff user: pages, verdict review, queue, logs, tokens, scenarios."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from runs_app import tokens
from runs_app.coverage import admin as coverage_admin
from runs_app.models import (
    ApiToken,
    Cassette,
    JudgeVerdict,
    Provider,
    RunEvent,
    TierRule,
    TraceLog,
    VerdictAudit,
    VerdictCriterion,
    Waiver,
)
from runs_app.review import rules as review
from scenarios_app.models import Scenario
from tests.conftest import (
    change_url,
    changelist,
    listed_pks,
    make_run,
    make_trace_log,
    make_user,
    make_verdict,
    shows_badge,
    text,
)

pytestmark = pytest.mark.django_db


# -- helpers -------------------------------------------------------------------------------------------------------


def override(client: Client, verdict: JudgeVerdict, target: str, value: str, reason: str, **extra: str) -> Any:
    url = reverse("admin:runs_app_judgeverdict_override", args=[verdict.pk])
    return client.post(url, {"target": target, "value": value, "reason": reason, **extra}, follow=True)


# -- every page renders ------------------------------------------------------------------------------------------


def test_every_changelist_and_change_page_renders(staff_client: Client) -> None:
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


def test_the_run_page_shows_events_logs_and_verdicts(staff_client: Client) -> None:
    run = make_run()
    RunEvent.objects.create(run=run, seq=1, timestamp=timezone.now(), kind="request", data={"model": "gpt"})
    verdict = make_verdict(run=run)
    log = make_trace_log(run)
    body = text(staff_client.get(change_url(run)))
    assert "&quot;model&quot;: &quot;gpt&quot;" in body  # pretty-printed, escaped JSON
    assert change_url(log) in body and change_url(verdict) in body
    assert shows_badge(body, "FAIL") and "1/2" in body


def test_the_run_list_shows_build_duration_and_turns_and_searches(staff_client: Client) -> None:
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


# -- overrides and undo ----------------------------------------------------------------------------------------


def test_override_a_criterion_changes_the_effective_badge(staff_client: Client, staff: User) -> None:
    verdict = make_verdict()
    assert shows_badge(text(staff_client.get(changelist("runs_app_judgeverdict"))), "FAIL")
    response = override(staff_client, verdict, "criterion:2", "PASS", "milk is in the second message")
    assert response.status_code == 200
    assert "Criterion 2 overridden to PASS." in text(response)
    listing = text(staff_client.get(changelist("runs_app_judgeverdict")))
    assert shows_badge(listing, "PASS") and not shows_badge(listing, "FAIL")
    assert "2/2" in listing and "overridden" in listing
    criterion = verdict.criteria.get(position=2)
    assert (criterion.judge_verdict, criterion.override_verdict) == ("FAIL", "PASS")
    row = VerdictAudit.objects.get()
    assert row.user == staff and row.reason == "milk is in the second message"


def test_override_the_overall_with_a_reason_and_the_page_shows_the_trail(staff_client: Client, staff: User) -> None:
    verdict = make_verdict()
    response = override(staff_client, verdict, "overall", "PASS", "judge was too strict")
    body = text(response)
    assert response.redirect_chain[-1][0] == change_url(verdict)
    assert "Overall overridden to PASS." in body
    assert 'id="audit-trail"' in body and "judge was too strict" in body and staff.username in body
    verdict.refresh_from_db()
    assert (verdict.overall, verdict.override_overall) == ("FAIL", "PASS")
    assert review.effective_overall(verdict) == "PASS"


def test_override_without_a_reason_is_refused_with_a_message(staff_client: Client) -> None:
    verdict = make_verdict()
    body = text(override(staff_client, verdict, "overall", "PASS", ""))
    assert "Give a reason to override overall." in body
    assert not VerdictAudit.objects.exists()


def test_the_verdict_form_cannot_change_override_fields(staff_client: Client) -> None:
    verdict = make_verdict()
    staff_client.post(change_url(verdict), {"override_overall": "PASS", "override_reason": "sneaky", "overall": "PASS"})
    verdict.refresh_from_db()
    assert (verdict.overall, verdict.override_overall, verdict.override_reason) == ("FAIL", "", "")
    assert not VerdictAudit.objects.exists()


def test_undo_restores_and_is_itself_audited(staff_client: Client) -> None:
    verdict = make_verdict()
    override(staff_client, verdict, "overall", "PASS", "fine")
    change = VerdictAudit.objects.get()
    response = staff_client.post(reverse("admin:runs_app_judgeverdict_undo", args=[verdict.pk, change.pk]), follow=True)
    assert f"Change #{change.pk} to overall undone." in text(response)
    verdict.refresh_from_db()
    assert verdict.override_overall == "" and review.effective_overall(verdict) == "FAIL"
    undo_row = VerdictAudit.objects.exclude(pk=change.pk).get()
    assert undo_row.undoes == change and undo_row.reason == f"undo of change #{change.pk}"
    assert "superseded" in text(response)  # the first change can no longer be undone from the page


def test_undo_of_a_change_no_longer_current_is_refused(staff_client: Client) -> None:
    verdict = make_verdict()
    override(staff_client, verdict, "criterion:2", "PASS", "first look")
    first = VerdictAudit.objects.get()
    override(staff_client, verdict, "criterion:2", "FAIL", "second look")
    response = staff_client.post(reverse("admin:runs_app_judgeverdict_undo", args=[verdict.pk, first.pk]), follow=True)
    assert "can no longer be undone" in text(response)
    assert verdict.criteria.get(position=2).override_verdict == "FAIL"
    assert VerdictAudit.objects.count() == 2


def test_undo_of_another_verdicts_change_is_404(staff_client: Client) -> None:
    verdict, other = make_verdict(), make_verdict()
    override(staff_client, verdict, "overall", "PASS", "fine")
    row = VerdictAudit.objects.get()
    assert staff_client.post(reverse("admin:runs_app_judgeverdict_undo", args=[other.pk, row.pk])).status_code == 404


def test_mark_reviewed_is_audited(staff_client: Client) -> None:
    verdict = make_verdict()
    response = staff_client.post(reverse("admin:runs_app_judgeverdict_accept", args=[verdict.pk]), follow=True)
    assert f"Verdict #{verdict.pk} marked reviewed (FAIL)." in text(response)
    verdict.refresh_from_db()
    assert verdict.reviewed_at is not None and VerdictAudit.objects.get().target == "review"


def test_review_actions_need_post_and_a_csrf_token(staff: User) -> None:
    verdict = make_verdict()
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(staff)
    url = reverse("admin:runs_app_judgeverdict_override", args=[verdict.pk])
    assert strict.post(url, {"target": "overall", "value": "PASS", "reason": "x"}).status_code == 403
    assert strict.get(url).status_code == 405
    page = strict.get(change_url(verdict))
    token = page.context["csrf_token"]
    assert (
        strict.post(
            url, {"target": "overall", "value": "PASS", "reason": "x", "csrfmiddlewaretoken": token}
        ).status_code
        == 302
    )


def test_next_never_redirects_off_site(staff_client: Client) -> None:
    verdict = make_verdict()
    response = override(staff_client, verdict, "overall", "PASS", "ok", next="https://evil.example/")
    assert response.redirect_chain[-1][0] == change_url(verdict)


# -- filters -------------------------------------------------------------------------------------------------------


def test_filters_return_the_right_rows(staff_client: Client, staff: User) -> None:
    unreviewed_fail = make_verdict()
    passing = make_verdict([("PASS", "ok")])
    errored = make_verdict([], overall="", judge_error="judge timed out")
    overridden = make_verdict()
    review.override(overridden, staff, "overall", "PASS", "fine")
    accepted = make_verdict()
    review.mark_reviewed(accepted, staff)
    cases = {
        "review=unreviewed": {unreviewed_fail.pk, passing.pk, errored.pk},
        "review=overridden": {overridden.pk},
        "review=reviewed": {accepted.pk},
        "effective=FAIL": {unreviewed_fail.pk, accepted.pk},
        "effective=PASS": {passing.pk, overridden.pk},
        "effective=ERROR": {errored.pk},
        "judge_error=yes": {errored.pk},
    }
    for query, expected in cases.items():
        key, value = query.split("=")
        assert listed_pks(staff_client.get(changelist("runs_app_judgeverdict", **{key: value}))) == expected, query
    combined = staff_client.get(changelist("runs_app_judgeverdict", review="unreviewed", effective="FAIL"))
    assert listed_pks(combined) == {unreviewed_fail.pk}


def test_a_judge_error_has_its_own_badge(staff_client: Client) -> None:
    make_verdict([], overall="", judge_error="judge timed out")
    body = text(staff_client.get(changelist("runs_app_judgeverdict")))
    assert "JUDGE ERROR" in body and not shows_badge(body, "FAIL")


# -- the review queue ------------------------------------------------------------------------------------------


def queue(client: Client, **params: str) -> Any:
    return client.get(reverse("admin:runs_app_judgeverdict_queue"), params)


def test_the_queue_walks_fail_verdicts_oldest_first_and_actions_move_on(staff_client: Client) -> None:
    first, second, third = make_verdict(), make_verdict(), make_verdict()
    make_verdict([("PASS", "ok")])  # not in the queue
    make_trace_log(first.run, content="line one\nERROR tool call failed\nFAILED")
    response = queue(staff_client)
    body = text(response)
    assert response.context["verdict"] == first and response.context["remaining"] == 3
    assert "3</strong> unreviewed FAIL verdicts remaining" in body
    assert "ERROR tool call failed" in body and "milk was forgotten" in body and "The assistant mostly coped." in body
    assert 'document.addEventListener("keydown"' in body and "<script src" not in body.split('id="content-main"')[1]

    # Accept the first: the next one shows.
    accepted = staff_client.post(
        reverse("admin:runs_app_judgeverdict_accept", args=[first.pk]),
        {"next": response.context["next_url"]},
        follow=True,
    )
    assert accepted.context["verdict"] == second and accepted.context["remaining"] == 2
    # Skip the second, then override the third to PASS.
    skipped = queue(staff_client, after=str(second.pk))
    assert skipped.context["verdict"] == third and skipped.context["prev_url"]
    passed = override(staff_client, third, "overall", "PASS", "fine really", next=skipped.context["next_url"])
    assert passed.context.get("verdict") is None and passed.context["remaining"] == 1
    assert "You reached the end of the queue" in text(passed)
    # From the start again: only the skipped one is left; accepting it empties the queue.
    again = queue(staff_client)
    assert again.context["verdict"] == second
    done = staff_client.post(
        reverse("admin:runs_app_judgeverdict_accept", args=[second.pk]),
        {"next": again.context["next_url"]},
        follow=True,
    )
    assert done.context["remaining"] == 0 and "Nothing to review" in text(done)


def test_a_refused_pass_in_the_queue_stays_on_the_verdict(staff_client: Client) -> None:
    first, _second = make_verdict(), make_verdict()
    page = queue(staff_client)
    response = override(
        staff_client, first, "overall", "PASS", "", next=page.context["next_url"], back=page.context["next_url"]
    )
    assert response.context["verdict"] == first
    assert "Give a reason" in text(response)


def test_previous_goes_back_in_the_queue(staff_client: Client) -> None:
    first, second = make_verdict(), make_verdict()
    assert queue(staff_client, before=str(second.pk)).context["verdict"] == first
    assert queue(staff_client, at=str(second.pk)).context["verdict"] == second
    assert queue(staff_client, at="nonsense").context["verdict"] == first


# -- trace logs ------------------------------------------------------------------------------------------------


def test_trace_log_view_numbers_lines_and_search_highlights(staff_client: Client) -> None:
    log = make_trace_log(content="alpha\nbeta tool call\ngamma\nTOOL again")
    body = text(staff_client.get(change_url(log)))
    assert 'id="L4"' in body and "gamma" in body
    response = staff_client.get(change_url(log), {"q": "tool"})
    body = text(response)
    assert [line["number"] for line in response.context["lines"]] == [2, 4]
    assert "beta <mark>tool</mark> call" in body and "<mark>TOOL</mark> again" in body
    assert "gamma" not in body.split('class="hr-trace"')[1]
    assert "2 lines contain" in body


def test_trace_log_search_is_literal_and_escaped(staff_client: Client) -> None:
    log = make_trace_log(content="<script>alert(1)</script>\n(a+)+b")
    body = text(staff_client.get(change_url(log), {"q": "<script>"}))
    assert "<script>alert(1)" not in body
    assert "<mark>&lt;script&gt;</mark>alert(1)&lt;/script&gt;" in body
    response = staff_client.get(change_url(log), {"q": "(a+)+"})
    assert [line["number"] for line in response.context["lines"]] == [2]


def test_trace_log_download_is_a_text_attachment_named_after_the_file(staff_client: Client) -> None:
    log = make_trace_log(content="one\ntwo\n")
    response = staff_client.get(reverse("admin:runs_app_tracelog_download", args=[log.pk]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="10-00-00_r1.log"'
    assert response.content == b"one\ntwo\n"


# -- escaping ------------------------------------------------------------------------------------------------------


def test_user_content_is_escaped_on_verdict_pages(staff_client: Client, staff: User) -> None:
    evil = "<script>alert('x')</script>"
    verdict = make_verdict([("FAIL", evil)], summary=evil)
    VerdictCriterion.objects.filter(verdict=verdict).update(criterion=evil)
    make_trace_log(verdict.run, content=evil)
    review.override(verdict, staff, "criterion:1", "PASS", evil)
    review.undo(VerdictAudit.objects.get(), staff)
    for url in (change_url(verdict), reverse("admin:runs_app_judgeverdict_queue"), change_url(verdict.run)):
        body = text(staff_client.get(url))
        assert "<script>alert(" not in body, url
    body = text(staff_client.get(change_url(verdict)))
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in body
    log_body = text(staff_client.get(change_url(TraceLog.objects.get())))
    assert "<script>alert(" not in log_body and "&lt;script&gt;" in log_body


# -- API tokens ----------------------------------------------------------------------------------------------------


def test_token_creation_shows_the_token_once_and_stores_only_its_digest(staff_client: Client) -> None:
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


def test_revoke_action(staff_client: Client) -> None:
    live, _ = tokens.issue("a")
    other, token = tokens.issue("b")
    staff_client.post(changelist("runs_app_apitoken"), {"action": "revoke", "_selected_action": [live.pk]})
    live.refresh_from_db()
    assert live.revoked_at is not None
    assert tokens.authenticate(token) == other


# -- providers, waivers, cassettes ---------------------------------------------------------------------------------


def test_provider_coverage_columns_show_what_a_new_provider_still_misses(staff_client: Client) -> None:
    Provider.objects.create(name="acme", required_tiers=["unit"], cassette_floor=0)
    response = staff_client.get(changelist("runs_app_provider"))
    assert response.status_code == 200
    body = text(response)
    assert ">missing<" in body and ">not applicable<" in body
    for obligation in ("unit", "contract", "conformance", "e2e", "cassettes"):
        assert f'class="column-coverage_{obligation}"' in body
        assert f'href="/coverage/acme/{obligation}/"' in body


def test_provider_coverage_columns_are_computed_once_per_page(
    staff_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def coverage_report() -> dict[str, Any]:
        calls.append(1)
        cells = {
            "unit": {"state": "passing", "reason": "12 tests <b>passing</b>", "commit": "abc"},
            "e2e": {"state": "waived", "reason": "no key", "expires_on": "2099-01-01"},
            "cassettes": {"state": "missing", "reason": "3 of 6 scenarios"},
        }
        providers = [{"name": "acme", "cells": cells}, {"name": "zeta", "cells": {}}]
        return {"obligations": ["unit", "e2e", "cassettes"], "providers": providers}

    monkeypatch.setattr(coverage_admin, "coverage_report", coverage_report)
    Provider.objects.create(name="acme")
    Provider.objects.create(name="zeta")
    body = text(staff_client.get(changelist("runs_app_provider")))
    assert len(calls) == 1
    assert ">passing<" in body and ">waived<" in body and ">missing<" in body
    assert "12 tests &lt;b&gt;passing&lt;/b&gt; · latest: abc" in body
    assert "3 of 6 scenarios" in body


def test_the_provider_list_links_the_coverage_grid_mounted_in_the_admin(staff_client: Client) -> None:
    url = reverse("admin:runs_app_coverage")
    assert url == "/admin/runs_app/provider/coverage/"
    assert staff_client.get(url).status_code == 200
    assert f'href="{url}"' in text(staff_client.get(changelist("runs_app_provider")))
    assert Client().get(url).status_code == 302  # staff only


def test_provider_required_tiers_are_checkboxes(staff_client: Client) -> None:
    staff_client.post(
        reverse("admin:runs_app_provider_add"),
        {
            "name": "acme",
            "onboarding": "native",
            "required_tiers": ["unit", "e2e"],
            "cassette_floor": 3,
            "required_scenarios": '["simple_text"]',
        },
    )
    provider = Provider.objects.get(name="acme")
    assert provider.required_tiers == ["unit", "e2e"] and provider.required_scenarios == ["simple_text"]


def test_a_waiver_records_who_created_it(staff_client: Client, staff: User) -> None:
    provider = Provider.objects.create(name="acme")
    response = staff_client.post(
        reverse("admin:runs_app_waiver_add"),
        {"provider": provider.pk, "obligation": "e2e", "reason": "no API key yet", "expires_on": "2099-01-01"},
    )
    assert response.status_code == 302
    waiver = Waiver.objects.get()
    assert waiver.created_by == staff and waiver.expires_on == dt.date(2099, 1, 1)


def test_cassette_download_is_byte_identical_and_content_is_not_editable(staff_client: Client) -> None:
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


# -- scenarios -----------------------------------------------------------------------------------------------------


SCENARIO = {
    "id": "hello",
    "description": "says hello",
    "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hi"}}],
}


def test_scenario_admin_creates_from_data_with_the_id_inside(staff_client: Client) -> None:
    response = staff_client.post(reverse("admin:scenarios_app_scenario_add"), {"data": json.dumps(SCENARIO)})
    assert response.status_code == 302
    scenario = Scenario.objects.get()
    assert scenario.id == "hello" and scenario.description == "says hello"
    listing = text(staff_client.get(changelist("scenarios_app_scenario")))
    assert "says hello" in listing
    assert response.status_code == 302


def test_scenario_admin_refuses_invalid_data_naming_the_field(staff_client: Client) -> None:
    bad = {**SCENARIO, "turns": [{"turn": 1, "response": {"kind": "text"}}]}
    response = staff_client.post(reverse("admin:scenarios_app_scenario_add"), {"data": json.dumps(bad)})
    assert response.status_code == 200
    assert "turns.0.response.text.assistant_text: Field required" in text(response)
    assert not Scenario.objects.exists()


def test_scenario_admin_refuses_malformed_json(staff_client: Client) -> None:
    response = staff_client.post(reverse("admin:scenarios_app_scenario_add"), {"data": '{"id": "x",'})
    assert "Not valid JSON" in text(response) and "line 1" in text(response)
    assert not Scenario.objects.exists()


def test_scenario_admin_edit_validates_and_keeps_the_id(staff_client: Client) -> None:
    staff_client.post(reverse("admin:scenarios_app_scenario_add"), {"data": json.dumps(SCENARIO)})
    url = change_url(Scenario.objects.get())
    page = text(staff_client.get(url))
    assert "&quot;assistant_text&quot;: &quot;Hi&quot;" in page  # pretty JSON in the textarea
    renamed = staff_client.post(url, {"data": json.dumps({**SCENARIO, "id": "other"})})
    assert "this scenario is &#x27;hello&#x27;" in text(renamed)
    invalid = staff_client.post(url, {"data": json.dumps({**SCENARIO, "priority": "high"})})
    assert "priority: Input should be a valid integer" in text(invalid)
    changed = staff_client.post(url, {"data": json.dumps({**SCENARIO, "description": "updated"})})
    assert changed.status_code == 302
    assert Scenario.objects.get().description == "updated" and Scenario.objects.count() == 1


def test_scenario_admin_refuses_a_duplicate_id_on_add(staff_client: Client) -> None:
    staff_client.post(reverse("admin:scenarios_app_scenario_add"), {"data": json.dumps(SCENARIO)})
    response = staff_client.post(
        reverse("admin:scenarios_app_scenario_add"), {"data": json.dumps({**SCENARIO, "description": "x"})}
    )
    assert "already exists" in text(response)
    assert Scenario.objects.get().description == "says hello"


# -- access --------------------------------------------------------------------------------------------------------


def test_anonymous_users_are_sent_to_login() -> None:
    verdict = make_verdict()
    log = make_trace_log()
    anonymous = Client()
    urls = [
        changelist("runs_app_judgeverdict"),
        change_url(verdict),
        reverse("admin:runs_app_judgeverdict_queue"),
        change_url(log),
        reverse("admin:runs_app_tracelog_download", args=[log.pk]),
    ]
    for url in urls:
        response = anonymous.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), url
    response = anonymous.post(reverse("admin:runs_app_judgeverdict_override", args=[verdict.pk]), {"target": "overall"})
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert not VerdictAudit.objects.exists()


def test_non_staff_users_are_sent_to_login() -> None:
    user = make_user("plain")
    plain = Client()
    plain.force_login(user)
    response = plain.get(reverse("admin:runs_app_judgeverdict_queue"))
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_staff_without_change_permission_cannot_review() -> None:
    from django.contrib.auth.models import Permission

    viewer = make_user("viewer", staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_judgeverdict"))
    client = Client()
    client.force_login(viewer)
    verdict = make_verdict()
    assert client.get(change_url(verdict)).status_code == 200
    assert 'name="reason"' not in text(client.get(change_url(verdict)))
    response = client.post(
        reverse("admin:runs_app_judgeverdict_override", args=[verdict.pk]),
        {"target": "overall", "value": "PASS", "reason": "x"},
    )
    assert response.status_code == 403
    assert not VerdictAudit.objects.exists()
