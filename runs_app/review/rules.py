"""Reviewing judge verdicts: effective verdicts, overrides, acceptance and undo, every change audited.

The judge's own answer (``overall``, ``judge_verdict``) is never written here: a reviewer's word lives in the
``override_*`` fields, and the effective verdict is computed from both. Each change writes one ``VerdictAudit`` row
whose ``before``/``after`` hold ``{"verdict", "reason"}`` for the target plus the review stamp
(``reviewed_by``, ``reviewed_at``), so that an undo can put back exactly what the change replaced.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from runs_app.models import (
    JUDGE_ERROR,
    JUDGE_SKIPPED,
    JudgeVerdict,
    ReviewState,
    Verdict,
    VerdictAudit,
    VerdictCriterion,
)

PASS = Verdict.PASS
FAIL = Verdict.FAIL
ERROR = JUDGE_ERROR  # the judge itself failed: neither PASS nor FAIL
SKIPPED = JUDGE_SKIPPED  # the judge was not asked (no key, a placeholder key): neither PASS, FAIL nor an error
OVERALL = "overall"
REVIEW = "review"  # the audit target of mark_reviewed: the verdict accepted as it stands
CRITERION_PREFIX = "criterion:"

UNREVIEWED = ReviewState.UNREVIEWED
REVIEWED = ReviewState.REVIEWED
OVERRIDDEN = ReviewState.OVERRIDDEN
REVIEW_STATES = tuple(ReviewState)


class ReviewError(Exception):
    """A review action refused; the message is meant for the reviewer."""


# -- reading -----------------------------------------------------------------------------------------------------------


def effective_criterion(criterion: VerdictCriterion) -> str:
    """The reviewer's verdict on a criterion where given, else the judge's."""
    return criterion.override_verdict or criterion.judge_verdict


def judge_skipped(verdict: JudgeVerdict) -> bool:
    """True when the judge was not asked (``skipped_reason`` set, no judge error)."""
    return bool(verdict.skipped_reason) and not verdict.judge_error


def judge_failed(verdict: JudgeVerdict) -> bool:
    """True when the judge produced no verdict (an error, or no overall answer at all), skipped verdicts aside."""
    return bool(verdict.judge_error) or (not verdict.overall and not judge_skipped(verdict))


def effective_overall(verdict: JudgeVerdict) -> str:
    """PASS, FAIL, ERROR or SKIPPED: the reviewer's overall where given; else, once any criterion is overridden,
    PASS iff every effective criterion passes; else the judge's overall, SKIPPED when the judge was not asked, or
    ERROR when the judge failed (neither ever FAIL)."""
    if verdict.override_overall:
        return verdict.override_overall
    criteria = list(verdict.criteria.all())  # uses a prefetch when the caller made one
    if any(c.override_verdict for c in criteria):
        return PASS if all(effective_criterion(c) == PASS for c in criteria) else FAIL
    if judge_skipped(verdict):
        return SKIPPED
    if judge_failed(verdict):
        return ERROR
    return verdict.overall


def criteria_counts(verdict: JudgeVerdict) -> tuple[int, int]:
    """(effective PASS criteria, all criteria)."""
    criteria = list(verdict.criteria.all())
    return sum(effective_criterion(c) == PASS for c in criteria), len(criteria)


def is_overridden(verdict: JudgeVerdict) -> bool:
    return bool(verdict.override_overall) or any(c.override_verdict for c in verdict.criteria.all())


def review_state(verdict: JudgeVerdict) -> str:
    """overridden (a human verdict is in force), reviewed (accepted as judged) or unreviewed."""
    if is_overridden(verdict):
        return OVERRIDDEN
    return REVIEWED if verdict.reviewed_at else UNREVIEWED


def target_label(target: str) -> str:
    """How a target reads to a reviewer: "overall", "criterion 2", "review"."""
    if target.startswith(CRITERION_PREFIX):
        return f"criterion {target.removeprefix(CRITERION_PREFIX)}"
    return target


# -- changing ----------------------------------------------------------------------------------------------------------


def _stamp(verdict: JudgeVerdict) -> dict[str, Any]:
    return {
        "reviewed_by": verdict.reviewed_by_id,
        "reviewed_at": verdict.reviewed_at.isoformat() if verdict.reviewed_at else None,
    }


def _same_stamp(verdict: JudgeVerdict, state: dict[str, Any]) -> bool:
    at = parse_datetime(state["reviewed_at"]) if state.get("reviewed_at") else None
    # Compared as datetimes: a database may hand back the same instant in another offset notation.
    return verdict.reviewed_by_id == state.get("reviewed_by") and verdict.reviewed_at == at


def _set_stamp(verdict: JudgeVerdict, reviewed_by: int | None, reviewed_at: dt.datetime | None) -> None:
    verdict.reviewed_by_id = reviewed_by
    verdict.reviewed_at = reviewed_at


def _criterion(verdict: JudgeVerdict, target: str, *, lock: bool) -> VerdictCriterion:
    position = target.removeprefix(CRITERION_PREFIX)
    if not position.isdigit():
        raise ReviewError(f"Unknown target {target!r}: expected 'overall' or 'criterion:<position>'.")
    queryset = VerdictCriterion.objects.filter(verdict=verdict, position=int(position))
    row = (queryset.select_for_update() if lock else queryset).first()
    if row is None:
        raise ReviewError(f"This verdict has no criterion {position}.")
    return row


def _state(verdict: JudgeVerdict, target: str) -> dict[str, Any]:
    """The target's current override as {"verdict", "reason"} ("" when the judge's answer stands)."""
    if target == OVERALL:
        return {"verdict": verdict.override_overall, "reason": verdict.override_reason}
    if target == REVIEW:
        return {"verdict": effective_overall(verdict), "reason": ""}
    criterion = _criterion(verdict, target, lock=False)
    return {"verdict": criterion.override_verdict, "reason": criterion.override_reason}


def _apply(verdict: JudgeVerdict, target: str, value: str, reason: str) -> None:
    if target == OVERALL:
        verdict.override_overall, verdict.override_reason = value, reason
    else:
        criterion = _criterion(verdict, target, lock=True)
        criterion.override_verdict, criterion.override_reason = value, reason
        criterion.save(update_fields=["override_verdict", "override_reason"])


def _snapshot(verdict: JudgeVerdict, target: str) -> dict[str, Any]:
    return {**_state(verdict, target), **_stamp(verdict)}


def _locked(verdict: JudgeVerdict) -> JudgeVerdict:
    # One reviewer at a time per verdict: the before state an audit row records is the one it replaced.
    return JudgeVerdict.objects.select_for_update().get(pk=verdict.pk)


def _refresh(verdict: JudgeVerdict) -> None:
    # The caller's instance (and any prefetched criteria on it) now describe the old state.
    verdict.refresh_from_db()


def override(verdict: JudgeVerdict, user: Any, target: str, value: str, reason: str) -> VerdictAudit:
    """Set (PASS/FAIL) or clear ("") the reviewer's verdict on ``target`` ("overall" or "criterion:<position>").

    A reason is required when setting. The judge's answer is kept; the verdict is stamped as reviewed by ``user``;
    one audit row records the change. Raises ReviewError when refused.
    """
    value = (value or "").strip().upper()
    reason = (reason or "").strip()
    if target != OVERALL and not target.startswith(CRITERION_PREFIX):
        raise ReviewError(f"Unknown target {target!r}: expected 'overall' or 'criterion:<position>'.")
    if value not in (PASS, FAIL, ""):
        raise ReviewError("Choose PASS or FAIL, or nothing to clear the override.")
    label = target_label(target)
    if value and not reason:
        raise ReviewError(f"Give a reason to override {label}.")
    with transaction.atomic():
        locked = _locked(verdict)
        before = _snapshot(locked, target)
        if not value and not before["verdict"]:
            raise ReviewError(f"There is no override on {label} to clear.")
        if value and (value, reason) == (before["verdict"], before["reason"]):
            raise ReviewError(f"{label.capitalize()} is already overridden to {value} with this reason.")
        _apply(locked, target, value, reason if value else "")
        _set_stamp(locked, getattr(user, "pk", None), timezone.now())
        locked.save(update_fields=["override_overall", "override_reason", "reviewed_by", "reviewed_at"])
        row = VerdictAudit.objects.create(
            verdict=locked, user=user, target=target, before=before, after=_snapshot(locked, target), reason=reason
        )
    _refresh(verdict)
    return row


def mark_reviewed(verdict: JudgeVerdict, user: Any, reason: str = "") -> VerdictAudit:
    """Accept the verdict as it stands (the judge's, or the overrides in force): stamp it reviewed, audited."""
    with transaction.atomic():
        locked = _locked(verdict)
        before = _snapshot(locked, REVIEW)
        _set_stamp(locked, getattr(user, "pk", None), timezone.now())
        locked.save(update_fields=["reviewed_by", "reviewed_at"])
        row = VerdictAudit.objects.create(
            verdict=locked,
            user=user,
            target=REVIEW,
            before=before,
            after=_snapshot(locked, REVIEW),
            reason=(reason or "").strip() or "accepted as judged",
        )
    _refresh(verdict)
    return row


def is_current(audit: VerdictAudit, verdict: JudgeVerdict | None = None) -> bool:
    """Whether what ``audit`` set is still in force, i.e. whether it can be undone without losing a later change.

    ``verdict``, when given, must be freshly read (it saves a query per row when listing a trail); otherwise the
    verdict is read again, since the instance cached on ``audit`` may predate later changes.
    """
    if verdict is None:
        verdict = JudgeVerdict.objects.get(pk=audit.verdict_id)
    if audit.target == REVIEW:
        return _same_stamp(verdict, audit.after)
    try:
        state = _state(verdict, audit.target)
    except ReviewError:
        return False
    return (state["verdict"], state["reason"]) == (audit.after.get("verdict", ""), audit.after.get("reason", ""))


def undo(audit: VerdictAudit, user: Any) -> VerdictAudit:
    """Put back what ``audit`` replaced, provided it is still the current state; the undo is audited too
    (``undoes`` = that row), so it can be undone in turn.

    The review stamp goes back as well when nothing has stamped the verdict since that change (undoing an accept
    returns the verdict to the queue); otherwise the later stamp stands. Raises ReviewError when refused.
    """
    given = audit
    with transaction.atomic():
        locked = _locked(audit.verdict)
        audit = VerdictAudit.objects.get(pk=audit.pk)
        label = target_label(audit.target)
        if not is_current(audit, locked):
            raise ReviewError(
                f"Change #{audit.pk} to {label} can no longer be undone: {label} has changed since. "
                "Undo the later change first."
            )
        before = _snapshot(locked, audit.target)
        if audit.target != REVIEW:
            _apply(locked, audit.target, audit.before.get("verdict", ""), audit.before.get("reason", ""))
        if _same_stamp(locked, audit.after):
            at = audit.before.get("reviewed_at")
            by = audit.before.get("reviewed_by")
            if by is not None and not get_user_model().objects.filter(pk=by).exists():
                by = None  # that reviewer's account is gone (the foreign key is SET_NULL)
            _set_stamp(locked, by, parse_datetime(at) if at else None)
        locked.save(update_fields=["override_overall", "override_reason", "reviewed_by", "reviewed_at"])
        row = VerdictAudit.objects.create(
            verdict=locked,
            user=user,
            target=audit.target,
            before=before,
            after=_snapshot(locked, audit.target),
            reason=f"undo of change #{audit.pk}",
            undoes=audit,
        )
    _refresh(given.verdict)
    return row
