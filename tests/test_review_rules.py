"""Review logic: effective verdicts, overrides, acceptance, undo and the SQL filters that mirror them."""

from __future__ import annotations

import itertools

import pytest

from runs_app.models import JudgeVerdict, VerdictAudit, VerdictCriterion
from runs_app.review import rules as review
from tests.conftest import make_user, make_verdict

pytestmark = pytest.mark.django_db


def criterion(verdict: JudgeVerdict, position: int) -> VerdictCriterion:
    return verdict.criteria.get(position=position)


# -- effective verdicts --------------------------------------------------------------------------------------------


def test_it_takes_the_judges_overall_when_nothing_is_overridden() -> None:
    assert review.effective_overall(make_verdict(["PASS", "FAIL"])) == "FAIL"
    assert review.effective_overall(make_verdict(["PASS"])) == "PASS"


def test_it_calls_a_judge_error_error_never_fail() -> None:
    verdict = make_verdict([], overall="", judge_error="timeout talking to the judge")
    assert review.effective_overall(verdict) == "ERROR"
    assert review.effective_overall(make_verdict(["FAIL"], overall="FAIL", judge_error="unparseable")) == "ERROR"


def test_it_lets_an_overall_override_win() -> None:
    verdict = make_verdict(["FAIL"])
    review.override(verdict, make_user(), "overall", "PASS", "the judge misread the transcript")
    assert review.effective_overall(verdict) == "PASS"
    assert verdict.overall == "FAIL"  # the judge's answer is kept


def test_it_derives_the_overall_from_every_effective_criterion_after_a_criterion_override() -> None:
    verdict = make_verdict(["PASS", "FAIL"])
    user = make_user()
    review.override(verdict, user, "criterion:2", "PASS", "the list was there")
    assert review.effective_overall(verdict) == "PASS"
    assert review.criteria_counts(verdict) == (2, 2)
    review.override(verdict, user, "criterion:1", "FAIL", "wrong tone")
    assert review.effective_overall(verdict) == "FAIL"
    assert review.criteria_counts(verdict) == (1, 2)
    assert criterion(verdict, 2).judge_verdict == "FAIL"


def test_it_lets_a_criterion_override_outrank_a_judge_error() -> None:
    verdict = make_verdict(["FAIL"], overall="", judge_error="boom")
    review.override(verdict, make_user(), "criterion:1", "PASS", "checked by hand")
    assert review.effective_overall(verdict) == "PASS"


def test_it_prefers_the_reviewers_verdict_on_a_criterion_to_the_judges() -> None:
    verdict = make_verdict(["FAIL"])
    assert review.effective_criterion(criterion(verdict, 1)) == "FAIL"
    review.override(verdict, make_user(), "criterion:1", "PASS", "ok")
    assert review.effective_criterion(criterion(verdict, 1)) == "PASS"


# -- override ------------------------------------------------------------------------------------------------------


def test_it_writes_one_audit_row_per_override_with_before_and_after_and_stamps_the_review() -> None:
    verdict = make_verdict(["FAIL"])
    user = make_user()
    row = review.override(verdict, user, "criterion:1", "pass", "  fine  ")
    assert VerdictAudit.objects.count() == 1
    assert row.user == user and row.target == "criterion:1" and row.reason == "fine"
    assert (row.before["verdict"], row.before["reason"]) == ("", "")
    assert (row.after["verdict"], row.after["reason"]) == ("PASS", "fine")
    assert verdict.reviewed_by == user and verdict.reviewed_at is not None
    assert review.review_state(verdict) == review.OVERRIDDEN
    c = criterion(verdict, 1)
    assert (c.override_verdict, c.override_reason) == ("PASS", "fine")


def test_it_requires_a_reason_to_set_an_override() -> None:
    verdict = make_verdict(["FAIL"])
    with pytest.raises(review.ReviewError, match="reason"):
        review.override(verdict, make_user(), "overall", "PASS", "   ")
    assert not VerdictAudit.objects.exists()
    verdict.refresh_from_db()
    assert verdict.override_overall == "" and verdict.reviewed_at is None


@pytest.mark.parametrize(
    ("target", "value", "message"),
    [
        ("overall", "MAYBE", "PASS or FAIL"),
        ("criterion:9", "PASS", "no criterion 9"),
        ("criterion:x", "PASS", "Unknown target"),
        ("summary", "PASS", "Unknown target"),
        ("overall", "", "no override on overall to clear"),
    ],
)
def test_it_refuses_an_override_of_bad_input(target: str, value: str, message: str) -> None:
    verdict = make_verdict(["FAIL"])
    with pytest.raises(review.ReviewError, match=message):
        review.override(verdict, make_user(), target, value, "because")
    assert not VerdictAudit.objects.exists()


def test_it_refuses_an_override_that_changes_nothing() -> None:
    verdict = make_verdict(["FAIL"])
    user = make_user()
    review.override(verdict, user, "overall", "PASS", "same")
    with pytest.raises(review.ReviewError, match="already"):
        review.override(verdict, user, "overall", "PASS", "same")
    review.override(verdict, user, "overall", "PASS", "a better reason")
    assert VerdictAudit.objects.count() == 2


def test_it_returns_to_the_judge_when_an_override_is_cleared_and_audits_it() -> None:
    verdict = make_verdict(["FAIL"])
    user = make_user()
    review.override(verdict, user, "overall", "PASS", "looks right")
    row = review.override(verdict, user, "overall", "", "")
    assert review.effective_overall(verdict) == "FAIL"
    assert verdict.override_reason == ""
    assert row.before["verdict"] == "PASS" and row.after["verdict"] == ""


def test_it_refreshes_prefetched_criteria_on_the_callers_instance_after_an_override() -> None:
    make_verdict(["FAIL"])
    verdict = JudgeVerdict.objects.prefetch_related("criteria").get()
    assert review.effective_overall(verdict) == "FAIL"
    review.override(verdict, make_user(), "criterion:1", "PASS", "ok")
    assert review.effective_overall(verdict) == "PASS"


# -- mark reviewed -------------------------------------------------------------------------------------------------


def test_it_accepts_the_judge_when_marked_reviewed_and_audits_it() -> None:
    verdict = make_verdict(["FAIL"])
    user = make_user()
    assert review.review_state(verdict) == review.UNREVIEWED
    row = review.mark_reviewed(verdict, user)
    assert review.review_state(verdict) == review.REVIEWED
    assert review.effective_overall(verdict) == "FAIL"
    assert row.target == "review" and row.user == user
    assert row.before["reviewed_at"] is None and row.after["reviewed_at"] is not None
    assert row.before["verdict"] == row.after["verdict"] == "FAIL"


# -- undo ----------------------------------------------------------------------------------------------------------


def test_it_undoes_a_change_to_its_before_state_and_audits_it() -> None:
    verdict = make_verdict(["PASS", "FAIL"])
    user, other = make_user(), make_user("other")
    change = review.override(verdict, user, "criterion:2", "PASS", "fine")
    undo_row = review.undo(change, other)
    c = criterion(verdict, 2)
    assert (c.override_verdict, c.override_reason) == ("", "")
    assert undo_row.undoes == change and undo_row.user == other
    assert undo_row.before["verdict"] == "PASS" and undo_row.after["verdict"] == ""
    # Nothing stamped the verdict since: it is back in the unreviewed queue.
    verdict.refresh_from_db()
    assert verdict.reviewed_at is None and review.review_state(verdict) == review.UNREVIEWED
    assert review.effective_overall(verdict) == "FAIL"


def test_it_redoes_a_change_when_its_undo_is_undone() -> None:
    verdict = make_verdict(["FAIL"])
    user = make_user()
    change = review.override(verdict, user, "overall", "PASS", "fine")
    undo_row = review.undo(change, user)
    review.undo(undo_row, user)
    verdict.refresh_from_db()
    assert (verdict.override_overall, verdict.override_reason) == ("PASS", "fine")
    assert verdict.reviewed_by == user


def test_it_refuses_to_undo_a_change_that_is_no_longer_current() -> None:
    verdict = make_verdict(["FAIL"])
    user = make_user()
    first = review.override(verdict, user, "overall", "PASS", "fine")
    review.override(verdict, user, "overall", "FAIL", "no, really failing")
    with pytest.raises(review.ReviewError, match="no longer be undone"):
        review.undo(first, user)
    verdict.refresh_from_db()
    assert verdict.override_overall == "FAIL"
    assert VerdictAudit.objects.count() == 2
    assert not review.is_current(first)


def test_it_refuses_to_undo_a_change_twice() -> None:
    verdict = make_verdict(["FAIL"])
    user = make_user()
    change = review.override(verdict, user, "overall", "PASS", "fine")
    review.undo(change, user)
    with pytest.raises(review.ReviewError):
        review.undo(change, user)


def test_it_keeps_a_later_review_stamp_on_undo() -> None:
    verdict = make_verdict(["FAIL", "FAIL"])
    user, other = make_user(), make_user("other")
    first = review.override(verdict, user, "criterion:1", "PASS", "ok")
    review.override(verdict, other, "criterion:2", "PASS", "ok too")
    review.undo(first, user)
    verdict.refresh_from_db()
    assert verdict.reviewed_by == other  # the later change's stamp stands
    assert review.effective_overall(verdict) == "FAIL"
    assert review.review_state(verdict) == review.OVERRIDDEN


def test_it_returns_a_verdict_to_unreviewed_when_marking_it_reviewed_is_undone() -> None:
    verdict = make_verdict(["FAIL"])
    user = make_user()
    accepted = review.mark_reviewed(verdict, user)
    assert review.is_current(accepted)
    row = review.undo(accepted, user)
    assert row.target == "review" and row.undoes == accepted
    verdict.refresh_from_db()
    assert verdict.reviewed_at is None and verdict.reviewed_by is None
    assert list(JudgeVerdict.objects.review_queue()) == [verdict]


def test_it_refuses_to_undo_marking_reviewed_after_a_later_stamp() -> None:
    verdict = make_verdict(["FAIL"])
    user = make_user()
    accepted = review.mark_reviewed(verdict, user)
    review.override(verdict, user, "overall", "PASS", "changed my mind")
    with pytest.raises(review.ReviewError):
        review.undo(accepted, user)


def test_it_restores_no_reviewer_whose_account_is_gone_on_undo() -> None:
    verdict = make_verdict(["FAIL"])
    gone, user = make_user("gone"), make_user()
    review.mark_reviewed(verdict, gone)
    change = review.override(verdict, user, "overall", "PASS", "ok")
    gone_id = gone.pk
    gone.delete()
    change.refresh_from_db()
    assert change.before["reviewed_by"] == gone_id
    review.undo(change, user)
    verdict.refresh_from_db()
    assert verdict.reviewed_by is None and verdict.reviewed_at is not None


# -- the SQL filters agree with the Python rules ----------------------------------------------------------------


def test_it_filters_in_sql_as_the_effective_overall_and_review_state_rules_say() -> None:
    user = make_user()
    verdicts = []
    for judge, overall_override, criterion_override, reviewed, error in itertools.product(
        (["PASS", "PASS"], ["PASS", "FAIL"]), ("", "PASS", "FAIL"), ("", "PASS", "FAIL"), (False, True), (False, True)
    ):
        verdict = make_verdict(judge, overall="" if error else None, judge_error="x" if error else "")
        if reviewed:
            review.mark_reviewed(verdict, user)
        if overall_override:
            review.override(verdict, user, "overall", overall_override, "r")
        if criterion_override:
            review.override(verdict, user, "criterion:2", criterion_override, "r")
        verdicts.append(verdict)
    base = JudgeVerdict.objects.all()
    for value in ("PASS", "FAIL", "ERROR"):
        expected = {v.pk for v in verdicts if review.effective_overall(v) == value}
        assert set(base.effective(value).values_list("pk", flat=True)) == expected, value
    for state in review.REVIEW_STATES:
        expected = {v.pk for v in verdicts if review.review_state(v) == state}
        assert set(base.in_state(state).values_list("pk", flat=True)) == expected, state
    errored = {v.pk for v in verdicts if review.judge_failed(v)}
    assert set(base.judge_failed().values_list("pk", flat=True)) == errored
    assert set(base.judge_failed(errored=False).values_list("pk", flat=True)) == {v.pk for v in verdicts} - errored


def test_it_queues_unreviewed_effective_fails_oldest_first() -> None:
    user = make_user()
    old_fail = make_verdict(["FAIL"])
    passing = make_verdict(["PASS"])
    errored = make_verdict([], overall="", judge_error="x")
    new_fail = make_verdict(["PASS", "FAIL"])
    reviewed_fail = make_verdict(["FAIL"])
    review.mark_reviewed(reviewed_fail, user)
    derived_pass = make_verdict(["FAIL"])
    review.override(derived_pass, user, "criterion:1", "PASS", "ok")
    assert list(JudgeVerdict.objects.review_queue()) == [old_fail, new_fail]
    assert passing not in JudgeVerdict.objects.review_queue() and errored not in JudgeVerdict.objects.review_queue()
