"""``harness.judge(criteria)`` in a throwaway project: the test's conversation judged by the harness's own fake
endpoint standing in for the judge model, the verdict in the JUnit properties and the terminal summary, a FAIL
failing the test only with ``fail_on_fail=True``, a placeholder key skipping, and the verdict on the test's run
with ``--harness-upload`` and in server mode."""

from __future__ import annotations

import uuid
from xml.etree import ElementTree

import pytest

from runs_app.models import JudgeVerdict, Run
from tests.conftest import make_token
from tests.judging import CRITERIA, judge_scenario, verdict_json

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.django_db(transaction=True)

TESTS = """
import pytest

CRITERIA = {criteria!r}


def converse(harness):
    harness.set_response(text="It is sunny in Oslo.")
    harness.artifact("/u/abc", "<ul><li>eggs</li></ul>")
    harness.openai_client().chat.completions.create(
        model="gpt-4o", messages=[{{"role": "user", "content": "{marker}"}}])


def test_judged(harness):
    converse(harness)
    judged = harness.judge(CRITERIA)
    assert judged.state == "FAIL"
    assert [c.verdict for c in judged.verdict.criteria] == ["PASS", "FAIL"]


def test_judged_as_a_gate(harness):
    converse(harness)
    harness.judge("\\n".join(CRITERIA), fail_on_fail=True)
"""


@pytest.fixture
def project(pytester: pytest.Pytester, harness_server, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project whose tests are judged by a scenario of the harness server answering a FAIL verdict for them."""
    marker = f"judge-me-{uuid.uuid4().hex[:8]}"
    judge_scenario(marker, verdict_json("FAIL", summary="The city was never named."))
    pytester.makepyfile(test_judged=TESTS.format(criteria=CRITERIA, marker=marker))
    monkeypatch.setenv("HARNESS_JUDGE_BASE_URL", f"{harness_server.url}/v1")
    monkeypatch.setenv("HARNESS_JUDGE_API_KEY", f"sk-test-judge-{uuid.uuid4().hex}")
    monkeypatch.setenv("HARNESS_JUDGE_MODEL", "judge-model")
    return pytester


def test_it_reports_the_verdict_and_fails_only_a_gate(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--junitxml=report.xml")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*harness judge*",
        "test_judged.py::test_judged: FAIL: The city was never named.",
        f"    FAIL: {CRITERIA[1]} (No city was named.)",
    ])  # fmt: skip
    result.stdout.fnmatch_lines(["*JudgeFailed: harness.judge: FAIL (1 of 2 criteria): The city was never named.*"])
    cases = {case.get("name"): case for case in ElementTree.parse(project.path / "report.xml").iter("testcase")}
    properties = {p.get("name"): p.get("value") for p in cases["test_judged"].iter("property")}
    assert properties["judge"] == "FAIL"
    assert properties["judge_model"] == "judge-model"
    assert properties["judge_summary"] == "The city was never named."
    assert properties["judge_criterion_1"] == f"PASS: {CRITERIA[0]} (It gave the weather.)"


def test_it_skips_with_a_placeholder_key_and_never_fails(project: pytest.Pytester, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_JUDGE_API_KEY", "test-api-key")  # seed 001's placeholder: no judge
    project.makepyfile(test_skipped="""
def test_gate(harness):
    harness.judge(["Anything"], fail_on_fail=True)
    assert harness.verdicts[0].state == "skipped"
""")  # fmt: skip
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "test_skipped.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_skipped.py::test_gate: skipped: *test-api-key*"])


def test_it_puts_the_verdict_on_the_uploaded_run(project: pytest.Pytester, harness_server) -> None:
    token = make_token("write")
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-upload", harness_server.url, "--harness-token", token
    )
    result.assert_outcomes(passed=1, failed=1)
    run = Run.objects.get(source="pytest", name="test_judged.py::test_judged")
    verdict = JudgeVerdict.objects.get(run=run)
    assert (verdict.overall, verdict.summary, verdict.judge_model) == (
        "FAIL",
        "The city was never named.",
        "judge-model",
    )
    assert verdict in JudgeVerdict.objects.review_queue()
    # The prompt as sent: the conversation, the artifact as a generated page; the tokens the judge's usage reported.
    assert "It is sunny in Oslo." in verdict.prompt and "<ul><li>eggs</li></ul>" in verdict.prompt
    assert verdict.input_tokens > 0 and verdict.output_tokens > 0


def test_it_uploads_a_skipped_verdict_as_skipped(project: pytest.Pytester, harness_server, monkeypatch) -> None:
    monkeypatch.delenv("HARNESS_JUDGE_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-proj-{uuid.uuid4().hex}")  # the code under test's, never the judge's
    token = make_token("write")
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-upload", harness_server.url, "--harness-token", token, "-k", "not gate"
    )
    result.assert_outcomes(passed=0, failed=1, deselected=1)  # test_judged asserts a FAIL it did not get
    verdict = JudgeVerdict.objects.get(run__name="test_judged.py::test_judged")
    assert (verdict.overall, verdict.judge_error) == ("", "")
    assert "HARNESS_JUDGE_API_KEY" in verdict.skipped_reason
    assert verdict not in JudgeVerdict.objects.review_queue()


def test_it_puts_the_verdict_on_the_tests_run_in_server_mode(project: pytest.Pytester, harness_server) -> None:
    token = make_token("write")
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-url", harness_server.url, "--harness-token", token, "-k", "not gate"
    )
    result.assert_outcomes(passed=1, deselected=1)
    verdict = JudgeVerdict.objects.get(summary="The city was never named.", run__source="endpoint")
    assert verdict.overall == "FAIL"
    assert list(verdict.run.events.values_list("kind", flat=True))[:2] == ["request", "match"]


def test_it_fails_a_gate_on_a_judge_error_and_only_reports_it_otherwise(project: pytest.Pytester) -> None:
    marker = f"garbage-{uuid.uuid4().hex[:8]}"
    judge_scenario(marker, "I cannot judge this.")
    project.makepyfile(test_broken=f"""
def converse(harness):
    harness.trace_log("turn 1 FAILED")
    harness.openai_client().chat.completions.create(
        model="gpt-4o", messages=[{{"role": "user", "content": "{marker}"}}])


def test_reported(harness):
    converse(harness)
    assert harness.judge(["Anything"]).state == "judge error"


def test_gate(harness):
    converse(harness)
    harness.judge(["Anything"], fail_on_fail=True)
""")  # fmt: skip
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "test_broken.py")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*JudgeFailed: harness.judge: judge error: *"])
    result.stdout.fnmatch_lines(["test_broken.py::test_reported: judge error: *"])
