"""Verdict review in the admin as a staff user: overrides and undo, the filters, the review queue, escaping, access."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from runs_app.models import JudgeVerdict, TraceLog, VerdictAudit, VerdictCriterion
from runs_app.review import rules as review
from tests.conftest import (
    change_url,
    changelist,
    listed_pks,
    make_trace_log,
    make_user,
    make_verdict,
    shows_badge,
    text,
)

pytestmark = pytest.mark.django_db


# -- helpers ---------------------------------------------------------------------------------------------------------


def override(client: Client, verdict: JudgeVerdict, target: str, value: str, reason: str, **extra: str) -> Any:
    url = reverse("admin:runs_app_judgeverdict_override", args=[verdict.pk])
    return client.post(url, {"target": target, "value": value, "reason": reason, **extra}, follow=True)


# -- overrides and undo ----------------------------------------------------------------------------------------------


def test_it_changes_the_effective_badge_when_a_criterion_is_overridden(staff_client: Client, staff: User) -> None:
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


def test_it_overrides_the_overall_with_a_reason_and_shows_the_audit_trail(staff_client: Client, staff: User) -> None:
    verdict = make_verdict()
    response = override(staff_client, verdict, "overall", "PASS", "judge was too strict")
    body = text(response)
    assert response.redirect_chain[-1][0] == change_url(verdict)
    assert "Overall overridden to PASS." in body
    assert 'id="audit-trail"' in body and "judge was too strict" in body and staff.username in body
    verdict.refresh_from_db()
    assert (verdict.overall, verdict.override_overall) == ("FAIL", "PASS")
    assert review.effective_overall(verdict) == "PASS"


def test_it_refuses_an_override_without_a_reason_with_a_message(staff_client: Client) -> None:
    verdict = make_verdict()
    body = text(override(staff_client, verdict, "overall", "PASS", ""))
    assert "Give a reason to override overall." in body
    assert not VerdictAudit.objects.exists()


def test_it_ignores_override_fields_posted_through_the_verdict_form(staff_client: Client) -> None:
    verdict = make_verdict()
    staff_client.post(change_url(verdict), {"override_overall": "PASS", "override_reason": "sneaky", "overall": "PASS"})
    verdict.refresh_from_db()
    assert (verdict.overall, verdict.override_overall, verdict.override_reason) == ("FAIL", "", "")
    assert not VerdictAudit.objects.exists()


def test_it_undoes_an_override_and_audits_the_undo(staff_client: Client) -> None:
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


def test_it_refuses_to_undo_a_change_that_is_no_longer_current(staff_client: Client) -> None:
    verdict = make_verdict()
    override(staff_client, verdict, "criterion:2", "PASS", "first look")
    first = VerdictAudit.objects.get()
    override(staff_client, verdict, "criterion:2", "FAIL", "second look")
    response = staff_client.post(reverse("admin:runs_app_judgeverdict_undo", args=[verdict.pk, first.pk]), follow=True)
    assert "can no longer be undone" in text(response)
    assert verdict.criteria.get(position=2).override_verdict == "FAIL"
    assert VerdictAudit.objects.count() == 2


def test_it_answers_404_to_undoing_another_verdicts_change(staff_client: Client) -> None:
    verdict, other = make_verdict(), make_verdict()
    override(staff_client, verdict, "overall", "PASS", "fine")
    row = VerdictAudit.objects.get()
    assert staff_client.post(reverse("admin:runs_app_judgeverdict_undo", args=[other.pk, row.pk])).status_code == 404


def test_it_audits_marking_a_verdict_reviewed(staff_client: Client) -> None:
    verdict = make_verdict()
    response = staff_client.post(reverse("admin:runs_app_judgeverdict_accept", args=[verdict.pk]), follow=True)
    assert f"Verdict #{verdict.pk} marked reviewed (FAIL)." in text(response)
    verdict.refresh_from_db()
    assert verdict.reviewed_at is not None and VerdictAudit.objects.get().target == "review"


def test_it_takes_review_actions_only_as_posts_with_a_csrf_token(staff: User) -> None:
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


def test_it_never_follows_next_off_the_site(staff_client: Client) -> None:
    verdict = make_verdict()
    response = override(staff_client, verdict, "overall", "PASS", "ok", next="https://evil.example/")
    assert response.redirect_chain[-1][0] == change_url(verdict)


# -- filters ---------------------------------------------------------------------------------------------------------


def test_it_filters_verdicts_by_review_state_effective_verdict_and_judge_error(
    staff_client: Client, staff: User
) -> None:
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


def test_it_gives_a_judge_error_its_own_badge(staff_client: Client) -> None:
    make_verdict([], overall="", judge_error="judge timed out")
    body = text(staff_client.get(changelist("runs_app_judgeverdict")))
    assert "JUDGE ERROR" in body and not shows_badge(body, "FAIL")


# -- the review queue ------------------------------------------------------------------------------------------------


def queue(client: Client, **params: str) -> Any:
    return client.get(reverse("admin:runs_app_judgeverdict_queue"), params)


def test_it_walks_the_queue_of_fail_verdicts_oldest_first_moving_on_after_each_action(staff_client: Client) -> None:
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


def test_it_stays_on_the_verdict_when_a_pass_in_the_queue_is_refused(staff_client: Client) -> None:
    first, _second = make_verdict(), make_verdict()
    page = queue(staff_client)
    response = override(
        staff_client, first, "overall", "PASS", "", next=page.context["next_url"], back=page.context["next_url"]
    )
    assert response.context["verdict"] == first
    assert "Give a reason" in text(response)


def test_it_goes_back_in_the_queue(staff_client: Client) -> None:
    first, second = make_verdict(), make_verdict()
    assert queue(staff_client, before=str(second.pk)).context["verdict"] == first
    assert queue(staff_client, at=str(second.pk)).context["verdict"] == second
    assert queue(staff_client, at="nonsense").context["verdict"] == first


# -- escaping --------------------------------------------------------------------------------------------------------


def test_it_escapes_user_content_on_the_verdict_pages(staff_client: Client, staff: User) -> None:
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


# -- access ----------------------------------------------------------------------------------------------------------


def test_it_sends_anonymous_users_to_log_in() -> None:
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


def test_it_sends_users_who_are_not_staff_to_log_in() -> None:
    user = make_user("plain")
    plain = Client()
    plain.force_login(user)
    response = plain.get(reverse("admin:runs_app_judgeverdict_queue"))
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_it_lets_no_staff_without_the_change_permission_review() -> None:
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
