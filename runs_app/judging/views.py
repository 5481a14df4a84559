"""The "Judge these runs" pages: the form (which runs, which criteria) and a batch's page with its live progress.

Runs come as ``run`` ids (the run page's button, the admin action) or as the runs list's filters (its button);
starting a batch is staff only, since it calls a paid model.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from runs_app.judging import batches
from runs_app.judging.forms import JUDGE_FORM, JudgeForm, Selection, form_context
from runs_app.judging.models import JudgeBatch


def _staff_only(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise PermissionDenied("Judging runs is for staff: it calls the configured judge model.")


@login_required
@require_http_methods(["GET", "POST"])
def judge_runs(request: HttpRequest) -> HttpResponse:
    _staff_only(request)
    selection = Selection(request.GET if request.method == "GET" else request.POST)
    form = JudgeForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid() and not selection.errors:
        data = form.cleaned_data
        try:
            batch = batches.start(selection.runs(), data["criteria"], data["criteria_set"], request.user)
        except batches.BatchRefused as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("runs:judge_batch", batch_id=batch.pk)
    refused = request.method == "POST" or selection.errors
    return render(request, JUDGE_FORM, form_context(selection, form), status=400 if refused else 200)


@login_required
@require_GET
def judge_batch(request: HttpRequest, batch_id: int) -> HttpResponse:
    batch = get_object_or_404(JudgeBatch, pk=batch_id)
    context = {**batches.progress_context(batch), "socket_url": f"/ws/judge/{batch.pk}/"}
    return render(request, "runs_app/judge_batch.html", context)
