"""The coverage report as the grid shows it: a row per provider (native ones first), a cell per obligation with its
label (passed/total, cassettes/floor) and the sentence hovering it says. The page, the evidence page and the admin
share it."""

from __future__ import annotations

from typing import Any

from runs_app.coverage.models import SERVED_PROVIDERS
from runs_app.coverage.report import CASSETTES, NOT_APPLICABLE, WAIVED, tier_patterns
from runs_app.models import Provider

STATE_LABELS = {
    "passing": "passing",
    "failing": "failing",
    "missing": "missing",
    "not_applicable": "n/a",
    "waived": "waived",
}


def _label(obligation: str, cell: dict[str, Any]) -> str:
    """The counts a grid cell shows: passed/total for a tier, cassettes/floor for cassettes."""
    if cell["state"] == NOT_APPLICABLE and not cell["total"]:
        return "—"
    if obligation == CASSETTES:
        return f"{cell['count']}/{cell['floor']}"
    if not cell["total"]:
        return "0"
    return f"{cell['passed']}/{cell['total']}"


def cell_title(cell: dict[str, Any]) -> str:
    """What hovering a cell says: why it has its colour (and for a waived one, the waiver first)."""
    reason = cell["reason"][:1].upper() + cell["reason"][1:]
    waiver = cell["waiver"]
    if cell["state"] == WAIVED and waiver:
        by = f" by {waiver['by']}" if waiver["by"] else ""
        return f"Waived until {waiver['expires_on']}{by}: {waiver['reason']}. {reason}"
    return reason


def grid_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's providers as table rows for the grid partial, native providers first, cells in obligation
    order (templates cannot look a dict up by a variable key)."""
    rows = []
    for entry in report["providers"]:
        cells = [
            {
                **entry["cells"][obligation],
                "obligation": obligation,
                "label": _label(obligation, entry["cells"][obligation]),
                "title": cell_title(entry["cells"][obligation]),
                "state_label": STATE_LABELS.get(entry["cells"][obligation]["state"], ""),
            }
            for obligation in report["obligations"]
        ]
        onboarding = Provider.Onboarding(entry["onboarding"]).label if entry["onboarding"] else ""
        rows.append(
            {"name": entry["name"], "onboarding": entry["onboarding"], "onboarding_label": onboarding, "cells": cells}
        )
    rows.sort(key=lambda row: (row["onboarding"] != Provider.Onboarding.NATIVE, row["name"]))
    return rows


def grid_context(report: dict[str, Any]) -> dict[str, Any]:
    """Template context for ``runs_app/coverage_grid.html``, with what counts toward a cell (the tiers' test-name
    patterns) and the providers this harness serves, which the page says."""
    return {
        "report": report,
        "obligations": report["obligations"],
        "rows": grid_rows(report),
        "tier_patterns": [{"tier": tier, "patterns": patterns} for tier, patterns in tier_patterns().items()],
        "served": SERVED_PROVIDERS,
    }
