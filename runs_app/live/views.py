"""The runs pages: the list (filters, pages, new rows live) and a run's page (turns, timeline, resilience)."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from harnessweb.htmx import vary_on_htmx, wants_partial
from runs_app.live.presenters import (
    PROTOCOL_CHOICES,
    SOURCE_CHOICES,
    events_by_turn,
    header_context,
    load_run,
    resilience_context,
    run_filters,
    runs_table_context,
    turn_context,
)
from runs_app.models import Run
from scenarios_app.models import Scenario


@vary_on_htmx
@login_required
@require_GET
def runs_list(request: HttpRequest) -> HttpResponse:
    filters = run_filters(request.GET)
    context = runs_table_context(filters, request.GET.get("page"))
    # An htmx filter or pager request gets the table alone.
    if wants_partial(request):
        return render(request, "runs_app/runs_table.html", context)
    context.update(
        statuses=Run.Status.values,
        protocols=PROTOCOL_CHOICES,
        sources=SOURCE_CHOICES,
        scenario_ids=list(Scenario.objects.values_list("id", flat=True)),
        new_run_id=uuid.uuid4(),
    )
    return render(request, "runs_app/runs_list.html", context)


@login_required
@require_GET
def run_detail(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """A run's page. ``?live=1`` opens it before the run exists, to watch a run a test is about to start."""
    run, events, stored = load_run(run_id)
    if run is None and not request.GET.get("live"):
        raise Http404("No such run (add ?live=1 to wait for it)")
    context = {
        "header": header_context(run_id, run, events, stored),
        "resilience": resilience_context(run, events),
        "turns": [turn_context(run, n, evs, stored) for n, evs in events_by_turn(events).items()],
        # The socket sends what was recorded after this page was read, then everything live.
        "socket_url": f"/ws/runs/{run_id}/?after={events[-1].seq if events else 0}",
    }
    return render(request, "runs_app/run_detail.html", context)
