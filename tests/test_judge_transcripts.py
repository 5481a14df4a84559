"""What the judge reads: a CI run's uploaded conversation and artifacts (sent over REST as a CI job sends them), a
harness run's tool calls and injected failures (played through the openai SDK on a real daphne), both at once, and
several runs of one conversation identity merged (``transcript_from_runs``); ``manage.py judge_runs`` choosing runs
by the same identities."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from typing import Any

import openai
import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from harnessweb.judging.verdicts import MAX_ATTACHMENT_CHARS, format_transcript
from runs_app.judging.judge import transcript_from_run, transcript_from_runs
from runs_app.models import JudgeVerdict, Run
from tests.conftest import make_run, make_scenario, make_token, recorded_run
from tests.judging import CRITERIA, judge_scenario, point_judge_at, verdict_json

pytestmark = pytest.mark.django_db(transaction=True)

CONVERSATION = [
    {"role": "system", "content": "You plan trips."},
    {"role": "user", "content": "Weather in Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21 C"},
    {"role": "assistant", "content": "It is sunny in Oslo."},
]
EXPECTED = [
    ("system", "You plan trips."),
    ("user", "Weather in Oslo?"),
    ("assistant", '(calls get_weather({"city": "Oslo"}))'),
    ("tool", "(result of call c1: sunny, 21 C)"),
    ("assistant", "It is sunny in Oslo."),
]


def upload(path: str, body: Any) -> Any:
    headers = {"Authorization": f"Bearer {make_token('write')}"}
    response = Client().post(f"/api/{path}", data=json.dumps(body), content_type="application/json", headers=headers)
    assert response.status_code in (200, 201, 207), response.content
    return response.json()


def test_it_reads_an_uploaded_conversation_artifacts_and_trace_logs() -> None:
    run_id = upload("runs", {"name": "tests/test_trip.py::test_oslo"})["id"]
    upload(f"runs/{run_id}/messages", CONVERSATION)
    page = "<ul>" + "<li>eggs</li>" * 3000 + "</ul>"
    upload(
        f"runs/{run_id}/artifacts",
        [{"name": "/u/list", "content": page, "kind": "html"}, {"name": "notes.txt", "content": "ok"}],
    )
    upload(f"runs/{run_id}/trace-logs", {"turn_number": 1, "file_path": "/tmp/t1.log", "content": "SUCCESS"})

    data = transcript_from_run(Run.objects.get(pk=run_id))

    assert [(m.role, m.content) for m in data.messages] == EXPECTED
    assert data.generated_pages == {"/u/list": page} and data.artifacts == {"notes.txt": "ok"}
    assert [(log.turn_number, log.content) for log in data.turn_logs] == [(1, "SUCCESS")]
    text = format_transcript(data)
    assert "[assistant] (calls get_weather" in text and "[tool] (result of call c1: sunny, 21 C)" in text
    # The page is cut as generated pages are: its first MAX_ATTACHMENT_CHARS characters, then how much was left.
    assert f"## Generated page /u/list\n{page[:MAX_ATTACHMENT_CHARS]}\n[… last " in text
    assert f"[… last {len(page) - MAX_ATTACHMENT_CHARS} characters left out …]" in text
    assert "## Artifact notes.txt\nok" in text
    assert "## Trace log, turn 1: /tmp/t1.log\nSUCCESS" in text


def play_tool_call_after_a_failure(server: Any) -> Run:
    """A harness run: a rate-limit injected on the first attempt, then a tool call, through the openai SDK."""
    scenario_id = f"trip-{uuid.uuid4().hex[:10]}"
    turn = {"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit"}
    response = {"kind": "tool-call", "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Oslo"}}]}
    make_scenario(scenario_id, [{**turn, "response": response}])
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=f"sk-test-{uuid.uuid4().hex}", max_retries=2)
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": scenario_id}]
    )
    return recorded_run(raw.headers["X-Harness-Run"], events=9)


def test_it_reads_a_harness_runs_tool_calls_and_injected_failures(harness_server, transactional_db) -> None:
    run = play_tool_call_after_a_failure(harness_server)
    data = transcript_from_run(run)
    assert [m.role for m in data.messages] == ["user", "assistant"]
    assert data.messages[1].content.startswith("(calls get_weather(")
    text = format_transcript(data)
    assert "injected failure rate_limit (attempt 1 of 1)" in text
    assert "answer: tool call get_weather(" in text


def test_it_prefers_an_uploaded_conversation_and_keeps_the_events_timeline(harness_server, transactional_db) -> None:
    run = play_tool_call_after_a_failure(harness_server)
    upload(f"runs/{run.pk}/messages", CONVERSATION)
    data = transcript_from_run(run)
    assert [(m.role, m.content) for m in data.messages] == EXPECTED
    assert any("injected failure rate_limit (attempt 1 of 1)" in line for line in data.timeline)


# -- several runs of one identity --------------------------------------------------------------------------------


def conversation_run(turns: list[tuple[str, str]], start: dt.datetime, **fields: Any) -> Run:
    """A run whose one request carried ``turns`` (user, assistant pairs) but the last answer, which it got."""
    fingerprint = fields.pop("fingerprint", "fp-none")
    run = make_run(started_at=start, finished_at=start + dt.timedelta(seconds=1), **fields)
    messages = []
    for user, assistant in turns:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    body = {"model": "m", "messages": messages[:-1]}
    request = {
        "path": "/v1/chat/completions",
        "body": body,
        "key": {"place": "authorization", "fingerprint": fingerprint},
    }
    run.events.create(seq=1, timestamp=start, kind="request", turn=len(turns), data=request)
    answer = {"text": turns[-1][1], "status": 200}
    run.events.create(seq=2, timestamp=start + dt.timedelta(milliseconds=500), kind="response", turn=1, data=answer)
    return run


@pytest.fixture
def identity_runs() -> list[Run]:
    now = timezone.now()
    shared = {"conversation_key": "k-trip", "fingerprint": "fp-trip", "name": "tests/test_trip.py::test_oslo"}
    first = conversation_run([("plan Oslo", "Oslo it is")], now - dt.timedelta(minutes=10), **shared)
    second = conversation_run(
        [("plan Oslo", "Oslo it is"), ("and Bergen", "Bergen too")], now - dt.timedelta(minutes=5), **shared
    )
    conversation_run([("other", "else")], now - dt.timedelta(minutes=7), conversation_key="k-x", name="other")
    return [first, second]


@pytest.mark.parametrize(
    "identity",
    [{"conversation": "k-trip"}, {"fingerprint": "fp-trip"}, {"test": "test_oslo"}],
)
def test_it_merges_the_runs_of_one_identity_in_time_order(identity_runs, identity) -> None:
    first, second = identity_runs
    data = transcript_from_runs(**identity)
    assert [(m.role, m.content) for m in data.messages] == [
        ("user", "plan Oslo"),
        ("assistant", "Oslo it is"),
        ("user", "and Bergen"),
        ("assistant", "Bergen too"),
    ]
    assert [line.split(" · ")[0] for line in data.timeline] == [f"run {str(first.pk)[:8]}"] * 2 + [
        f"run {str(second.pk)[:8]}"
    ] * 2
    assert data.timeline[-1].endswith("answer: text «Bergen too»")


def test_it_reads_one_run_by_its_id_a_window_and_a_limit(identity_runs) -> None:
    first, second = identity_runs
    by_id = transcript_from_runs(run_id=str(first.pk))
    assert [m.content for m in by_id.messages] == ["plan Oslo", "Oslo it is"]
    assert not by_id.timeline[0].startswith("run ")  # one run: no run on each line
    since = transcript_from_runs(conversation="k-trip", since=second.started_at)
    assert all(line.startswith(f"run {str(second.pk)[:8]}") or "run " not in line for line in since.timeline)
    assert len(since.timeline) == 2
    limited = transcript_from_runs(conversation="k-trip", limit=1)
    assert [m.content for m in limited.messages] == ["Bergen too"] and len(limited.timeline) == 1
    assert transcript_from_runs(conversation="nobody").messages == []


@pytest.mark.parametrize(
    ("identity", "message"),
    [
        ({}, "name exactly one of conversation, fingerprint, run_id, test (got none)"),
        ({"test": "a", "fingerprint": "b"}, "name exactly one of conversation, fingerprint, run_id, test (got "),
        ({"run_id": "nope"}, "run_id 'nope' is not a run id (a UUID)"),
    ],
)
def test_it_refuses_an_identity_that_is_not_one(identity, message) -> None:
    with pytest.raises(ValueError) as error:
        transcript_from_runs(**identity)
    assert str(error.value).startswith(message)


# -- judge_runs by identity ----------------------------------------------------------------------------------------


def judge_runs(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("judge_runs", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def criteria_file(tmp_path) -> str:
    path = tmp_path / "criteria.txt"
    path.write_text("\n".join(CRITERIA))
    return str(path)


@pytest.mark.parametrize("option", ["--test=test_oslo", "--fingerprint=fp-trip", "--conversation=k-trip"])
def test_judge_runs_judges_the_runs_of_an_identity(settings, harness_server, identity_runs, criteria_file, option):
    point_judge_at(settings, harness_server)
    judge_scenario("Oslo it is", verdict_json("PASS"))
    out, _ = judge_runs("--criteria-file", criteria_file, option)
    assert "2 runs judged: 2 PASS, 0 FAIL, 0 judge errors, 0 skipped" in out
    assert set(JudgeVerdict.objects.values_list("run_id", flat=True)) == {run.pk for run in identity_runs}


def test_judge_runs_merges_an_identity_into_one_verdict(settings, harness_server, identity_runs, criteria_file):
    point_judge_at(settings, harness_server)
    judge_scenario("and Bergen", verdict_json("FAIL"))
    with pytest.raises(CommandError) as failed:
        judge_runs("--criteria-file", criteria_file, "--conversation", "k-trip", "--merge", "--fail-on-fail")
    assert failed.value.returncode == 1
    verdict = JudgeVerdict.objects.get()
    assert verdict.run == identity_runs[1] and verdict.overall == "FAIL"
    assert "[user] plan Oslo" in verdict.prompt and "[user] and Bergen" in verdict.prompt
    out, _ = judge_runs("--criteria-file", criteria_file, "--run", str(identity_runs[0].pk))
    assert "1 run judged" in out
    with pytest.raises(CommandError, match="--merge judges one identity"):
        judge_runs("--criteria-file", criteria_file, "--merge")
    with pytest.raises(CommandError, match="--run must be a run id"):
        judge_runs("--criteria-file", criteria_file, "--run", "x")


def test_judge_runs_never_fails_on_a_skipped_judge(settings, harness_server, identity_runs, criteria_file) -> None:
    point_judge_at(settings, harness_server)
    settings.HARNESS_JUDGE_API_KEY = "test-api-key"
    out, _ = judge_runs("--criteria-file", criteria_file, "--test", "test_oslo", "--fail-on-fail")
    assert "2 runs judged: 0 PASS, 0 FAIL, 0 judge errors, 2 skipped" in out
    assert f"SKIPPED      demo  {identity_runs[1].pk}  the judge's API key is the placeholder" in out
    assert JudgeVerdict.objects.filter(skipped_reason__startswith="the judge's API key").count() == 2


def test_it_reads_what_a_realtime_session_sent(harness_server, transactional_db) -> None:
    """A Realtime session's turns are recorded as socket requests: the judge reads the items the client sent."""
    import asyncio

    from tests.test_realtime_sdk import WEATHER_TOOL, of, until_done, user_text

    scenario_id = f"rt-judge-{uuid.uuid4().hex[:10]}"
    call = {"tool_name": "get_weather", "arguments": {"city": "Oslo"}, "call_id": "call_oslo"}
    make_scenario(
        scenario_id,
        [
            {"turn": 1, "response": {"kind": "tool-call", "tool_calls": [call]}},
            {"turn": 2, "response": {"kind": "text", "assistant_text": "It is sunny in Oslo."}},
        ],
    )
    run_id = str(uuid.uuid4())
    client = openai.AsyncOpenAI(base_url=f"{harness_server.url}/v1", api_key=f"sk-test-{uuid.uuid4().hex}")

    async def session() -> None:
        headers = {"X-Harness-Run": run_id}
        async with client.realtime.connect(model="gpt-realtime", extra_headers=headers) as connection:
            await connection.session.update(
                session={"type": "realtime", "output_modalities": ["text"], "tools": [WEATHER_TOOL]}
            )
            await connection.conversation.item.create(item=user_text(scenario_id))
            await connection.response.create()
            first = await until_done(connection)
            call_id = of(first, "response.function_call_arguments.done")[0].call_id
            output = {"type": "function_call_output", "call_id": call_id, "output": "sunny, 21 C"}
            await connection.conversation.item.create(item=output)
            await connection.response.create()
            await until_done(connection)

    asyncio.run(session())
    data = transcript_from_run(recorded_run(run_id, status="passed", events=8))
    assert [m.role for m in data.messages] == ["user", "assistant", "tool", "assistant"]
    assert data.messages[0].content == scenario_id
    assert data.messages[-1].content == "It is sunny in Oslo."
    text = format_transcript(data)
    assert f"turn 1 · response asked on the socket /v1/realtime: the user said «{scenario_id}»" in text
    assert f"turn 2 · response asked on the socket /v1/realtime: the user said «{scenario_id}»" in text


def test_it_says_a_socket_s_error_without_an_http_status() -> None:
    from harnessweb.judging.transcript import timeline

    failed = {"duration_ms": 3, "status": None, "failure": "rate_limit", "stream": True, "dropped": False}
    lines = timeline([{"kind": "response", "turn": 1, "data": failed}])
    assert lines == ["turn 1 · failed response: an error on the socket (rate_limit)"]
