"""A run's status rules, decided in one pure function (runs_app/lifecycle.py) for the endpoint and the CI API."""

from __future__ import annotations

import pytest

from runs_app.lifecycle import Change, Idle, Refused, Replied, Reported, closes, next_status, open_to_conversation
from runs_app.models import Run

S = Run.Status


def test_it_fails_a_run_on_a_reply_with_a_problem_whatever_it_was() -> None:
    for current in S:
        assert next_status(current, Replied("Expected temperature 0.2")) == Change(
            S.FAILED, "Expected temperature 0.2", finished=True
        )


def test_it_fails_a_run_that_reached_its_end_with_a_scripted_turn_unanswered() -> None:
    change = next_status(S.RUNNING, Replied(skipped=(2, 3), ends_run=True))
    assert change == Change(S.FAILED, "Turn 2, 3 never answered as scripted: the client went on without it", True)


@pytest.mark.parametrize("current", [S.RUNNING, S.ERRORED, S.PASSED])
def test_it_passes_a_run_whose_last_turn_is_answered(current: Run.Status) -> None:
    assert next_status(current, Replied(ends_run=True)) == Change(S.PASSED, "", finished=True)


def test_it_never_passes_a_run_that_failed() -> None:
    assert next_status(S.FAILED, Replied(ends_run=True)) is None
    assert next_status(S.FAILED, Replied()) is None


def test_it_puts_an_errored_run_back_to_running_on_a_good_middle_turn() -> None:
    assert next_status(S.ERRORED, Replied()) == Change(S.RUNNING, "", finished=False)
    assert next_status(S.RUNNING, Replied()) is None


def test_it_abandons_a_running_run_no_request_came_to_and_says_after_which_turn() -> None:
    assert next_status(S.RUNNING, Idle(300, last_turn=1, turns=2)) == Change(
        S.ABANDONED, "no request for 5 min after turn 1 of 2", finished=True
    )
    assert next_status(S.RUNNING, Idle(0.5)).reason == "no request for 0.5 s before any turn was served"
    for current in (S.PASSED, S.FAILED, S.ERRORED, S.SKIPPED, S.ABANDONED):
        assert next_status(current, Idle(300, 1, 2)) is None  # only a running run is abandoned


def test_it_resumes_an_abandoned_run_a_request_names() -> None:
    assert next_status(S.ABANDONED, Replied()) == Change(S.RUNNING, "", finished=False)
    assert next_status(S.ABANDONED, Replied(ends_run=True)) == Change(S.PASSED, "", finished=True)


def test_it_closes_a_run_to_its_conversation_at_its_scripted_end_or_once_abandoned() -> None:
    assert closes(Replied(ends_run=True, scripted_end=True)) and closes(Replied(skipped=(1,), ends_run=True))
    assert not closes(Replied()) and not closes(Replied("Expected temperature 0.2"))
    assert not closes(Replied(ends_run=True))  # an answer outside a scenario: its conversation goes on in its run
    for current in (S.RUNNING, S.PASSED, S.FAILED, S.ERRORED):
        assert open_to_conversation(current, closed=False) and not open_to_conversation(current, closed=True)
    for ended in (S.SKIPPED, S.ABANDONED):
        assert not open_to_conversation(ended, closed=False)


def test_it_marks_errored_a_run_refused_before_any_turn_was_served() -> None:
    assert next_status(S.RUNNING, Refused("Scenario 'x' not found", 0)) == Change(
        S.ERRORED, "Scenario 'x' not found", finished=False
    )
    assert next_status(S.RUNNING, Refused("bad signature", 1)) is None
    assert next_status(S.PASSED, Refused("bad signature", 0)) is None


def test_it_takes_ci_at_its_word_and_finishes_any_status_but_running() -> None:
    assert next_status(S.RUNNING, Reported(S.RUNNING)) == Change(S.RUNNING, "", finished=False)
    for status in (S.PASSED, S.FAILED, S.ERRORED):
        assert next_status(S.RUNNING, Reported(status, "why")) == Change(status, "why", finished=True)
    assert next_status(S.FAILED, Reported("passed")) == Change(S.PASSED, "", finished=True)
