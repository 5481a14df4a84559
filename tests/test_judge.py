"""judge(), transcript_from_run() and the stored verdicts, end to end: runs played through the openai SDK on a real
daphne, judged by the harness's own fake endpoint standing in for the judge model (a verdict JSON, a fenced one,
garbage, a server error)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harnessweb.judging.verdicts import build_prompt
from runs_app.judging.judge import NOT_CONFIGURED, judge, judge_run, transcript_from_run
from runs_app.models import JudgeVerdict, Run
from runs_app.review import rules as review
from tests.judging import CRITERIA, judge_scenario, play, point_judge_at, subject_scenario, verdict_json

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def judged(settings, harness_server):
    """A run of a fresh subject scenario, and the judge pointed at the harness itself."""
    point_judge_at(settings, harness_server)
    scenario_id = subject_scenario()
    return play(harness_server, scenario_id)


def test_it_reads_a_played_run_as_a_transcript(judged) -> None:
    data = transcript_from_run(judged)
    assert [(m.role, m.content) for m in data.messages] == [
        ("user", judged.scenario_id),
        ("assistant", "It is sunny in Oslo."),
    ]
    assert data.timeline[0] == f"turn 1 · request POST /v1/chat/completions: the user said «{judged.scenario_id}»"
    assert data.timeline[-1] == "turn 1 · answer: text «It is sunny in Oslo.», finish stop"
    assert data.criteria == []


def test_it_keeps_only_what_came_since_and_the_last_events(judged) -> None:
    last = judged.events.order_by("seq").last()
    assert transcript_from_run(judged, since=last.timestamp).timeline == [
        "turn 1 · answer: text «It is sunny in Oslo.», finish stop"
    ]
    # The last three events: the match, the validation (which passed, so says nothing) and the answer.
    assert transcript_from_run(judged, limit=3).timeline == [
        f"turn 1 · answered by scenario {judged.scenario_id}",
        "turn 1 · answer: text «It is sunny in Oslo.», finish stop",
    ]
    assert transcript_from_run(judged, limit=0).messages == []


def test_it_stores_the_verdict_the_judge_answered_in_json(judged, settings) -> None:
    judge_id = judge_scenario(judged.scenario_id, verdict_json("FAIL"))
    verdict = judge_run(judged, CRITERIA)

    assert verdict.judge_error == ""
    assert verdict.overall == "FAIL"
    assert [(c.position, c.criterion, c.judge_verdict) for c in verdict.criteria.all()] == [
        (1, CRITERIA[0], "PASS"),
        (2, CRITERIA[1], "FAIL"),
    ]
    assert verdict.judge_model == "judge-model"
    expected = build_prompt(replace(transcript_from_run(judged), criteria=CRITERIA)).digest("judge-model")
    assert verdict.prompt_hash == expected
    # A FAIL verdict waits in the review queue.
    assert list(JudgeVerdict.objects.review_queue()) == [verdict]
    # The judge's request reached the fake endpoint and played the judge scenario.
    assert Run.objects.filter(scenario_id=judge_id, status="passed").exists()


def test_it_reads_a_fenced_verdict(judged) -> None:
    judge_scenario(judged.scenario_id, f"Here is my verdict:\n\n```json\n{verdict_json('PASS')}\n```\n")
    verdict = judge_run(judged, CRITERIA)
    assert (verdict.judge_error, verdict.overall) == ("", "PASS")
    assert review.effective_overall(verdict) == "PASS"
    assert verdict.raw_output.startswith("Here is my verdict:")
    assert not JudgeVerdict.objects.review_queue().exists()


def test_it_stores_garbage_as_a_judge_error_never_a_fail(judged) -> None:
    judge_scenario(judged.scenario_id, "I would rather not say.")
    verdict = judge_run(judged, CRITERIA)

    assert verdict.judge_error.startswith("no verdict in the judge's answer")
    assert verdict.overall == ""
    assert "I would rather not say." in verdict.summary
    assert verdict.raw_output == "I would rather not say."
    assert review.effective_overall(verdict) == review.ERROR
    assert not JudgeVerdict.objects.review_queue().exists()
    assert JudgeVerdict.objects.effective(review.ERROR).get() == verdict


def test_it_turns_a_server_error_into_a_judge_error(judged, settings) -> None:
    judge_scenario(judged.scenario_id, failures_before_success="always", failure_status="server_error")
    data = replace(transcript_from_run(judged), criteria=CRITERIA)
    answer = judge(data)
    assert answer.judge_error.startswith(f"HTTP 500 from {settings.HARNESS_JUDGE_BASE_URL}/chat/completions")
    assert answer.overall == "FAIL" and answer.criteria == []  # the seed's diagnostic verdict
    assert answer.raw_output  # the error body, quoted


def test_it_answers_a_judge_error_when_no_judge_is_configured(judged, settings) -> None:
    settings.HARNESS_JUDGE_BASE_URL = ""
    answer = judge(replace(transcript_from_run(judged), criteria=CRITERIA))
    assert answer.judge_error == NOT_CONFIGURED
    assert answer.overall == "FAIL"
