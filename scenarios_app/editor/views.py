"""The scenario editor's pages: a new or stored scenario's editor, validation as you type, switching between the
form and the raw tab, turn operations, save (a new version, or 422 with the errors beside their fields) and the
preview. Every view needs a logged-in user; the panel partial is what the htmx requests swap.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from harnessweb.htmx import vary_on_htmx, wants_partial
from scenarios_app.editor.binding import OPS, apply_op
from scenarios_app.editor.fields import ALL, RAW_FORMATS
from scenarios_app.editor.mapping import form_problem, scenario_to_state
from scenarios_app.editor.panel import check_state, flat_errors, open_panel, posted_panel, read_post, stored_schema
from scenarios_app.editor.preview import PREVIEW_PROTOCOLS, preview_context
from scenarios_app.editor.raw import raw_errors, to_raw
from scenarios_app.editor.socket_preview import SOCKET_PROTOCOLS, socket_preview_context
from scenarios_app.models import Scenario


def _render_panel(request: HttpRequest, context: dict[str, Any], status: int = 200) -> HttpResponse:
    return render(request, "scenarios_app/editor_panel.html", context, status=status)


def _page_context(row: Scenario | None, panel: dict[str, Any]) -> dict[str, Any]:
    context = {
        **panel,
        "page_title": row.id if row else "New scenario",
        "protocols": {**PREVIEW_PROTOCOLS, **SOCKET_PROTOCOLS},
        "full_page": True,
    }
    if row is not None:
        context["versions"] = list(row.versions.select_related("saved_by").order_by("-number"))
        context["edit_url"] = row.get_absolute_url()
        stored = stored_schema(row)
        if stored is not None:
            context.update(preview_context(stored, row, 1, "openai"))
    return context


@require_GET
@login_required
def editor_new(request: HttpRequest) -> HttpResponse:
    """The editor for a new scenario."""
    return render(request, "scenarios_app/editor.html", _page_context(None, open_panel(None)))


@require_GET
@login_required
def edit(request: HttpRequest, scenario_id: str) -> HttpResponse:
    """The editor of a stored scenario, with its preview and history."""
    row = get_object_or_404(Scenario, id=scenario_id)
    return render(request, "scenarios_app/editor.html", _page_context(row, open_panel(row)))


@require_POST
@login_required
def validate(request: HttpRequest) -> HttpResponse:
    """Validate the whole editor form as it is typed: the status line, and every field's errors out of band."""
    posted = read_post(request.POST)
    return render(request, "scenarios_app/validation.html", posted_panel(posted))


@require_POST
@login_required
def switch_panel(request: HttpRequest) -> HttpResponse:
    """Switch between the form and the raw tab, or the raw tab between JSON and YAML, carrying the data over."""
    posted = read_post(request.POST)
    target = request.POST.get("to", "form")
    if posted.mode == "form":
        if target == "form":
            return _render_panel(request, posted_panel(posted))
        fmt = target if target in RAW_FORMATS else "json"
        # The form's data as it is, invalid or not: the raw tab shows the same problems with their paths.
        problems = raw_errors(posted.data) if not posted.errors else flat_errors(posted.errors)
        context = posted_panel(
            posted,
            mode="raw",
            raw_text=to_raw(posted.scenario.canonical() if posted.scenario else posted.data, fmt),
            raw_format=fmt,
            errors={ALL: problems} if problems else {},
        )
        return _render_panel(request, context)
    if posted.data is None or (target == "form" and posted.scenario is None):
        # Unparseable raw text, or (to the form) an invalid scenario: stay on the raw tab with the errors.
        notice = "Fix the errors below to switch." if posted.data is None or target == "form" else ""
        return _render_panel(request, posted_panel(posted, notice=notice))
    if target in RAW_FORMATS:
        posted.raw_text = to_raw(posted.data, target)
        posted.raw_format = target
        return _render_panel(request, posted_panel(posted))
    assert posted.scenario is not None
    canonical = posted.scenario.canonical()
    problem = form_problem(canonical)
    if problem:
        return _render_panel(request, posted_panel(posted, notice=f"The form cannot show this scenario: {problem}."))
    state = scenario_to_state(canonical)
    scenario, errors = check_state(state, posted.row)
    return _render_panel(request, posted_panel(posted, mode="form", state=state, errors=errors, scenario=scenario))


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


@require_POST
@login_required
def edit_turns(request: HttpRequest) -> HttpResponse:
    """Add, remove, move or duplicate a turn, or add/remove a tool call or reasoning segment; the form re-renders
    from the posted values, so nothing typed is lost."""
    posted = read_post(request.POST)
    if posted.mode != "form" or posted.state is None:
        return _render_panel(request, posted_panel(posted))
    op = request.POST.get("op", "")
    if op not in OPS:
        return HttpResponse(f"Unknown operation {op!r}", status=400)
    state = apply_op(posted.state, op, _int_or_none(request.POST.get("turn")), _int_or_none(request.POST.get("item")))
    scenario, errors = check_state(state, posted.row)
    return _render_panel(request, posted_panel(posted, state=state, errors=errors, scenario=scenario))


@vary_on_htmx
@require_POST
@login_required
def save(request: HttpRequest) -> HttpResponseBase:
    """Save the editor's scenario as a new version; refused (422, errors beside their fields) unless valid."""
    posted = read_post(request.POST)
    base = _int_or_none(request.POST.get("base_revision"))
    if posted.scenario is not None and posted.row is not None and base is not None:
        current = Scenario.objects.filter(id=posted.row.id).values_list("revision", flat=True).first()
        if current is not None and current != base:
            # Someone saved in between: writing now would silently drop their change.
            posted.errors[ALL] = [
                f"This scenario was saved elsewhere since you opened it (revision {base}, now {current}). "
                "Copy your changes from the raw tab, reload, and apply them again."
            ]
            posted.scenario = None
    if posted.scenario is None:
        context = posted_panel(posted)
        if wants_partial(request):
            return _render_panel(request, context, status=422)
        return render(request, "scenarios_app/editor.html", _page_context(posted.row, context), status=422)
    note = request.POST.get("version_note", "").strip() or ("created" if posted.row is None else "edited")
    row, outcome = Scenario.upsert(posted.scenario, user=request.user, note=note)
    if outcome == "unchanged":
        messages.info(request, "No changes to save.")
    else:
        number = row.versions.order_by("-number").values_list("number", flat=True).first()
        messages.success(request, f"Saved {row.id} (version {number}).")
    url = row.get_absolute_url()
    if wants_partial(request):
        return HttpResponse(headers={"HX-Redirect": url})
    return redirect(url)


@require_POST
@login_required
def preview(request: HttpRequest) -> HttpResponse:
    """The preview of the editor's current scenario (saved or not) for one turn and protocol."""
    posted = read_post(request.POST)
    protocol = request.POST.get("preview_protocol", "openai")
    if protocol not in PREVIEW_PROTOCOLS and protocol not in SOCKET_PROTOCOLS:
        protocol = "openai"
    turn = _int_or_none(request.POST.get("preview_turn")) or 1
    turn = max(1, min(turn, 1000))
    if posted.scenario is None:
        return render(request, "scenarios_app/preview.html", {"invalid": True})
    if protocol in SOCKET_PROTOCOLS:
        context = socket_preview_context(posted.scenario, posted.row, turn, protocol)
        return render(request, "scenarios_app/socket_preview.html", context)
    return render(request, "scenarios_app/preview.html", preview_context(posted.scenario, posted.row, turn, protocol))
