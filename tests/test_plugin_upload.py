"""``--harness-upload``: a throwaway project's tests become runs on a real dashboard (source "pytest", named by node
id, with outcome, calls as events and trace logs), the session's results as JUnit; a dashboard that is down costs
a warning line, never the session."""

from __future__ import annotations

import pytest

from runs_app.models import Run
from tests.conftest import make_token

pytest_plugins = ["pytester"]

TESTS = """
def test_passes_with_calls(harness):
    harness.set_response(text="uploaded answer")
    client = harness.openai_client()
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "upload me"}])
    harness.trace_log("turn 1: asked, answered")


def test_fails(harness):
    harness.set_error("rate_limit", times="always")
    try:
        harness.anthropic_client(max_retries=0).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    except Exception:
        pass
    assert False, "this one fails"


def test_without_calls(harness):
    pass
"""


@pytest.mark.django_db(transaction=True)
def test_it_uploads_each_test_as_a_run_with_its_calls(pytester: pytest.Pytester, harness_server) -> None:
    pytester.makepyfile(test_uploaded=TESTS)
    token = make_token("write")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-upload", harness_server.url, "--harness-token", token
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*harness: uploaded 3 test run(s) and the session's JUnit*"])
    runs = {run.name: run for run in Run.objects.filter(source="pytest")}
    passed = runs["test_uploaded.py::test_passes_with_calls"]
    assert passed.status == "passed" and passed.protocol == "openai"
    assert list(passed.events.values_list("kind", flat=True)) == ["request", "match", "response"]
    request = passed.events.get(kind="request").data
    assert request["body"]["messages"] == [{"role": "user", "content": "upload me"}]
    assert passed.events.get(kind="response").data["text"] == "uploaded answer"
    assert passed.trace_logs.get().content == "turn 1: asked, answered"
    failed = runs["test_uploaded.py::test_fails"]
    assert failed.status == "failed" and "this one fails" in failed.status_reason
    assert failed.events.get(kind="failure_injected").data["status"] == "rate_limit"
    assert not runs["test_uploaded.py::test_without_calls"].events.exists()
    session = next(run for name, run in runs.items() if name.startswith("pytest session"))
    assert session.status == "failed"
    report = session.junit_reports.get()
    assert (report.tests, report.failures) == (3, 1)


def test_it_warns_when_the_dashboard_is_down(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_uploaded="def test_ok(harness):\n    harness.trace_log('x')\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-upload", "http://127.0.0.1:9", "--harness-token", "t"
    )
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*harness: the upload to http://127.0.0.1:9 failed*the tests are unaffected*"])


SKIPPING = """
import pytest


def test_skips_after_a_call(harness):
    harness.set_response(text="seen before the skip")
    harness.openai_client().chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    pytest.skip("no GPU on this runner")


@pytest.mark.xfail(reason="known bug 42")
def test_expected_to_fail(harness):
    assert False


def test_passes(harness):
    harness.trace_log("ok")
"""


@pytest.mark.django_db(transaction=True)
def test_it_uploads_a_skipped_test_as_skipped_never_passed(pytester: pytest.Pytester, harness_server) -> None:
    pytester.makepyfile(test_skipping=SKIPPING)
    token = make_token("write")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-upload", harness_server.url, "--harness-token", token
    )
    result.assert_outcomes(passed=1, skipped=1, xfailed=1)
    runs = {run.name: run for run in Run.objects.filter(source="pytest")}
    skipped = runs["test_skipping.py::test_skips_after_a_call"]
    assert skipped.status == "skipped" and skipped.finished_at is not None
    assert skipped.status_reason == "Skipped: no GPU on this runner"
    assert list(skipped.events.values_list("kind", flat=True)) == ["request", "match", "response"]
    xfailed = runs["test_skipping.py::test_expected_to_fail"]
    assert (xfailed.status, xfailed.status_reason) == ("skipped", "xfail: known bug 42")
    assert runs["test_skipping.py::test_passes"].status == "passed"
    session = next(run for name, run in runs.items() if name.startswith("pytest session"))
    assert session.status == "passed"
    report = session.junit_reports.get()
    assert (report.tests, report.skipped, report.failures) == (3, 2, 0)
