"""Saving scenarios with their history, and the diff between two saved states.

Every write from the dashboard (editor, import, clone, restore) goes through :func:`save_with_version`, which is
:meth:`Scenario.upsert`: the one place a version is recorded, so the loaders, the API and the admin's creates keep
history the same way.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError

from scenarios_app.models import Scenario, ScenarioVersion
from scenarios_app.schemas import Scenario as ScenarioSchema


def save_with_version(scenario: ScenarioSchema, user: Any = None, note: str = "") -> tuple[Scenario, str]:
    """Store a validated scenario, recording a version when it is created or changed.

    Returns the row and "created", "updated" or "unchanged" (no write, no version).
    """
    try:
        return Scenario.upsert(scenario, user=user, note=note)
    except IntegrityError:
        # Another request created the same id between upsert's lookup and its insert; now the lookup finds it.
        return Scenario.upsert(scenario, user=user, note=note)


def restore_version(version: ScenarioVersion, user: Any = None) -> tuple[Scenario, str]:
    """Save an old version's data as the newest version. Raises pydantic's ValidationError if the data no longer
    validates (the schema changed since it was saved)."""
    scenario = ScenarioSchema.model_validate(version.data)
    return save_with_version(scenario, user=user, note=f"restored version {version.number}")


def pretty(data: Any) -> str:
    """The canonical pretty JSON the diff compares: the export's form, line by line."""
    return json.dumps(data, indent=2, ensure_ascii=False)


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff and its kind: ``meta`` (file names), ``hunk`` (@@), ``add``, ``del`` or ``ctx``."""

    kind: str
    text: str


def diff_lines(old: Any, new: Any, old_label: str, new_label: str, context: int = 3) -> list[DiffLine]:
    """The unified diff from ``old`` to ``new`` (scenario data), each line tagged for styling; empty if equal."""
    lines = difflib.unified_diff(
        pretty(old).splitlines(), pretty(new).splitlines(), old_label, new_label, n=context, lineterm=""
    )
    result = []
    for text in lines:
        if text.startswith(("---", "+++")):
            kind = "meta"
        elif text.startswith("@@"):
            kind = "hunk"
        elif text.startswith("+"):
            kind = "add"
        elif text.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        result.append(DiffLine(kind, text))
    return result
