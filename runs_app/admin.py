"""Admin for runs, judge verdicts (overrides, undo and a review queue), trace logs, providers with their coverage,
waivers, cassettes and API tokens.

Reviewer changes to verdicts go through :mod:`runs_app.review` only: the verdict form itself is read-only.
Everything a user or a build supplied is rendered through ``format_html`` or autoescaped templates.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import re
from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.db.models.functions import Length
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.utils.http import content_disposition_header, url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from runs_app import review, tokens
from runs_app.models import (
    TIERS,
    ApiToken,
    Cassette,
    JudgeVerdict,
    Provider,
    Run,
    RunEvent,
    TierRule,
    TraceLog,
    VerdictAudit,
    Waiver,
)

# -- small renderers ---------------------------------------------------------------------------------------------------

GREEN, RED, AMBER, BLUE, GREY, PURPLE = "#1e7e34", "#b02a37", "#9a6700", "#2f6fb0", "#6c757d", "#6f42c1"
VERDICT_COLOURS = {review.PASS: GREEN, review.FAIL: RED, review.ERROR: AMBER}
VERDICT_LABELS = {review.ERROR: "JUDGE ERROR"}
STATE_COLOURS = {review.UNREVIEWED: GREY, review.REVIEWED: BLUE, review.OVERRIDDEN: PURPLE}
RUN_STATUS_COLOURS = {"running": BLUE, "passed": GREEN, "failed": RED, "errored": AMBER}
COVERAGE_COLOURS = {"passing": GREEN, "failing": RED, "missing": RED, "waived": BLUE, "not_applicable": GREY}
OBLIGATIONS = (*TIERS, "cassettes")
TRACE_LOG_MAX_LINES = 5000  # beyond this the page gets slow; the download has the whole file
QUEUE_EXCERPT_LINES = 30
NONE = "—"


def badge(label: str, colour: str, title: str = "") -> SafeString:
    """A small coloured label; the colour comes from our tables, label and title are escaped."""
    return format_html(
        '<span class="hr-badge" title="{}" style="display:inline-block;padding:1px 7px;border-radius:9px;'
        'color:#fff;background:{};font-size:11px;font-weight:bold;white-space:nowrap">{}</span>',
        title,
        colour,
        label,
    )


def verdict_badge(value: str, title: str = "") -> SafeString:
    """PASS / FAIL / JUDGE ERROR badge; a blank value (no override) renders as a dash."""
    if not value:
        return format_html("{}", NONE)
    return badge(VERDICT_LABELS.get(value, value), VERDICT_COLOURS.get(value, GREY), title)


def state_badge(state: str) -> SafeString:
    return badge(state, STATE_COLOURS.get(state, GREY))


def admin_link(obj: Any, label: Any) -> SafeString:
    """A link to ``obj``'s admin change page."""
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, label)


def human_size(size: int) -> str:
    for unit in ("B", "KB", "MB"):
        if size < 1024 or unit == "MB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def human_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def post_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """require_POST for an admin method (admin_view adds the login, staff and CSRF checks)."""
    return method_decorator(require_POST)(view)


def safe_next(request: HttpRequest, fallback: str) -> str:
    """The POSTed ``next`` when it points back into this site, else ``fallback`` (never an open redirect)."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback


# -- runs --------------------------------------------------------------------------------------------------------------


class ReadOnlyInline(admin.TabularInline):
    """Recorded or uploaded rows: shown, never edited from the run page."""

    extra = 0
    max_num = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RunEventInline(ReadOnlyInline):
    model = RunEvent
    fields = ("seq", "timestamp", "kind", "turn", "data_json")
    readonly_fields = fields
    classes = ("collapse",)

    @admin.display(description="data")
    def data_json(self, obj: RunEvent) -> SafeString:
        compact = json.dumps(obj.data, ensure_ascii=False, default=str)
        summary = compact if len(compact) <= 100 else compact[:100] + "…"
        return format_html(
            '<details><summary style="font-family:monospace">{}</summary>'
            '<pre style="white-space:pre-wrap;max-height:30em;overflow:auto">{}</pre></details>',
            summary,
            pretty_json(obj.data),
        )


class TraceLogInline(ReadOnlyInline):
    model = TraceLog
    fields = ("turn_number", "log_link", "log_size", "created_at")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[TraceLog]:
        # The list needs only the sizes, not the contents.
        return super().get_queryset(request).annotate(content_length=Length("content")).defer("content")

    @admin.display(description="trace log")
    def log_link(self, obj: TraceLog) -> SafeString:
        return admin_link(obj, obj.file_path)

    @admin.display(description="size")
    def log_size(self, obj: TraceLog) -> str:
        return f"{obj.content_length:,} characters"


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


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = (
        "short_id",
        "scenario_id",
        "status_badge",
        "source",
        "protocol",
        "build",
        "started_at",
        "duration",
        "turns",
    )
    list_filter = ("status", "source", "scenario_id", "protocol")
    search_fields = ("id", "scenario_id", "name", "commit", "branch")
    date_hierarchy = "started_at"
    inlines = (VerdictInline, TraceLogInline, RunEventInline)
    fieldsets = (
        (None, {"fields": ("id", "scenario_id", "mode", "protocol", "source", "status", "status_reason")}),
        ("Build", {"fields": ("name", "commit", "branch", "build_link", "external_id")}),
        ("Timing", {"fields": ("started_at", "finished_at", "duration", "turns_served", "conversation_key")}),
    )
    readonly_fields = (
        "id",
        "scenario_id",
        "mode",
        "protocol",
        "source",
        "status",
        "status_reason",
        "name",
        "commit",
        "branch",
        "build_link",
        "external_id",
        "started_at",
        "finished_at",
        "duration",
        "turns_served",
        "conversation_key",
    )

    # Runs are recorded by the endpoints and uploaded by CI: the admin reads them (and may delete them).
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="run", ordering="id")
    def short_id(self, obj: Run) -> str:
        return str(obj.id)[:8]

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: Run) -> SafeString:
        return badge(obj.status, RUN_STATUS_COLOURS.get(obj.status, GREY), obj.status_reason)

    @admin.display(description="name / commit / branch")
    def build(self, obj: Run) -> SafeString:
        if not (obj.name or obj.commit or obj.branch):
            return format_html("{}", NONE)
        return format_html(
            '{} <code>{}</code> <span style="color:#666">{}</span>', obj.name, obj.commit[:10], obj.branch
        )

    @admin.display(description="build URL")
    def build_link(self, obj: Run) -> SafeString:
        if not obj.build_url:
            return format_html("{}", NONE)
        return format_html('<a href="{}" rel="noopener noreferrer">{}</a>', obj.build_url, obj.build_url)

    @admin.display(description="duration")
    def duration(self, obj: Run) -> str:
        if not obj.finished_at:
            return NONE
        return human_duration((obj.finished_at - obj.started_at).total_seconds())

    @admin.display(description="turns")
    def turns(self, obj: Run) -> int:
        return len(obj.turns_served or [])


# -- judge verdicts ------------------------------------------------------------------------------------------------


class ReviewStateFilter(admin.SimpleListFilter):
    title = "review state"
    parameter_name = "review"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(state, state) for state in review.REVIEW_STATES]

    def queryset(self, request: HttpRequest, queryset: QuerySet[JudgeVerdict]) -> QuerySet[JudgeVerdict]:
        if self.value() in review.REVIEW_STATES:
            return review.filter_state(queryset, self.value())
        return queryset


class EffectiveFilter(admin.SimpleListFilter):
    title = "effective verdict"
    parameter_name = "effective"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(review.PASS, "PASS"), (review.FAIL, "FAIL"), (review.ERROR, "judge error (no verdict)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[JudgeVerdict]) -> QuerySet[JudgeVerdict]:
        if self.value() in (review.PASS, review.FAIL, review.ERROR):
            return review.filter_effective(queryset, self.value())
        return queryset


class JudgeErrorFilter(admin.SimpleListFilter):
    title = "judge error"
    parameter_name = "judge_error"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "judge failed"), ("no", "judge answered")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[JudgeVerdict]) -> QuerySet[JudgeVerdict]:
        if self.value() in ("yes", "no"):
            return review.filter_judge_error(queryset, errored=self.value() == "yes")
        return queryset


def queue_later(anchor: JudgeVerdict, inclusive: bool = False) -> Q:
    """Verdicts after ``anchor`` in queue order (created_at, id)."""
    same = (
        Q(created_at=anchor.created_at, id__gte=anchor.pk)
        if inclusive
        else Q(created_at=anchor.created_at, id__gt=anchor.pk)
    )
    return Q(created_at__gt=anchor.created_at) | same


def queue_earlier(anchor: JudgeVerdict) -> Q:
    """Verdicts before ``anchor`` in queue order."""
    return Q(created_at__lt=anchor.created_at) | Q(created_at=anchor.created_at, id__lt=anchor.pk)


class OverrideForm(forms.Form):
    """What a reviewer POSTs to override (or clear) one target; review.override has the last word."""

    target = forms.CharField(max_length=40)
    value = forms.ChoiceField(choices=[(review.PASS, "PASS"), (review.FAIL, "FAIL"), ("", "clear")], required=False)
    reason = forms.CharField(required=False, max_length=5000)


JUDGE_FIELDS = ("run_link", "overall", "summary", "judge_model", "prompt_hash", "judge_error", "raw", "created_at")
REVIEW_FIELDS = ("override_overall", "override_reason", "reviewed_by", "reviewed_at")


@admin.register(JudgeVerdict)
class JudgeVerdictAdmin(admin.ModelAdmin):
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

    @admin.display(description="raw judge output")
    def raw(self, obj: JudgeVerdict) -> SafeString:
        if not obj.raw_output:
            return format_html("{}", NONE)
        return format_html('<pre style="white-space:pre-wrap;max-height:30em;overflow:auto">{}</pre>', obj.raw_output)

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
        extra_context = {**(extra_context or {}), "queue_count": review.review_queue().count()}
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
                "judge_overall": verdict_badge(review.ERROR if review.judge_failed(verdict) else verdict.overall),
                "judge_error": verdict.judge_error,
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
        queue = review.review_queue()
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
                current = queue.filter(queue_later(a, inclusive)).first()
                return current, current is None
        a = anchor("before")
        if a is not None:
            return queue.filter(queue_earlier(a)).order_by("-created_at", "-id").first(), False
        return queue.first(), False

    def _queue_item(self, request: HttpRequest, queue: QuerySet[JudgeVerdict], verdict: JudgeVerdict) -> dict[str, Any]:
        verdict = JudgeVerdict.objects.select_related("run").prefetch_related("criteria").get(pk=verdict.pk)
        earlier = queue.filter(
            Q(created_at__lt=verdict.created_at) | Q(created_at=verdict.created_at, id__lt=verdict.pk)
        )
        later = queue.filter(Q(created_at__gt=verdict.created_at) | Q(created_at=verdict.created_at, id__gt=verdict.pk))
        queue_url = reverse("admin:runs_app_judgeverdict_queue")
        logs = list(verdict.run.trace_logs.all()[:5])
        return {
            "verdict": verdict,
            "run": verdict.run,
            "position": earlier.count() + 1,
            "effective": verdict_badge(review.effective_overall(verdict)),
            "passed_total": "{}/{}".format(*review.criteria_counts(verdict)),
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


# -- trace logs ----------------------------------------------------------------------------------------------------


def highlight(line: str, pattern: re.Pattern[str] | None) -> list[tuple[str, bool]]:
    """Split ``line`` into (text, is_match) segments; the template escapes every piece."""
    if pattern is None:
        return [(line, False)]
    segments: list[tuple[str, bool]] = []
    position = 0
    for match in pattern.finditer(line):
        if match.start() > position:
            segments.append((line[position : match.start()], False))
        segments.append((match.group(), True))
        position = match.end()
    if position < len(line):
        segments.append((line[position:], False))
    return segments


def trace_log_filename(log: TraceLog) -> str:
    return posixpath.basename(log.file_path.replace("\\", "/")) or f"trace-log-{log.pk}.log"


@admin.register(TraceLog)
class TraceLogAdmin(admin.ModelAdmin):
    list_display = ("file_name", "run_link", "turn_number", "created_at")
    list_select_related = ("run",)
    search_fields = ("file_path", "run__id", "run__scenario_id")

    def get_queryset(self, request: HttpRequest) -> QuerySet[TraceLog]:
        return super().get_queryset(request).defer("content")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # uploaded with the run

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="file", ordering="file_path")
    def file_name(self, obj: TraceLog) -> str:
        return trace_log_filename(obj)

    @admin.display(description="run", ordering="run__started_at")
    def run_link(self, obj: TraceLog) -> SafeString:
        return admin_link(obj.run, f"{obj.run.scenario_id or obj.run.mode} {str(obj.run_id)[:8]}")

    def get_urls(self) -> list[Any]:
        download = self.admin_site.admin_view(self.download_view)
        return [path("<path:object_id>/download/", download, name="runs_app_tracelog_download"), *super().get_urls()]

    def _log(self, request: HttpRequest, object_id: str) -> TraceLog:
        log = self.get_object(request, unquote(object_id))
        if log is None:
            raise Http404("No such trace log.")
        if not self.has_view_permission(request, log):
            raise PermissionDenied
        return log

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The log itself, monospace with line numbers; ``q`` keeps the lines containing it, highlighted."""
        log = self._log(request, object_id)
        query = request.GET.get("q", "")[:200]
        # A literal, case-insensitive match: the query is never taken as a regular expression.
        pattern = re.compile(re.escape(query), re.IGNORECASE) if query else None
        numbered = list(enumerate(log.content.splitlines(), start=1))
        if pattern is not None:
            numbered = [(n, line) for n, line in numbered if pattern.search(line)]
        shown = numbered[:TRACE_LOG_MAX_LINES]
        context = {
            **self.admin_site.each_context(request),
            **(extra_context or {}),
            "opts": self.opts,
            "original": log,
            "title": trace_log_filename(log),
            "log": log,
            "run_link": admin_link(log.run, f"{log.run.scenario_id or log.run.mode} {log.run_id}"),
            "query": query,
            "lines": [{"number": n, "segments": highlight(line, pattern)} for n, line in shown],
            "matching": len(numbered),
            "truncated": len(numbered) > len(shown),
            "max_lines": TRACE_LOG_MAX_LINES,
            "download_url": reverse("admin:runs_app_tracelog_download", args=[log.pk]),
        }
        return TemplateResponse(request, "admin/runs_app/tracelog/view.html", context)

    def download_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        log = self._log(request, object_id)
        response = HttpResponse(log.content, content_type="text/plain; charset=utf-8")
        response["Content-Disposition"] = content_disposition_header(True, trace_log_filename(log))
        return response


# -- providers, waivers, tier rules ------------------------------------------------------------------------------


def load_coverage_report() -> dict[str, Any] | None:
    """The coverage report, or None while runs_app.coverage is not there (imported late so the admin works
    without it)."""
    try:
        from runs_app.coverage import coverage_report
    except ImportError:
        return None
    return coverage_report()


def coverage_cell(cell: dict[str, Any] | None, evidence_url: str = "") -> SafeString:
    """A coloured state; hovering gives the reason, the latest evidence and any waiver; a click opens the evidence."""
    if not cell:
        return format_html("{}", NONE)
    state = str(cell.get("state") or "")
    details = [str(cell.get("reason") or "")]
    if cell.get("commit") or cell.get("date"):
        details.append("latest: " + " ".join(str(cell[k]) for k in ("commit", "date") if cell.get(k)))
    waiver = cell.get("waiver")
    if isinstance(waiver, dict):
        details.append(f"waived until {waiver.get('expires_on', '?')}: {waiver.get('reason', '')}")
    colour = COVERAGE_COLOURS.get(state.replace(" ", "_").replace("-", "_").lower(), GREY)
    shown = badge(state.replace("_", " ") or "?", colour, " · ".join(d for d in details if d))
    return format_html('<a href="{}">{}</a>', evidence_url, shown) if evidence_url else shown


def coverage_evidence_url(provider: str, obligation: str) -> str:
    """The dashboard's evidence page for one cell, when that page is installed."""
    try:
        return reverse("runs:coverage_cell", args=[provider, obligation])
    except NoReverseMatch:
        return ""


def coverage_column(obligation: str, cells: dict[str, dict[str, Any]]) -> Callable[[Provider], SafeString]:
    def column(obj: Provider) -> SafeString:
        cell = cells.get(obj.name, {}).get(obligation)
        return coverage_cell(cell, coverage_evidence_url(obj.name, obligation) if cell else "")

    column.__name__ = "coverage_" + re.sub(r"\W", "_", obligation)
    return admin.display(description=obligation)(column)


class ProviderForm(forms.ModelForm):
    required_tiers = forms.MultipleChoiceField(
        choices=[(tier, tier) for tier in TIERS], widget=forms.CheckboxSelectMultiple, required=False
    )

    class Meta:
        model = Provider
        fields = ("name", "onboarding", "required_tiers", "cassette_floor", "required_scenarios")


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    form = ProviderForm
    list_display = ("name", "onboarding", "tiers", "cassette_floor")
    list_filter = ("onboarding",)
    search_fields = ("name",)

    @admin.display(description="required tiers")
    def tiers(self, obj: Provider) -> str:
        return ", ".join(obj.required_tiers or []) or NONE

    def _coverage(self, request: HttpRequest) -> dict[str, Any] | None:
        # Once per page: the report walks every upload, and the admin may ask for the columns more than once.
        if not hasattr(request, "_provider_coverage"):
            request._provider_coverage = load_coverage_report()
        return request._provider_coverage

    def get_list_display(self, request: HttpRequest) -> list[Any]:
        report = self._coverage(request) or {}
        cells = {p.get("name"): p.get("cells") or {} for p in report.get("providers", [])}
        obligations = list(report.get("obligations") or OBLIGATIONS)
        for provider_cells in cells.values():
            obligations += [o for o in provider_cells if o not in obligations]
        return [*super().get_list_display(request), *(coverage_column(o, cells) for o in obligations)]

    def get_urls(self) -> list[Any]:
        urls = super().get_urls()
        # Imported here, and only if there, so that the admin keeps working without the coverage modules.
        try:
            from runs_app.admin_coverage import coverage_admin_urls
        except ImportError:
            pass
        else:
            return [*coverage_admin_urls(self.admin_site), *urls]
        try:
            from runs_app.admin_coverage import coverage_admin_view
        except ImportError:
            return urls
        return [path("coverage/", self.admin_site.admin_view(coverage_admin_view), name="runs_app_coverage"), *urls]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        coverage_url = ""
        for name in ("admin_coverage", "admin:runs_app_coverage"):
            try:
                coverage_url = reverse(name)
                break
            except NoReverseMatch:
                continue
        return super().changelist_view(request, {**(extra_context or {}), "coverage_url": coverage_url})


class WaiverForm(forms.ModelForm):
    obligation = forms.ChoiceField(choices=[(o, o) for o in OBLIGATIONS])

    class Meta:
        model = Waiver
        fields = ("provider", "obligation", "reason", "expires_on")


@admin.register(Waiver)
class WaiverAdmin(admin.ModelAdmin):
    form = WaiverForm
    list_display = ("provider", "obligation", "short_reason", "expires_on", "active", "created_by", "created_at")
    list_filter = ("provider", "obligation")
    search_fields = ("provider__name", "obligation", "reason")
    list_select_related = ("provider", "created_by")
    readonly_fields = ("created_by", "created_at")

    def save_model(self, request: HttpRequest, obj: Waiver, form: forms.ModelForm, change: bool) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    @admin.display(description="reason")
    def short_reason(self, obj: Waiver) -> str:
        return obj.reason if len(obj.reason) <= 80 else obj.reason[:80] + "…"

    @admin.display(description="active", boolean=True)
    def active(self, obj: Waiver) -> bool:
        return obj.expires_on >= timezone.localdate()


@admin.register(TierRule)
class TierRuleAdmin(admin.ModelAdmin):
    list_display = ("tier", "pattern_list")

    @admin.display(description="patterns")
    def pattern_list(self, obj: TierRule) -> str:
        return ", ".join(obj.patterns or []) or NONE


# -- cassettes ---------------------------------------------------------------------------------------------------


@admin.register(Cassette)
class CassetteAdmin(admin.ModelAdmin):
    list_display = ("name", "provider", "scenario", "size_display", "uploaded_at", "download")
    list_filter = ("provider", "scenario")
    search_fields = ("name", "provider", "scenario", "commit")
    fields = ("name", "provider", "scenario", "size_display", "digest", "run", "commit", "uploaded_at", "preview")
    readonly_fields = ("size_display", "digest", "run", "commit", "uploaded_at", "preview")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Cassette]:
        # The list shows sizes; the bytes are loaded only where they are shown or downloaded.
        return super().get_queryset(request).defer("content")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # cassettes arrive through the API, byte for byte

    @admin.display(description="size", ordering="size")
    def size_display(self, obj: Cassette) -> str:
        return human_size(obj.size)

    @admin.display(description="download")
    def download(self, obj: Cassette) -> SafeString:
        url = reverse("admin:runs_app_cassette_download", args=[obj.pk])
        return format_html('<a href="{}">download</a>', url)

    @admin.display(description="content")
    def preview(self, obj: Cassette) -> SafeString:
        text = bytes(obj.content).decode("utf-8", errors="replace")
        with contextlib.suppress(ValueError):  # not JSON after all: shown as it is
            text = pretty_json(json.loads(text))
        shown = text[:50_000]
        return format_html(
            '<p><a href="{}">download</a></p>'
            '<pre style="white-space:pre-wrap;max-height:40em;overflow:auto">{}{}</pre>',
            reverse("admin:runs_app_cassette_download", args=[obj.pk]),
            shown,
            "\n…" if len(text) > len(shown) else "",
        )

    def get_urls(self) -> list[Any]:
        download = self.admin_site.admin_view(self.download_view)
        return [path("<path:object_id>/download/", download, name="runs_app_cassette_download"), *super().get_urls()]

    def download_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        cassette = self.get_object(request, unquote(object_id))
        if cassette is None:
            raise Http404("No such cassette.")
        if not self.has_view_permission(request, cassette):
            raise PermissionDenied
        response = HttpResponse(bytes(cassette.content), content_type="application/json")
        name = posixpath.basename(cassette.name.replace("\\", "/")) or f"cassette-{cassette.pk}.json"
        response["Content-Disposition"] = content_disposition_header(True, name)
        return response


# -- API tokens --------------------------------------------------------------------------------------------------


class ApiTokenCreateForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ("name", "scope")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are issued through runs_app.tokens: the clear token is shown once, only its digest is kept."""

    list_display = ("name", "prefix_display", "scope", "created_at", "last_used_at", "revoked_at", "live")
    list_filter = ("scope",)
    search_fields = ("name", "prefix")
    actions = ("revoke",)

    def get_form(self, request: HttpRequest, obj: ApiToken | None = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = ApiTokenCreateForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> Iterable[str]:
        if obj is None:
            return ("name", "scope")
        return ("name", "scope", "prefix_display", "created_at", "last_used_at", "revoked_at")

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> Iterable[str]:
        if obj is None:
            return ()
        # A token's scope is what it was issued with: issue a new one rather than widening an old one.
        return ("scope", "prefix_display", "created_at", "last_used_at", "revoked_at")

    def save_model(self, request: HttpRequest, obj: ApiToken, form: forms.ModelForm, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        row, token = tokens.issue(obj.name, obj.scope)
        # The admin goes on with ``obj`` (history, redirect): make it the row that was stored.
        obj.pk, obj.prefix, obj.digest, obj.created_at = row.pk, row.prefix, row.digest, row.created_at
        obj._state.adding, obj._state.db = False, row._state.db
        messages.warning(
            request,
            f"API token for “{row.name}”: {token} — copy it now, it will not be shown again.",
            fail_silently=True,
        )

    @admin.display(description="prefix", ordering="prefix")
    def prefix_display(self, obj: ApiToken) -> str:
        return f"{obj.prefix}…"

    @admin.display(description="live", boolean=True)
    def live(self, obj: ApiToken) -> bool:
        return obj.revoked_at is None

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        messages.success(request, f"{count} token(s) revoked.")
