"""The editor's panel: what an editor post holds once read and validated (:func:`read_post`), and the context
of the panel partial (tabs, the form or the raw text, the status line and Save) for a post or a stored scenario.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict
from django.shortcuts import get_object_or_404
from pydantic import ValidationError

from harnessweb.apikit import unstorable_path
from harnessweb.engine import loader
from harnessweb.engine.schemas import Scenario as ScenarioSchema
from scenarios_app.editor.binding import bind
from scenarios_app.editor.fields import (
    ALL,
    FAILURE_STATUSES,
    KEY_PLACES,
    KINDS,
    MATCH_FIELDS,
    RAW_FORMATS,
    REASONING_CHOICES,
    REPORT_STATUSES,
    Errors,
    FormState,
    parse_form,
)
from scenarios_app.editor.mapping import (
    error_field,
    field_names,
    form_problem,
    new_scenario_state,
    scenario_to_state,
    state_to_data,
    validate_state,
)
from scenarios_app.editor.raw import from_raw, raw_errors, to_raw
from scenarios_app.models import Scenario

MATCH_LABELS = {
    "model": "Model",
    "system_contains": "System prompt contains",
    "first_user_contains": "First user message contains",
    "first_user_regex": "First user message matches (regex)",
    "last_user_contains": "Last user message contains",
    "last_user_regex": "Last user message matches (regex)",
    "tools_include": "Tools offered include (comma-separated)",
}


@dataclass
class Posted:
    """What the editor posted, read and validated: the form state or the raw text, and the scenario if valid."""

    mode: str
    row: Scenario | None
    state: FormState | None = None
    raw_text: str = ""
    raw_format: str = "json"
    data: Any = None
    scenario: ScenarioSchema | None = None
    errors: Errors = field(default_factory=dict)
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
        return error_field(path), reason
    return None


def check_state(state: FormState, row: Scenario | None) -> tuple[ScenarioSchema | None, Errors]:
    """The model's verdict on a form state, then the storage checks (id taken or changed, unstorable text)."""
    scenario, errors = validate_state(state)
    if scenario is not None:
        problem = storage_problem(scenario, row)
        if problem:
            slot, message = problem
            errors[slot if slot in field_names(state) else ALL] = [message]
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
        state = parse_form(post)
        if row is not None:
            state["id"] = row.id  # the id field is read-only for a stored scenario: cloning makes another id
        posted.state = state
        posted.data, _ = state_to_data(state)
        posted.scenario, posted.errors = check_state(state, row)
        return posted
    posted.raw_format = post.get("raw_format") if post.get("raw_format") in RAW_FORMATS else "json"
    posted.raw_text = post.get("raw", "").replace("\r\n", "\n")
    try:
        posted.data = from_raw(posted.raw_text, posted.raw_format)
    except loader.ScenarioFileError as exc:
        posted.errors = {ALL: str(exc).splitlines()}
        return posted
    problems = raw_errors(posted.data)
    if problems:
        posted.errors = {ALL: problems}
        return posted
    posted.scenario = ScenarioSchema.model_validate(posted.data)
    problem = storage_problem(posted.scenario, row)
    if problem:
        slot, message = problem
        posted.errors = {ALL: [message if slot == ALL else f"{slot}: {message}"]}
        posted.scenario = None
    return posted


def _status(posted_scenario: ScenarioSchema | None, errors: Errors, row: Scenario | None) -> dict[str, Any]:
    """The line beside Save: how many problems, or whether the valid scenario differs from the stored one. ``ok``:
    Save may be pressed; ``unsaved``: leaving the page would lose something (the page asks first)."""
    count = sum(len(m) for m in errors.values())
    if row is None and posted_scenario is None and not count:
        return {"ok": False, "unsaved": True, "text": "Not saved yet: give the scenario an id"}
    if count or posted_scenario is None:
        return {
            "ok": False,
            "unsaved": True,
            "text": f"{count} problem{'s' if count != 1 else ''}: nothing can be saved",
        }
    if row is not None and posted_scenario.canonical() == row.data:
        return {"ok": True, "unsaved": False, "text": "Valid · no unsaved changes"}
    return {"ok": True, "unsaved": True, "text": "Valid · unsaved changes"}


def panel_context(
    *,
    row: Scenario | None,
    mode: str,
    state: FormState | None = None,
    errors: Errors | None = None,
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
        "kinds": KINDS,
        "report_statuses": REPORT_STATUSES,
        "failure_statuses": FAILURE_STATUSES,
        "reasoning_choices": REASONING_CHOICES,
        "key_places": KEY_PLACES,
    }
    context["current_tab"] = "form" if mode == "form" else raw_format
    context["tab_choices"] = [("form", "Form"), ("json", "JSON"), ("yaml", "YAML")]
    if mode == "form":
        assert state is not None
        form = bind(state, errors)
        context["form"] = form
        context["match_fields"] = [(MATCH_LABELS[key], form["match"][key]) for key in MATCH_FIELDS]
    else:
        context.update(raw_text=raw_text, raw_format=raw_format, raw_errors=errors.get(ALL, []))
    return context


def posted_panel(posted: Posted, notice: str = "", **changes: Any) -> dict[str, Any]:
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


def stored_schema(row: Scenario) -> ScenarioSchema | None:
    """The stored scenario as the model reads it; None for data that no longer validates (edited by hand in the
    database, or saved under an older schema): the editor then opens it as raw text with the model's errors."""
    try:
        return row.to_schema()
    except ValidationError:
        return None


def open_panel(row: Scenario | None) -> dict[str, Any]:
    """The panel as a stored scenario opens: the form, unless the form would alter a value (then the raw tab)."""
    if row is None:
        state = new_scenario_state()
        return panel_context(row=None, mode="form", state=state)
    stored = stored_schema(row)
    problem = form_problem(row.data) if stored else "the stored data does not validate"
    if problem:
        errors = {ALL: raw_errors(row.data)} if stored is None else {}
        return panel_context(
            row=row,
            mode="raw",
            raw_text=to_raw(row.data, "json"),
            scenario=stored,
            errors=errors,
            notice=f"Opened on the raw tab: {problem}.",
        )
    return panel_context(row=row, mode="form", state=scenario_to_state(row.data), scenario=stored)


def flat_errors(errors: Errors) -> list[str]:
    return [f"{name}: {m}" if name != ALL else m for name, messages in errors.items() for m in messages]
