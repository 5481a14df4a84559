"""The judge's pure steps: the prompt it is sent, the verdict read from its answer (raw JSON or fenced), the
diagnostic verdict when there is none, and a run's events read as a transcript. No database, no network."""

from __future__ import annotations

import json

import pytest

from harnessweb.judging import transcript
from harnessweb.judging.client import JudgeConfig, judge_with
from harnessweb.judging.verdicts import (
    JUDGE_SYSTEM,
    MAX_ATTACHMENT_CHARS,
    JudgeInput,
    NoVerdict,
    TranscriptMessage,
    TurnLog,
    build_prompt,
    criteria_lines,
    parse_verdict,
    read_answer,
)

VERDICT = {
    "criteria": [
        {"criterion": "The list was created", "verdict": "PASS", "reason": "It has all four items."},
        {"criterion": "Milk was added", "verdict": "fail", "reason": "Milk is missing."},
    ],
    "overall": "FAIL",
    "summary": "The list lacks milk.",
}


def make_input(**fields) -> JudgeInput:
    return JudgeInput(
        **{
            "messages": [TranscriptMessage("user", "Create a grocery list"), TranscriptMessage("assistant", "Done.")],
            "criteria": ["The list was created", "Milk was added"],
            **fields,
        }
    )


def test_it_reads_a_raw_json_verdict() -> None:
    criteria, overall, summary = parse_verdict(json.dumps(VERDICT))
    assert overall == "FAIL"
    assert [(c.criterion, c.verdict, c.reason) for c in criteria] == [
        ("The list was created", "PASS", "It has all four items."),
        ("Milk was added", "FAIL", "Milk is missing."),
    ]
    assert summary == "The list lacks milk."


def test_it_reads_a_fenced_verdict_among_prose() -> None:
    raw = f"Here is my evaluation.\n\n```json\n{json.dumps(VERDICT, indent=2)}\n```\nHope this helps."
    assert parse_verdict(raw)[1] == "FAIL"
    assert read_answer(raw).judge_error == ""
    assert read_answer(raw).raw_output == raw


def test_it_gives_the_diagnostic_verdict_quoting_garbage() -> None:
    verdict = read_answer("I cannot evaluate this conversation, sorry.")
    assert verdict.judge_error.startswith("no verdict in the judge's answer")
    assert verdict.overall == "FAIL"
    assert verdict.criteria == []
    assert "I cannot evaluate this conversation, sorry." in verdict.summary
    assert verdict.raw_output == "I cannot evaluate this conversation, sorry."


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({**VERDICT, "overall": "MAYBE"}, 'overall is "MAYBE", not PASS or FAIL'),
        ({**VERDICT, "criteria": []}, "criteria is not a non-empty list"),
        ({**VERDICT, "criteria": [{"verdict": "PASS"}]}, "criteria[0] has no criterion text"),
        ({**VERDICT, "criteria": [{"criterion": "x", "verdict": None}]}, "criteria[0].verdict is null"),
        ([VERDICT], "the JSON is not an object"),
    ],
)
def test_it_says_what_is_wrong_with_a_json_that_is_no_verdict(data, problem) -> None:
    with pytest.raises(NoVerdict, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_verdict(json.dumps(data))


def test_it_cuts_a_long_garbage_quote_but_keeps_the_raw_output() -> None:
    raw = "x" * 2000
    verdict = read_answer(raw)
    assert verdict.raw_output == raw
    assert len(verdict.summary) < 700


def test_it_builds_a_prompt_with_numbered_criteria_and_the_whole_transcript() -> None:
    data = make_input(
        generated_pages={"/u/abc": "<ul><li>eggs</li></ul>"},
        turn_logs=[TurnLog(1, "/logs/1.log", "START\nFAILED: timeout")],
        timeline=["turn 1 · injected failure rate_limit (attempt 1 of 2): slow down"],
    )
    prompt = build_prompt(data)
    assert prompt.system == JUDGE_SYSTEM
    assert "1. The list was created\n2. Milk was added" in prompt.user
    assert "[user] Create a grocery list\n[assistant] Done." in prompt.user
    assert "## Generated page /u/abc\n<ul><li>eggs</li></ul>" in prompt.user
    assert "## Trace log, turn 1: /logs/1.log\nSTART\nFAILED: timeout" in prompt.user
    assert "injected failure rate_limit" in prompt.user


def test_it_keeps_the_end_of_a_long_trace_log() -> None:
    content = "start\n" + "x" * MAX_ATTACHMENT_CHARS + "\nFAILED footer"
    prompt = build_prompt(make_input(turn_logs=[TurnLog(1, "/l.log", content)]))
    assert prompt.user.endswith("FAILED footer")
    assert "characters left out" in prompt.user
    assert "start\n" not in prompt.user


def test_it_hashes_the_prompt_with_the_model() -> None:
    prompt = build_prompt(make_input())
    assert prompt.digest("m1") == build_prompt(make_input()).digest("m1")
    assert prompt.digest("m1") != prompt.digest("m2")
    assert prompt.digest("m1") != build_prompt(make_input(criteria=["other"])).digest("m1")


def test_it_reads_criteria_one_per_line() -> None:
    assert criteria_lines("- first\n\n  2. second \n* third\nplain") == ["first", "second", "third", "plain"]
    assert criteria_lines(" \n\n") == []


def test_it_turns_an_unreachable_judge_into_a_judge_error() -> None:
    # Port 9 (discard) on localhost: nothing listens, the connection is refused at once.
    verdict = judge_with(
        make_input(), JudgeConfig(base_url="http://127.0.0.1:9/v1", api_key="sk-judge", model="m", timeout_s=2)
    )
    assert verdict.judge_error.startswith("could not reach http://127.0.0.1:9/v1/chat/completions")
    assert verdict.overall == "FAIL" and verdict.criteria == []
    assert verdict.judge_model == "m"
    assert verdict.prompt_hash == build_prompt(make_input()).digest("m")


# -- a run's events as a transcript -----------------------------------------------------------------------------------


def chat_request(messages: list[dict], turn: int = 1) -> dict:
    body = {"model": "gpt-4o", "messages": messages}
    return {"kind": "request", "turn": turn, "data": {"method": "POST", "path": "/v1/chat/completions", "body": body}}


def test_it_reads_the_last_request_s_conversation_and_its_answer() -> None:
    first = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Oslo?"}]
    second = [
        *first,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    events = [
        chat_request(first),
        {
            "kind": "response",
            "turn": 1,
            "data": {"tool_calls": [{"name": "get_weather", "arguments": '{"city":"Oslo"}'}]},
        },
        chat_request(second, turn=2),
        {
            "kind": "failure_injected",
            "turn": 2,
            "data": {"status": "rate_limit", "message": "slow", "attempt": 1, "of": 2},
        },
        {"kind": "response", "turn": 2, "data": {"failure": "rate_limit", "status": 429}},
        chat_request(second, turn=2),
        {"kind": "response", "turn": 2, "data": {"text": "It is sunny in Oslo.", "finish_reason": "stop"}},
    ]
    messages = transcript.conversation(events)
    assert [(m.role, m.content) for m in messages] == [
        ("system", "Be brief."),
        ("user", "Weather in Oslo?"),
        ("assistant", ""),
        ("tool", "sunny"),
        ("assistant", "It is sunny in Oslo."),
    ]
    lines = transcript.timeline(events)
    assert lines[0] == "turn 1 · request POST /v1/chat/completions: the user said «Weather in Oslo?»"
    assert lines[1] == 'turn 1 · answer: tool call get_weather({"city":"Oslo"})'
    assert "turn 2 · injected failure rate_limit (attempt 1 of 2): slow" in lines
    assert "turn 2 · failed response: HTTP 429 (rate_limit)" in lines
    assert lines[-1] == "turn 2 · answer: text «It is sunny in Oslo.», finish stop"


def test_it_reads_no_conversation_from_a_body_the_endpoint_refused() -> None:
    events = [
        {"kind": "request", "turn": 1, "data": {"path": "/v1/chat/completions", "body": {"model": "m"}}},
        {"kind": "rejected", "turn": 1, "data": {"status": 400, "message": "messages must be a non-empty array"}},
    ]
    assert transcript.conversation(events) == []
    assert transcript.timeline(events)[-1] == "turn 1 · refused with HTTP 400: messages must be a non-empty array"
