"""The provider coverage pages: the grid of providers × obligations, and the evidence behind each cell."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET

from runs_app.coverage.report import CASSETTES, NOT_APPLICABLE, OBLIGATIONS, WAIVED, coverage_report, provider_coverage
from runs_app.models import Cassette, Provider, TestCaseResult

STATE_LABELS = {
    "passing": "passing",
    "failing": "failing",
    "missing": "missing",
    "not_applicable": "n/a",
    "waived": "waived",
}


def _label(obligation: str, cell: dict[str, Any]) -> str:
    """The counts a grid cell shows: passed/total for a tier, cassettes/floor for cassettes."""
    if cell["state"] == NOT_APPLICABLE and not cell["total"]:
        return "—"
    if obligation == CASSETTES:
        return f"{cell['count']}/{cell['floor']}"
    if not cell["total"]:
        return "0"
    return f"{cell['passed']}/{cell['total']}"


def _title(cell: dict[str, Any]) -> str:
    """What hovering a cell says: why it has its colour (and for a waived one, the waiver first)."""
    reason = cell["reason"][:1].upper() + cell["reason"][1:]
    waiver = cell["waiver"]
    if cell["state"] == WAIVED and waiver:
        by = f" by {waiver['by']}" if waiver["by"] else ""
        return f"Waived until {waiver['expires_on']}{by}: {waiver['reason']}. {reason}"
    return reason


def grid_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's providers as table rows for the grid partial, native providers first, cells in obligation
    order (templates cannot look a dict up by a variable key)."""
    rows = []
    for entry in report["providers"]:
        cells = [
            {
                **entry["cells"][obligation],
                "obligation": obligation,
                "label": _label(obligation, entry["cells"][obligation]),
                "title": _title(entry["cells"][obligation]),
                "state_label": STATE_LABELS.get(entry["cells"][obligation]["state"], ""),
            }
            for obligation in report["obligations"]
        ]
        onboarding = Provider.Onboarding(entry["onboarding"]).label if entry["onboarding"] else ""
        rows.append(
            {"name": entry["name"], "onboarding": entry["onboarding"], "onboarding_label": onboarding, "cells": cells}
        )
    rows.sort(key=lambda row: (row["onboarding"] != Provider.Onboarding.NATIVE, row["name"]))
    return rows


def grid_context(report: dict[str, Any]) -> dict[str, Any]:
    """Template context for ``runs_app/coverage_grid.html``."""
    return {"report": report, "obligations": report["obligations"], "rows": grid_rows(report)}


@login_required
@require_GET
def coverage(request: HttpRequest) -> HttpResponse:
    return render(request, "runs_app/coverage.html", grid_context(coverage_report()))


def _cassette_admin_url(cassette_id: int) -> str:
    try:
        return reverse("admin:runs_app_cassette_change", args=[cassette_id])
    except NoReverseMatch:
        # Cassettes not (yet) registered in the admin: the URL the admin will give them once they are.
        return f"{reverse('admin:index')}runs_app/cassette/{cassette_id}/change/"


_OUTCOME_ORDER = {"failed": 0, "error": 0, "flaky": 1, "passed": 2, "skipped": 3}


@login_required
@require_GET
def coverage_cell(request: HttpRequest, provider: str, obligation: str) -> HttpResponse:
    if obligation not in OBLIGATIONS:
        raise Http404(f"no obligation {obligation!r}")
    registered = get_object_or_404(Provider, name=provider)
    entry = provider_coverage(registered)
    cell = entry["cells"][obligation]
    cases = sorted(
        TestCaseResult.objects.filter(id__in=cell["evidence"]["test_case_ids"]).select_related("run"),
        key=lambda case: (_OUTCOME_ORDER.get(case.outcome, 9), case.classname, case.name),
    )
    cassettes = [
        {"cassette": cassette, "admin_url": _cassette_admin_url(cassette.pk)}
        for cassette in Cassette.objects.filter(id__in=cell["evidence"]["cassette_ids"])
        .defer("content")
        .order_by("scenario")
    ]
    context = {
        "provider": registered,
        "obligation": obligation,
        "cell": cell,
        "why": _title(cell),
        "state_label": STATE_LABELS.get(cell["state"], ""),
        "cases": cases,
        "cassettes": cassettes,
    }
    return render(request, "runs_app/coverage_cell.html", context)
