"""The seed's obligations at its own granularity: the checks inside a tier (tier 1's six checklist classes, tier 2's
four contract scenarios, tier 3's five error paths), and which check a test case covers.

A case covers the check its ``check`` property names, else the first check of its tier whose pattern its
``"classname::name"`` holds (case-insensitively; ``-`` and ``_`` alike). The patterns follow the seed's own test
names (``checklist_anthropic_auth_key_flows_through``, ``anthropic_error_invalid_utf8``…). Pure: no Django.
"""

from __future__ import annotations

import re

CHECKS: dict[str, tuple[tuple[str, str], ...]] = {
    "unit": (
        ("identity", r"identity"),
        ("request_mapping", r"request_mapping"),
        ("auth", r"auth"),
        ("endpoint", r"endpoint"),
        ("tool_serialization", r"tool_serial"),
        ("vcr_fixtures", r"vcr|fixture"),
    ),
    "contract": (
        ("simple_text", r"simple_text"),
        ("tool_call", r"tool_call"),
        ("auth_header", r"auth"),
        ("payload_shape", r"payload|request_shape|request_body"),
    ),
    "error_paths": (
        ("http_500", r"http_500|(?<![0-9])500(?![0-9])|server_error"),
        ("wrong_content_type", r"wrong_content_type"),
        ("missing_content_type", r"missing_content_type"),
        ("invalid_json", r"invalid_json"),
        ("invalid_utf8", r"invalid_utf8|utf_?8"),
    ),
}
_COMPILED = {
    tier: tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in rows) for tier, rows in CHECKS.items()
}


def names(tier: str) -> tuple[str, ...]:
    """The checks of a tier, in the seed's order (none for a tier the seed does not split)."""
    return tuple(name for name, _ in CHECKS.get(tier, ()))


def check_of(tier: str, text: str, named: str = "") -> str | None:
    """The check a case of ``tier`` covers, from its ``check`` property or its name; None when it covers none."""
    if named.strip().lower() in names(tier):
        return named.strip().lower()
    text = text.replace("-", "_")
    return next((name for name, pattern in _COMPILED.get(tier, ()) if pattern.search(text)), None)


_ENUMERATING = re.compile(r"all_native_providers|providers_have|all_providers|coverage_floor", re.IGNORECASE)


def enumerates_providers(text: str) -> bool:
    """Whether a unit case is one of the seed's checklist tests that cover every native provider in one test
    (``checklist_all_native_providers_have_identity``, ``checklist_providers_have_default_endpoint``,
    ``checklist_vcr_fixture_coverage_floor``): it names no provider and counts for each native one."""
    return bool(_ENUMERATING.search(text.replace("-", "_")))
