"""What the runs list and the run page show, as template contexts: rows, the header, the resilience summary and
each turn's card. The pages and the live sockets render the same contexts."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone

from harnessweb.engine import mcp, wire
from harnessweb.engine.pricing import PriceTable, Total
from harnessweb.engine.routes import SCENARIO_HEADER
from harnessweb.judging.transcript import SOCKET_WIRES
from harnessweb.text import plural
from runs_app.ci.cassette_page import short_timeline
from runs_app.ci.run_streams import run_summaries
from runs_app.closing import close_idle
from runs_app.endpoint import inflight
from runs_app.live.panels import event_row, expectations_panel, request_panel, response_panel, stream_blocks
from runs_app.live.resilience import analyse, format_ms
from runs_app.live.waterfall import asked_by, is_socket
from runs_app.live.waterfall import build as build_waterfall
from runs_app.models import Run, RunEvent
from runs_app.pricing.costs import cost_cell, response_costs, run_cost_context, run_costs
from scenarios_app.models import Scenario

RUNS_PER_PAGE = 25
RUN_FILTERS = ("scenario", "status", "protocol", "source", "date", "hour", "test", "fingerprint")
# The HTTP wires, then the sessions no HTTP route plays: Realtime's and Live's sockets, MCP's tool servers.
PROTOCOL_CHOICES = (*wire.BY_NAME, *SOCKET_WIRES, mcp.PROTOCOL)
SOURCE_CHOICES = ("endpoint", "ci", "pytest")  # pytest: a test's run uploaded by the plugin (--harness-upload)
# What became of a CI or pytest run's test, in the words of a test report.
OUTCOMES = {"passed": "passed", "failed": "failed", "skipped": "skipped", "errored": "error", "running": "running"}
NO_TURN = 0  # events recorded without a turn are shown under "Run"


def run_filters(params: Mapping[str, str]) -> dict[str, str]:
    """The filters a query string sets, blank ones dropped: the form, the pager and the live socket share them."""
    return {name: params.get(name, "").strip() for name in RUN_FILTERS if params.get(name, "").strip()}


def filter_runs(filters: Mapping[str, str]) -> QuerySet[Run]:
    """Runs matching the list's filters, newest first; none when a filter's value is not one it takes
    (``filter_problems`` says which), so a mistyped filter never lists, or judges, every run."""
    if filter_problems(filters):
        return Run.objects.none()
    fields = {name: filters.get(name, "") for name in RUN_FILTERS if name not in ("date", "hour")}
    runs = Run.objects.filtered(**fields, day=_parse_day(filters.get("date", "")))
    hour = _parse_hour(filters.get("hour", ""))
    if hour is not None:
        runs = runs.filter(started_at__gte=hour, started_at__lt=hour + timedelta(hours=1))
    return runs.order_by("-started_at", "-id")


def filter_problems(filters: Mapping[str, str]) -> list[str]:
    """What is wrong with the filters' values, a sentence per filter naming it and what it takes."""
    problems = []
    choices = {"status": Run.Status.values, "protocol": PROTOCOL_CHOICES, "source": SOURCE_CHOICES}
    for name, allowed in choices.items():
        value = filters.get(name, "")
        if value and value not in allowed:
            problems.append(f"{name}: {value!r} is not one of {', '.join(allowed)}.")
    if filters.get("date") and _parse_day(filters["date"]) is None:
        problems.append(f"date: {filters['date']!r} is not a date (YYYY-MM-DD).")
    if filters.get("hour") and _parse_hour(filters["hour"]) is None:
        problems.append(f"hour: {filters['hour']!r} is not an hour (YYYY-MM-DDTHH, local time).")
    fingerprint = filters.get("fingerprint", "")
    if fingerprint and not re.fullmatch(r"[0-9A-Fa-f]{1,64}", fingerprint):
        # The value is not repeated: what is pasted here by mistake is often the key itself.
        problems.append("fingerprint: not a key's fingerprint (up to 64 hex characters, as a run's page shows it).")
    return problems


def _parse_day(value: str) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def _parse_hour(value: str) -> datetime | None:
    """The start of the hour ``YYYY-MM-DDTHH`` (or a time within it, as a browser's datetime field sends it), in the
    current time zone, as the overview's hourly bars count."""
    match = re.fullmatch(r"(\d{4}-\d{2}-\d{2})[T ](\d{2})(?::\d{2}(?::\d{2})?)?", value.strip()) if value else None
    if match is None:
        return None
    try:
        start = datetime.fromisoformat(f"{match[1]}T{match[2]}:00")
    except ValueError:
        return None
    return timezone.make_aware(start)


def hour_filter(start: datetime) -> str:
    """The ``hour`` filter's value for the hour holding ``start`` (its local time)."""
    return timezone.localtime(start).strftime("%Y-%m-%dT%H")


def _query(filters: Mapping[str, str], **extra: Any) -> str:
    return urlencode({**filters, **{k: v for k, v in extra.items() if v not in (None, "")}})


def _duration(run: Run | None) -> str:
    """Start to finish; a run still going says so (its length so far would only be as fresh as the page)."""
    if run is None:
        return "—"
    if run.finished_at:
        return format_ms((run.finished_at - run.started_at).total_seconds() * 1000)
    return "in progress" if run.status == Run.Status.RUNNING else "—"


def asked_scenario(run: Run, events: list[RunEvent] | None = None) -> str:
    """The scenario a run played, or the one its first request asked for by ``X-Harness-Scenario`` when none was
    found (a refused run has no scenario of its own); "" for a run that asked for none. ``events``: the run's, when
    already read (else one query, made only for such a run)."""
    if run.scenario_id or run.mode != "scenario":
        return run.scenario_id
    if events is None:
        data = run.events.filter(kind="request").order_by("seq").values_list("data", flat=True).first()
    else:
        data = next((e.data for e in events if e.kind == "request"), None)
    headers = (data or {}).get("headers") or {}
    asked = headers.get(SCENARIO_HEADER) if isinstance(headers, dict) else None
    return asked.strip() if isinstance(asked, str) else ""


def run_row(run: Run, cost: Total | None = None) -> dict[str, Any]:
    """What one row of the runs list shows: a CI or pytest run's test name and outcome in a column of their own;
    ``cost``, the run's total (``runs_app.pricing.costs.run_costs``, read for all the rows at once)."""
    turns = run.turns_served or []
    scenario = asked_scenario(run)
    return {
        "cost": cost_cell(cost),
        "run": run,
        # lorem, instruction; CI: no scenario; a scenario asked for and not found: its id
        "label": scenario or ("—" if run.mode == "ci" else run.mode),
        "is_scenario": bool(scenario),
        "not_found": bool(scenario) and not run.scenario_id,
        "test": run.name,
        "outcome": OUTCOMES.get(run.status, run.status) if run.name else "",
        "duration": _duration(run),
        "turns": len(turns),
    }


def runs_table_context(filters: dict[str, str], page_number: str | None) -> dict[str, Any]:
    """Context of ``runs_app/runs_table.html``: the page of rows, the pager links and the live socket's URL."""
    close_idle()  # no row reads "running" for a run that can no longer end
    problems = filter_problems(filters)
    page = Paginator(filter_runs(filters), RUNS_PER_PAGE).get_page(page_number)
    costs = run_costs(run.id for run in page.object_list)
    # The socket knows the filters and the page so that live rows respect them; ``since`` tells it which runs are
    # new to this page (the ones started after it was rendered).
    socket_query = _query(filters, page=page.number, since=timezone.now().isoformat())
    return {
        "filters": filters,
        "problems": problems,
        "page": page,
        "rows": [run_row(run, costs[run.id]) for run in page.object_list],
        "previous_query": _query(filters, page=page.previous_page_number()) if page.has_previous() else "",
        "next_query": _query(filters, page=page.next_page_number()) if page.has_next() else "",
        "socket_url": f"/ws/runs/?{socket_query}",
    }


def _turn_state(events: list[RunEvent]) -> tuple[str, str]:
    """A turn's outcome as a badge: the latest answer decides, a failed validation always shows."""
    if any(e.kind == "validation" and not (e.data or {}).get("ok", True) for e in events):
        return "failed", "validation failed"
    last = next((e for e in reversed(events) if e.kind in ("response", "rejected")), None)
    if last is None and events and all(e.kind == "message" for e in events):
        return "running", "messages, no response asked yet"
    if last is None:
        return "running", "in progress"
    if last.kind == "rejected":
        return "failed", "rejected"
    if (last.data or {}).get("failure"):
        return "errored", f"{last.data['failure']}"
    return "passed", "answered"


def _socket_line(kind: str, data: Mapping[str, Any]) -> str:
    """A socket turn's request or answer in one line: the client's message and what the session held, or the
    server's messages, the error it sent, or the cut connection; a message that asked for no response and what
    answered it."""
    if kind == "message":
        replies = ", ".join(str(r) for r in data.get("replies") or []) or "nothing"
        error = f": {data['error']}" if data.get("error") else ""
        closed = f" · session closed: {data['closed']}" if data.get("closed") else ""
        return f"client → server: {data.get('type', '')} · server → client: {replies}{error}{closed}"
    if kind == "request":
        body = data.get("body") if isinstance(data.get("body"), Mapping) else {}
        items, tools = body.get("input", body.get("contents")), body.get("tools")
        counts = f"{plural(len(items), 'item')} · " if isinstance(items, list) else ""
        counts += plural(len(tools) if isinstance(tools, list) else 0, "tool")
        return f"client → server: {asked_by(data)} on {data.get('path', '')} (socket) · {counts}"
    took = format_ms(data.get("duration_ms"))
    if data.get("ttfb_ms") is not None:
        took = f"first message after {format_ms(data['ttfb_ms'])} · {took}"
    if data.get("failure"):
        how = "connection cut mid-response" if data.get("dropped") else "error"
        return f"server → client: {how} ({data['failure']}) · {took}"
    finish = f" · finish {data['finish_reason']}" if data.get("finish_reason") else ""
    return f"server → client: {plural(data.get('chunks') or 0, 'message')}{finish} · {took}"


def _event_rows(events: list[RunEvent], start: datetime | None) -> list[dict[str, Any]]:
    """A turn's timeline; a socket session's turn says its messages in and out, no HTTP exchange."""
    rows = [event_row(e, start) for e in events]
    if any(e.kind == "request" and is_socket(e.data or {}) for e in events):
        for row, event in zip(rows, events, strict=True):
            if event.kind in ("request", "response", "message"):
                row["summary"] = _socket_line(event.kind, event.data or {})
    return rows


def turn_context(
    run: Run | None, number: int, events: list[RunEvent], stored: Scenario | None, prices: PriceTable | None = None
) -> dict[str, Any]:
    """Everything the partials of one turn card need (``run_turn_*.html``); ``prices``: the price table, read once
    per page (read here when not given)."""
    start = run.started_at if run else None
    requests = [e for e in events if e.kind == "request"]
    answers = [e for e in events if e.kind in ("response", "rejected")]
    last_request = requests[-1] if requests else None
    last_answer = answers[-1] if answers else None
    # The answer belongs to the latest attempt only when it came after that attempt's request.
    if last_answer is not None and last_request is not None and last_answer.seq < last_request.seq:
        last_answer = None
    state, state_label = _turn_state(events)
    finished = last_answer is not None and last_answer.kind == "response" and not last_answer.data.get("failure")
    return {
        "number": number,
        "label": "Run" if number == NO_TURN else f"Turn {number}",
        "state": state,
        "state_label": state_label,
        "attempts": len(requests),
        "socket": last_request is not None and is_socket(last_request.data or {}),
        "events": _event_rows(events, start),
        "request": request_panel(last_request) if last_request else None,
        "response": response_panel(last_answer, response_costs(events, prices)) if last_answer else None,
        "blocks": stream_blocks(last_answer.data) if finished else [],
        "expectations": expectations_panel(run, number, last_request, stored) if run else None,
    }


def pending_turn(number: int) -> dict[str, Any]:
    """A turn card before anything about it is recorded (the live socket creates it on its first chunk)."""
    return {
        "number": number,
        "label": "Run" if number == NO_TURN else f"Turn {number}",
        "state": "running",
        "state_label": "in progress",
        "attempts": 0,
        "events": [],
        "request": None,
        "response": None,
        "blocks": [],
        "expectations": None,
    }


def events_by_turn(events: list[RunEvent]) -> dict[int, list[RunEvent]]:
    turns: dict[int, list[RunEvent]] = {}
    for event in events:
        turns.setdefault(event.turn if event.turn is not None else NO_TURN, []).append(event)
    return dict(sorted(turns.items()))


def header_context(
    run_id: uuid.UUID | str, run: Run | None, events: list[RunEvent], stored: Scenario | None
) -> dict[str, Any]:
    """The run page's header: scenario, status, duration, turns, protocol, source."""
    scripted = len(stored.data.get("turns", [])) if stored else None
    served = len(run.turns_served or []) if run else 0
    scenario = asked_scenario(run, events) if run else ""
    return {
        "run_id": str(run_id),
        "run": run,
        "label": (scenario or run.name or run.mode) if run else "",
        "scenario": scenario,
        "not_found": bool(scenario) and not run.scenario_id,
        "duration": _duration(run),
        "turns": f"{served} of {scripted}" if scripted else str(served),
        "events": len(events),
        "cost": run_cost_context(run, events),
    }


_THEN = {"retried": "retried", "went on": "went on to a later turn", "gave up": "gave up", "waiting": "no retry yet"}


def _as_dicts(events: list[RunEvent]) -> list[dict[str, Any]]:
    """Events as the pure analyses read them."""
    return [{"seq": e.seq, "timestamp": e.timestamp, "kind": e.kind, "turn": e.turn, "data": e.data} for e in events]


def _is_live(run: Run | None) -> bool:
    return run is None or run.status == Run.Status.RUNNING


def waterfall_context(run_id: uuid.UUID | str, run: Run | None, events: list[RunEvent]) -> dict[str, Any]:
    """Context of ``runs_app/run_waterfall.html``: the run's requests on one time axis (runs_app/live/waterfall.py),
    a response this process is streaming drawn as far as it went (its first byte and frames so far)."""
    label = (run.scenario_id or run.name or str(run_id)) if run else str(run_id)
    streaming = {s["turn"]: s for s in inflight.snapshot(str(run_id), pieces=False)} if _is_live(run) else {}
    return {"chart": build_waterfall(_as_dicts(events), live=_is_live(run), streaming=streaming), "run_label": label}


def resilience_context(run: Run | None, events: list[RunEvent]) -> dict[str, Any]:
    """Context of ``runs_app/run_resilience.html``: the analysis of the run's events, with rows for its table."""
    report = analyse(_as_dicts(events), live=_is_live(run))
    flagged = {f.sentence for f in report.flagged}
    rows = []
    for failure in report.failures:
        if failure.status == "network_error":
            got = "dropped connection"
        elif not failure.received:
            got = "nothing (hung up first)"
        else:
            got = f"HTTP {failure.http_status}"
        outcome = failure.outcome
        if outcome == "gave up" and not failure.retryable:
            outcome_class = "ok"
        else:
            outcome_class = {"retried": "ok", "went on": "bad", "gave up": "warn"}.get(outcome, "muted")
        rows.append(
            {
                "turn": failure.turn if failure.turn is not None else "—",
                "status": failure.status,
                "attempt": failure.attempt,
                "of": failure.of,
                "tried": failure.tried,
                "retryable": failure.retryable,
                "got": got,
                "advised": format_ms(failure.advised_ms) if failure.advised_ms is not None else "none",
                "waited": format_ms(failure.waited_ms),
                "verdict": failure.verdict,
                "verdict_class": {"honoured": "ok", "too early": "bad"}.get(failure.verdict or "", "muted"),
                "then": _THEN.get(outcome, outcome)
                + (f" (turn {failure.next_turn})" if failure.next_turn is not None else ""),
                "outcome_class": outcome_class,
            }
        )
    return {"report": report, "rows": rows, "sentences": [s for s in report.summary if s not in flagged]}


def load_run(run_id: uuid.UUID | str) -> tuple[Run | None, list[RunEvent], Scenario | None]:
    close_idle(Run.objects.filter(id=run_id))  # an idle run's page says it was abandoned, and why
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        return None, [], None
    events = list(run.events.order_by("seq"))
    stored = Scenario.objects.filter(id=run.scenario_id).first() if run.scenario_id else None
    return run, events, stored


def streams_context(run: Run | None) -> dict[str, Any] | None:
    """Context of ``runs_app/run_streams.html``: each served response's stream summary (seed 003), from its bytes as
    the engine encodes them again (runs_app/ci/run_streams.py), and the cassette export's URL; None before the run
    exists."""
    if run is None:
        return None
    summaries = run_summaries(run)
    rows = [
        {**item["summary"], "turn": item["turn"], "timeline_text": short_timeline(item["summary"]["timeline"])}
        for item in summaries["responses"]
    ]
    return {"rows": rows, "skipped": summaries["skipped"], "export_url": reverse("runs:cassette", args=[run.id])}
