"""``harness.artifact(name, content)``: in-process, kept on the harness and uploaded with the test's run by
``--harness-upload``; in server mode, on the test's run at once (or, before the run exists, at the test's end)."""

from __future__ import annotations

import pytest

from runs_app.models import Artifact, Run
from tests.conftest import make_token

pytest_plugins = ["pytester"]

PAGE = "<!doctype html><html><body><h1>Grocery list</h1><ul><li>eggs</li></ul></body></html>"

IN_PROCESS = f"""
def test_generates_a_page(harness):
    harness.set_response(text="Here it is: /u/abc")
    harness.openai_client().chat.completions.create(model="m", messages=[{{"role": "user", "content": "a list"}}])
    harness.artifact("/u/abc", {PAGE!r})
    harness.artifact("notes.txt", b"plain notes")
    assert harness.artifacts == {{"/u/abc": {PAGE!r}, "notes.txt": "plain notes"}}


def test_without_artifacts(harness):
    pass
"""


@pytest.mark.django_db(transaction=True)
def test_it_uploads_a_test_s_artifacts_with_its_run(pytester: pytest.Pytester, harness_server) -> None:
    pytester.makepyfile(test_pages=IN_PROCESS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-upload", harness_server.url, "--harness-token", make_token("write")
    )

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*harness: uploaded 2 test run(s)*"])
    run = Run.objects.get(name="test_pages.py::test_generates_a_page")
    assert dict(run.artifacts.values_list("name", "kind")) == {"/u/abc": "html", "notes.txt": "text"}
    assert run.artifacts.get(name="/u/abc").content == PAGE
    assert not Run.objects.get(name="test_pages.py::test_without_artifacts").artifacts.exists()


SERVER_MODE = f"""
def test_before_and_after_its_first_call(harness):
    harness.artifact("early.txt", "kept until the run exists")
    harness.set_response(text="ok")
    harness.openai_client().chat.completions.create(model="m", messages=[{{"role": "user", "content": "hi"}}])
    harness.artifact("/u/abc", {PAGE!r})
    with open("run_id.txt", "w") as f:
        f.write(str(harness.run_id))


def test_too_big(harness):
    harness.set_response(text="ok")
    harness.openai_client().chat.completions.create(model="m", messages=[{{"role": "user", "content": "hi"}}])
    harness.artifact("big.txt", "x" * (2 * 1024 * 1024 + 1))
"""


@pytest.mark.django_db(transaction=True)
def test_in_server_mode_it_posts_them_to_the_test_s_run(pytester: pytest.Pytester, harness_server) -> None:
    pytester.makepyfile(test_served=SERVER_MODE)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-url", harness_server.url, "--harness-token", make_token("write")
    )

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*HarnessError: the server refused the artifact 'big.txt'*413*"])
    run_id = (pytester.path / "run_id.txt").read_text()
    artifacts = Artifact.objects.filter(run_id=run_id)
    assert dict(artifacts.values_list("name", "content")) == {"early.txt": "kept until the run exists", "/u/abc": PAGE}
    assert not Artifact.objects.filter(name="big.txt").exists()
