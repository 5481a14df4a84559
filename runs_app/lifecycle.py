"""A run's status: the one place it is decided, as a pure function of the status it has and what just happened.

The endpoint consumer asks it after each reply and each refusal, the CI API when a run is opened or finished.
"""

from __future__ import annotations

from dataclasses import dataclass

from runs_app.models import Run

Status = Run.Status


@dataclass(frozen=True)
class Replied:
    """The endpoint answered a turn: ``problem`` is a failed expectation or a scenario mismatch, ``skipped`` the
    scripted turns never answered when the run reached its end, ``ends_run`` whether this answer ends the run (the
    last scripted turn, or any answer outside a scenario)."""

    problem: str = ""
    skipped: tuple[int, ...] = ()
    ends_run: bool = False


@dataclass(frozen=True)
class Refused:
    """The endpoint refused a request before any scenario turn was played (an unknown scenario, a bad signature)."""

    reason: str
    turns_served: int


@dataclass(frozen=True)
class Reported:
    """CI says how its run went (when opening it, or finishing it)."""

    status: Status
    reason: str = ""


@dataclass(frozen=True)
class Change:
    status: Status
    reason: str
    finished: bool  # the run is over: it gets a finish time


def next_status(current: Status, happened: Replied | Refused | Reported) -> Change | None:
    """The status a run moves to, or None when it keeps the one it has.

    - a reply with a problem fails the run, and so does reaching the end with a scripted turn never answered (the
      client went on after a failure as if it had been answered);
    - a reply that ends the run passes it, unless it already failed;
    - a refusal before any turn was served marks the run errored; a later good reply puts an errored run back to
      running (or passes it, when that reply ends the run);
    - CI's word is final: any status it reports but ``running`` finishes the run (``skipped`` too: a test that
      did not run is neither passed nor failed; only CI and the pytest plugin report it).
    """
    match happened:
        case Replied(problem=problem) if problem:
            return Change(Status.FAILED, problem, finished=True)
        case Replied(skipped=skipped) if skipped:
            turns = ", ".join(map(str, skipped))
            reason = f"Turn {turns} never answered as scripted: the client went on without it"
            return Change(Status.FAILED, reason, finished=True)
        case Replied(ends_run=True) if current != Status.FAILED:
            return Change(Status.PASSED, "", finished=True)
        case Replied() if current == Status.ERRORED:
            return Change(Status.RUNNING, "", finished=False)
        case Refused(reason=reason, turns_served=0) if current == Status.RUNNING:
            return Change(Status.ERRORED, reason, finished=False)
        case Reported(status=status, reason=reason):
            return Change(Status(status), reason, finished=status != Status.RUNNING)
    return None
