"""A scenario's ``mcp`` block (``harnessweb.engine.mcp_schema``): what it accepts, its canonical form, the errors that
name the field (and the line, through ``harness check``), and the expected calls checked against the calls made
(``expectations.mcp_call_expectations``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from harnessweb.engine.expectations import mcp_call_expectations
from harnessweb.engine.filecheck import check_paths
from harnessweb.engine.loader import read_scenario_file
from harnessweb.engine.mcp_schema import McpConfig, arguments_match
from harnessweb.engine.schemas import Scenario, format_validation_error
from tests.conftest import ROOT

EXAMPLE = ROOT / "tests" / "fixtures" / "mcp" / "trip.yaml"


def server(**fields: Any) -> dict[str, Any]:
    return {"servers": {"s": {"tools": [{"name": "t"}], **fields}}}


def problems(mcp: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as raised:
        Scenario.model_validate({"id": "x", "mcp": mcp})
    return format_validation_error(raised.value)


def test_the_example_loads_and_keeps_mcp_s_spellings_as_aliases() -> None:
    (scenario,) = read_scenario_file(EXAMPLE)

    assert scenario.mcp is not None and scenario.mcp.closed_world
    travel = scenario.mcp.servers["travel"]
    assert travel.tools[0].input_schema["required"] == ["city"]
    assert travel.answers[1].is_error and travel.answers[1].matching == "any"
    assert travel.answers[0].matching == "exact"
    canonical = scenario.canonical()["mcp"]
    assert canonical["closed_world"] is True and "input_schema" in canonical["servers"]["travel"]["tools"][0]
    assert Scenario.model_validate(scenario.canonical()) == scenario


def test_a_scenario_without_mcp_keeps_its_canonical_form() -> None:
    assert "mcp" not in Scenario.model_validate({"id": "x"}).canonical()


@pytest.mark.parametrize(
    ("mcp", "message"),
    [
        ({"servers": {}}, "mcp.servers: Dictionary should have at least 1 item"),
        ({"servers": {"bad name": {}}}, "mcp.servers.bad name.[key]: String should match pattern"),
        (
            server(answers=[{"tool": "u", "text": "x"}]),
            "mcp.servers.s.answers: Value error, answer 0: 'u' is not a tool",
        ),
        (server(answers=[{"tool": "t"}]), "mcp.servers.s.answers.0: Value error, give the answer"),
        (server(answers=[{"tool": "t", "match": "subset", "text": "x"}]), "match 'subset' compares arguments"),
        (server(answers=[{"tool": "t", "isError": True, "error": {"message": "m"}}]), "is_error marks a result"),
        (server(answers=[{"tool": "t", "text": "x", "error": {"message": "m"}}]), "error is a JSON-RPC error"),
        (
            server(answers=[{"tool": "t", "content": [{"text": "x"}]}]),
            'answers.0.content: Value error, block 0 has no "type"',
        ),
        ({"servers": {"s": {"tools": [{"name": "t", "inputSchema": {"type": "string"}}]}}}, "tools.0.input_schema"),
        ({"servers": {"s": {"tools": [{"name": "a b"}]}}}, "mcp.servers.s.tools.0.name: String should match pattern"),
        ({"servers": {"s": {"tools": [{"name": "t"}, {"name": "t"}]}}}, "tool 't' is declared twice"),
        (server(resources=[{"uri": "u", "name": "n"}]), "give either text or blob"),
        ({**server(), "expect_calls": [{"tool": "nope"}]}, "expect_calls.0.tool: no server declares a tool 'nope'"),
        ({**server(), "expect_calls": [{"tool": "t", "server": "z"}]}, "expect_calls.0.server: no server 'z'"),
        ({**server(), "closedWorld": "maybe"}, "mcp.closed_world: Input should be a valid boolean"),
    ],
)
def test_a_mistake_is_named_by_its_field(mcp: dict[str, Any], message: str) -> None:
    assert message in problems(mcp)


def test_harness_check_reports_the_file_and_line_of_a_mistake(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(EXAMPLE.read_text().replace("next_departure, text", "next_departures, text"))

    report = check_paths([bad])

    assert report.problems == [
        f"{bad}:33: mcp.servers.travel.answers: Value error, answer 2: 'next_departures' is not a tool of this "
        "server (tools: get_forecast, next_departure)"
    ]


@pytest.mark.parametrize(
    ("wanted", "sent", "how", "matches"),
    [
        ({}, {"a": 1}, "any", True),
        ({"a": 1}, {"a": 1}, "exact", True),
        ({"a": 1}, {"a": 1, "b": 2}, "exact", False),
        ({"a": 1}, {"a": 1, "b": 2}, "subset", True),
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, "subset", True),
        ({"a": [1]}, {"a": [1, 2]}, "subset", False),
        ({"a": 1}, {"b": 1}, "subset", False),
    ],
)
def test_arguments_match_as_the_answer_says(wanted: Any, sent: Any, how: str, matches: bool) -> None:
    assert arguments_match(wanted, sent, how) is matches


CONFIG = McpConfig.model_validate(
    {
        "servers": {"s": {"tools": [{"name": "search"}, {"name": "book"}]}},
        "expect_calls": [{"tool": "search", "arguments": {"q": "Paris"}}, {"tool": "book", "server": "s"}],
    }
)


def test_the_expected_calls_are_met_in_order_with_their_arguments() -> None:
    rows = mcp_call_expectations(CONFIG, [("s", "search", {"q": "Paris", "n": 3}), ("s", "book", {})])

    assert [(r.what, r.expected, r.actual, r.ok) for r in rows] == [
        ("MCP call 1", 'search with {"q":"Paris"}', "call 1 of 2", True),
        ("MCP call 2", "s.book", "call 2 of 2", True),
    ]


def test_an_expected_call_out_of_order_with_other_arguments_or_missing_is_a_problem() -> None:
    out_of_order = mcp_call_expectations(CONFIG, [("s", "book", {}), ("s", "search", {"q": "Paris"})])
    other_arguments = mcp_call_expectations(CONFIG, [("s", "search", {"q": "Rome"})])
    unordered = mcp_call_expectations(
        CONFIG.model_copy(update={"expect_order": False}), [("s", "book", {}), ("s", "search", {"q": "Paris"})]
    )

    assert (
        out_of_order[1].problem
        == "Expected MCP tool s.book to be called after the calls listed before it, but it came before"
    )
    assert other_arguments[0].problem == (
        'Expected MCP tool search to be called with {"q":"Paris"} but it was called with {"q":"Rome"}'
    )
    assert other_arguments[1].problem == "Expected the agent to call MCP tool s.book but it never did"
    assert all(row.ok for row in unordered)
