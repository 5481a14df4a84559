"""The judge in the admin: saved criteria sets (editable), judge batches (read-only, linking to their live page),
and the Run list's "Judge these runs" action, which shows the same form as the dashboard's button."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from harnessweb.judging.verdicts import criteria_lines
from runs_app.adminkit import HarnessAdmin
from runs_app.judging.forms import JUDGE_FORM, JudgeForm, Selection, form_context
from runs_app.judging.models import CriteriaSet, JudgeBatch
from runs_app.models import Run


@admin.register(CriteriaSet)
class CriteriaSetAdmin(HarnessAdmin):
    list_display = ("name", "criteria_count", "updated_at")
    search_fields = ("name", "criteria")

    @admin.display(description="criteria")
    def criteria_count(self, obj: CriteriaSet) -> int:
        return len(criteria_lines(obj.criteria))


@admin.register(JudgeBatch)
class JudgeBatchAdmin(HarnessAdmin):
    list_display = ("id", "progress", "criteria_set", "started_by", "created_at", "finished_at", "page")
    readonly_fields = ("criteria", "criteria_set", "run_ids", "verdict_ids", "total", "done", "started_by")
    readonly_fields += ("api_token", "created_at", "started_at", "finished_at", "page")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # started from the runs pages or the Run action

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="judged")
    def progress(self, obj: JudgeBatch) -> str:
        return f"{obj.done} of {obj.total}"

    @admin.display(description="live page")
    def page(self, obj: JudgeBatch) -> SafeString:
        return format_html('<a href="{}">progress and verdicts</a>', reverse("runs:judge_batch", args=[obj.pk]))


@admin.action(description="Judge these runs")
def judge_these_runs(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Run]) -> HttpResponse:
    """The criteria form for the selected runs; it posts to the dashboard's judge page, which starts the batch."""
    selection = Selection.of_runs([str(pk) for pk in queryset.values_list("pk", flat=True)])
    return render(request, JUDGE_FORM, form_context(selection, JudgeForm()))
