"""``manage.py judge_runs`` as CI runs it: a real process on the test database, the harness's own endpoint as the
judge; its exit codes, its output, the verdicts it stores, and its errors for bad arguments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from runs_app.models import JudgeVerdict
from tests.conftest import ROOT, database_env
from tests.judging import CRITERIA, judge_scenario, play, point_judge_at, subject_scenario, verdict_json

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def criteria_file(tmp_path: Path) -> Path:
    path = tmp_path / "criteria.txt"
    path.write_text("\n".join(f"- {line}" for line in CRITERIA) + "\n\n")
    return path


def judge_runs(server, *args: str, judge_url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        **database_env(connection.settings_dict),
        "DJANGO_SETTINGS_MODULE": "harnessweb.settings",
        "HARNESS_JUDGE_BASE_URL": f"{server.url}/v1" if judge_url is None else judge_url,
        "HARNESS_JUDGE_MODEL": "judge-model",
        "HARNESS_JUDGE_API_KEY": "sk-test-judge",  # unset, the judge is skipped
    }
    if not env.get("DATABASE_URL"):
        env.pop("DATABASE_URL", None)
    command = [sys.executable, "manage.py", "judge_runs", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_it_exits_1_on_a_fail_verdict_with_fail_on_fail(harness_server, criteria_file) -> None:
    scenario_id = subject_scenario()
    run = play(harness_server, scenario_id)
    judge_scenario(scenario_id, verdict_json("FAIL", summary="No city was named."))

    done = judge_runs(
        harness_server, "--criteria-file", str(criteria_file), "--scenario", scenario_id, "--fail-on-fail"
    )

    assert done.returncode == 1, done.stderr
    assert f"FAIL         {scenario_id}  {run.pk}  1/2 criteria  No city was named." in done.stdout
    assert "1 run judged: 0 PASS, 1 FAIL, 0 judge errors" in done.stdout
    assert "1 verdict(s) FAIL (--fail-on-fail)" in done.stderr
    verdict = JudgeVerdict.objects.get(run=run)
    assert [c.criterion for c in verdict.criteria.all()] == CRITERIA
    assert list(JudgeVerdict.objects.review_queue()) == [verdict]


def test_it_exits_0_on_a_fail_verdict_without_fail_on_fail(harness_server, criteria_file) -> None:
    scenario_id = subject_scenario()
    play(harness_server, scenario_id)
    judge_scenario(scenario_id, verdict_json("FAIL"))
    done = judge_runs(harness_server, "--criteria-file", str(criteria_file), "--scenario", scenario_id)
    assert done.returncode == 0, done.stderr
    assert "1 FAIL" in done.stdout


def test_it_exits_0_when_every_verdict_passes_or_the_judge_failed(harness_server, criteria_file) -> None:
    passing, broken = subject_scenario(), subject_scenario()
    play(harness_server, passing)
    play(harness_server, broken)
    judge_scenario(passing, f"```\n{verdict_json('PASS')}\n```")
    judge_scenario(broken, "not a verdict at all")

    done = judge_runs(
        harness_server, "--criteria-file", str(criteria_file), "--since", "2000-01-01", "--limit", "2", "--fail-on-fail"
    )

    assert done.returncode == 0, done.stderr
    assert "2 runs judged: 1 PASS, 0 FAIL, 1 judge error" in done.stdout
    assert f"JUDGE ERROR  {broken}" in done.stderr
    assert JudgeVerdict.objects.filter(run__scenario_id=broken).get().judge_error


def test_it_exits_1_with_a_clear_message_when_no_judge_is_configured(harness_server, criteria_file) -> None:
    done = judge_runs(harness_server, "--criteria-file", str(criteria_file), judge_url="")
    assert done.returncode == 1
    assert "HARNESS_JUDGE_BASE_URL is not set" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--criteria-file", "/nonexistent/criteria.txt"], "Criteria file '/nonexistent/criteria.txt' does not exist."),
        (
            ["--since", "yesterday"],
            "--since must be an ISO 8601 date or time (e.g. 2026-11-24T10:00:00Z), not 'yesterday'.",
        ),
        (["--since", "2026-13-45"], "--since must be an ISO 8601 date or time"),
        (["--limit", "0"], "--limit must be at least 1, not 0."),
        (["--scenario", "no-such-scenario"], "No runs match: nothing to judge"),
    ],
)
def test_it_refuses_bad_arguments_precisely(settings, harness_server, criteria_file, args, message) -> None:
    point_judge_at(settings, harness_server)
    if "--criteria-file" not in args:
        args = ["--criteria-file", str(criteria_file), *args]
    with pytest.raises(CommandError) as error:
        call_command("judge_runs", *args)
    assert message in str(error.value)


def test_it_refuses_a_file_without_criteria(settings, harness_server, tmp_path) -> None:
    point_judge_at(settings, harness_server)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(CommandError, match="has no criteria: write one per line"):
        call_command("judge_runs", "--criteria-file", str(empty))
