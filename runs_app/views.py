"""Pages of runs_app: the provider coverage grid and the evidence behind each of its cells."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET
from pydantic import ValidationError

from runs_app.coverage import CASSETTES, NOT_APPLICABLE, OBLIGATIONS, WAIVED, coverage_report, provider_coverage
from runs_app.models import Cassette, Provider, Run, RunEvent, TestCaseResult
from runs_app.resilience import analyse, format_ms
from runs_app.wire import anthropic as anthropic_wire
from runs_app.wire import openai as openai_wire
from runs_app.wire.common import WireError
from scenarios_app.models import Scenario
from scenarios_app.playback import TOLERANCE as PLAYBACK_TOLERANCE
from scenarios_app.playback import sanitize_tool_name
from scenarios_app.schemas import Scenario as ScenarioSchema
from scenarios_app.schemas import ScenarioTurn

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


def _title(cell: dict[str, Any]) -> str:
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
                "title": _title(entry["cells"][obligation]),
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
    """Template context for ``runs_app/coverage_grid.html``."""
    return {"report": report, "obligations": report["obligations"], "rows": grid_rows(report)}


@login_required
@require_GET
def coverage(request: HttpRequest) -> HttpResponse:
    return render(request, "runs_app/coverage.html", grid_context(coverage_report()))


def _cassette_admin_url(cassette_id: int) -> str:
    try:
        return reverse("admin:runs_app_cassette_change", args=[cassette_id])
    except NoReverseMatch:
        # Cassettes not (yet) registered in the admin: the URL the admin will give them once they are.
        return f"{reverse('admin:index')}runs_app/cassette/{cassette_id}/change/"


_OUTCOME_ORDER = {"failed": 0, "error": 0, "flaky": 1, "passed": 2, "skipped": 3}


@login_required
@require_GET
def coverage_cell(request: HttpRequest, provider: str, obligation: str) -> HttpResponse:
    if obligation not in OBLIGATIONS:
        raise Http404(f"no obligation {obligation!r}")
    registered = get_object_or_404(Provider, name=provider)
    entry = provider_coverage(registered)
    cell = entry["cells"][obligation]
    cases = sorted(
        TestCaseResult.objects.filter(id__in=cell["evidence"]["test_case_ids"]).select_related("run"),
        key=lambda case: (_OUTCOME_ORDER.get(case.outcome, 9), case.classname, case.name),
    )
    cassettes = [
        {"cassette": cassette, "admin_url": _cassette_admin_url(cassette.pk)}
        for cassette in Cassette.objects.filter(id__in=cell["evidence"]["cassette_ids"])
        .defer("content")
        .order_by("scenario")
    ]
    context = {
        "provider": registered,
        "obligation": obligation,
        "cell": cell,
        "why": _title(cell),
        "state_label": STATE_LABELS.get(cell["state"], ""),
        "cases": cases,
        "cassettes": cassettes,
    }
    return render(request, "runs_app/coverage_cell.html", context)


# -- runs: the list, the run page and the fragments the live sockets send ------------------------------------------
#
# The page views and the WebSocket consumers render the same partials: the sync helpers below that take a run id are
# what the consumers call through ``database_sync_to_async``.

RUNS_PER_PAGE = 25
RUN_FILTERS = ("scenario", "status", "protocol", "source", "date")
PROTOCOL_CHOICES = ("openai", "anthropic")
SOURCE_CHOICES = ("endpoint", "ci")
NO_TURN = 0  # events recorded without a turn are shown under "Run"


def run_filters(params: Mapping[str, str]) -> dict[str, str]:
    """The filters a query string sets, blank ones dropped: the form, the pager and the live socket share them."""
    return {name: params.get(name, "").strip() for name in RUN_FILTERS if params.get(name, "").strip()}


def filter_runs(filters: Mapping[str, str]) -> QuerySet[Run]:
    """Runs matching the filters, newest first. A date that does not parse filters nothing rather than erroring."""
    runs = Run.objects.all()
    if filters.get("scenario"):
        runs = runs.filter(scenario_id=filters["scenario"])
    for name in ("status", "protocol", "source"):
        if filters.get(name):
            runs = runs.filter(**{name: filters[name]})
    day = _parse_day(filters.get("date", ""))
    if day is not None:
        runs = runs.filter(started_at__date=day)
    return runs.order_by("-started_at", "-id")


def _parse_day(value: str) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def _query(filters: Mapping[str, str], **extra: Any) -> str:
    return urlencode({**filters, **{k: v for k, v in extra.items() if v not in (None, "")}})


def _duration(run: Run | None) -> str:
    """Start to finish; a run still going says so (its length so far would only be as fresh as the page)."""
    if run is None:
        return "—"
    if run.finished_at:
        return format_ms((run.finished_at - run.started_at).total_seconds() * 1000)
    return "in progress" if run.status == Run.Status.RUNNING else "—"


def run_row(run: Run) -> dict[str, Any]:
    """What one row of the runs list shows."""
    turns = run.turns_served or []
    return {
        "run": run,
        "label": run.scenario_id or run.name or run.mode,
        "is_scenario": bool(run.scenario_id),
        "duration": _duration(run),
        "turns": len(turns),
    }


def runs_table_context(filters: dict[str, str], page_number: str | None) -> dict[str, Any]:
    """Context of ``runs_app/runs_table.html``: the page of rows, the pager links and the live socket's URL."""
    page = Paginator(filter_runs(filters), RUNS_PER_PAGE).get_page(page_number)
    # The socket knows the filters and the page so that live rows respect them; ``since`` tells it which runs are
    # new to this page (the ones started after it was rendered).
    socket_query = _query(filters, page=page.number, since=timezone.now().isoformat())
    return {
        "filters": filters,
        "page": page,
        "rows": [run_row(run) for run in page.object_list],
        "previous_query": _query(filters, page=page.previous_page_number()) if page.has_previous() else "",
        "next_query": _query(filters, page=page.next_page_number()) if page.has_next() else "",
        "socket_url": f"/ws/runs/?{socket_query}",
    }


@login_required
@require_GET
def runs_list(request: HttpRequest) -> HttpResponse:
    filters = run_filters(request.GET)
    context = runs_table_context(filters, request.GET.get("page"))
    # An htmx filter or pager request gets the table alone; a history restore needs the whole page.
    if request.headers.get("HX-Request") and not request.headers.get("HX-History-Restore-Request"):
        return render(request, "runs_app/runs_table.html", context)
    context.update(
        statuses=Run.Status.values,
        protocols=PROTOCOL_CHOICES,
        sources=SOURCE_CHOICES,
        scenario_ids=list(Scenario.objects.values_list("id", flat=True)),
        new_run_id=uuid.uuid4(),
    )
    return render(request, "runs_app/runs_list.html", context)


def render_run_rows(run_ids: Iterable[str], query_string: str) -> str:
    """Rows for runs that were created or changed, as out-of-band swaps for a runs list with these query params.

    Runs new to the page (started after it was rendered) that match its filters go on top of the first page; any
    other run replaces its row by id, which is a no-op when that row is not on the page.
    """
    params = QueryDict(query_string)
    filters = run_filters(params)
    since = parse_datetime(params.get("since", ""))
    first_page = params.get("page", "1") in ("", "1")
    runs = list(Run.objects.filter(id__in=list(run_ids)).order_by("-started_at", "-id"))
    if not runs:
        return ""
    matching = set(filter_runs(filters).filter(id__in=[r.id for r in runs]).values_list("id", flat=True))
    new = [r for r in runs if first_page and r.id in matching and (since is None or r.started_at >= since)]
    changed = [r for r in runs if r not in new]
    parts = []
    if new:
        parts.append(render_to_string("runs_app/runs_new_rows.html", {"rows": [run_row(r) for r in new]}))
    parts.extend(render_to_string("runs_app/run_row.html", {"row": run_row(r), "oob": True}) for r in changed)
    return "".join(parts)


# -- the run page -----------------------------------------------------------------------------------------------------

EVENT_LOOK = {
    # kind: (label, icon, tone)
    "request": ("Request", "→", "info"),
    "match": ("Matched", "≡", "info"),
    "validation": ("Validation", "✓", "ok"),
    "failure_injected": ("Injected failure", "⚡", "warn"),
    "response": ("Response", "←", "ok"),
    "rejected": ("Rejected", "✖", "bad"),
    "client_disconnected": ("Client disconnected", "⏏", "warn"),
}


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _offset(event: RunEvent, start: datetime | None) -> str:
    if start is None:
        return ""
    return "+" + format_ms(max(0.0, (event.timestamp - start).total_seconds() * 1000))


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _event_summary(event: RunEvent) -> tuple[str, str, str]:
    """One line about an event, and its icon and tone (validation failures and injected failures stand out)."""
    label, icon, tone = EVENT_LOOK.get(event.kind, (event.kind, "•", "info"))
    data = event.data or {}
    if event.kind == "request":
        body = data.get("body") if isinstance(data.get("body"), dict) else {}
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        tools = body.get("tools") if isinstance(body.get("tools"), list) else []
        stream = "streaming" if body.get("stream") else "not streaming"
        counts = f"{_plural(len(messages), 'message')} · {_plural(len(tools), 'tool')}"
        return f"{data.get('method', 'POST')} {data.get('path', '')} · {stream} · {counts}", icon, tone
    if event.kind == "match":
        scenario = data.get("scenario") or "no scenario"
        return f"{data.get('mode', '')} · {scenario} · turn {data.get('turn', event.turn)}", icon, tone
    if event.kind == "validation":
        if data.get("ok", True):
            return "Expectations met", icon, tone
        return f"Validation failed: {data.get('problem', '')}", "✖", "bad"
    if event.kind == "failure_injected":
        advice = f" · Retry-After {format_ms(data['retry_after_ms'])}" if data.get("retry_after_ms") is not None else ""
        retryable = "" if data.get("retryable", True) else " · not retryable"
        return (
            f"{data.get('status', '')} (failure {data.get('attempt', '?')} of {data.get('of', '?')}): "
            f"{data.get('message', '')}{advice}{retryable}",
            icon,
            tone,
        )
    if event.kind == "response":
        timing = f"TTFB {format_ms(data.get('ttfb_ms'))} · {format_ms(data.get('duration_ms'))}"
        if data.get("failure"):
            if data.get("dropped"):
                return f"Connection dropped mid-response ({data['failure']}) · {timing}", "✂", "bad"
            return f"HTTP {data.get('status')} ({data['failure']}) · {timing}", "✖", "bad"
        return (
            f"HTTP {data.get('status', 200)} · finish {data.get('finish_reason', '')} · "
            f"{data.get('chunks', 0)} chunks · {timing}",
            icon,
            tone,
        )
    if event.kind == "rejected":
        return f"HTTP {data.get('status')}: {data.get('message', '')}", icon, tone
    if event.kind == "client_disconnected":
        return f"after {format_ms(data.get('after_ms'))}", icon, tone
    return _compact(data)[:200], icon, tone


def event_row(event: RunEvent, start: datetime | None) -> dict[str, Any]:
    """One line of a turn's timeline, with the event's data as JSON to unfold."""
    summary, icon, tone = _event_summary(event)
    return {
        "seq": event.seq,
        "kind": event.kind,
        "label": EVENT_LOOK.get(event.kind, (event.kind,))[0],
        "icon": icon,
        "tone": tone,
        "summary": summary,
        "offset": _offset(event, start),
        "timestamp": event.timestamp,
        "json": _pretty(event.data),
    }


def _parts(content: Any) -> list[dict[str, str]]:
    """A message's content as displayable parts, whatever the protocol's shape (string, list of typed parts)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"kind": "text", "title": "", "text": content}]
    if not isinstance(content, list):
        return [{"kind": "other", "title": "", "text": _pretty(content)}]
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
            parts.append({"kind": "text", "title": "", "text": part["text"]})
        elif kind == "tool_use":
            parts.append({"kind": "tool_call", "title": str(part.get("name", "")), "text": _pretty(part.get("input"))})
        elif kind == "tool_result":
            inner = part.get("content")
            text = inner if isinstance(inner, str) else "\n".join(p["text"] for p in _parts(inner))
            parts.append({"kind": "tool_result", "title": str(part.get("tool_use_id", "")), "text": text})
        elif kind == "thinking":
            parts.append({"kind": "reasoning", "title": "thinking", "text": str(part.get("thinking", ""))})
        elif kind == "redacted_thinking":
            parts.append({"kind": "reasoning", "title": "redacted thinking", "text": "…"})
        else:
            parts.append({"kind": "other", "title": str(kind or ""), "text": _pretty(part)})
    return parts


def _arguments(raw: Any) -> str:
    """Tool-call arguments pretty-printed when they are JSON text, as sent otherwise."""
    if isinstance(raw, str):
        try:
            return _pretty(json.loads(raw))
        except ValueError:
            return raw
    return _pretty(raw)


def _message(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {"role": "?", "parts": [{"kind": "other", "title": "", "text": _pretty(raw)}]}
    parts = _parts(raw.get("content"))
    calls = raw.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            title = str(function.get("name", ""))
            parts.append({"kind": "tool_call", "title": title, "text": _arguments(function.get("arguments"))})
    role = str(raw.get("role", "?"))
    if role == "tool" and raw.get("tool_call_id"):
        parts = [{**p, "title": p["title"] or str(raw["tool_call_id"])} for p in parts]
    return {"role": role, "parts": parts}


def _tools(body: dict[str, Any]) -> list[dict[str, str]]:
    tools = []
    for raw in body.get("tools") or []:
        if not isinstance(raw, dict):
            continue
        spec = raw.get("function") if isinstance(raw.get("function"), dict) else raw
        schema = spec.get("parameters", spec.get("input_schema"))
        tools.append(
            {
                "name": str(spec.get("name", "")),
                "description": str(spec.get("description", "") or ""),
                "schema": _pretty(schema) if schema is not None else "",
            }
        )
    return tools


def _wire_for(path: str) -> Any:
    return anthropic_wire if path.rstrip("/").endswith("/v1/messages") else openai_wire


def request_panel(event: RunEvent) -> dict[str, Any]:
    """The request of a turn as sent: parameters, system prompt, messages and tools, plus the raw body."""
    data = event.data or {}
    body = data.get("body") if isinstance(data.get("body"), dict) else {}
    raw_messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    messages = [_message(m) for m in raw_messages]
    if "system" in body:  # Anthropic keeps the system prompt beside the messages
        messages.insert(0, {"role": "system", "parts": _parts(body["system"])})
    skip = {"messages", "tools", "system"}
    return {
        "seq": event.seq,
        "path": data.get("path", ""),
        "params": [{"name": k, "value": _compact(v)} for k, v in body.items() if k not in skip],
        "messages": messages,
        "tools": _tools(body),
        "json": _pretty(body),
        "headers": _pretty(data.get("headers") or {}),
    }


def stream_blocks(data: dict[str, Any]) -> list[dict[str, str]]:
    """A recorded response as the stream viewer shows it: reasoning, text, then each tool call with its arguments."""
    blocks = []
    if data.get("reasoning"):
        blocks.append({"kind": "reasoning", "name": "", "text": data["reasoning"]})
    if data.get("text"):
        blocks.append({"kind": "text", "name": "", "text": data["text"]})
    for call in data.get("tool_calls") or []:
        if isinstance(call, dict):
            blocks.append(
                {"kind": "tool_call", "name": str(call.get("name", "")), "text": str(call.get("arguments", ""))}
            )
    return blocks


def response_panel(event: RunEvent) -> dict[str, Any]:
    """A turn's latest answer: status, timings, finish reason, usage, tool calls and the recorded summary."""
    data = event.data or {}
    if event.kind == "rejected":
        return {"seq": event.seq, "rejected": True, "status": data.get("status"), "message": data.get("message", "")}
    calls = [
        {"id": c.get("id", ""), "name": c.get("name", ""), "arguments": _arguments(c.get("arguments"))}
        for c in data.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return {
        "seq": event.seq,
        "failure": data.get("failure", ""),
        "dropped": bool(data.get("dropped")),
        "status": data.get("status"),
        "stream": data.get("stream"),
        "finish_reason": data.get("finish_reason", ""),
        "chunks": data.get("chunks"),
        "ttfb": format_ms(data.get("ttfb_ms")),
        "duration": format_ms(data.get("duration_ms")),
        "usage": [{"name": k, "value": v} for k, v in usage.items()],
        "tool_calls": calls,
        "json": _pretty(data),
    }


def _number(value: float | None) -> str:
    if value is None:
        return "not sent"
    return str(int(value)) if float(value).is_integer() else repr(value)


def expectation_rows(scenario: ScenarioSchema, step: ScenarioTurn | None, request: RunEvent) -> list[dict[str, Any]]:
    """What the scenario expects of this turn's request beside what the request carried, one row per expectation."""
    data = request.data or {}
    try:
        sent = _wire_for(data.get("path", "")).parse_request(data.get("body"))
    except WireError as exc:
        return [{"what": "Request", "expected": "a valid request", "actual": exc.message, "ok": False}]
    rows = []
    for fragment in scenario.system_prompt_must_include:
        present = fragment in sent.system
        rows.append(
            {
                "what": "System prompt includes",
                "expected": fragment,
                "actual": "present" if present else "missing",
                "ok": present,
            }
        )
    if step is None:
        return rows
    if step.expected_tools:
        offered = {sanitize_tool_name(t) for t in sent.tools}
        missing = [
            t for t in step.expected_tools if not t.startswith("agent__") and sanitize_tool_name(t) not in offered
        ]
        expected = ", ".join(step.expected_tools) + (" (missing allowed)" if step.allow_missing_tools else "")
        actual = ", ".join(sent.tools) or "no tools"
        if missing:
            actual += f" — missing {', '.join(missing)}"
        rows.append(
            {
                "what": "Tools offered",
                "expected": expected,
                "actual": actual,
                "ok": step.allow_missing_tools or not missing,
            }
        )
    for what, expected, got in (
        ("temperature", step.expected_temperature, sent.temperature),
        ("top_p", step.expected_top_p, sent.top_p),
    ):
        if expected is not None:
            ok = got is not None and abs(got - expected) <= PLAYBACK_TOLERANCE
            rows.append({"what": what, "expected": _number(expected), "actual": _number(got), "ok": ok})
    if step.expected_reasoning:
        got = "enabled" if sent.reasoning_enabled else "disabled"
        rows.append(
            {
                "what": "Reasoning",
                "expected": step.expected_reasoning,
                "actual": got,
                "ok": got == step.expected_reasoning,
            }
        )
    return rows


def expectations_panel(run: Run, turn: int, request: RunEvent | None, stored: Scenario | None) -> dict[str, Any] | None:
    """The scenario's expectations for a turn, read from the scenario as stored now (saying if it changed since)."""
    if not run.scenario_id or request is None:
        return None
    if stored is None:
        return {"missing": True, "scenario_id": run.scenario_id, "rows": []}
    try:
        scenario = stored.to_schema()
    except ValidationError:  # only reachable by editing the table by hand; the page must still show the run
        return {"missing": True, "scenario_id": run.scenario_id, "rows": []}
    step = scenario.turn(turn)
    return {
        "missing": False,
        "scenario_id": run.scenario_id,
        "changed": stored.updated_at > run.started_at,
        "updated_at": stored.updated_at,
        "revision": stored.revision,
        "no_turn": step is None,
        "rows": expectation_rows(scenario, step, request),
    }


def _turn_state(events: list[RunEvent]) -> tuple[str, str]:
    """A turn's outcome as a badge: the latest answer decides, a failed validation always shows."""
    if any(e.kind == "validation" and not (e.data or {}).get("ok", True) for e in events):
        return "failed", "validation failed"
    last = next((e for e in reversed(events) if e.kind in ("response", "rejected")), None)
    if last is None:
        return "running", "in progress"
    if last.kind == "rejected":
        return "failed", "rejected"
    if (last.data or {}).get("failure"):
        return "errored", f"{last.data['failure']}"
    return "passed", "answered"


def turn_context(run: Run | None, number: int, events: list[RunEvent], stored: Scenario | None) -> dict[str, Any]:
    """Everything the partials of one turn card need (``run_turn_*.html``)."""
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
        "events": [event_row(e, start) for e in events],
        "request": request_panel(last_request) if last_request else None,
        "response": response_panel(last_answer) if last_answer else None,
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


def _by_turn(events: list[RunEvent]) -> dict[int, list[RunEvent]]:
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
    return {
        "run_id": str(run_id),
        "run": run,
        "label": (run.scenario_id or run.name or run.mode) if run else "",
        "duration": _duration(run),
        "turns": f"{served} of {scripted}" if scripted else str(served),
        "events": len(events),
    }


_THEN = {"retried": "retried", "went on": "went on to a later turn", "gave up": "gave up", "waiting": "no retry yet"}


def resilience_context(run: Run | None, events: list[RunEvent]) -> dict[str, Any]:
    """Context of ``runs_app/run_resilience.html``: the analysis of the run's events, with rows for its table."""
    report = analyse(
        [{"seq": e.seq, "timestamp": e.timestamp, "kind": e.kind, "turn": e.turn, "data": e.data} for e in events],
        live=run is None or run.status == Run.Status.RUNNING,
    )
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


def _run_state(run_id: uuid.UUID | str) -> tuple[Run | None, list[RunEvent], Scenario | None]:
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        return None, [], None
    events = list(run.events.order_by("seq"))
    stored = Scenario.objects.filter(id=run.scenario_id).first() if run.scenario_id else None
    return run, events, stored


@login_required
@require_GET
def run_detail(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """A run's page. ``?live=1`` opens it before the run exists, to watch a run a test is about to start."""
    run, events, stored = _run_state(run_id)
    if run is None and not request.GET.get("live"):
        raise Http404("No such run (add ?live=1 to wait for it)")
    context = {
        "header": header_context(run_id, run, events, stored),
        "resilience": resilience_context(run, events),
        "turns": [turn_context(run, n, evs, stored) for n, evs in _by_turn(events).items()],
        # The socket sends what was recorded after this page was read, then everything live.
        "socket_url": f"/ws/runs/{run_id}/?after={events[-1].seq if events else 0}",
    }
    return render(request, "runs_app/run_detail.html", context)


def run_turns_since(run_id: str, after: int) -> tuple[set[int], set[int]]:
    """Turns that a page rendered up to event ``after`` shows, and turns with events recorded since."""
    rows = RunEvent.objects.filter(run_id=run_id).values_list("seq", "turn")
    shown, changed = set(), set()
    for seq, turn in rows:
        (shown if seq <= after else changed).add(turn if turn is not None else NO_TURN)
    return shown, changed


def render_turn_card(number: int) -> str:
    """An empty turn card appended to the timeline (no database: the socket sends it before its first chunk)."""
    return render_to_string("runs_app/run_turn_new.html", {"turn": pending_turn(number)})


def render_run_updates(run_id: str, turns: Iterable[int], streaming: Iterable[int] = ()) -> str:
    """The header, the resilience summary and the given turns' parts, as oob swaps.

    The stream viewer of a turn is replaced only once its answer is recorded complete and no new attempt is
    ``streaming``: then the recorded answer fills in whatever chunks a page opened mid-stream never saw.
    """
    run, events, stored = _run_state(run_id)
    if run is None:
        return ""
    by_turn = _by_turn(events)
    busy = set(streaming)
    parts = [
        render_to_string(
            "runs_app/run_header.html", {"header": header_context(run_id, run, events, stored), "oob": True}
        ),
        render_to_string("runs_app/run_resilience.html", {"resilience": resilience_context(run, events), "oob": True}),
    ]
    for number in sorted(turns):
        turn = turn_context(run, number, by_turn.get(number, []), stored)
        templates = TURN_PARTS
        if turn["blocks"] and number not in busy:
            templates = (*TURN_PARTS, "runs_app/run_turn_stream.html")
        parts.extend(render_to_string(template, {"turn": turn, "oob": True}) for template in templates)
    return "".join(parts)


# The parts of a turn card that events change (the stream viewer is the chunks', see render_run_updates).
TURN_PARTS = (
    "runs_app/run_turn_head.html",
    "runs_app/run_turn_request.html",
    "runs_app/run_turn_response.html",
    "runs_app/run_turn_expectations.html",
    "runs_app/run_turn_events.html",
)


def render_stream_reset(number: int) -> str:
    """An empty stream viewer for a turn: a new attempt starts streaming."""
    return render_to_string("runs_app/run_turn_stream.html", {"turn": pending_turn(number), "oob": True})


def render_pieces(number: int, pieces: list[list[Any]], known_blocks: set[tuple[int, int]]) -> str:
    """Chunks the client just received, appended to their blocks in a turn's stream viewer (blocks created as
    needed; ``known_blocks`` is the socket's record of the ones it created, updated here)."""
    groups: list[dict[str, Any]] = []
    for block, kind, text in pieces:
        if groups and groups[-1]["block"] == block and groups[-1]["kind"] == kind:
            groups[-1]["text"] += text
            continue
        new = (number, block) not in known_blocks
        known_blocks.add((number, block))
        groups.append(
            {
                "block": block,
                "kind": kind,
                "text": "" if kind == "tool_call" else text,
                "name": text if kind == "tool_call" else "",
                "new": new,
            }
        )
    return render_to_string("runs_app/run_stream_pieces.html", {"number": number, "groups": groups})
