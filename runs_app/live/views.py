"""The runs pages: the list (filters, pages, new rows live), a run's page (turns, timeline, resilience, stream
summaries, an uploaded conversation and artifacts), its export as a cassette, an artifact's isolated content, and two
runs compared."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET

from harnessweb.htmx import vary_on_htmx, wants_partial
from runs_app.ci.run_streams import cassette_file_name
from runs_app.ci.run_streams import run_cassette as run_cassette_data
from runs_app.live.compare import compare_choices, compare_context
from runs_app.live.presenters import (
    PROTOCOL_CHOICES,
    SOURCE_CHOICES,
    events_by_turn,
    header_context,
    load_run,
    resilience_context,
    run_filters,
    runs_table_context,
    streams_context,
    turn_context,
    waterfall_context,
)
from runs_app.live.uploads import artifact_response, artifacts_context, conversation_context, trace_logs_context
from runs_app.models import Artifact, Run
from runs_app.pricing.costs import price_table
from scenarios_app.models import Scenario


@vary_on_htmx
@login_required
@require_GET
def runs_list(request: HttpRequest) -> HttpResponse:
    filters = run_filters(request.GET)
    context = runs_table_context(filters, request.GET.get("page"))
    # The empty list's snippets name this server as the browser reached it.
    context["base_url"] = request.build_absolute_uri("/").rstrip("/")
    # A filter value the list does not take is a 400 that says which (the page, or the table alone, shows it).
    status = 400 if context["problems"] else 200
    # An htmx filter or pager request gets the table alone.
    if wants_partial(request):
        return render(request, "runs_app/runs_table.html", context, status=status)
    context.update(
        statuses=Run.Status.values,
        protocols=PROTOCOL_CHOICES,
        sources=SOURCE_CHOICES,
        scenario_ids=list(Scenario.objects.values_list("id", flat=True)),
        new_run_id=uuid.uuid4(),
    )
    return render(request, "runs_app/runs_list.html", context, status=status)


@login_required
@require_GET
def run_detail(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """A run's page. ``?live=1`` opens it before the run exists, to watch a run a test is about to start."""
    run, events, stored = load_run(run_id)
    if run is None and not request.GET.get("live"):
        raise Http404("No such run (add ?live=1 to wait for it)")
    prices = price_table()  # once for every turn's answer
    context = {
        "header": header_context(run_id, run, events, stored),
        "resilience": resilience_context(run, events),
        "waterfall": waterfall_context(run_id, run, events),
        "turns": [turn_context(run, n, evs, stored, prices) for n, evs in events_by_turn(events).items()],
        "streams": streams_context(run),
        "conversation": conversation_context(run),
        "artifacts": artifacts_context(run),
        "trace_logs": trace_logs_context(run),
        "compare": compare_choices(run) if run else None,
        # The socket sends what was recorded after this page was read, then everything live.
        "socket_url": f"/ws/runs/{run_id}/?after={events[-1].seq if events else 0}",
    }
    return render(request, "runs_app/run_detail.html", context)


@login_required
@require_GET
def run_actions(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """The run page's row of actions (judge, pin, compare), for a page opened before its run existed: the header the
    socket sends once the run exists asks for it."""
    run = get_object_or_404(Run, pk=run_id)
    context = {"header": {"run": run, "run_id": str(run.id)}, "compare": compare_choices(run)}
    return render(request, "runs_app/run_actions.html", context)


@login_required
@require_GET
def run_cassette(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """The run exported as a VCR cassette (what ``GET /api/runs/{id}/cassette`` gives a CI), for the run page's
    link: a browser has a session, not a bearer token."""
    run = get_object_or_404(Run, pk=run_id)
    cassette = run_cassette_data(run)
    if cassette is None:
        raise Http404("This run served no response that can be exported.")
    response = JsonResponse(cassette, json_dumps_params={"indent": 2, "ensure_ascii": False})
    response["Content-Disposition"] = content_disposition_header(True, cassette_file_name(run.id))
    return response


@login_required
@require_GET
def run_compare(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """The "Compare with…" form's target: ``?with=<run id>`` goes to the diff page of the two runs."""
    run = get_object_or_404(Run, pk=run_id)
    try:
        other = uuid.UUID(request.GET.get("with", "").strip())
    except ValueError:
        return redirect("runs:detail", run.id)
    return redirect("runs:diff", run.id, other)


@login_required
@require_GET
def run_diff(request: HttpRequest, run_id: uuid.UUID, other_id: uuid.UUID) -> HttpResponse:
    """Run against run: the requests and answers of two runs side by side, turn by turn, with a word diff."""
    a = get_object_or_404(Run, pk=run_id)
    b = get_object_or_404(Run, pk=other_id)
    context = compare_context(a, b)
    context["compare"] = compare_choices(a)
    return render(request, "runs_app/run_diff.html", context)


@xframe_options_sameorigin  # the run page frames it; its CSP's frame-ancestors says the same
@login_required
@require_GET
def artifact_raw(request: HttpRequest, artifact_id: int) -> HttpResponse:
    """An artifact's content, for the run page's sandboxed frame (or a tab): logged-in users only, and served so that
    nothing in it runs (runs_app/live/uploads.py)."""
    return artifact_response(get_object_or_404(Artifact, pk=artifact_id))
