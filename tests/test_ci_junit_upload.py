"""JUnit uploads: raw XML or multipart files, stored per test case, the same file stored once per run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.datastructures import MultiValueDict
from ninja.testing import TestClient

from runs_app.models import JUnitReport, Run
from runs_app.models import TestCaseResult as CaseResult  # not "Test*": pytest would try to collect it
from tests.conftest import make_ci_run, make_client, make_token

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "junit"


def make_xml(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def post_xml(client: TestClient, run: Run, data: bytes, query: str = "") -> Any:
    return client.post(f"/runs/{run.id}/junit{query}", data=data, headers={"Content-Type": "application/xml"})


def post_files(client: TestClient, run: Run, *files: tuple[str, bytes]) -> Any:
    uploads = MultiValueDict({"file": [SimpleUploadedFile(name, data) for name, data in files]})
    return client.post(
        f"/runs/{run.id}/junit", FILES=uploads, headers={"Content-Type": "multipart/form-data; boundary=x"}
    )


def test_it_stores_a_pytest_report_per_test_case() -> None:
    run = make_ci_run()

    response = post_xml(make_client(), run, make_xml("pytest.xml"), "?filename=reports/pytest.xml")

    assert response.status_code == 201
    body = response.json()
    assert (body["tests"], body["failures"], body["errors"], body["skipped"], body["flaky"]) == (6, 1, 1, 1, 0)
    assert (body["filename"], body["duplicate"]) == ("pytest.xml", False)
    case = CaseResult.objects.get(run=run, name="test_tool_call_stream")
    assert case.classname == "tests.test_provider_contract.TestOpenAIContract"
    assert case.outcome == "failed"
    assert case.duration_s == pytest.approx(0.005)
    assert case.message.startswith("AssertionError: tool name mismatch")
    assert case.properties == {
        "provider": "openai",
        "commit": "3f9c2e1",
        "tier": "contract",
        "scenario": "tool_call_single",
    }
    assert (case.provider, case.tier, case.scenario) == ("openai", "contract", "tool_call_single")


def test_it_stores_vitest_annotations_as_provider_tier_scenario() -> None:
    run = make_ci_run()

    response = post_xml(make_client(), run, make_xml("vitest.xml"))

    assert response.status_code == 201
    cases = CaseResult.objects.filter(run=run, tier="e2e", provider="anthropic")
    assert cases.count() == 3
    assert set(cases.values_list("scenario", flat=True)) == {"grocery-list", ""}


@pytest.mark.backends
def test_it_stores_nextest_flaky_and_failed_reruns() -> None:
    run = make_ci_run()

    response = post_xml(make_client(), run, make_xml("nextest.xml"))

    assert response.status_code == 201
    assert (response.json()["flaky"], response.json()["failures"]) == (1, 1)
    outcomes = dict(CaseResult.objects.filter(run=run).values_list("name", "outcome"))
    assert outcomes["gemini_tool_call_stream"] == "flaky"
    assert outcomes["azure::azure_error_rate_limit_429"] == "failed"
    # nextest writes no properties: coverage falls back to name patterns.
    assert CaseResult.objects.get(run=run, name="gemini_tool_call_stream").provider == ""


@pytest.mark.backends
def test_it_stores_the_same_file_once_per_run() -> None:
    run, other = make_ci_run(), make_ci_run()
    client = make_client()

    first = post_xml(client, run, make_xml("pytest.xml"))
    again = post_xml(client, run, make_xml("pytest.xml"))
    elsewhere = post_xml(client, other, make_xml("pytest.xml"))

    assert (first.status_code, again.status_code, elsewhere.status_code) == (201, 200, 201)
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["duplicate"] is True
    assert JUnitReport.objects.filter(run=run).count() == 1
    assert CaseResult.objects.filter(run=run).count() == 6
    assert CaseResult.objects.filter(run=other).count() == 6


def test_it_accepts_a_multipart_file() -> None:
    run = make_ci_run()

    response = post_files(make_client(), run, ("junit.xml", make_xml("nextest.xml")))

    assert response.status_code == 201
    assert response.json()["filename"] == "junit.xml"


def test_it_answers_207_for_several_files_keeping_the_good_ones() -> None:
    run = make_ci_run()
    client = make_client()

    response = post_files(
        client,
        run,
        ("pytest.xml", make_xml("pytest.xml")),
        ("broken.xml", b"<testsuites>\n<testsuite name='s'>\n</testsuites>"),
        ("vitest.xml", make_xml("vitest.xml")),
        ("pytest-again.xml", make_xml("pytest.xml")),
    )

    assert response.status_code == 207
    results = response.json()["results"]
    assert [result["accepted"] for result in results] == [True, False, True, True]
    assert [result.get("duplicate") for result in results] == [False, None, False, True]
    error = results[1]["errors"][0]
    assert (error["field"], error["line"]) == ("file.1", 3)
    assert "mismatched tag" in error["message"]
    assert JUnitReport.objects.filter(run=run).count() == 2


def test_it_answers_malformed_xml_with_line_and_column_and_stores_nothing() -> None:
    run = make_ci_run()

    response = post_xml(make_client(), run, b'<testsuites>\n  <testcase name="a">\n</testsuites>')

    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert (error["field"], error["line"], error["column"]) == ("body", 3, 2)
    assert error["message"].startswith("mismatched tag")
    assert not JUnitReport.objects.exists()
    assert not CaseResult.objects.exists()


def test_it_refuses_a_billion_laughs_document() -> None:
    run = make_ci_run()
    laughs = (
        b'<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
        b'<!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>\n<testsuites name="&lol1;"/>'
    )

    response = post_xml(make_client(), run, laughs)

    assert response.status_code == 422
    assert "DOCTYPE" in response.json()["errors"][0]["message"]
    assert not JUnitReport.objects.exists()


def test_it_answers_a_multipart_body_without_a_file_with_422() -> None:
    run = make_ci_run()

    response = make_client().post(
        f"/runs/{run.id}/junit", FILES=MultiValueDict(), headers={"Content-Type": "multipart/form-data; boundary=x"}
    )

    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "file"


def test_it_answers_413_for_a_file_past_the_size_limit(settings: Any) -> None:
    settings.HARNESS_API_MAX_BYTES = 1000
    run = make_ci_run()

    response = post_files(make_client(), run, ("junit.xml", make_xml("pytest.xml")))

    assert response.status_code == 413
    assert not JUnitReport.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_it_accepts_raw_and_multipart_uploads_over_http(harness_server: Any) -> None:
    run = make_ci_run()
    headers = {"Authorization": f"Bearer {make_token()}"}
    url = f"{harness_server.url}/api/runs/{run.id}/junit"
    with httpx2.Client(headers=headers, timeout=20) as client:
        raw = client.post(url, content=make_xml("pytest.xml"), headers={"Content-Type": "application/xml"})
        again = client.post(url, content=make_xml("pytest.xml"), headers={"Content-Type": "text/xml"})
        multipart = client.post(
            url,
            files=[
                ("file", ("vitest.xml", make_xml("vitest.xml"), "application/xml")),
                ("file", ("nextest.xml", make_xml("nextest.xml"), "application/xml")),
            ],
        )
        broken = client.post(url, content=b"<testsuites><oops></testsuites>")

    assert (raw.status_code, again.status_code, multipart.status_code, broken.status_code) == (201, 200, 207, 422)
    assert [result["accepted"] for result in multipart.json()["results"]] == [True, True]
    assert broken.json()["errors"][0]["line"] == 1
    assert JUnitReport.objects.filter(run=run).count() == 3
    assert set(JUnitReport.objects.values_list("filename", flat=True)) == {"", "vitest.xml", "nextest.xml"}
