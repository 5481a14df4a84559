"""A trace log's footer read as the turn's outcome (harnessweb/engine/trace_outcome.py): only the last three non-empty
lines, a capitalised SUCCESS or FAILED word of its own, the bottom-most line deciding."""

from __future__ import annotations

import pytest

from harnessweb.engine.trace_outcome import FOOTER_LINES, outcome_of

BODY = "[10:00:00] START request r1\n[10:00:01] LLM request planner\n[10:00:02] tool generate_ui ok\n"


@pytest.mark.parametrize(
    ("footer", "outcome"),
    [
        ("SUCCESS", "success"),
        ("FAILED", "failed"),
        ("=== SUCCESS ===", "success"),
        ("--- FAILED: orchestrator threw ---", "failed"),
        ("[10:00:03] SUCCESS in 1204ms", "success"),
        ("status=FAILED", "failed"),
        ("[FAILED]", "failed"),
        ("SUCCESS\n\n   \n", "success"),  # blank lines after the footer are not lines
        ("SUCCESS\r\n", "success"),
    ],
)
def test_it_reads_a_footer(footer: str, outcome: str) -> None:
    assert outcome_of(BODY + footer) == outcome


@pytest.mark.parametrize(
    "footer",
    [
        "success",  # lower case: a log's own words, not a footer
        "Failed to fetch https://example.com",
        "SUCCESSFUL",
        "TEST_FAILED",
        "UNSUCCESS",
        "done",
    ],
)
def test_it_reads_no_outcome_without_a_footer_word(footer: str) -> None:
    assert outcome_of(BODY + footer) == ""


def test_it_reads_no_outcome_from_an_empty_log() -> None:
    assert outcome_of("") == ""
    assert outcome_of("\n \n\t\n") == ""


def test_the_bottom_most_counting_line_decides() -> None:
    assert outcome_of(BODY + "tool lookup FAILED, retrying\nSUCCESS") == "success"
    assert outcome_of(BODY + "SUCCESS\nFAILED: the reply could not be sent") == "failed"


def test_a_framed_footer_or_one_followed_by_timing_counts() -> None:
    assert outcome_of(BODY + "==========\nFAILED\n==========") == "failed"
    assert outcome_of(BODY + "SUCCESS\nduration: 1.2s\ntokens: 120") == "success"


def test_only_the_last_three_non_empty_lines_are_read() -> None:
    assert FOOTER_LINES == 3
    assert outcome_of(BODY + "SUCCESS\none\ntwo\nthree") == ""
    assert outcome_of(BODY + "SUCCESS\none\n\n\ntwo") == "success"  # empty lines are not counted


def test_a_line_with_both_words_goes_by_the_first() -> None:
    assert outcome_of("FAILED after 2 SUCCESS steps") == "failed"
    assert outcome_of("SUCCESS (1 step FAILED and was retried)") == "success"
