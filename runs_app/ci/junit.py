"""JUnit XML as pytest, vitest and cargo-nextest write it, parsed into plain data. Pure: no Django, no I/O.

The shapes covered: a ``<testsuites>`` root or a bare ``<testsuite>`` root; suites nested in suites; ``<testcase>``
with ``<failure>``, ``<error>``, ``<skipped>``; ``<properties>`` at suite and case level (pytest's
``record_testsuite_property``/``record_property``, vitest's annotations); and nextest's retries: ``<flakyFailure>``/
``<flakyError>`` on a test that finally passed, ``<rerunFailure>``/``<rerunError>`` next to the ``<failure>`` of one
that never did.

Documents with a DTD or entity declarations are refused before parsing (no billion laughs, no external entities):
none of those tools writes one. Secrets in what is kept of a case (its names, message and properties) are redacted.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from harnessweb.engine.redaction import redact_json, redact_text

PASSED = "passed"
FAILED = "failed"
ERROR = "error"
SKIPPED = "skipped"
FLAKY = "flaky"

# The first of these a test case holds decides its outcome. A failure outranks an error (pytest writes both when a
# failed test also breaks in teardown). nextest writes flakyFailure/flakyError on a test whose last attempt passed,
# and rerunFailure/rerunError next to the <failure> of one that never did, so those need no entry of their own.
_STATUS_TAGS = (
    ("failure", FAILED),
    ("error", ERROR),
    ("skipped", SKIPPED),
    ("flakyFailure", FLAKY),
    ("flakyError", FLAKY),
)
_DTD = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
# Byte-order marks and NUL bytes of UTF-16/UTF-32: the DTD check reads bytes, so it needs an ASCII-compatible encoding.
_WIDE_ENCODINGS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")


class JUnitError(ValueError):
    """The document is not JUnit XML we accept; ``line``/``column`` locate a syntax error when known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True)
class TestCase:
    suite: str
    name: str
    classname: str
    duration_s: float | None
    outcome: str
    message: str
    # The suite's properties (outer suites first) overlaid by the case's own.
    properties: dict[str, str] = field(default_factory=dict)

    __test__ = False  # not a pytest test class


@dataclass(frozen=True)
class Report:
    cases: list[TestCase]

    def count(self, outcome: str) -> int:
        """How many cases ended with ``outcome``."""
        return sum(1 for case in self.cases if case.outcome == outcome)

    @property
    def tests(self) -> int:
        return len(self.cases)

    @property
    def failures(self) -> int:
        return self.count(FAILED)

    @property
    def errors(self) -> int:
        return self.count(ERROR)

    @property
    def skipped(self) -> int:
        return self.count(SKIPPED)

    @property
    def flaky(self) -> int:
        return self.count(FLAKY)


def parse(data: bytes) -> Report:
    """Parse a JUnit XML document; raises :class:`JUnitError` for anything malformed or unsafe."""
    if not data.strip():
        raise JUnitError("The document is empty.")
    if data.startswith(_WIDE_ENCODINGS) or b"\x00" in data[:4]:
        raise JUnitError("Only UTF-8 (or another ASCII-compatible encoding) is accepted.")
    match = _DTD.search(data)
    if match:
        line = data.count(b"\n", 0, match.start()) + 1
        column = match.start() - (data.rfind(b"\n", 0, match.start()) + 1)
        kind = match.group(1).decode().upper()
        raise JUnitError(f"<!{kind}> declarations are not accepted: line {line}, column {column}", line, column)
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        line, column = exc.position
        raise JUnitError(str(exc), line, column) from exc

    tag = _local(root.tag)
    if tag == "testsuites":
        suites = [child for child in root if _local(child.tag) == "testsuite"]
    elif tag == "testsuite":
        suites = [root]
    else:
        raise JUnitError(f"The root element is <{tag}>; JUnit XML has <testsuites> or <testsuite>.")
    return Report(_cases(suites))


def _cases(suites: list[ET.Element]) -> list[TestCase]:
    """The test cases of ``suites`` and of the suites nested in them, in document order of their suites."""
    cases: list[TestCase] = []
    # A stack, not recursion: a hostile document may nest suites deeper than Python's recursion limit.
    stack: list[tuple[ET.Element, dict[str, str]]] = [(suite, {}) for suite in reversed(suites)]
    while stack:
        suite, inherited = stack.pop()
        properties = {**inherited, **_properties(suite)}
        nested = []
        for child in suite:
            tag = _local(child.tag)
            if tag == "testcase":
                cases.append(_case(child, suite.get("name", ""), properties))
            elif tag == "testsuite":
                nested.append(child)
        stack.extend((child, properties) for child in reversed(nested))
    return cases


def _case(element: ET.Element, suite: str, suite_properties: dict[str, str]) -> TestCase:
    children: dict[str, ET.Element] = {}
    for child in element:
        children.setdefault(_local(child.tag), child)
    outcome, message = PASSED, ""
    for tag, candidate in _STATUS_TAGS:
        status = children.get(tag)
        if status is not None:
            outcome, message = candidate, status.get("message") or _first_line(status.text)
            break
    # What is kept of a case has its secrets redacted: a key printed in a failure's message stays behind.
    return TestCase(
        suite=redact_text(suite),
        name=redact_text(element.get("name", "")),
        classname=redact_text(element.get("classname", "")),
        duration_s=_seconds(element.get("time")),
        outcome=outcome,
        message=redact_text(message),
        properties=redact_json({**suite_properties, **_properties(element)}),
    )


def _properties(element: ET.Element) -> dict[str, str]:
    result: dict[str, str] = {}
    for properties in element:
        if _local(properties.tag) != "properties":
            continue
        for prop in properties:
            name = prop.get("name")
            if _local(prop.tag) == "property" and name:
                # Most tools use the value attribute; some put the value in the element's text.
                value = prop.get("value")
                result[name] = value if value is not None else (prop.text or "").strip()
    return result


def _seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value.replace(",", ""))
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _local(tag: object) -> str:
    # Comments and processing instructions have a function as tag; namespaced tags read "{uri}name".
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]
