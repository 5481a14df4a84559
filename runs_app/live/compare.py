"""Run against run: two runs' requests (parameters, system prompt, messages, tools) and answers, turn by turn, as
rows of a side-by-side word diff; the runs a run page offers to compare with, and its last passing sibling."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from runs_app.live.panels import request_panel, response_panel
from runs_app.live.presenters import NO_TURN, events_by_turn
from runs_app.live.worddiff import differs, sides, word_diff
from runs_app.models import Run, RunEvent

COMPARE_CHOICES = 20


def siblings(run: Run) -> QuerySet[Run]:
    """Other runs of the same scenario (or, without one, of the same name and mode), newest first."""
    if run.scenario_id:
        runs = Run.objects.filter(scenario_id=run.scenario_id)
    else:
        runs = Run.objects.filter(scenario_id="", name=run.name, mode=run.mode)
    return runs.exclude(id=run.id).order_by("-started_at", "-id")


def last_passing(run: Run) -> Run | None:
    """The newest passing run of this run's scenario, other than itself; None for a run without a scenario."""
    if not run.scenario_id:
        return None
    return siblings(run).filter(status=Run.Status.PASSED).first()


def compare_choices(run: Run) -> dict[str, Any]:
    """Context of ``runs_app/run_compare.html``: the runs to pick from and the one-click last passing run."""
    return {"run": run, "choices": list(siblings(run)[:COMPARE_CHOICES]), "last_passing": last_passing(run)}


def _row(label: str, old: str, new: str) -> dict[str, Any]:
    segments = word_diff(old, new)
    left, right = sides(segments)
    return {"label": label, "left": left, "right": right, "changed": differs(segments)}


def _text(message: dict[str, Any]) -> str:
    return "\n".join(f"{p['title']}: {p['text']}" if p["title"] else p["text"] for p in message["parts"])


def _request_rows(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[dict[str, Any]]:
    a = a or {"params": [], "messages": [], "tools": []}
    b = b or {"params": [], "messages": [], "tools": []}
    rows = []
    params_a = {p["name"]: p["value"] for p in a["params"]}
    params_b = {p["name"]: p["value"] for p in b["params"]}
    for name in [*params_a, *(n for n in params_b if n not in params_a)]:
        rows.append(_row(f"Parameter {name}", params_a.get(name, ""), params_b.get(name, "")))

    def system(panel: dict[str, Any]) -> str:
        return "\n".join(_text(m) for m in panel["messages"] if m["role"] in ("system", "developer"))

    rows.append(_row("System prompt", system(a), system(b)))
    others_a = [m for m in a["messages"] if m["role"] not in ("system", "developer")]
    others_b = [m for m in b["messages"] if m["role"] not in ("system", "developer")]
    for index in range(max(len(others_a), len(others_b))):
        ma = others_a[index] if index < len(others_a) else None
        mb = others_b[index] if index < len(others_b) else None
        roles = {m["role"] for m in (ma, mb) if m}
        rows.append(
            _row(
                f"Message {index + 1} ({' / '.join(sorted(roles))})",
                _text(ma) if ma else "",
                _text(mb) if mb else "",
            )
        )

    def tools(panel: dict[str, Any]) -> str:
        return "\n\n".join(f"{t['name']}: {t['description']}\n{t['schema']}".strip() for t in panel["tools"])

    rows.append(_row("Tools", tools(a), tools(b)))
    return rows


def _answer_text(panel: dict[str, Any] | None, event: RunEvent | None) -> str:
    """An answer in words: its status, failure or rejection, text and tool calls."""
    if panel is None or event is None:
        return ""
    if panel.get("rejected"):
        return f"Rejected with HTTP {panel['status']}: {panel['message']}"
    lines = [f"HTTP {panel['status'] or '—'}"]
    if panel["failure"]:
        lines.append(f"injected {panel['failure']}")
    if panel["finish_reason"]:
        lines.append(f"finish {panel['finish_reason']}")
    text = (event.data or {}).get("text")
    head = " · ".join(lines)
    body = [text] if isinstance(text, str) and text else []
    body += [f"{call['name']}({call['arguments']})" for call in panel["tool_calls"]]
    return "\n".join([head, *body])


def _latest(events: list[RunEvent]) -> tuple[RunEvent | None, RunEvent | None]:
    requests = [e for e in events if e.kind == "request"]
    answers = [e for e in events if e.kind in ("response", "rejected")]
    return (requests[-1] if requests else None), (answers[-1] if answers else None)


def compare_context(a: Run, b: Run) -> dict[str, Any]:
    """Context of ``runs_app/run_diff.html``: per turn, the latest request and answer of each run as diff rows."""
    turns_a = events_by_turn(list(a.events.order_by("seq")))
    turns_b = events_by_turn(list(b.events.order_by("seq")))
    turns = []
    for number in sorted(set(turns_a) | set(turns_b)):
        request_a, answer_a = _latest(turns_a.get(number, []))
        request_b, answer_b = _latest(turns_b.get(number, []))
        rows = _request_rows(
            request_panel(request_a) if request_a else None, request_panel(request_b) if request_b else None
        )
        rows.append(
            _row(
                "Answer",
                _answer_text(response_panel(answer_a) if answer_a else None, answer_a),
                _answer_text(response_panel(answer_b) if answer_b else None, answer_b),
            )
        )
        turns.append(
            {
                "number": number,
                "label": "Run" if number == NO_TURN else f"Turn {number}",
                "only": "a" if number not in turns_b else "b" if number not in turns_a else "",
                "rows": [row for row in rows if row["left"] or row["right"]],
                "changed": sum(1 for row in rows if row["changed"]),
            }
        )
    return {
        "a": a,
        "b": b,
        "same_scenario": a.scenario_id == b.scenario_id,
        "turns": turns,
        "changed": sum(t["changed"] for t in turns),
    }
