"""A run's status: the one place it is decided, as a pure function of the status it has and what just happened.

The endpoint consumer asks it after each reply and each refusal, the CI API when a run is opened or finished, and
``runs_app/closing.py`` when a run has had no request for ``HARNESS_RUN_IDLE_S``. It also says when a run is closed
to its conversation (``closes``, ``open_to_conversation``): a request of it then starts a new run.
"""

from __future__ import annotations

from dataclasses import dataclass

from runs_app.models import Run

Status = Run.Status


@dataclass(frozen=True)
class Replied:
    """The endpoint answered a turn: ``problem`` is a failed expectation or a scenario mismatch, ``skipped`` the
    scripted turns never answered when the run reached its end, ``ends_run`` whether this answer ends the run (the
    last scripted turn, or any answer outside a scenario), ``scripted_end`` whether it was the last scripted turn."""

    problem: str = ""
    skipped: tuple[int, ...] = ()
    ends_run: bool = False
    scripted_end: bool = False


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
class Idle:
    """No request came for ``idle_s`` seconds: the client went away. ``last_turn`` is the last turn served (0: none),
    ``turns`` how many the scenario scripts (0: unknown, or no scenario)."""

    idle_s: float
    last_turn: int = 0
    turns: int = 0

    def reason(self) -> str:
        """ "no request for 5 min after turn 1 of 2"."""
        idle = f"{self.idle_s / 60:g} min" if self.idle_s >= 60 else f"{self.idle_s:g} s"
        of = f" of {self.turns}" if self.turns else ""
        after = f"after turn {self.last_turn}{of}" if self.last_turn else f"before any turn{of} was served"
        return f"no request for {idle} {after}"


# The statuses after which a request of the run's conversation starts a new run whatever else: CI skipped it, or it
# was abandoned. Any other run is closed to its conversation at its scripted end (``closes``): a failed run stays
# open until then (the client goes on after a failure), and so does a conversation outside any scenario, whose every
# answer passes its run (its turns stay one run while it goes on).
ENDED = frozenset({Status.SKIPPED, Status.ABANDONED})


@dataclass(frozen=True)
class Change:
    status: Status
    reason: str
    finished: bool  # the run is over: it gets a finish time


def next_status(current: Status, happened: Replied | Refused | Reported | Idle) -> Change | None:
    """The status a run moves to, or None when it keeps the one it has.

    - a reply with a problem fails the run, and so does reaching the end with a scripted turn never answered (the
      client went on after a failure as if it had been answered);
    - a reply that ends the run passes it, unless it already failed;
    - a refusal before any turn was served marks the run errored; a later good reply puts an errored run back to
      running (or passes it, when that reply ends the run), and so it does an abandoned one (a request naming it);
    - a running run no request came to for a while is abandoned, with the reason (``Idle.reason``);
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
        case Replied() if current in (Status.ERRORED, Status.ABANDONED):
            return Change(Status.RUNNING, "", finished=False)
        case Idle() if current == Status.RUNNING:
            return Change(Status.ABANDONED, happened.reason(), finished=True)
        case Refused(reason=reason, turns_served=0) if current == Status.RUNNING:
            return Change(Status.ERRORED, reason, finished=False)
        case Reported(status=status, reason=reason):
            return Change(Status(status), reason, finished=status != Status.RUNNING)
    return None


def closes(happened: Replied) -> bool:
    """Whether a reply closes its run to its conversation: the scenario's last scripted turn was served (with turns
    skipped or not), whatever the status; a later request of the conversation is another client's, or a replay."""
    return happened.scripted_end or bool(happened.skipped)


def open_to_conversation(status: str, closed: bool) -> bool:
    """Whether a request of a run's conversation may still join it (besides being idle: ``runs_app/closing.py``)."""
    return not closed and status not in ENDED
