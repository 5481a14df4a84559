"""``harness.judge(criteria)``: seed 001's judge on the current test's conversation, from any CI. The test's calls
are read as the events the endpoint records (:mod:`harnessweb.engine.call_events`) through the same transcript as a
recorded run's, with the test's artifacts as generated pages and its trace logs; the judge is the server's own
(:mod:`harnessweb.judging.client`, configured by the same ``HARNESS_JUDGE_*`` variables); the verdict goes into the
test's report (JUnit properties, the terminal summary) and, in server mode or with ``--harness-upload``, onto the
test's run, where it waits in the review queue.

A judge whose key is unset or a placeholder skips, and a judge that fails is a judge error: neither is a FAIL, and
only ``fail_on_fail=True`` makes a FAIL fail the test.

No Django.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from harnessweb.engine.call_events import call_events
from harnessweb.judging.client import JudgeConfig, judge_with
from harnessweb.judging.transcript import conversation, timeline
from harnessweb.judging.verdicts import FAIL, JudgeInput, JudgeVerdict, TurnLog, criteria_lines
from harnessweb.testing.calls import call_out
from harnessweb.testing.outbound import letting_through


class JudgeFailed(AssertionError):
    """``fail_on_fail=True`` and the judge said FAIL (or could not judge): the test fails with the reasons."""


@dataclass(frozen=True)
class Judged:
    """One ``harness.judge`` call's outcome as the report shows it."""

    verdict: JudgeVerdict
    criteria: list[str]

    @property
    def state(self) -> str:
        """PASS, FAIL, "skipped" or "judge error"."""
        if self.verdict.skipped_reason:
            return "skipped"
        if self.verdict.judge_error:
            return "judge error"
        return self.verdict.overall

    @property
    def reason(self) -> str:
        """Why there is no verdict (the skipped judge's reason, the judge's error); "" when there is one."""
        return self.verdict.skipped_reason or self.verdict.judge_error

    def line(self) -> str:
        """The terminal summary's line."""
        verdict = self.verdict
        if self.reason:
            return f"{self.state}: {self.reason}"
        passed = sum(c.verdict != FAIL for c in verdict.criteria)
        failing = "".join(f"\n    FAIL {c.criterion}: {c.reason}" for c in verdict.criteria if c.verdict == FAIL)
        return f"{verdict.overall} ({passed} of {len(verdict.criteria)} criteria): {verdict.summary}{failing}"

    def properties(self) -> list[tuple[str, str]]:
        """JUnit properties: the overall verdict (or why there is none), the summary, one per criterion."""
        verdict = self.verdict
        rows = [("judge", self.state), ("judge_model", verdict.judge_model)]
        if self.reason:
            return [*rows, ("judge_reason", self.reason)]
        rows.append(("judge_summary", verdict.summary))
        rows += [(f"judge_criterion_{n}", f"{c.verdict}: {c.criterion} ({c.reason})")
                 for n, c in enumerate(verdict.criteria, 1)]  # fmt: skip
        return rows


def events_of_calls(calls: Iterable[Any]) -> list[dict[str, Any]]:
    """A test's calls (``Call`` or their upload dicts) as event dicts, as a recorded run's events read."""
    events = []
    for call in calls:
        data = call if isinstance(call, Mapping) else call_out(call)
        events += [{"kind": kind, "turn": data.get("turn"), "data": d} for kind, d in call_events(data)]
    return events


def judge_input(harness: Any, criteria: list[str]) -> JudgeInput:
    """What the judge reads of a test: its conversation, the timeline of its calls, its artifacts as generated
    pages and its trace logs."""
    events = events_of_calls(harness.calls)
    # --harness-trace-dir's logs per turn, then those the test kept itself (harness.trace_log)
    turn_logs = [TurnLog(log.turn_number, log.file_path, log.content) for log in harness.turn_logs]
    turn_logs += [TurnLog(n, "harness.trace_log", text) for n, text in enumerate(harness.trace_logs, 1)]
    return JudgeInput(
        messages=conversation(events),
        criteria=criteria,
        generated_pages=dict(harness.artifacts),
        turn_logs=turn_logs,
        timeline=timeline(events),
    )


DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
DEFAULT_MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"}  # seed 001 judges with Sonnet


def configured(environ: Mapping[str, str] = os.environ) -> JudgeConfig:
    """The judge the ``HARNESS_JUDGE_*`` variables name, as the server reads them, the provider's own address by
    default. Only ``HARNESS_JUDGE_API_KEY`` is read for the key: inside a test ``OPENAI_API_KEY`` and
    ``ANTHROPIC_API_KEY`` are the harness's own; without it (or with the placeholder ``test-api-key``) the judge
    skips."""
    protocol = environ.get("HARNESS_JUDGE_PROTOCOL", "").strip().lower() or "openai"
    timeout = environ.get("HARNESS_JUDGE_TIMEOUT_S", "").strip() or "120"
    if not timeout.replace(".", "", 1).isdigit():
        raise ValueError(f"HARNESS_JUDGE_TIMEOUT_S must be a number of seconds, not {timeout!r}")
    return JudgeConfig(
        base_url=environ.get("HARNESS_JUDGE_BASE_URL", "").strip() or DEFAULT_BASE_URLS.get(protocol, ""),
        api_key=environ.get("HARNESS_JUDGE_API_KEY", ""),
        model=environ.get("HARNESS_JUDGE_MODEL", "").strip() or DEFAULT_MODELS.get(protocol, ""),
        timeout_s=float(timeout),
        protocol=protocol,
    )


def criteria_of(criteria: str | Iterable[str]) -> list[str]:
    found = criteria_lines(criteria) if isinstance(criteria, str) else [c.strip() for c in criteria if c.strip()]
    if not found:
        raise ValueError("harness.judge: give at least one criterion")
    return found


def judge(harness: Any, criteria: str | Iterable[str], *, fail_on_fail: bool = False) -> Judged:
    """Judge the test's conversation; see the module's docstring."""
    wanted = criteria_of(criteria)
    with letting_through():  # the judge configured is a real provider the guard would refuse
        verdict = judge_with(judge_input(harness, wanted), configured())
    judged = Judged(verdict, wanted)
    harness.verdicts.append(judged)
    harness.on_judged(judged)
    harness.send_verdict(judged)
    if fail_on_fail and judged.state in (FAIL, "judge error"):
        raise JudgeFailed(f"harness.judge: {judged.line()}")
    return judged


def verdict_out(judged: Judged) -> dict[str, Any]:
    """A verdict as ``POST /api/runs/{id}/verdicts`` takes it (no overall for a judge that was skipped or failed)."""
    return {**asdict(judged.verdict), "overall": judged.verdict.overall or None}


def judged_lines(reports: Iterable[Any]) -> list[tuple[str, bool]]:
    """The terminal summary's lines from the tests' reports (``(line, failed)``): one per ``harness.judge`` call,
    then each failing criterion. A test's last report carries every property its judge calls set."""
    properties: dict[str, list[tuple[str, Any]]] = {}
    for report in reports:
        found = getattr(report, "user_properties", None) or []
        if any(name == "judge" for name, _ in found):
            properties[report.nodeid] = list(found)
    lines = []
    for nodeid, found in properties.items():
        verdicts: list[dict[str, str]] = []
        for name, value in found:
            if name == "judge":
                verdicts.append({})
            if verdicts and name.startswith("judge"):
                verdicts[-1][name] = str(value)
        for verdict in verdicts:
            state = verdict["judge"]
            detail = verdict.get("judge_summary") or verdict.get("judge_reason", "")
            lines.append((f"{nodeid}: {state}: {detail}", state == FAIL))
            lines += [(f"    {value}", True) for name, value in verdict.items()
                      if name.startswith("judge_criterion_") and value.startswith(FAIL)]  # fmt: skip
    return lines
