"""The admin of runs_app: runs with their events, trace logs (viewer, search, download), cassettes and API tokens.

Judge verdicts and the review queue are in :mod:`runs_app.review.admin`; providers, waivers, tier rules and the
coverage grid in :mod:`runs_app.coverage.admin`; criteria sets, judge batches and the Run action "Judge these runs"
in :mod:`runs_app.judging.admin`. They are imported here, which registers them.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import re
from collections.abc import Iterable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.db.models.functions import Length
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import content_disposition_header
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from harnessweb.text import pretty_json
from runs_app import tokens
from runs_app.adminkit import (
    AMBER,
    BLUE,
    GREEN,
    GREY,
    NONE,
    RED,
    HarnessAdmin,
    ReadOnlyInline,
    admin_link,
    badge,
    human_duration,
    human_size,
    json_block,
)
from runs_app.ci.admin import ArtifactInline, RunMessageInline
from runs_app.ci.cassette_page import cassette_page_context, may_convert
from runs_app.ci.conversion import ConversionError, convert
from runs_app.coverage import admin as coverage_admin  # noqa: F401  (registers providers, waivers, tier rules)
from runs_app.judging.admin import judge_these_runs  # registers criteria sets and judge batches
from runs_app.models import ApiToken, Cassette, Run, RunEvent, TraceLog
from runs_app.pricing import admin as pricing_admin  # noqa: F401  (registers the price table)
from runs_app.review.admin import VerdictInline

# The admin speaks as the product (its header, its tabs' titles); its index (templates/admin/index.html) leads with
# the review queue and the coverage grid.
admin.site.site_header = admin.site.site_title = "Scenario harness"
admin.site.index_title = "Administration"

RUN_STATUS_COLOURS = {
    Run.Status.RUNNING: BLUE,
    Run.Status.PASSED: GREEN,
    Run.Status.FAILED: RED,
    Run.Status.ERRORED: AMBER,
}
TRACE_OUTCOMES = {"success": ("SUCCESS", GREEN), "failed": ("FAILED", RED)}  # the footer's; blank: none
TRACE_LOG_MAX_LINES = 5000  # beyond this the page gets slow; the download has the whole file


class RunEventInline(ReadOnlyInline):
    model = RunEvent
    fields = ("seq", "timestamp", "kind", "turn", "data_json")
    readonly_fields = fields
    classes = ("collapse",)

    @admin.display(description="data")
    def data_json(self, obj: RunEvent) -> SafeString:
        compact = json.dumps(obj.data, ensure_ascii=False, default=str)
        summary = compact if len(compact) <= 100 else compact[:100] + "…"
        return format_html('<details><summary class="hr-mono">{}</summary>{}</details>', summary, json_block(obj.data))


class TraceLogInline(ReadOnlyInline):
    model = TraceLog
    fields = ("turn_number", "log_link", "outcome_badge", "log_size", "created_at")
    readonly_fields = fields
    outcome_badge = admin.display(description="outcome")(lambda self, obj: outcome_badge(obj))

    def get_queryset(self, request: HttpRequest) -> QuerySet[TraceLog]:
        # The list needs only the sizes, not the contents.
        return super().get_queryset(request).annotate(content_length=Length("content")).defer("content")

    @admin.display(description="trace log")
    def log_link(self, obj: TraceLog) -> SafeString:
        return admin_link(obj, obj.file_path)

    @admin.display(description="size")
    def log_size(self, obj: TraceLog) -> str:
        return f"{obj.content_length:,} characters"


@admin.register(Run)
class RunAdmin(HarnessAdmin):
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
    inlines = (VerdictInline, TraceLogInline, RunMessageInline, ArtifactInline, RunEventInline)
    actions = (judge_these_runs,)
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
        return format_html('{} <code>{}</code> <span class="hr-muted">{}</span>', obj.name, obj.commit[:10], obj.branch)

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


def outcome_badge(log: TraceLog) -> SafeString:
    label, tone = TRACE_OUTCOMES.get(log.outcome, ("no footer", GREY))
    return badge(label, tone, "the trace log's footer")


def trace_log_filename(log: TraceLog) -> str:
    return posixpath.basename(log.file_path.replace("\\", "/")) or f"trace-log-{log.pk}.log"


@admin.register(TraceLog)
class TraceLogAdmin(HarnessAdmin):
    list_display = ("file_name", "run_link", "turn_number", "outcome_badge", "created_at")
    list_filter = ("outcome",)
    list_select_related = ("run",)
    outcome_badge = admin.display(description="outcome", ordering="outcome")(lambda self, obj: outcome_badge(obj))
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
            "outcome": outcome_badge(log),
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


@admin.register(Cassette)
class CassetteAdmin(HarnessAdmin):
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
            text = pretty_json(json.loads(text), sort_keys=True)
        shown = text[:50_000] + ("\n…" if len(text) > 50_000 else "")
        return format_html(
            '<p><a href="{}">download</a></p>{}',
            reverse("admin:runs_app_cassette_download", args=[obj.pk]),
            json_block(shown, tall=True),
        )

    def get_urls(self) -> list[Any]:
        download = self.admin_site.admin_view(self.download_view)
        converting = self.admin_site.admin_view(require_POST(self.convert_view))
        return [
            path("<path:object_id>/download/", download, name="runs_app_cassette_download"),
            path("<path:object_id>/convert/", converting, name="runs_app_cassette_convert"),
            *super().get_urls(),
        ]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None) -> Any:
        # Each interaction's stream summary, and the button that makes the cassette a scenario (the template).
        cassette = self.get_object(request, unquote(object_id))
        if cassette is not None:
            extra_context = {**(extra_context or {}), **cassette_page_context(cassette, request.user)}
        return super().change_view(request, object_id, form_url, extra_context)

    def convert_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST: the cassette converted into a scenario (upserted); back to the cassette with what happened."""
        cassette = self.get_object(request, unquote(object_id))
        if cassette is None:
            raise Http404("No such cassette.")
        if not may_convert(request.user):
            raise PermissionDenied
        scenario_id = request.POST.get("scenario_id", "").strip() or None
        try:
            row, outcome, scenario = convert(bytes(cassette.content), cassette.name, scenario_id, user=request.user)
        except ConversionError as exc:
            messages.error(request, str(exc))
        else:
            link = format_html('<a href="{}">{}</a>', row.get_absolute_url(), scenario.id)
            messages.success(request, format_html("Scenario {} {} from this cassette.", link, outcome))
        return redirect(reverse("admin:runs_app_cassette_change", args=[cassette.pk]))

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


class ApiTokenCreateForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ("name", "scope")


@admin.register(ApiToken)
class ApiTokenAdmin(HarnessAdmin):
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
