"""A served request's run steps, in one place for every host that plays a provider's conversation: the HTTP endpoint
(``consumer.py``), a batch's lines (``runs_app/batches/play.py``) and the provider sockets (``realtime_consumer.py``,
``live_consumer.py``).

Each step is a plain function of the recorder and the run: what answers a request (a run script's entry or the
engine's decision, checked against the key the run's test expects; what the engine refuses raised as a ``Refusal``
with its status and message), the run's mode and the match and validation events, a refusal's event and status, an
injected failure and how it went out, a reply's response event and the status it moves the run to
(``lifecycle.next_status``), and at a run's scripted end the tool calls its scenario expects of its agent
(``mcp.expect_calls``). They are synchronous, so the endpoint's path takes no await for them; only the expected
calls' check, reached at the scripted end of a scenario that expects calls, waits for the database.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils import timezone

from harnessweb.engine import configured
from harnessweb.engine.exchange import ChatRequest, Decision, Failure, InvalidRequest, NothingMatched, ScenarioNotFound
from harnessweb.engine.expectations import mcp_call_expectations
from harnessweb.engine.playback import Catalog, check_key, decide
from harnessweb.engine.routes import SCENARIO_HEADER, UNMATCHED_HEADER
from harnessweb.engine.schemas import Scenario
from runs_app.endpoint.recorder import Recorder, RunState, take_attempt, while_up
from runs_app.endpoint.scripts import Taken
from runs_app.lifecycle import Refused, Replied, closes, next_status
from runs_app.models import RunEvent


class Refusal(Exception):
    """What the engine refuses before any turn is played (an unknown scenario, nothing matched, a request the
    provider would refuse): the status and message the client gets."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def played(
    catalog: Catalog, request: ChatRequest, headers: Mapping[str, str], taken: Taken | None, pacing: bool
) -> tuple[Decision, Failure | None]:
    """What answers a request, and the configured failure to serve (one attempt of one) if any: the run script's
    entry (``taken``), else the engine's decision on the scenario the header names, else the script's, else the
    match; checked against the key the run's test expects. Raises ``Refusal`` for what the engine refuses."""
    failure = None
    if taken is not None and taken.entry is not None:
        decision, failure = configured.play(taken.entry, request, taken.index, settings.HARNESS_SIGNATURE_KEY)
    else:
        named = headers.get(SCENARIO_HEADER) or (taken.scenario if taken is not None else "") or None
        try:
            decision = decide(
                catalog,
                request,
                header_scenario=named,
                pacing_enabled=pacing,
                signature_key=settings.HARNESS_SIGNATURE_KEY,
                unmatched_error=headers.get(UNMATCHED_HEADER, settings.HARNESS_UNMATCHED).lower() == "error",
                default_usage=settings.HARNESS_DEFAULT_USAGE,
            )
        except ScenarioNotFound as exc:
            raise Refusal(404, f"Scenario '{exc}' not found (from the {SCENARIO_HEADER} header)") from None
        except NothingMatched as exc:
            raise Refusal(404, str(exc)) from None
        except InvalidRequest as exc:
            raise Refusal(400, str(exc)) from None
    if taken is not None and taken.expect_key is not None:  # the key the run's test expects of every request
        checked = check_key(decision, request, taken.expect_key, settings.HARNESS_SIGNATURE_KEY)
        decision, failure = checked, (failure if checked is decision else None)
    return decision, failure


def matched(recorder: Recorder, run: RunState, decision: Decision) -> None:
    """The run's mode and scenario as decided, and the decision's match and validation events."""
    changes: dict[str, Any] = {"mode": decision.mode}
    if decision.scenario_id:
        changes["scenario_id"] = decision.scenario_id
    recorder.update(run, **changes)
    recorder.event(
        run,
        "match",
        decision.turn,
        {"mode": decision.mode, "scenario": decision.scenario_id, "turn": decision.turn, "notes": list(decision.notes)},
    )
    recorder.event(run, "validation", decision.turn, {"ok": not decision.problem, "problem": decision.problem})


def refused(recorder: Recorder, run: RunState, turn: int | None, status: int, message: str) -> None:
    """A request refused before any turn was played: its event, and the run errored when no turn was served."""
    recorder.event(run, "rejected", turn, {"status": status, "message": message})
    change = next_status(run.status, Refused(message, turns_served=len(run.turns_served)))
    if change is not None:
        recorder.update(run, status=change.status, status_reason=change.reason)


async def attempt(run: RunState, decision: Decision) -> int:
    """The attempt at the decision's failing turn this request takes (counted for its provider, across processes):
    its number, or 0 when the turn's failures are used up (or the database did not answer) and it succeeds."""
    counted = await while_up(take_attempt, run.id, decision.turn, decision.counter, decision.failures_before_success)
    return counted or 0


def injected(
    recorder: Recorder,
    run: RunState,
    turn: int,
    failure: Failure,
    attempt: int,
    of: int,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """The failure an attempt serves, as the run's ``failure_injected`` event (attempt ``attempt`` of ``of``);
    ``extra`` what else it says (chaos's mark and seed: ``chaos.Hit.event_data``)."""
    data = {
        **(extra or {}),
        "status": failure.status,
        "message": failure.message,
        "attempt": attempt,
        "of": of,
        "retryable": failure.retryable,
        "retry_after_ms": failure.retry_after_ms,
    }
    recorder.event(run, "failure_injected", turn, data)


def failed(
    recorder: Recorder,
    run: RunState,
    turn: int,
    timings: dict[str, Any],
    status: int | None,
    failure: Failure,
    stream: bool,
    dropped: bool,
) -> None:
    """How an injected failure went out, as the run's ``response`` event: ``status`` what the client got (None for
    a cut connection or a socket's failure), ``timings`` its duration (and first byte, frames)."""
    data = {**timings, "status": status, "failure": failure.status, "stream": stream, "dropped": dropped}
    recorder.event(run, "response", turn, data)


def served(recorder: Recorder, run: RunState, decision: Decision, summary: dict[str, Any], problem: str = "") -> None:
    """A reply went out: its ``response`` event (``summary``) and the run's turns and status. The run fails on the
    decision's problem, else on ``problem`` (an expected tool call the agent never made: ``unmet_call``), else on a
    scripted turn never answered at its scripted end; it passes when the reply ends it; it is closed to its
    conversation at its scripted end."""
    recorder.event(run, "response", decision.turn, summary)
    served = run.turns_served | {decision.turn}
    changes: dict[str, Any] = {"turns_served": served}
    skipped = [t for t in decision.scripted_turns if t not in served] if decision.completes_run else []
    ends_run = decision.completes_run or decision.mode != "scenario"
    replied = Replied(decision.problem or problem, tuple(skipped), ends_run, scripted_end=decision.completes_run)
    change = next_status(run.status, replied)
    if change is not None:
        changes.update(status=change.status, status_reason=change.reason)
        changes["finished_at"] = timezone.now() if change.finished else None  # (None: an abandoned run resumed)
    if closes(replied):  # its conversation's next request starts a new run
        changes["closed"] = True
    recorder.update(run, **changes)


def expects_calls(decision: Decision, scenario: Scenario | None) -> bool:
    """Whether a reply reaches the scripted end of a scenario that expects tool calls of its agent (its
    ``mcp.expect_calls``), and passes otherwise: then ``unmet_call`` checks them."""
    if not decision.completes_run or scenario is None or scenario.mcp is None or decision.problem:
        return False
    return bool(scenario.mcp.expect_calls)


async def unmet_call(recorder: Recorder, run: RunState, decision: Decision, scenario: Scenario | None) -> str:
    """At the run's scripted end, the first of the scenario's expected MCP calls the agent has not made ("" when
    all were, or the database did not answer), recorded as a failed validation; ``served`` fails the run with it.

    The calls are the run's ``mcp_call`` events: the MCP endpoint commits each before it answers, in any process;
    what this process still holds is committed first."""
    if not recorder.writing or scenario is None or scenario.mcp is None:
        return ""
    await recorder.durable()
    calls = await while_up(recorded_calls, run.id)
    if calls is None:
        return ""
    problem = next((row.problem for row in mcp_call_expectations(scenario.mcp, calls) if not row.ok), "")
    if problem:
        recorder.event(run, "validation", decision.turn, {"ok": False, "problem": problem})
    return problem


def recorded_calls(run_id: uuid.UUID) -> list[tuple[str, str, dict[str, Any]]]:
    """The MCP tool calls a run recorded, in order: server, tool and arguments (``mcp_call_expectations``' input)."""
    rows = RunEvent.objects.filter(run_id=run_id, kind="mcp_call").order_by("seq").values_list("data", flat=True)
    return [(str(d.get("server", "")), str(d.get("tool", "")), d.get("arguments") or {}) for d in rows]
