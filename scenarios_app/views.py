"""Scenario authoring pages: the list, the editor (form, raw JSON/YAML, live validation, preview), import, export,
clone, delete and the version history.

Every view needs a logged-in user. htmx requests get the partial template of the element they swap; the same
partial is included by the full page, so a page and its swaps never drift apart. Validation is always the pydantic
model's (through :mod:`scenarios_app.editor_form`); every write goes through :meth:`Scenario.upsert`, which records
a version.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseBase, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from pydantic import ValidationError

from harnessweb.apikit import unstorable_path
from harnessweb.htmx import vary_on_htmx, wants_partial
from harnessweb.text import pretty_json
from scenarios_app import editor_form, loader
from scenarios_app.models import Scenario, ScenarioVersion
from scenarios_app.playback import Catalog, decide
from scenarios_app.schemas import Scenario as ScenarioSchema
from scenarios_app.versions import diff_lines, restore_version
from scenarios_app.wire import BY_NAME

# Ids that name the list's own pages: such a scenario's editor is reached at <id>/edit/ instead.
RESERVED_IDS = frozenset({"new", "import", "editor"})
PREVIEW_MODEL = "scenario-harness"
MATCH_LABELS = {
    "model": "Model",
    "system_contains": "System prompt contains",
    "first_user_contains": "First user message contains",
    "first_user_regex": "First user message matches (regex)",
    "last_user_contains": "Last user message contains",
    "last_user_regex": "Last user message matches (regex)",
    "tools_include": "Tools offered include (comma-separated)",
}


def edit_url(scenario_id: str) -> str:
    """The editor's address for a scenario (``<id>/edit/`` for ids that name one of the list's own pages)."""
    if scenario_id in RESERVED_IDS:
        return reverse("scenarios:edit_alt", args=[scenario_id])
    return reverse("scenarios:edit", args=[scenario_id])


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
        runs_finished=count(~Q(status=Run.Status.RUNNING)),
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
                "url": edit_url(row.id),
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


# -- reading the editor's post ------------------------------------------------------------------------------------


@dataclass
class Posted:
    """What the editor posted, read and validated: the form state or the raw text, and the scenario if valid."""

    mode: str
    row: Scenario | None
    state: editor_form.FormState | None = None
    raw_text: str = ""
    raw_format: str = "json"
    data: Any = None
    scenario: ScenarioSchema | None = None
    errors: editor_form.Errors = field(default_factory=dict)
    # Carried through re-renders of the panel: the revision the author started from, and the version's note.
    base_revision: str = ""
    version_note: str = ""


def _row_for(post: QueryDict) -> Scenario | None:
    original = post.get("original_id", "")
    if not original:
        return None
    return get_object_or_404(Scenario, id=original)


def storage_problem(scenario: ScenarioSchema, row: Scenario | None) -> tuple[str, str] | None:
    """Why this valid scenario cannot be stored from this editor, as (form slot, message); None when it can."""
    if row is not None and scenario.id != row.id:
        return "id", f"This is scenario {row.id!r}; to make {scenario.id!r} from it, clone it."
    if row is None and Scenario.objects.filter(id=scenario.id).exists():
        return "id", f"A scenario {scenario.id!r} already exists: open it to edit it, or choose another id."
    found = unstorable_path(scenario.canonical())
    if found:
        path, reason = found
        return editor_form.error_field(path), reason
    return None


def check_state(state: editor_form.FormState, row: Scenario | None) -> tuple[ScenarioSchema | None, editor_form.Errors]:
    """The model's verdict on a form state, then the storage checks (id taken or changed, unstorable text)."""
    scenario, errors = editor_form.validate_state(state)
    if scenario is not None:
        problem = storage_problem(scenario, row)
        if problem:
            slot, message = problem
            errors[slot if slot in editor_form.field_names(state) else editor_form.ALL] = [message]
            scenario = None
    return scenario, errors


def read_post(post: QueryDict) -> Posted:
    """Read the editor form (either tab) and validate it with the model, plus the checks only storage can make."""
    row = _row_for(post)
    mode = "raw" if post.get("mode") == "raw" else "form"
    posted = Posted(
        mode=mode, row=row, base_revision=post.get("base_revision", ""), version_note=post.get("version_note", "")
    )
    if mode == "form":
        state = editor_form.parse_form(post)
        if row is not None:
            state["id"] = row.id  # the id field is read-only for a stored scenario: cloning makes another id
        posted.state = state
        posted.data, _ = editor_form.state_to_data(state)
        posted.scenario, posted.errors = check_state(state, row)
        return posted
    posted.raw_format = post.get("raw_format") if post.get("raw_format") in editor_form.RAW_FORMATS else "json"
    posted.raw_text = post.get("raw", "").replace("\r\n", "\n")
    try:
        posted.data = editor_form.from_raw(posted.raw_text, posted.raw_format)
    except loader.ScenarioFileError as exc:
        posted.errors = {editor_form.ALL: str(exc).splitlines()}
        return posted
    problems = editor_form.raw_errors(posted.data)
    if problems:
        posted.errors = {editor_form.ALL: problems}
        return posted
    posted.scenario = ScenarioSchema.model_validate(posted.data)
    problem = storage_problem(posted.scenario, row)
    if problem:
        slot, message = problem
        posted.errors = {editor_form.ALL: [message if slot == editor_form.ALL else f"{slot}: {message}"]}
        posted.scenario = None
    return posted


# -- rendering the editor -----------------------------------------------------------------------------------------


def _status(posted_scenario: ScenarioSchema | None, errors: editor_form.Errors, row: Scenario | None) -> dict[str, Any]:
    """The line beside Save: how many problems, or whether the valid scenario differs from the stored one."""
    count = sum(len(m) for m in errors.values())
    if row is None and posted_scenario is None and not count:
        return {"ok": False, "text": "Not saved yet: give the scenario an id"}
    if count or posted_scenario is None:
        return {"ok": False, "text": f"{count} problem{'s' if count != 1 else ''}: nothing can be saved"}
    if row is not None and posted_scenario.canonical() == row.data:
        return {"ok": True, "text": "Valid · no unsaved changes"}
    return {"ok": True, "text": "Valid · unsaved changes"}


def panel_context(
    *,
    row: Scenario | None,
    mode: str,
    state: editor_form.FormState | None = None,
    errors: editor_form.Errors | None = None,
    scenario: ScenarioSchema | None = None,
    raw_text: str = "",
    raw_format: str = "json",
    notice: str = "",
    base_revision: str | None = None,
    version_note: str = "",
) -> dict[str, Any]:
    """The context of the editor's panel partial (tabs, the form or the raw text, the status line and Save)."""
    errors = errors or {}
    if base_revision is None:
        base_revision = str(row.revision) if row else ""
    context: dict[str, Any] = {
        "mode": mode,
        "row": row,
        "original_id": row.id if row else "",
        "base_revision": base_revision,
        "version_note": version_note,
        "notice": notice,
        "status": _status(scenario, errors, row),
        "kinds": editor_form.KINDS,
        "report_statuses": editor_form.REPORT_STATUSES,
        "failure_statuses": editor_form.FAILURE_STATUSES,
        "reasoning_choices": editor_form.REASONING_CHOICES,
    }
    context["current_tab"] = "form" if mode == "form" else raw_format
    context["tab_choices"] = [("form", "Form"), ("json", "JSON"), ("yaml", "YAML")]
    if mode == "form":
        assert state is not None
        form = editor_form.bind(state, errors)
        context["form"] = form
        context["match_fields"] = [(MATCH_LABELS[key], form["match"][key]) for key in editor_form.MATCH_FIELDS]
    else:
        context.update(raw_text=raw_text, raw_format=raw_format, raw_errors=errors.get(editor_form.ALL, []))
    return context


def _render_panel(request: HttpRequest, context: dict[str, Any], status: int = 200) -> HttpResponse:
    return render(request, "scenarios_app/editor_panel.html", context, status=status)


def _posted_panel(posted: Posted, notice: str = "", **changes: Any) -> dict[str, Any]:
    """The panel for what was posted (``changes`` override any of panel_context's arguments)."""
    arguments: dict[str, Any] = {
        "row": posted.row,
        "mode": posted.mode,
        "state": posted.state,
        "errors": posted.errors,
        "scenario": posted.scenario,
        "raw_text": posted.raw_text,
        "raw_format": posted.raw_format,
        "notice": notice,
        "base_revision": posted.base_revision if posted.row else "",
        "version_note": posted.version_note,
    }
    return panel_context(**{**arguments, **changes})


def _stored_schema(row: Scenario) -> ScenarioSchema | None:
    """The stored scenario as the model reads it; None for data that no longer validates (edited by hand in the
    database, or saved under an older schema): the editor then opens it as raw text with the model's errors."""
    try:
        return row.to_schema()
    except ValidationError:
        return None


def _page_context(row: Scenario | None, panel: dict[str, Any]) -> dict[str, Any]:
    context = {
        **panel,
        "page_title": row.id if row else "New scenario",
        "protocols": {name: wire.LABEL for name, wire in BY_NAME.items()},
        "full_page": True,
    }
    if row is not None:
        context["versions"] = list(row.versions.select_related("saved_by").order_by("-number"))
        context["edit_url"] = edit_url(row.id)
        stored = _stored_schema(row)
        if stored is not None:
            context.update(preview_context(stored, row, 1, "openai"))
    return context


def _open_panel(row: Scenario | None) -> dict[str, Any]:
    """The panel as a stored scenario opens: the form, unless the form would alter a value (then the raw tab)."""
    if row is None:
        state = editor_form.new_scenario_state()
        return panel_context(row=None, mode="form", state=state)
    stored = _stored_schema(row)
    problem = editor_form.form_problem(row.data) if stored else "the stored data does not validate"
    if problem:
        errors = {editor_form.ALL: editor_form.raw_errors(row.data)} if stored is None else {}
        return panel_context(
            row=row,
            mode="raw",
            raw_text=editor_form.to_raw(row.data, "json"),
            scenario=stored,
            errors=errors,
            notice=f"Opened on the raw tab: {problem}.",
        )
    return panel_context(row=row, mode="form", state=editor_form.scenario_to_state(row.data), scenario=stored)


@require_GET
@login_required
def editor_new(request: HttpRequest) -> HttpResponse:
    """The editor for a new scenario."""
    return render(request, "scenarios_app/editor.html", _page_context(None, _open_panel(None)))


@require_GET
@login_required
def edit(request: HttpRequest, scenario_id: str) -> HttpResponse:
    """The editor of a stored scenario, with its preview and history."""
    row = get_object_or_404(Scenario, id=scenario_id)
    return render(request, "scenarios_app/editor.html", _page_context(row, _open_panel(row)))


@require_POST
@login_required
def validate(request: HttpRequest) -> HttpResponse:
    """Validate the whole editor form as it is typed: the status line, and every field's errors out of band."""
    posted = read_post(request.POST)
    return render(request, "scenarios_app/validation.html", _posted_panel(posted))


@require_POST
@login_required
def switch_panel(request: HttpRequest) -> HttpResponse:
    """Switch between the form and the raw tab, or the raw tab between JSON and YAML, carrying the data over."""
    posted = read_post(request.POST)
    target = request.POST.get("to", "form")
    if posted.mode == "form":
        if target == "form":
            return _render_panel(request, _posted_panel(posted))
        fmt = target if target in editor_form.RAW_FORMATS else "json"
        # The form's data as it is, invalid or not: the raw tab shows the same problems with their paths.
        raw_errors = editor_form.raw_errors(posted.data) if not posted.errors else _flat_errors(posted.errors)
        context = _posted_panel(
            posted,
            mode="raw",
            raw_text=editor_form.to_raw(posted.scenario.canonical() if posted.scenario else posted.data, fmt),
            raw_format=fmt,
            errors={editor_form.ALL: raw_errors} if raw_errors else {},
        )
        return _render_panel(request, context)
    if posted.data is None or (target == "form" and posted.scenario is None):
        # Unparseable raw text, or (to the form) an invalid scenario: stay on the raw tab with the errors.
        notice = "Fix the errors below to switch." if posted.data is None or target == "form" else ""
        return _render_panel(request, _posted_panel(posted, notice=notice))
    if target in editor_form.RAW_FORMATS:
        posted.raw_text = editor_form.to_raw(posted.data, target)
        posted.raw_format = target
        return _render_panel(request, _posted_panel(posted))
    assert posted.scenario is not None
    canonical = posted.scenario.canonical()
    problem = editor_form.form_problem(canonical)
    if problem:
        return _render_panel(request, _posted_panel(posted, notice=f"The form cannot show this scenario: {problem}."))
    state = editor_form.scenario_to_state(canonical)
    scenario, errors = check_state(state, posted.row)
    return _render_panel(request, _posted_panel(posted, mode="form", state=state, errors=errors, scenario=scenario))


def _flat_errors(errors: editor_form.Errors) -> list[str]:
    return [f"{name}: {m}" if name != editor_form.ALL else m for name, messages in errors.items() for m in messages]


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
        return _render_panel(request, _posted_panel(posted))
    op = request.POST.get("op", "")
    if op not in editor_form.OPS:
        return HttpResponse(f"Unknown operation {op!r}", status=400)
    state = editor_form.apply_op(
        posted.state, op, _int_or_none(request.POST.get("turn")), _int_or_none(request.POST.get("item"))
    )
    scenario, errors = check_state(state, posted.row)
    return _render_panel(request, _posted_panel(posted, state=state, errors=errors, scenario=scenario))


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
            posted.errors[editor_form.ALL] = [
                f"This scenario was saved elsewhere since you opened it (revision {base}, now {current}). "
                "Copy your changes from the raw tab, reload, and apply them again."
            ]
            posted.scenario = None
    if posted.scenario is None:
        context = _posted_panel(posted)
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
    url = edit_url(row.id)
    if wants_partial(request):
        return HttpResponse(headers={"HX-Redirect": url})
    return redirect(url)


# -- preview ------------------------------------------------------------------------------------------------------


def try_body(scenario: ScenarioSchema, turn: int, protocol: str) -> dict[str, Any]:
    """The streamed request that plays ``turn`` of the scenario and meets its expectations.

    The first user message is the scenario id, turn-1 assistant messages precede it, the system prompt holds every
    required fragment, the tools are the expected ones, and temperature, top_p and reasoning are as expected.
    """
    step = scenario.turn(turn)
    system = "\n".join(scenario.system_prompt_must_include)
    tools = list(step.expected_tools) if step else []
    body: dict[str, Any] = {"model": PREVIEW_MODEL, "stream": True}
    messages_: list[dict[str, Any]] = [{"role": "user", "content": scenario.id}]
    for earlier in range(1, turn):
        messages_.append({"role": "assistant", "content": f"(the answer of turn {earlier})"})
        messages_.append({"role": "user", "content": "Continue."})
    if protocol == "anthropic":
        body["max_tokens"] = 1024
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [{"name": t, "input_schema": {"type": "object", "properties": {}}} for t in tools]
        if step and step.expected_reasoning == "enabled":
            body["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    else:
        if system:
            messages_.insert(0, {"role": "system", "content": system})
        if tools:
            body["tools"] = [
                {"type": "function", "function": {"name": t, "parameters": {"type": "object", "properties": {}}}}
                for t in tools
            ]
        if step and step.expected_reasoning == "enabled":
            body["reasoning_effort"] = "medium"
    body["messages"] = messages_
    if step and step.expected_temperature is not None:
        body["temperature"] = step.expected_temperature
    if step and step.expected_top_p is not None:
        body["top_p"] = step.expected_top_p
    return body


@dataclass(frozen=True)
class Preview:
    """What the endpoint sends for one turn: the SSE text, plus the simulated failure that comes first, if any."""

    protocol: str
    turn: int
    path: str
    body: dict[str, Any]
    sse: str
    problem: str = ""
    failure_count: int = 0
    failure_status: str = ""
    failure_http: str = ""
    failure_text: str = ""


def build_preview(scenario: ScenarioSchema, turn: int, protocol: str) -> Preview:
    """Run the engine and the protocol's encoder on the request :func:`try_body` builds, pacing off: the bytes are
    those the endpoint would stream (pacing only spaces them out in time)."""
    wire = BY_NAME[protocol]
    body = try_body(scenario, turn, protocol)
    request = wire.parse_request(body)
    decision = decide(
        Catalog.build([scenario]),
        request,
        header_scenario=scenario.id,
        pacing_enabled=False,
        signature_key=settings.HARNESS_SIGNATURE_KEY,
    )
    encoded = wire.encode_reply(decision.reply, request)
    preview = Preview(
        protocol=protocol,
        turn=turn,
        path=wire.PATH,
        body=body,
        sse=encoded.body.decode("utf-8"),
        problem=decision.problem,
    )
    failure = decision.failure
    if failure is None:
        return preview
    if failure.status in ("network_error", "invalid_response"):
        text = (
            "The connection is cut partway through the stream."
            if failure.status == "network_error"
            else wire.malformed(True).body.decode("utf-8")
        )
        http = "" if failure.status == "network_error" else "200"
    else:
        failed = wire.encode_failure(failure)
        headers = "".join(f"\n{k.decode()}: {v.decode()}" for k, v in failed.headers)
        http = f"{failed.status}{headers}"
        text = failed.body.decode("utf-8")
    return replace(
        preview,
        failure_count=decision.failures_before_success,
        failure_status=failure.status,
        failure_http=http,
        failure_text=text,
    )


@require_POST
@login_required
def preview(request: HttpRequest) -> HttpResponse:
    """The preview of the editor's current scenario (saved or not) for one turn and protocol."""
    posted = read_post(request.POST)
    protocol = request.POST.get("preview_protocol", "openai")
    if protocol not in BY_NAME:
        protocol = "openai"
    turn = _int_or_none(request.POST.get("preview_turn")) or 1
    turn = max(1, min(turn, 1000))
    if posted.scenario is None:
        return render(request, "scenarios_app/preview.html", {"invalid": True})
    return render(request, "scenarios_app/preview.html", preview_context(posted.scenario, posted.row, turn, protocol))


def preview_context(scenario: ScenarioSchema, row: Scenario | None, turn: int, protocol: str) -> dict[str, Any]:
    """The preview partial's context; "Try it" is offered once the scenario is stored (the endpoint serves it)."""
    shown = build_preview(scenario, turn, protocol)
    return {
        "preview": shown,
        "protocol_label": BY_NAME[protocol].LABEL,
        "body_json": pretty_json(shown.body),
        "saved": row is not None,
        "unsaved": row is not None and row.data != scenario.canonical(),
        "scenario_id": scenario.id,
    }


# -- import, export, clone, delete --------------------------------------------------------------------------------


def _read_source(name: str, text: str) -> list[ScenarioSchema]:
    """The scenarios in one uploaded or pasted text, read as the loader reads a file of that name."""
    path = Path(name)
    if path.suffix.lower() not in loader.SCENARIO_SUFFIXES:
        raise loader.ScenarioFileError(f"{name}: not a scenario file (expected {', '.join(loader.SCENARIO_SUFFIXES)})")
    if not text.strip():
        raise loader.ScenarioFileError(f"{name}: the file is empty")
    # The loader's parser and validator, fed text instead of a path: the same messages, naming the file.
    scenarios = loader._scenarios_in(path, loader._parse(path, text))
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
            results.append({"id": row.id, "url": edit_url(row.id), "outcome": outcome, "source": name})
    context.update(results=results, text="")
    return render(request, "scenarios_app/import.html", context)


@require_GET
@login_required
def export(request: HttpRequest, scenario_id: str) -> HttpResponse:
    """Download the scenario: canonical JSON, or YAML with ``?format=yaml``."""
    row = get_object_or_404(Scenario, id=scenario_id)
    if request.GET.get("format") == "yaml":
        body = editor_form.to_raw(row.data, "yaml")
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
    context: dict[str, Any] = {"row": row, "new_id": new_id, "edit_url": edit_url(row.id)}
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
    return redirect(edit_url(copy.id))


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
        "edit_url": edit_url(row.id),
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
        return redirect(edit_url(row.id))
    if outcome == "unchanged":
        messages.info(request, f"Version {number} is already the current data.")
    else:
        messages.success(request, f"Restored version {number} as a new version.")
    if wants_partial(request):
        return HttpResponse(headers={"HX-Redirect": edit_url(saved.id)})
    return redirect(edit_url(saved.id))
