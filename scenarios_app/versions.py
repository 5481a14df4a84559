"""Scenario history: restoring a saved version, and the diff between two saved states.

Versions are recorded by :meth:`Scenario.upsert`, the one write path of the dashboard (editor, import, clone,
restore), the loaders and the API.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from harnessweb.engine.schemas import Scenario as ScenarioSchema
from harnessweb.text import pretty_json
from scenarios_app.models import Scenario, ScenarioVersion


def restore_version(version: ScenarioVersion, user: Any = None) -> tuple[Scenario, str]:
    """Save an old version's data as the newest version. Raises pydantic's ValidationError if the data no longer
    validates (the schema changed since it was saved)."""
    scenario = ScenarioSchema.model_validate(version.data)
    return Scenario.upsert(scenario, user=user, note=f"restored version {version.number}")


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff and its kind: ``meta`` (file names), ``hunk`` (@@), ``add``, ``del`` or ``ctx``."""

    kind: str
    text: str


def diff_lines(old: Any, new: Any, old_label: str, new_label: str, context: int = 3) -> list[DiffLine]:
    """The unified diff from ``old`` to ``new`` (scenario data), each line tagged for styling; empty if equal."""
    lines = difflib.unified_diff(
        pretty_json(old).splitlines(), pretty_json(new).splitlines(), old_label, new_label, n=context, lineterm=""
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
