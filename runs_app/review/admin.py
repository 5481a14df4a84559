"""The judge verdict admin: effective verdicts as badges, filters by review state, effective verdict and judge
error, the review panel (overrides with a reason, accept, undo) and the review queue that walks unreviewed FAIL
verdicts one at a time.

Reviewer changes go through :mod:`runs_app.review.rules` only: the verdict form itself is read-only.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString

from runs_app.adminkit import (
    AMBER,
    BLUE,
    GREEN,
    GREY,
    NONE,
    PURPLE,
    RED,
    HarnessAdmin,
    ReadOnlyInline,
    admin_link,
    badge,
    json_block,
    post_only,
    safe_next,
)
from runs_app.models import JudgeVerdict, VerdictAudit
from runs_app.pricing.costs import verdict_cost_text
from runs_app.review import rules as review

VERDICT_COLOURS = {review.PASS: GREEN, review.FAIL: RED, review.ERROR: AMBER, review.SKIPPED: GREY}
VERDICT_LABELS = {review.ERROR: "JUDGE ERROR", review.SKIPPED: "skipped"}
STATE_COLOURS = {review.UNREVIEWED: GREY, review.REVIEWED: BLUE, review.OVERRIDDEN: PURPLE}
QUEUE_EXCERPT_LINES = 30


def verdict_badge(value: str, title: str = "") -> SafeString:
    """PASS / FAIL / JUDGE ERROR badge; a blank value (no override) renders as a dash."""
    if not value:
        return format_html("{}", NONE)
    return badge(VERDICT_LABELS.get(value, value), VERDICT_COLOURS.get(value, GREY), title)


def token_counts(verdict: JudgeVerdict) -> str:
    """ "1200 in / 85 out", or a dash when the judge's answer reported no usage."""
    if verdict.input_tokens is None and verdict.output_tokens is None:
        return NONE
    return "{} in / {} out".format(*("?" if n is None else n for n in (verdict.input_tokens, verdict.output_tokens)))


def state_badge(state: str) -> SafeString:
    return badge(state, STATE_COLOURS.get(state, GREY))


class VerdictInline(ReadOnlyInline):
    model = JudgeVerdict
    fields = ("verdict_link", "effective", "criteria_passed", "judge_model", "state", "created_at")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[JudgeVerdict]:
        return super().get_queryset(request).prefetch_related("criteria")

    @admin.display(description="verdict")
    def verdict_link(self, obj: JudgeVerdict) -> SafeString:
        return admin_link(obj, f"verdict {obj.pk}")

    @admin.display(description="effective")
    def effective(self, obj: JudgeVerdict) -> SafeString:
        return verdict_badge(review.effective_overall(obj), obj.judge_error)

    @admin.display(description="criteria passed")
    def criteria_passed(self, obj: JudgeVerdict) -> str:
        return "{}/{}".format(*review.criteria_counts(obj))

    @admin.display(description="review")
    def state(self, obj: JudgeVerdict) -> SafeString:
        return state_badge(review.review_state(obj))


class ReviewStateFilter(admin.SimpleListFilter):
    title = "review state"
    parameter_name = "review"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(state, state) for state in review.REVIEW_STATES]

    def queryset(self, request: HttpRequest, queryset: QuerySet[JudgeVerdict]) -> QuerySet[JudgeVerdict]:
        if self.value() in review.REVIEW_STATES:
            return queryset.in_state(self.value())
        return queryset


class EffectiveFilter(admin.SimpleListFilter):
    title = "effective verdict"
    parameter_name = "effective"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        choices = [(review.PASS, "PASS"), (review.FAIL, "FAIL"), (review.ERROR, "judge error (no verdict)")]
        return [*choices, (review.SKIPPED, "skipped (judge not asked)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[JudgeVerdict]) -> QuerySet[JudgeVerdict]:
        if self.value() in (review.PASS, review.FAIL, review.ERROR, review.SKIPPED):
            return queryset.effective(self.value())
        return queryset


class JudgeErrorFilter(admin.SimpleListFilter):
    title = "judge error"
    parameter_name = "judge_error"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "judge failed"), ("no", "judge answered")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[JudgeVerdict]) -> QuerySet[JudgeVerdict]:
        if self.value() in ("yes", "no"):
            return queryset.judge_failed(errored=self.value() == "yes")
        return queryset


class OverrideForm(forms.Form):
    """What a reviewer POSTs to override (or clear) one target; review.override has the last word."""

    target = forms.CharField(max_length=40)
    value = forms.ChoiceField(choices=[(review.PASS, "PASS"), (review.FAIL, "FAIL"), ("", "clear")], required=False)
    reason = forms.CharField(required=False, max_length=5000)


JUDGE_FIELDS = ("run_link", "overall", "summary", "judge_model", "tokens", "judge_cost", "prompt_hash", "judge_error")
JUDGE_FIELDS += ("skipped_reason", "raw", "prompt_sent", "created_at")
REVIEW_FIELDS = ("override_overall", "override_reason", "reviewed_by", "reviewed_at")


@admin.register(JudgeVerdict)
class JudgeVerdictAdmin(HarnessAdmin):
    list_display = (
        "verdict_id",
        "effective_badge",
        "criteria_passed",
        "judge_model",
        "state_badge",
        "run_link",
        "created_at",
    )
    list_filter = (ReviewStateFilter, EffectiveFilter, JudgeErrorFilter, "judge_model")
    search_fields = ("run__id", "run__scenario_id", "run__name", "judge_model", "summary")
    list_select_related = ("run",)
    fieldsets = ((None, {"fields": JUDGE_FIELDS}), ("Review", {"fields": REVIEW_FIELDS}))
    # Read-only on purpose: overrides go through the review actions, which keep the judge's answer and audit.
    readonly_fields = JUDGE_FIELDS + REVIEW_FIELDS

    def get_queryset(self, request: HttpRequest) -> QuerySet[JudgeVerdict]:
        return super().get_queryset(request).prefetch_related("criteria")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # verdicts come from the judge, through the API

    # -- columns

    @admin.display(description="verdict", ordering="id")
    def verdict_id(self, obj: JudgeVerdict) -> str:
        return f"#{obj.pk}"

    @admin.display(description="effective")
    def effective_badge(self, obj: JudgeVerdict) -> SafeString:
        return verdict_badge(review.effective_overall(obj), obj.judge_error)

    @admin.display(description="criteria passed")
    def criteria_passed(self, obj: JudgeVerdict) -> str:
        return "{}/{}".format(*review.criteria_counts(obj))

    @admin.display(description="review")
    def state_badge(self, obj: JudgeVerdict) -> SafeString:
        return state_badge(review.review_state(obj))

    @admin.display(description="run", ordering="run__started_at")
    def run_link(self, obj: JudgeVerdict) -> SafeString:
        return admin_link(obj.run, f"{obj.run.scenario_id or obj.run.mode} {str(obj.run_id)[:8]}")

    @admin.display(description="tokens (input / output)")
    def tokens(self, obj: JudgeVerdict) -> str:
        return token_counts(obj)

    @admin.display(description="judge's cost")
    def judge_cost(self, obj: JudgeVerdict) -> str:
        return verdict_cost_text(obj)  # runs_app/pricing: the price table's price of judge_model

    @admin.display(description="prompt sent")
    def prompt_sent(self, obj: JudgeVerdict) -> SafeString:
        return format_html('<pre class="hr-block">{}</pre>', obj.prompt) if obj.prompt else format_html("{}", NONE)

    @admin.display(description="raw judge output")
    def raw(self, obj: JudgeVerdict) -> SafeString:
        if not obj.raw_output:
            return format_html("{}", NONE)
        return json_block(obj.raw_output)

    # -- pages

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        info = "runs_app_judgeverdict"
        return [
            path("queue/", wrap(self.queue_view), name=f"{info}_queue"),
            path("<path:object_id>/review/override/", wrap(self.override_view), name=f"{info}_override"),
            path("<path:object_id>/review/accept/", wrap(self.accept_view), name=f"{info}_accept"),
            path("<path:object_id>/review/undo/<int:audit_id>/", wrap(self.undo_view), name=f"{info}_undo"),
            *super().get_urls(),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        extra_context = {**(extra_context or {}), "queue_count": JudgeVerdict.objects.review_queue().count()}
        return super().changelist_view(request, extra_context)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        verdict = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if verdict is not None:
            context.update(self._review_context(request, verdict))
            # Nothing on the form is editable; the review panel has its own buttons.
            context.update(show_save=False, show_save_and_continue=False, show_save_and_add_another=False)
        return super().change_view(request, object_id, form_url, context)

    def _review_context(self, request: HttpRequest, verdict: JudgeVerdict) -> dict[str, Any]:
        criteria = list(verdict.criteria.all())
        audit = list(verdict.audit.select_related("user", "undoes"))
        effective = review.effective_overall(verdict)
        return {
            "review": {
                "can_review": self.has_change_permission(request, verdict),
                "effective": verdict_badge(effective, verdict.judge_error),
                "state": state_badge(review.review_state(verdict)),
                "passed_total": "{}/{}".format(*review.criteria_counts(verdict)),
                "judge_overall": verdict_badge(
                    review.SKIPPED
                    if review.judge_skipped(verdict)
                    else (review.ERROR if review.judge_failed(verdict) else verdict.overall)
                ),
                "judge_error": verdict.judge_error or verdict.skipped_reason,
                "override_overall": verdict_badge(verdict.override_overall),
                "override_reason": verdict.override_reason,
                "overall_overridden": bool(verdict.override_overall),
                "suggest_overall": review.PASS if effective != review.PASS else review.FAIL,
                "summary": verdict.summary,
                "criteria": [
                    {
                        "target": f"{review.CRITERION_PREFIX}{c.position}",
                        "position": c.position,
                        "criterion": c.criterion,
                        "judge": verdict_badge(c.judge_verdict),
                        "reason": c.reason,
                        "override": verdict_badge(c.override_verdict),
                        "override_reason": c.override_reason,
                        "effective": verdict_badge(review.effective_criterion(c)),
                        "overridden": bool(c.override_verdict),
                        "suggest": review.PASS if review.effective_criterion(c) != review.PASS else review.FAIL,
                    }
                    for c in criteria
                ],
                "audit": [self._audit_row(row, verdict) for row in audit],
                "override_url": reverse("admin:runs_app_judgeverdict_override", args=[verdict.pk]),
                "accept_url": reverse("admin:runs_app_judgeverdict_accept", args=[verdict.pk]),
                "queue_url": reverse("admin:runs_app_judgeverdict_queue"),
                "here": request.get_full_path(),
            }
        }

    @staticmethod
    def _audit_side(row: VerdictAudit, state: dict[str, Any]) -> dict[str, Any]:
        if row.target == review.REVIEW:
            label = "reviewed" if state.get("reviewed_at") else "unreviewed"
            return {"badge": state_badge(label), "reason": ""}
        value = state.get("verdict", "")
        return {
            "badge": verdict_badge(value) if value else format_html("{}", "judge's verdict"),
            "reason": state.get("reason", ""),
        }

    def _audit_row(self, row: VerdictAudit, verdict: JudgeVerdict) -> dict[str, Any]:
        return {
            "id": row.pk,
            "at": row.at,
            "user": row.user.get_username() if row.user else NONE,
            "target": review.target_label(row.target),
            "before": self._audit_side(row, row.before),
            "after": self._audit_side(row, row.after),
            "reason": row.reason,
            "undoes": row.undoes_id,
            "current": review.is_current(row, verdict),
            "undo_url": reverse("admin:runs_app_judgeverdict_undo", args=[verdict.pk, row.pk]),
        }

    def _verdict_for_review(self, request: HttpRequest, object_id: str) -> JudgeVerdict:
        verdict = self.get_object(request, unquote(object_id))
        if verdict is None:
            raise Http404("No such verdict.")
        if not self.has_change_permission(request, verdict):
            raise PermissionDenied
        return verdict

    def _back(self, request: HttpRequest, verdict: JudgeVerdict) -> HttpResponseRedirect:
        fallback = reverse("admin:runs_app_judgeverdict_change", args=[verdict.pk])
        return HttpResponseRedirect(safe_next(request, fallback))

    @staticmethod
    def _refused(request: HttpRequest) -> HttpResponseRedirect | None:
        # After a refusal the reviewer goes back to where they were, not on to the next item.
        back = request.POST.get("back", "")
        if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            return HttpResponseRedirect(back)
        return None

    @staticmethod
    def _describe(target: str, value: str) -> str:
        label = review.target_label(target).capitalize()
        return f"{label} overridden to {value}." if value else f"{label}: override cleared, the judge's verdict stands."

    @post_only
    def override_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        verdict = self._verdict_for_review(request, object_id)
        form = OverrideForm(request.POST)
        if not form.is_valid():
            messages.error(request, "Incomplete override: " + "; ".join(f"{k}: {v[0]}" for k, v in form.errors.items()))
            return self._refused(request) or self._back(request, verdict)
        data = form.cleaned_data
        try:
            review.override(verdict, request.user, data["target"], data["value"], data["reason"])
        except review.ReviewError as exc:
            messages.error(request, str(exc))
            return self._refused(request) or self._back(request, verdict)
        messages.success(request, self._describe(data["target"], data["value"]))
        return self._back(request, verdict)

    @post_only
    def accept_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        verdict = self._verdict_for_review(request, object_id)
        review.mark_reviewed(verdict, request.user)
        messages.success(request, f"Verdict #{verdict.pk} marked reviewed ({review.effective_overall(verdict)}).")
        return self._back(request, verdict)

    @post_only
    def undo_view(self, request: HttpRequest, object_id: str, audit_id: int) -> HttpResponse:
        verdict = self._verdict_for_review(request, object_id)
        row = VerdictAudit.objects.filter(pk=audit_id, verdict=verdict).first()
        if row is None:
            raise Http404("No such change on this verdict.")
        try:
            review.undo(row, request.user)
        except review.ReviewError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Change #{row.pk} to {review.target_label(row.target)} undone.")
        return self._back(request, verdict)

    def queue_view(self, request: HttpRequest) -> HttpResponse:
        """Unreviewed effective-FAIL verdicts one at a time, oldest first; ``at``/``after``/``before`` move in it."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        queue = JudgeVerdict.objects.review_queue()
        remaining = queue.count()
        current, reached_end = self._queue_position(request, queue)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Review queue",
            "remaining": remaining,
            "reached_end": reached_end,
            "queue_url": reverse("admin:runs_app_judgeverdict_queue"),
            "can_review": self.has_change_permission(request),
        }
        if current is not None:
            context.update(self._queue_item(request, queue, current))
        return TemplateResponse(request, "admin/runs_app/judgeverdict/review_queue.html", context)

    @staticmethod
    def _queue_position(request: HttpRequest, queue: QuerySet[JudgeVerdict]) -> tuple[JudgeVerdict | None, bool]:
        """The verdict to show and whether the walk ran past the last one."""

        def anchor(name: str) -> JudgeVerdict | None:
            value = request.GET.get(name, "")
            return JudgeVerdict.objects.filter(pk=int(value)).first() if value.isdigit() else None

        # A verdict stays a valid position after it leaves the queue: "at" then lands on the one after it.
        for name, inclusive in (("at", True), ("after", False)):
            a = anchor(name)
            if a is not None:
                current = queue.after(a, inclusive).first()
                return current, current is None
        a = anchor("before")
        if a is not None:
            return queue.before(a).reverse().first(), False
        return queue.first(), False

    def _queue_item(self, request: HttpRequest, queue: QuerySet[JudgeVerdict], verdict: JudgeVerdict) -> dict[str, Any]:
        verdict = JudgeVerdict.objects.select_related("run").prefetch_related("criteria").get(pk=verdict.pk)
        earlier = queue.before(verdict)
        later = queue.after(verdict)
        queue_url = reverse("admin:runs_app_judgeverdict_queue")
        logs = list(verdict.run.trace_logs.all()[:5])
        return {
            "verdict": verdict,
            "run": verdict.run,
            "position": earlier.count() + 1,
            "effective": verdict_badge(review.effective_overall(verdict)),
            "passed_total": "{}/{}".format(*review.criteria_counts(verdict)),
            "tokens": token_counts(verdict),
            "criteria": [
                {
                    "position": c.position,
                    "criterion": c.criterion,
                    "judge": verdict_badge(c.judge_verdict),
                    "effective": verdict_badge(review.effective_criterion(c)),
                    "reason": c.reason,
                    "override_reason": c.override_reason,
                }
                for c in verdict.criteria.all()
            ],
            "trace_logs": [
                {
                    "log": log,
                    "url": reverse("admin:runs_app_tracelog_change", args=[log.pk]),
                    "excerpt": "\n".join(log.content.splitlines()[-QUEUE_EXCERPT_LINES:]),
                    "lines": len(log.content.splitlines()),
                }
                for log in logs
            ],
            "more_trace_logs": verdict.run.trace_logs.count() - len(logs),
            "verdict_url": reverse("admin:runs_app_judgeverdict_change", args=[verdict.pk]),
            "run_url": reverse("admin:runs_app_run_change", args=[verdict.run_id]),
            "accept_url": reverse("admin:runs_app_judgeverdict_accept", args=[verdict.pk]),
            "override_url": reverse("admin:runs_app_judgeverdict_override", args=[verdict.pk]),
            # After an action the verdict leaves the queue, so "at" it means the next one.
            "next_url": f"{queue_url}?at={verdict.pk}",
            "skip_url": f"{queue_url}?after={verdict.pk}" if later.exists() else "",
            "prev_url": f"{queue_url}?before={verdict.pk}" if earlier.exists() else "",
        }
