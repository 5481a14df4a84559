"""The coverage router: ``GET /api/coverage``, the provider × obligation grid, or with ``gate=1`` the coverage gate."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from harnessweb.apikit import ErrorOut
from runs_app.coverage import gate as gate_of
from runs_app.coverage.report import coverage_report
from runs_app.models import Provider

router = Router()


@router.get("/coverage", response={200: dict[str, Any], 404: ErrorOut, 412: dict[str, Any]},
            summary="Provider test-obligation coverage, or the coverage gate")  # fmt: skip
def coverage(
    request: HttpRequest, today: dt.date | None = None, gate: bool = False, provider: str | None = None
) -> Any:
    """Providers × obligations with each cell's state, as the coverage dashboard shows it; ``today`` evaluates
    waivers' expiry on another day, ``provider`` narrows it to one.

    ``gate=1``: the coverage gate instead, as ``manage.py check_coverage --format json`` gives it (``{"ok",
    "providers", "gaps"}``), with HTTP 200 when every obligation is met and 412 when not, so that ``curl --fail``
    fails a CI job."""
    if provider is not None and not Provider.objects.filter(name=provider).exists():
        return Status(404, {"detail": f"provider: no provider named {provider!r}"})
    report = gate_of.narrowed(coverage_report(today) if today is not None else coverage_report(), provider)
    if not gate:
        return report
    found = gate_of.gaps(report)
    return Status(412 if found else 200, gate_of.as_json(report, found))
