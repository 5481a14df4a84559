"""The overview's queries and template context: a handful of aggregate queries (never one per run) whose rows go to
:mod:`runs_app.overview.figures`, plus the review queue's count and the coverage gaps, each figure with the link to
the list behind it. The page and its live socket render the same context (``render_widgets``)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db.models import Case, Count, Q, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import TruncDay, TruncHour
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from runs_app.closing import close_idle
from runs_app.coverage.report import FAILING, MISSING, coverage_report
from runs_app.live.presenters import hour_filter
from runs_app.live.resilience import format_ms
from runs_app.models import JudgeVerdict, Run, RunEvent
from runs_app.overview import figures
from runs_app.pricing.costs import period_cost

# The events the resilience analysis reads besides the injected failures themselves.
RETRY_KINDS = ("request", "response", "client_disconnected")


def period_of(value: str | None) -> figures.Period:
    """The period a query string asks for; anything else is the default (never an error)."""
    return figures.PERIODS.get(value or "", figures.PERIODS[figures.DEFAULT_PERIOD])


def runs_url(**filters: str) -> str:
    """The runs list with these filters (the ones ``Run.objects.filtered`` and the list's form know)."""
    query = urlencode({name: value for name, value in filters.items() if value})
    return reverse("runs:list") + (f"?{query}" if query else "")


def _chart(runs: Any, period: figures.Period, now: datetime) -> figures.Chart:
    trunc = TruncDay if period.bucket >= timedelta(days=1) else TruncHour
    rows = runs.annotate(bucket=trunc("started_at")).values_list("bucket", "status").annotate(n=Count("id"))
    built = figures.chart(((bucket, status, n) for bucket, status, n in rows.order_by()), period, now)
    for bar in built.bars:
        # A bar opens the runs it counts: its day, or its hour on the hourly chart.
        if trunc is TruncHour:
            when = {"hour": hour_filter(bar.start)}
        else:
            when = {"date": timezone.localtime(bar.start).date().isoformat()}
        bar.url = runs_url(**when)
        for segment in bar.segments:
            segment["url"] = runs_url(**when, status=segment["status"])
    return built


def _drops(start: datetime, period: figures.Period) -> list[dict[str, Any]]:
    rows = (
        Run.objects.filtered(since=start - period.span)
        .exclude(scenario_id="")
        .annotate(current=Case(When(started_at__gte=start, then=Value(True)), default=Value(False)))
        .values_list("scenario_id", "current", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    drops = figures.pass_rate_drops(rows)
    for row in drops:
        row["url"] = runs_url(scenario=row["scenario"], status="failed")
    return drops


def _client_link(row: dict[str, Any]) -> dict[str, Any]:
    key: figures.ClientKey = row["client"]
    timings = {name: format_ms(row[name]) for name in ("median_ms", "ttfb_ms", "max_ms") if name in row}
    return {
        **row,
        **{f"{name}_text": text for name, text in timings.items()},
        "label": key.label,
        "url": runs_url(protocol=key.protocol, source=key.source),
    }


def _clients(start: datetime) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The slowest and the most-retried clients of the runs started since ``start``: four queries."""
    in_period = Q(run__started_at__gte=start)
    requests = (
        RunEvent.objects.filter(in_period, kind="request")
        .values_list("run_id", KT("data__headers__user-agent"), "run__protocol", "run__source")
        .distinct()
        .order_by()
    )
    keys = figures.client_keys(requests)
    responses = RunEvent.objects.filter(in_period, kind="response").values_list(
        "run_id", KT("data__ttfb_ms"), KT("data__duration_ms")
    )
    slowest = figures.slowest_clients(
        keys, ((run, _number(ttfb), _number(duration)) for run, ttfb, duration in responses.order_by())
    )
    failures = RunEvent.objects.filter(in_period, kind="failure_injected")
    events: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in failures.values("run_id", "seq", "timestamp", "kind", "turn", "data").order_by():
        events[row.pop("run_id")].append(row)
    if events:
        others = RunEvent.objects.filter(run_id__in=failures.values("run_id"), kind__in=RETRY_KINDS)
        for row in others.values("run_id", "seq", "timestamp", "kind", "turn").order_by():
            events[row.pop("run_id")].append(row)
    retried = figures.most_retried_clients(keys, events)
    return [_client_link(row) for row in slowest], [_client_link(row) for row in retried]


def _number(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _coverage_gaps() -> tuple[list[dict[str, Any]], int]:
    """The providers with the most unmet obligations, each linked to its evidence, and how many providers have
    one."""
    report = coverage_report()
    gaps = []
    for entry in report["providers"]:
        unmet = [
            {
                "obligation": obligation,
                "state": cell["state"],
                "reason": cell["reason"],
                "url": reverse("runs:coverage_cell", args=[entry["name"], obligation]),
            }
            for obligation, cell in entry["cells"].items()
            if cell["state"] in (FAILING, MISSING)
        ]
        if unmet:
            gaps.append({"provider": entry["name"], "unmet": unmet})
    gaps.sort(key=lambda gap: (-len(gap["unmet"]), gap["provider"]))
    return gaps[: figures.TOP_ROWS], len(gaps)


def overview_context(period_key: str | None, *, staff: bool, base_url: str) -> dict[str, Any]:
    """Context of ``runs_app/overview_widgets.html``: every widget of the overview for one period.

    About a dozen queries whatever the number of runs or events (five of them the coverage report's).
    """
    close_idle()  # a run that can no longer end is counted as abandoned, not running
    period = period_of(period_key)
    # Local time, as the database truncates to hours and days in the current time zone (and the list's date filter
    # reads dates in it).
    now = timezone.localtime()
    start = figures.bucket_starts(period, now)[0]
    runs = Run.objects.filtered(since=start)
    slowest, retried = _clients(start)
    queue = JudgeVerdict.objects.review_queue()
    gaps, gap_providers = _coverage_gaps()
    return {
        "period": period,
        "periods": list(figures.PERIODS.values()),
        "chart": _chart(runs, period, now),
        "statuses": figures.STATUSES,
        "drops": _drops(start, period),
        "cost": period_cost(start),
        "slowest": slowest,
        "retried": retried,
        "review_count": queue.count(),
        "review_url": reverse("admin:runs_app_judgeverdict_queue") if staff else "",
        "coverage_gaps": gaps,
        "coverage_gap_providers": gap_providers,
        "coverage_url": reverse("runs:coverage"),
        "any_runs": Run.objects.exists(),
        "base_url": base_url.rstrip("/"),
        "runs_url": runs_url(),
        "updated_at": now,
        "socket_url": f"/ws/overview/?period={period.key}",
    }


def render_widgets(period_key: str | None, *, staff: bool, base_url: str) -> str:
    """The widgets as an out-of-band swap, for the live socket."""
    context = overview_context(period_key, staff=staff, base_url=base_url)
    return render_to_string("runs_app/overview_widgets.html", {**context, "oob": True})
