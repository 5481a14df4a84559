"""Coverage as a CI gate: the gaps in a coverage report (every obligation a provider owes and has not met, check by
check, with the cassette file that would close a cassette gap), and the report of them as text, JSON or JUnit. Read
by ``manage.py check_coverage`` and ``GET /api/coverage?gate=1``; it reads the report's dict and nothing else.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any
from xml.etree import ElementTree as ET

from runs_app.coverage.report import CASSETTES, FAILING, MISSING

# The scenarios seed 003 names for cassettes, in the order a provider usually records them: what to suggest when a
# provider is short of its floor with every required scenario present.
SEED_SCENARIOS = (
    "simple_text",
    "tool_call_single",
    "error_auth_401",
    "unicode_text",
    "error_bad_request_400",
    "error_rate_limit_429",
)
UNMET = (FAILING, MISSING)


@dataclass(frozen=True)
class Gap:
    provider: str
    obligation: str
    check: str  # the check within the tier ("" for the tier as a whole, or for cassettes)
    state: str
    reason: str
    closes: str  # what would close it: a cassette file name, or the test to add

    def line(self) -> str:
        where = f"{self.obligation}/{self.check}" if self.check else self.obligation
        return f"{self.provider}: {where} {self.state}: {self.reason} (to close it: {self.closes})"


def _cassette_gaps(name: str, cell: dict[str, Any]) -> list[Gap]:
    missing = list(cell.get("missing_scenarios") or [])
    misfits: dict[str, str] = cell.get("misfits") or {}
    gaps = [
        Gap(name, CASSETTES, "", MISSING, f"no cassette for the required scenario {s}", f"verify_{name}_{s}.json")
        for s in missing
        if s not in misfits
    ]
    # A cassette whose stream does not show what its name claims: recorded again, it closes the gap.
    gaps += [
        Gap(name, CASSETTES, "", FAILING, why, f"record verify_{name}_{scenario}.json again")
        for scenario, why in misfits.items()
    ]
    short = cell.get("floor", 0) - cell.get("count", 0) - len(missing)
    if short > 0:
        have = {*missing, *misfits, *(cell.get("scenarios") or ())}
        suggestions = [s for s in SEED_SCENARIOS if s not in have][:short]
        files = ", ".join(f"verify_{name}_{s}.json" for s in suggestions) or f"{short} more verify_{name}_*.json"
        reason = f"{cell.get('count', 0)} cassettes of the floor {cell.get('floor', 0)}"
        gaps.append(Gap(name, CASSETTES, "", cell["state"], reason, files))
    return gaps


def _tier_gaps(name: str, obligation: str, cell: dict[str, Any]) -> list[Gap]:
    rows = [row for row in cell.get("checks") or [] if row["state"] in UNMET]
    if not rows:
        return [Gap(name, obligation, "", cell["state"], cell["reason"], f"passing {obligation} tests for {name}")]
    gaps = []
    for row in rows:
        if row["state"] == FAILING:
            reason = f"{row['failed']} test(s) covering it failed"
            closes = "fix the failing test"
        else:
            reason = "no passing test covers it"
            closes = f"a passing {obligation} test whose name holds {row['check']} (or a 'check' property)"
        gaps.append(Gap(name, obligation, row["check"], row["state"], reason, closes))
    return gaps


def narrowed(report: dict[str, Any], provider: str | None) -> dict[str, Any]:
    """The report of one provider (all of them for None)."""
    if provider is None:
        return report
    return {**report, "providers": [entry for entry in report["providers"] if entry["name"] == provider]}


def gaps(report: dict[str, Any]) -> list[Gap]:
    """Every unmet obligation of the report's providers, in the grid's order; waived and not-required cells are
    met."""
    found: list[Gap] = []
    for entry in report["providers"]:
        for obligation in report["obligations"]:
            cell = entry["cells"][obligation]
            if cell["state"] not in UNMET:
                continue
            if obligation == CASSETTES:
                found += _cassette_gaps(entry["name"], cell) or [
                    Gap(entry["name"], CASSETTES, "", cell["state"], cell["reason"], f"verify_{entry['name']}_*.json")
                ]
            else:
                found += _tier_gaps(entry["name"], obligation, cell)
    return found


def as_json(report: dict[str, Any], found: list[Gap]) -> dict[str, Any]:
    providers = sorted({entry["name"] for entry in report["providers"]})
    return {"ok": not found, "providers": providers, "gaps": [asdict(gap) for gap in found]}


def as_text(report: dict[str, Any], found: list[Gap]) -> str:
    if not found:
        return f"Coverage gate passed: {len(report['providers'])} provider(s), every obligation met.\n"
    lines = [f"Coverage gate failed: {len(found)} gap(s)."] + [f"- {gap.line()}" for gap in found]
    return "\n".join(lines) + "\n"


def as_junit(report: dict[str, Any], found: list[Gap]) -> str:
    """One test case per provider and obligation (and per unmet check), failing where a gap is."""
    suite = ET.Element("testsuite", name="coverage", tests="0", failures="0")
    count = 0
    by_cell: dict[tuple[str, str], list[Gap]] = {}
    for gap in found:
        by_cell.setdefault((gap.provider, gap.obligation), []).append(gap)
    for entry in report["providers"]:
        for obligation in report["obligations"]:
            cell_gaps = by_cell.get((entry["name"], obligation), [])
            for gap in cell_gaps or [None]:
                name = obligation if gap is None or not gap.check else f"{obligation}.{gap.check}"
                case = ET.SubElement(suite, "testcase", classname=f"coverage.{entry['name']}", name=name)
                count += 1
                if gap is not None:
                    failure = ET.SubElement(case, "failure", message=gap.reason)
                    failure.text = gap.line()
    suite.set("tests", str(count))
    suite.set("failures", str(len(found)))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
