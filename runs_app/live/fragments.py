"""HTML fragments the live sockets send: new and changed rows of the runs list, and a run page's changed parts
(out-of-band swaps of the same partials the pages include). Sync; the consumers call them through
``database_sync_to_async``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.http import QueryDict
from django.template.loader import render_to_string
from django.utils.dateparse import parse_datetime

from runs_app.live.presenters import (
    NO_TURN,
    events_by_turn,
    filter_runs,
    header_context,
    load_run,
    pending_turn,
    resilience_context,
    run_filters,
    run_row,
    turn_context,
    waterfall_context,
)
from runs_app.models import Run, RunEvent
from runs_app.pricing.costs import price_table, run_costs


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
    costs = run_costs(r.id for r in runs)
    if new:
        parts.append(render_to_string("runs_app/runs_new_rows.html", {"rows": [run_row(r, costs[r.id]) for r in new]}))
    parts.extend(
        render_to_string("runs_app/run_row.html", {"row": run_row(r, costs[r.id]), "oob": True}) for r in changed
    )
    return "".join(parts)


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


def render_run_updates(run_id: str, turns: Iterable[int], streaming: Iterable[int] = (), *, timing: bool = True) -> str:
    """The header, the resilience summary, the timing waterfall (when ``timing``: an event that moves it came) and
    the given turns' parts, as oob swaps.

    The stream viewer of a turn is replaced only once its answer is recorded complete and no new attempt is
    ``streaming``: then the recorded answer fills in whatever chunks a page opened mid-stream never saw.
    """
    run, events, stored = load_run(run_id)
    if run is None:
        return ""
    by_turn = events_by_turn(events)
    busy = set(streaming)
    prices = price_table()
    parts = [
        render_to_string(
            "runs_app/run_header.html", {"header": header_context(run_id, run, events, stored), "oob": True}
        ),
        render_to_string("runs_app/run_resilience.html", {"resilience": resilience_context(run, events), "oob": True}),
    ]
    if timing:
        parts.append(_waterfall(run_id, run, events))
    for number in sorted(turns):
        turn = turn_context(run, number, by_turn.get(number, []), stored, prices)
        templates = TURN_PARTS
        if turn["blocks"] and number not in busy:
            templates = (*TURN_PARTS, "runs_app/run_turn_stream.html")
        parts.extend(render_to_string(template, {"turn": turn, "oob": True}) for template in templates)
    return "".join(parts)


def render_waterfall(run_id: str) -> str:
    """The timing waterfall alone, as an oob swap (sent again while a response streams: its row grows)."""
    run = Run.objects.filter(id=run_id).first()
    return _waterfall(run_id, run, list(run.events.order_by("seq"))) if run is not None else ""


def _waterfall(run_id: str, run: Run, events: list[RunEvent]) -> str:
    context = {"waterfall": waterfall_context(run_id, run, events), "oob": True}
    return render_to_string("runs_app/run_waterfall.html", context)


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
