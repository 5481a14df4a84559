"""A trace log's outcome from its footer (seed 001: the application's TraceLogger ends each turn's file with a
``SUCCESS`` or ``FAILED`` footer). Shared by the pytest plugin (``harnessweb/testing/tracelogs.py``) and the server
(the trace-log upload, ``manage.py collect_trace_logs``), so both read a footer the same way.

What counts, precisely:

- only the last :data:`FOOTER_LINES` non-empty lines are looked at (a line of whitespace is empty), bottom first;
- a line counts when it holds ``SUCCESS`` or ``FAILED`` as a word of its own, in capitals: ``=== SUCCESS ===``,
  ``[10:00:01] FAILED: timeout``, ``status=SUCCESS`` count; ``success``, ``Failed to fetch``, ``SUCCESSFUL`` and
  ``TEST_FAILED`` do not (a log's own lines say "failed" in lower case far more often than its footer does);
- the bottom-most line that counts decides; when it holds both words, the first of them on the line decides;
- no line counting: no outcome (``""``): the log has no footer, or it is not finished yet.
"""

from __future__ import annotations

import re

SUCCESS = "success"
FAILED = "failed"
FOOTER_LINES = 3  # a footer may be framed (a rule above and below) or followed by a line of timing
_WORD = re.compile(r"(?<![A-Za-z0-9_])(SUCCESS|FAILED)(?![A-Za-z0-9_])")


def outcome_of(content: str) -> str:
    """``"success"``, ``"failed"`` or ``""`` (no footer) for a trace log's text; see the module's docstring."""
    lines = [line for line in content.rstrip().splitlines() if line.strip()]
    for line in reversed(lines[-FOOTER_LINES:]):
        found = _WORD.search(line)
        if found is not None:
            return SUCCESS if found.group(1) == "SUCCESS" else FAILED
    return ""
