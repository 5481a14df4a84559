"""A call a test made (the pytest plugin's history, ``harnessweb.testing.calls.Call`` as a dict) as the events the
fake endpoint records for a request it serves (request, match, an injected failure, response): the calls upload
stores them, and the plugin's judge reads a test's calls through the same transcript as a recorded run's.

Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def call_events(call: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The ``(kind, data)`` events of one call, in order."""
    body = call.get("body") or {}
    request = {"method": "POST", "path": call["path"], "headers": {}, "body": body, "protocol": call["protocol"]}
    notes = [note for note in [call.get("notes") or ""] if note]
    match = {"mode": call.get("answered_by") or "", "scenario": "", "turn": call.get("turn"), "notes": notes}
    events = [("request", request), ("match", match)]
    summary: dict[str, Any] = {
        "duration_ms": call.get("duration_ms"),
        "stream": bool(body.get("stream")),
        "model": call.get("model") or "",  # what it is priced at (runs_app/pricing/costs.py)
    }
    error = call.get("error")
    if error is not None:
        events.append(("failure_injected", {"status": error.get("kind"), "message": error.get("message")}))
        summary.update(status=error.get("status"), failure=error.get("kind"))
    else:
        summary.update(call.get("response") or {}, status=200)
    events.append(("response", summary))
    return events
