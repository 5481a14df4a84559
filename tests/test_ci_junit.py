"""The pure JUnit XML parser, on files as pytest, vitest and cargo-nextest write them."""

from __future__ import annotations

from pathlib import Path

import pytest

from runs_app.ci import junit

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "junit"


def make_xml(body: str) -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>{body}</testsuites>'.encode()


def make_report(name: str) -> junit.Report:
    return junit.parse((FIXTURES / name).read_bytes())


def by_name(report: junit.Report) -> dict[str, junit.TestCase]:
    return {case.name: case for case in report.cases}


def test_it_reads_pytest_outcomes_durations_and_messages() -> None:
    report = make_report("pytest.xml")
    cases = by_name(report)

    assert (report.tests, report.failures, report.errors, report.skipped, report.flaky) == (6, 1, 1, 1, 0)
    assert cases["test_simple_text_stream"].outcome == "passed"
    assert cases["test_simple_text_stream"].classname == "tests.test_provider_contract.TestOpenAIContract"
    assert cases["test_simple_text_stream"].duration_s == pytest.approx(0.013)
    assert cases["test_simple_text_stream"].suite == "pytest"
    assert cases["test_tool_call_stream"].outcome == "failed"
    assert cases["test_tool_call_stream"].message.startswith("AssertionError: tool name mismatch\nassert")
    assert cases["test_openai_error_auth_401"].outcome == "error"
    assert "FileNotFoundError" in cases["test_openai_error_auth_401"].message
    assert cases["test_openai_unicode_text"].outcome == "skipped"
    assert cases["test_openai_unicode_text"].message == "cassette not recorded yet"


def test_it_overlays_case_properties_on_suite_properties() -> None:
    cases = by_name(make_report("pytest.xml"))

    # record_testsuite_property at suite level, record_property per case.
    assert cases["test_tool_call_stream"].properties == {
        "provider": "openai",
        "commit": "3f9c2e1",
        "tier": "contract",
        "scenario": "tool_call_single",
    }
    # A setup error happens before record_property: only the suite's properties apply.
    assert cases["test_openai_error_auth_401"].properties == {"provider": "openai", "commit": "3f9c2e1"}


def test_it_reads_vitest_annotations_as_properties_and_todo_as_skipped() -> None:
    report = make_report("vitest.xml")
    cases = by_name(report)

    assert (report.tests, report.failures, report.skipped) == (5, 1, 2)
    first = cases["grocery list multi-turn > creates a list page with all four items"]
    assert first.properties == {"tier": "e2e", "provider": "anthropic", "scenario": "grocery-list"}
    assert first.classname == "tests/e2e/multi-turn/grocery-list.test.ts"
    failed = cases["grocery list multi-turn > adds hummus and returns a different link"]
    # vitest writes <properties> after <system-out> and before <failure>.
    assert failed.outcome == "failed"
    assert failed.message == "expected '/u/abc123' not to be '/u/abc123' // Object.is equality"
    assert failed.properties["provider"] == "anthropic"
    assert cases["grocery list multi-turn > judges the conversation"].outcome == "skipped"


def test_it_reads_nextest_flaky_and_rerun_failures() -> None:
    report = make_report("nextest.xml")
    cases = by_name(report)

    assert (report.tests, report.failures, report.flaky) == (11, 1, 1)
    # Failed once, then passed: flaky, with the failed attempt's message.
    flaky = cases["gemini_tool_call_stream"]
    assert flaky.outcome == "flaky"
    assert flaky.message == "thread 'gemini_tool_call_stream' panicked at tests/provider_native_contract.rs:588:9"
    assert flaky.duration_s == pytest.approx(0.041)
    # Failed on every attempt: failed, whatever the reruns say.
    assert cases["azure::azure_error_rate_limit_429"].outcome == "failed"
    assert cases["azure::azure_error_rate_limit_429"].classname == "pi_agent_rust::provider_streaming"
    # The setup script's suite-level properties reach its test case.
    assert cases["vcr-fixtures"].properties["command"] == "scripts/check-vcr-fixtures.sh"


def test_it_accepts_a_bare_testsuite_root_and_nested_suites() -> None:
    data = (
        b'<testsuite name="outer"><properties><property name="provider" value="gemini"/></properties>'
        b'<testcase name="a" time="1.5"/>'
        b'<testsuite name="inner"><properties><property name="tier">unit</property></properties>'
        b'<testcase name="b"><error message="boom"/></testcase></testsuite></testsuite>'
    )
    report = junit.parse(data)
    cases = by_name(report)

    assert cases["a"].suite == "outer"
    assert cases["a"].properties == {"provider": "gemini"}
    assert cases["b"].suite == "inner"
    assert cases["b"].properties == {"provider": "gemini", "tier": "unit"}
    assert cases["b"].outcome == "error"


def test_it_reads_a_failure_message_from_the_text_when_there_is_no_attribute() -> None:
    data = make_xml(
        '<testsuite name="s"><testcase name="t"><failure>\n\n  first line\nsecond</failure></testcase></testsuite>'
    )

    assert junit.parse(data).cases[0].message == "first line"


def test_it_ignores_unreadable_durations() -> None:
    data = make_xml('<testsuite name="s"><testcase name="a" time="soon"/><testcase name="b" time="-1"/></testsuite>')

    assert [case.duration_s for case in junit.parse(data).cases] == [None, None]


def test_it_accepts_a_report_without_tests() -> None:
    assert junit.parse(make_xml('<testsuite name="pytest" tests="0"/>')).cases == []


def test_it_refuses_a_doctype_before_parsing() -> None:
    laughs = (
        b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
        b' <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">\n]>\n'
        b"<testsuites><testsuite name='&lol2;'/></testsuites>"
    )
    with pytest.raises(junit.JUnitError) as exc:
        junit.parse(laughs)

    assert "DOCTYPE" in exc.value.message
    assert (exc.value.line, exc.value.column) == (2, 0)


def test_it_refuses_an_entity_declaration_anywhere() -> None:
    with pytest.raises(junit.JUnitError, match="ENTITY"):
        junit.parse(b"<testsuites><!-- <!ENTITY x SYSTEM 'file:///etc/passwd'> --></testsuites>")


def test_it_refuses_utf16_documents() -> None:
    with pytest.raises(junit.JUnitError, match="UTF-8"):
        junit.parse('<?xml version="1.0" encoding="UTF-16"?><testsuites/>'.encode("utf-16"))


def test_it_names_line_and_column_of_malformed_xml() -> None:
    with pytest.raises(junit.JUnitError) as exc:
        junit.parse(b'<testsuites>\n  <testsuite name="s">\n    <testcase name="a">\n</testsuites>')

    assert exc.value.line == 4
    assert exc.value.column is not None
    assert "mismatched tag" in exc.value.message


def test_it_refuses_other_root_elements_and_empty_documents() -> None:
    with pytest.raises(junit.JUnitError, match="<html>"):
        junit.parse(b"<html><body/></html>")
    with pytest.raises(junit.JUnitError, match="empty"):
        junit.parse(b"  \n")


def test_it_walks_deeply_nested_suites_without_recursion() -> None:
    depth = 5000
    data = b"<testsuites>" + b'<testsuite name="s">' * depth + b'<testcase name="x"/>' + b"</testsuite>" * depth
    data += b"</testsuites>"

    assert [case.name for case in junit.parse(data).cases] == ["x"]
