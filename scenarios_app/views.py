"""Scenario pages: the list (search, tag filter, run statistics), import, export, clone, delete, and the version
history (diff, restore). The editor's own pages are in :mod:`scenarios_app.editor.views`.

Every view needs a logged-in user. htmx requests get the partial template of the element they swap; the same
partial is included by the full page, so a page and its swaps never drift apart. Every write goes through
:meth:`Scenario.upsert`, which records a version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.apps import apps
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from pydantic import ValidationError

from harnessweb.apikit import unstorable_path
from harnessweb.engine import loader
from harnessweb.engine.schemas import Scenario as ScenarioSchema
from harnessweb.htmx import vary_on_htmx, wants_partial
from scenarios_app.editor.raw import to_raw
from scenarios_app.models import Scenario, ScenarioVersion
from scenarios_app.versions import diff_lines, restore_version

# -- the list -----------------------------------------------------------------------------------------------------


def scenario_rows(q: str = "", tag: str = "") -> list[dict[str, Any]]:
    """The list's rows, run statistics included, in one query (correlated subqueries, not a query per row)."""
    # Runs belong to runs_app, which builds on this app: they are read by app label, so no import goes back up.
    Run = apps.get_model("runs_app", "Run")
    runs = Run.objects.filter(scenario_id=OuterRef("pk")).order_by()

    def count(filter_q: Q) -> Coalesce:
        counted = runs.filter(filter_q).values("scenario_id").annotate(n=Count("pk")).values("n")
        return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))

    rows = Scenario.objects.annotate(
        last_status=Subquery(runs.order_by("-started_at").values("status")[:1]),
        # A skipped run (CI's word for a test that did not run) counts neither way, nor an abandoned one (a
        # conversation that stopped coming back: its client left, it did not fail).
        runs_finished=count(~Q(status__in=[Run.Status.RUNNING, Run.Status.SKIPPED, Run.Status.ABANDONED])),
        runs_passed=count(Q(status=Run.Status.PASSED)),
    ).order_by("id")
    if q:
        rows = rows.filter(Q(id__icontains=q) | Q(description__icontains=q))
    result = []
    for row in rows:
        tags = row.data.get("tags") or []
        if tag and tag not in tags:
            continue  # in Python: JSON containment is not portable to SQLite, and the list is small
        rate = round(100 * row.runs_passed / row.runs_finished) if row.runs_finished else None
        result.append(
            {
                "id": row.id,
                "url": row.get_absolute_url(),
                "description": row.description,
                "tags": tags,
                "turns": len(row.data.get("turns") or []),
                "last_status": row.last_status or "",
                "passed": row.runs_passed,
                "finished": row.runs_finished,
                "pass_rate": rate,
                "updated_at": row.updated_at,
            }
        )
    return result


def all_tags() -> list[str]:
    """Every tag used by a stored scenario, sorted: the list's filter choices."""
    tags: set[str] = set()
    for value in Scenario.objects.values_list("data__tags", flat=True):
        tags.update(value or [])
    return sorted(tags)


@vary_on_htmx
@require_GET
@login_required
def scenario_list(request: HttpRequest) -> HttpResponse:
    """Scenarios with search (id or description) and a tag filter; htmx searches swap only the table."""
    q = request.GET.get("q", "").strip()
    tag = request.GET.get("tag", "").strip()
    context = {"rows": scenario_rows(q, tag), "q": q, "tag": tag}
    if wants_partial(request):
        return render(request, "scenarios_app/scenario_table.html", context)
    return render(request, "scenarios_app/list.html", {**context, "tags": all_tags()})


# -- import, export, clone, delete --------------------------------------------------------------------------------


def _read_source(name: str, text: str) -> list[ScenarioSchema]:
    """The scenarios in one uploaded or pasted text, read as the loader reads a file of that name."""
    path = Path(name)
    if path.suffix.lower() not in loader.SCENARIO_SUFFIXES:
        raise loader.ScenarioFileError(f"{name}: not a scenario file (expected {', '.join(loader.SCENARIO_SUFFIXES)})")
    if not text.strip():
        raise loader.ScenarioFileError(f"{name}: the file is empty")
    # The loader's parser and validator, fed text instead of a path: the same messages, naming the file.
    scenarios = loader.scenarios_in_text(path, text)
    for scenario in scenarios:
        found = unstorable_path(scenario.canonical())
        if found:
            where, reason = found
            raise loader.ScenarioFileError(f"{name}: {'.'.join(str(p) for p in where)}: {reason}")
    return scenarios


def read_import(request: HttpRequest) -> tuple[list[tuple[str, ScenarioSchema]], list[str]]:
    """Every scenario in the uploaded files and the pasted text, or the problems (each naming its file)."""
    sources: list[tuple[str, str]] = []
    problems: list[str] = []
    for upload in request.FILES.getlist("files"):
        name = Path(upload.name or "upload").name
        try:
            sources.append((name, upload.read().decode("utf-8-sig")))
        except UnicodeDecodeError as exc:
            problems.append(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})")
    pasted = request.POST.get("text", "").replace("\r\n", "\n")
    if pasted.strip():
        fmt = request.POST.get("text_format", "yaml")
        sources.append((f"pasted.{'json' if fmt == 'json' else 'yaml'}", pasted))
    if not sources and not problems:
        return [], ["Choose a file or paste a scenario."]
    found: list[tuple[str, ScenarioSchema]] = []
    origin: dict[str, str] = {}
    for name, text in sources:
        try:
            scenarios = _read_source(name, text)
        except loader.ScenarioFileError as exc:
            problems.extend(str(exc).splitlines())
            continue
        for scenario in scenarios:
            if scenario.id in origin:
                problems.append(f"{name}: scenario id {scenario.id!r} is also in {origin[scenario.id]}")
                continue
            origin[scenario.id] = name
            found.append((name, scenario))
    return found, problems


@require_http_methods(["GET", "POST"])
@login_required
def import_scenarios(request: HttpRequest) -> HttpResponse:
    """Import scenarios from uploaded JSON/YAML files and/or pasted text: all of them, or none if any is bad."""
    context: dict[str, Any] = {"text": "", "text_format": "yaml"}
    if request.method == "GET":
        return render(request, "scenarios_app/import.html", context)
    context.update(text=request.POST.get("text", ""), text_format=request.POST.get("text_format", "yaml"))
    found, problems = read_import(request)
    if problems:
        context["problems"] = problems
        return render(request, "scenarios_app/import.html", context, status=422)
    results = []
    with transaction.atomic():
        for name, scenario in found:
            row, outcome = Scenario.upsert(scenario, user=request.user, note=f"imported from {name}"[:200])
            results.append({"id": row.id, "url": row.get_absolute_url(), "outcome": outcome, "source": name})
    context.update(results=results, text="")
    return render(request, "scenarios_app/import.html", context)


@require_GET
@login_required
def export(request: HttpRequest, scenario_id: str) -> HttpResponse:
    """Download the scenario: canonical JSON, or YAML with ``?format=yaml``."""
    row = get_object_or_404(Scenario, id=scenario_id)
    if request.GET.get("format") == "yaml":
        body = to_raw(row.data, "yaml")
        content_type, suffix = "application/yaml; charset=utf-8", "yaml"
    else:
        body = loader.dump_scenario(row.to_schema())
        content_type, suffix = "application/json; charset=utf-8", "json"
    response = HttpResponse(body.encode("utf-8"), content_type=content_type)
    # The id is a slug (letters, digits, . _ -): safe as a file name in the header as it is.
    response["Content-Disposition"] = f'attachment; filename="{row.id}.{suffix}"'
    return response


@require_http_methods(["GET", "POST"])
@login_required
def clone(request: HttpRequest, scenario_id: str) -> HttpResponse:
    """Copy a scenario under a new id (asked for on a small form)."""
    row = get_object_or_404(Scenario, id=scenario_id)
    new_id = request.POST.get("new_id", "").strip() if request.method == "POST" else f"{row.id}-copy"[:100]
    context: dict[str, Any] = {"row": row, "new_id": new_id, "edit_url": row.get_absolute_url()}
    if request.method == "GET":
        return render(request, "scenarios_app/clone.html", context)
    errors: list[str] = []
    try:
        scenario = ScenarioSchema.model_validate({**row.data, "id": new_id})
    except ValidationError as exc:
        errors = [e["msg"] for e in exc.errors()]
    else:
        if Scenario.objects.filter(id=scenario.id).exists():
            errors = [f"A scenario {scenario.id!r} already exists."]
    if errors:
        return render(request, "scenarios_app/clone.html", {**context, "errors": errors}, status=422)
    copy, _ = Scenario.upsert(scenario, user=request.user, note=f"cloned from {row.id}")
    messages.success(request, f"Cloned {row.id} as {copy.id}.")
    return redirect(copy.get_absolute_url())


@vary_on_htmx
@require_http_methods(["GET", "POST"])
@login_required
def delete(request: HttpRequest, scenario_id: str) -> HttpResponse:
    """GET asks for confirmation; only POST deletes (the scenario and its versions; its runs stay)."""
    row = get_object_or_404(Scenario, id=scenario_id)
    if request.method == "GET":
        return render(request, "scenarios_app/delete.html", {"row": row, "versions": row.versions.count()})
    row.delete()
    if wants_partial(request):
        return HttpResponse("")  # the list's row swaps itself out
    messages.success(request, f"Deleted {scenario_id}.")
    return redirect("scenarios:list")


# -- versions -----------------------------------------------------------------------------------------------------


@vary_on_htmx
@require_GET
@login_required
def version_diff(request: HttpRequest, scenario_id: str, number: int) -> HttpResponse:
    """The unified diff from a saved version to the current data."""
    row = get_object_or_404(Scenario, id=scenario_id)
    version = get_object_or_404(ScenarioVersion, scenario=row, number=number)
    latest = row.versions.order_by("-number").values_list("number", flat=True).first()
    context = {
        "row": row,
        "version": version,
        "is_current": version.data == row.data,
        "latest": latest,
        "lines": diff_lines(version.data, row.data, f"version {number}", "current"),
        "edit_url": row.get_absolute_url(),
    }
    template = "scenarios_app/diff.html" if wants_partial(request) else "scenarios_app/diff_page.html"
    return render(request, template, context)


@vary_on_htmx
@require_POST
@login_required
def version_restore(request: HttpRequest, scenario_id: str, number: int) -> HttpResponse:
    """Save an old version's data as a new version (the versions in between stay in the history)."""
    row = get_object_or_404(Scenario, id=scenario_id)
    version = get_object_or_404(ScenarioVersion, scenario=row, number=number)
    try:
        saved, outcome = restore_version(version, request.user)
    except ValidationError as exc:
        messages.error(request, f"Version {number} no longer validates: {exc.errors()[0]['msg']}")
        return redirect(row.get_absolute_url())
    if outcome == "unchanged":
        messages.info(request, f"Version {number} is already the current data.")
    else:
        messages.success(request, f"Restored version {number} as a new version.")
    if wants_partial(request):
        return HttpResponse(headers={"HX-Redirect": saved.get_absolute_url()})
    return redirect(saved.get_absolute_url())
