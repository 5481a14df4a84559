"""The overview page, the home after log-in: runs per hour or day, pass-rate drops, slow and retrying clients,
verdicts waiting for review and coverage gaps, kept fresh by its socket (``/ws/overview/``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs_app.overview.presenters import overview_context


@login_required
@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    context = overview_context(
        request.GET.get("period"), staff=request.user.is_staff, base_url=request.build_absolute_uri("/")
    )
    return render(request, "runs_app/overview.html", context)
