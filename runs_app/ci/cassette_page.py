"""What a cassette's admin change page shows beyond its fields: each interaction's stream summary (seed 003) and
the *Convert to scenario* form, as template context (``templates/admin/runs_app/cassette/change_form.html``)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from harnessweb.engine.stream_summary import StreamSummary
from runs_app.ci.conversion import ConversionError, load_cassette
from runs_app.ci.recordings import cassette_summaries, scenario_id_for
from runs_app.models import Cassette


def may_convert(user: Any) -> bool:
    """Converting writes a scenario: who may add and change scenarios may convert."""
    return bool(user.has_perm("scenarios_app.add_scenario") and user.has_perm("scenarios_app.change_scenario"))


def summary_row(index: int, summary: StreamSummary) -> dict[str, Any]:
    """One interaction's summary as the page's table row."""
    calls = ", ".join(f"{call.name}({call.arguments[:60]}{'…' if len(call.arguments) > 60 else ''})"
                      for call in summary.tool_calls)  # fmt: skip
    return {
        "index": index,
        "status": summary.status,
        "protocol": summary.protocol or "—",
        "timeline": short_timeline(summary.timeline),
        "event_count": summary.event_count,
        "flags": {"start": summary.has_start, "done": summary.has_done, "error event": summary.has_error_event},
        "text": summary.text[:500] + ("…" if len(summary.text) > 500 else ""),
        "thinking": summary.thinking[:300] + ("…" if len(summary.thinking) > 300 else ""),
        "signatures": sum(1 for block in summary.thinking_blocks if block.signature),
        "tool_calls": calls,
        "text_deltas": summary.text_deltas,
        "stop_reason": summary.stop_reason or "—",
        "stream_error": summary.stream_error or "",
    }


def short_timeline(timeline: list[str], keep: int = 12) -> str:
    """The timeline as one line; a long one keeps its first and last events (a long answer has hundreds)."""
    if len(timeline) <= keep:
        return " → ".join(timeline)
    return " → ".join([*timeline[:6], f"… {len(timeline) - 10} more …", *timeline[-4:]])


def cassette_page_context(cassette: Cassette, user: Any) -> dict[str, Any]:
    """``stream_summaries`` (rows, or the reason there are none) and ``convert`` (the form's URL and default id)."""
    try:
        rows = [
            summary_row(i, s)
            for i, s in enumerate(cassette_summaries(load_cassette(bytes(cassette.content), cassette.name)))
        ]
        problem = ""
    except ConversionError as exc:
        rows, problem = [], str(exc)
    convert = None
    if may_convert(user):
        url = reverse("admin:runs_app_cassette_convert", args=[cassette.pk])
        convert = {"url": url, "scenario_id": scenario_id_for(cassette.name)}
    return {"stream_summaries": {"rows": rows, "problem": problem}, "convert": convert}
