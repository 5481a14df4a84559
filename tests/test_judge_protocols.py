"""The judge's two protocols against this project's own fake endpoint (a real daphne serving a scenario whose answer
is a verdict JSON): OpenAI's Chat Completions and Anthropic's Messages (``HARNESS_JUDGE_PROTOCOL=anthropic``), the
request each sends (path, key header, version header, system prompt), the tokens read from each answer's usage; and
the keys that count as no key, which skip the judge."""

from __future__ import annotations

import uuid

import pytest

from harnessweb.engine.redaction import fingerprint
from harnessweb.judging.client import JudgeConfig, placeholder_reason
from harnessweb.judging.verdicts import JUDGE_SYSTEM
from runs_app.judging.judge import configured, judge_run
from runs_app.models import Run
from tests.conftest import recorded_run
from tests.judging import CRITERIA, judge_scenario, play, point_judge_at, subject_scenario, verdict_json

pytestmark = pytest.mark.django_db(transaction=True)


def judge_request(scenario_id: str) -> dict:
    """The request the judge sent, as the fake endpoint recorded it."""
    run = Run.objects.get(scenario_id=scenario_id)
    return recorded_run(str(run.pk), events=2).events.get(kind="request").data


def test_it_judges_over_anthropic_messages(settings, harness_server) -> None:
    point_judge_at(settings, harness_server)
    settings.HARNESS_JUDGE_PROTOCOL = "anthropic"
    settings.HARNESS_JUDGE_BASE_URL = harness_server.url  # /v1/messages is added
    subject = play(harness_server, subject_scenario())
    judge_id = judge_scenario(subject.scenario_id, verdict_json("FAIL", summary="No city was named."))

    verdict = judge_run(subject, CRITERIA)

    assert (verdict.judge_error, verdict.skipped_reason, verdict.overall) == ("", "", "FAIL")
    assert verdict.summary == "No city was named."
    assert [c.judge_verdict for c in verdict.criteria.all()] == ["PASS", "FAIL"]
    assert verdict.input_tokens > 0 and verdict.output_tokens > 0  # Messages' usage.input_tokens/output_tokens
    sent = judge_request(judge_id)
    assert sent["path"] == "/v1/messages"
    assert sent["key"] == {"place": "x-api-key", "fingerprint": fingerprint(settings.HARNESS_JUDGE_API_KEY)}
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    assert sent["body"]["system"] == JUDGE_SYSTEM
    assert sent["body"]["model"] == "judge-model" and sent["body"]["max_tokens"] == 4096
    assert [m["role"] for m in sent["body"]["messages"]] == ["user"]
    assert verdict.prompt == f"[system]\n{JUDGE_SYSTEM}\n\n[user]\n{sent['body']['messages'][0]['content']}"
    assert Run.objects.get(pk=Run.objects.get(scenario_id=judge_id).pk).protocol == "anthropic"


def test_it_judges_over_chat_completions_by_default(settings, harness_server) -> None:
    point_judge_at(settings, harness_server)
    assert configured().protocol == "openai"
    subject = play(harness_server, subject_scenario())
    judge_id = judge_scenario(subject.scenario_id, verdict_json("PASS"))

    verdict = judge_run(subject, CRITERIA)

    assert (verdict.overall, verdict.judge_error) == ("PASS", "")
    assert verdict.input_tokens > 0 and verdict.output_tokens > 0  # usage.prompt_tokens/completion_tokens
    sent = judge_request(judge_id)
    assert sent["path"] == "/v1/chat/completions"
    assert sent["key"] == {"place": "authorization", "fingerprint": fingerprint(settings.HARNESS_JUDGE_API_KEY)}
    assert [m["role"] for m in sent["body"]["messages"]] == ["system", "user"]


def test_it_reads_an_anthropic_error_as_a_judge_error(settings, harness_server) -> None:
    point_judge_at(settings, harness_server)
    settings.HARNESS_JUDGE_PROTOCOL = "anthropic"
    settings.HARNESS_JUDGE_BASE_URL = f"{harness_server.url}/v1"  # a base ending in /v1 is not doubled
    subject = play(harness_server, subject_scenario())
    judge_scenario(subject.scenario_id, failures_before_success="always", failure_status="server_error")

    verdict = judge_run(subject, CRITERIA)

    assert verdict.judge_error.startswith(f"HTTP 500 from {harness_server.url}/v1/messages: ")
    assert verdict.overall == "" and verdict.input_tokens is None
    assert verdict.prompt.startswith("[system]\n")


def test_it_builds_each_protocols_url() -> None:
    assert JudgeConfig("https://api.openai.com/v1/").url == "https://api.openai.com/v1/chat/completions"
    assert JudgeConfig("https://api.anthropic.com", protocol="anthropic").url == "https://api.anthropic.com/v1/messages"
    assert JudgeConfig("http://h/v1", protocol="anthropic").url == "http://h/v1/messages"


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("", "the judge's API key is not set (HARNESS_JUDGE_API_KEY)"),
        ("   ", "the judge's API key is not set (HARNESS_JUDGE_API_KEY)"),
        ("test-api-key", "the judge's API key is the placeholder 'test-api-key', not a key (HARNESS_JUDGE_API_KEY)"),
        ("Your-API-Key", "the judge's API key is the placeholder 'Your-API-Key', not a key (HARNESS_JUDGE_API_KEY)"),
        ("${ANTHROPIC_API_KEY}", "the judge's API key is the placeholder '${ANTHROPIC_API_KEY}'"),
        ("$OPENAI_API_KEY", "the judge's API key is the placeholder '$OPENAI_API_KEY'"),
        ("<your key here>", "the judge's API key is the placeholder '<your key here>'"),
        ("{{ secrets.KEY }}", "the judge's API key is the placeholder '{{ secrets.KEY }}'"),
        ("sk-proj-abc123", ""),
        (f"sk-test-judge-{uuid.uuid4().hex}", ""),
        ("sk-ant-api03-xyz", ""),
    ],
)
def test_it_tells_a_placeholder_key_from_a_key(key: str, reason: str) -> None:
    assert placeholder_reason(key).startswith(reason)
    assert bool(placeholder_reason(key)) == bool(reason)
