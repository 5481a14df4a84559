"""Played runs and their recorded events, requests and responses, for the run page tests
(tests/test_live_views_*.py, tests/test_live_diff.py)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone

from runs_app.models import Run, RunEvent
from tests.conftest import make_run


def make_played_run(**fields: Any) -> Run:
    """A run the endpoint played: scenario weather, turn 1 served, passed, started 5 s ago."""
    defaults = {
        "scenario_id": "weather",
        "status": "passed",
        "started_at": timezone.now() - dt.timedelta(seconds=5),
        "turns_served": [1],
    }
    return make_run(**{**defaults, **fields})


def make_events(run: Run, *events: tuple[str, int | None, dict[str, Any]], step_ms: int = 100) -> list[RunEvent]:
    """Events for a run, ``step_ms`` apart from its start, numbered in order."""
    return [
        RunEvent.objects.create(
            run=run,
            seq=seq,
            timestamp=run.started_at + dt.timedelta(milliseconds=seq * step_ms),
            kind=kind,
            turn=turn,
            data=data,
        )
        for seq, (kind, turn, data) in enumerate(events, start=1)
    ]


def make_request(turn: int, messages: list[dict[str, Any]] | None = None, **body: Any) -> tuple[str, int, dict]:
    messages = messages or [{"role": "user", "content": "weather"}]
    data = {
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": {"authorization": "[REDACTED]", "content-type": "application/json"},
        "body": {"model": "gpt-test", "messages": messages, "stream": True, **body},
    }
    return ("request", turn, data)


def make_response(turn: int, **data: Any) -> tuple[str, int, dict]:
    summary = {
        "text": "It is sunny in Paris.",
        "reasoning": "",
        "tool_calls": [],
        "finish_reason": "stop",
        "usage": {"input_tokens": 64, "output_tokens": 32, "total_tokens": 96},
        "chunks": 5,
        "ttfb_ms": 2.5,
        "duration_ms": 40.0,
        "status": 200,
        "stream": True,
        **data,
    }
    return ("response", turn, summary)


def rows_of(response: Any) -> list[str]:
    return [row["run"].scenario_id for row in response.context["rows"]]
