"""The provider coverage pages: the grid of providers × obligations, and the evidence behind each cell."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from runs_app.coverage.grid import STATE_LABELS, cell_title, grid_context
from runs_app.coverage.report import OBLIGATIONS, coverage_report, provider_coverage
from runs_app.models import Cassette, Provider, TestCaseResult


@login_required
@require_GET
def coverage(request: HttpRequest) -> HttpResponse:
    return render(request, "runs_app/coverage.html", grid_context(coverage_report()))


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
        {"cassette": cassette, "admin_url": reverse("admin:runs_app_cassette_change", args=[cassette.pk])}
        for cassette in Cassette.objects.filter(id__in=cell["evidence"]["cassette_ids"])
        .defer("content")
        .order_by("scenario")
    ]
    context = {
        "provider": registered,
        "obligation": obligation,
        "cell": cell,
        "why": cell_title(cell),
        "state_label": STATE_LABELS.get(cell["state"], ""),
        "cases": cases,
        "cassettes": cassettes,
        "api_url": request.build_absolute_uri("/api"),  # the empty cell's upload example names this server
    }
    return render(request, "runs_app/coverage_cell.html", context)
