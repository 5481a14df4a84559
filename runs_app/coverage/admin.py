"""The coverage admin: providers with a coverage column per obligation, waivers, tier rules, and the coverage grid
inside the admin at ``/admin/runs_app/provider/coverage/`` (``admin:runs_app_coverage``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from runs_app.adminkit import BLUE, GREEN, GREY, NONE, RED, HarnessAdmin, badge
from runs_app.coverage.grid import grid_context
from runs_app.coverage.report import OBLIGATIONS, coverage_report
from runs_app.models import TIERS, Provider, TierRule, Waiver

COVERAGE_COLOURS = {"passing": GREEN, "failing": RED, "missing": RED, "waived": BLUE, "not_applicable": GREY}
TITLE = "Provider test coverage"


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
    """The dashboard's evidence page for one cell."""
    return reverse("runs:coverage_cell", args=[provider, obligation])


def coverage_column(obligation: str, cells: dict[str, dict[str, Any]]) -> Callable[[Provider], SafeString]:
    def column(obj: Provider) -> SafeString:
        cell = cells.get(obj.name, {}).get(obligation)
        return coverage_cell(cell, coverage_evidence_url(obj.name, obligation) if cell else "")

    column.__name__ = "coverage_" + re.sub(r"\W", "_", obligation)
    return admin.display(description=obligation)(column)


class ProviderForm(forms.ModelForm):
    """A new provider starts owing every tier (seed 003); unticking one a native provider owes asks for the reason
    it does not apply (``not_applicable``), checked by ``Provider.clean``."""

    required_tiers = forms.MultipleChoiceField(
        choices=[(tier, tier) for tier in TIERS],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        initial=list(TIERS),
    )

    class Meta:
        model = Provider
        fields = ("name", "onboarding", "required_tiers", "cassette_floor", "required_scenarios", "not_applicable")


@admin.register(Provider)
class ProviderAdmin(HarnessAdmin):
    form = ProviderForm
    list_display = ("name", "onboarding", "tiers", "cassette_floor")
    list_filter = ("onboarding",)
    search_fields = ("name",)

    @admin.display(description="required tiers")
    def tiers(self, obj: Provider) -> str:
        return ", ".join(obj.required_tiers or []) or NONE

    def _coverage(self, request: HttpRequest) -> dict[str, Any]:
        # Once per page: the report walks every upload, and the admin may ask for the columns more than once.
        if not hasattr(request, "_provider_coverage"):
            request._provider_coverage = coverage_report()
        return request._provider_coverage

    def get_list_display(self, request: HttpRequest) -> list[Any]:
        report = self._coverage(request)
        cells = {p["name"]: p["cells"] for p in report["providers"]}
        return [*super().get_list_display(request), *(coverage_column(o, cells) for o in report["obligations"])]

    def get_urls(self) -> list[Any]:
        # Before super()'s: ModelAdmin's URLs end with a catch-all ``<path:object_id>/``.
        grid = path("coverage/", self.admin_site.admin_view(self.coverage_view), name="runs_app_coverage")
        return [grid, *super().get_urls()]

    def coverage_view(self, request: HttpRequest) -> HttpResponse:
        """The coverage grid in the admin's frame (admin_view gives the staff check and the no-cache headers)."""
        context = {**self.admin_site.each_context(request), "title": TITLE, **grid_context(self._coverage(request))}
        return TemplateResponse(request, "admin/runs_app/coverage.html", context)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        coverage_url = reverse("admin:runs_app_coverage")
        return super().changelist_view(request, {**(extra_context or {}), "coverage_url": coverage_url})


class WaiverForm(forms.ModelForm):
    obligation = forms.ChoiceField(choices=[(o, o) for o in OBLIGATIONS])

    class Meta:
        model = Waiver
        fields = ("provider", "obligation", "reason", "expires_on")


@admin.register(Waiver)
class WaiverAdmin(HarnessAdmin):
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
class TierRuleAdmin(HarnessAdmin):
    list_display = ("tier", "pattern_list")

    @admin.display(description="patterns")
    def pattern_list(self, obj: TierRule) -> str:
        return ", ".join(obj.patterns or []) or NONE
