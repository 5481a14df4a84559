"""Provider test-obligation coverage: for each registered provider and obligation, a state and its evidence.

Obligations are the test tiers (unit, contract, error paths, conformance, e2e) and the VCR cassettes.

How a JUnit test case is attributed to a provider and a tier: :mod:`runs_app.coverage.attribution`; which of a
tier's checks it covers: :mod:`runs_app.coverage.checks`.

Evidence for a tier cell is every case, attributed to that provider and tier, of the latest run (by ``started_at``)
that has at least one; so a failure fixed in a later run no longer counts.

Cassettes count per scenario: the latest cassette for each distinct scenario of the provider (a scenario uploaded
twice counts once). Every distinct scenario counts toward the floor, as the seed's checklist counts every
``verify_{provider}_*.json``; the cell passes when the floor is met and every required scenario has a cassette.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.utils import timezone

from harnessweb.text import plural
from runs_app.ci.cassettes import canonical_scenario, parse_cassette_name
from runs_app.ci.recordings import cassette_summaries
from runs_app.coverage import checks, fits
from runs_app.coverage.attribution import (
    CASE_TIERS,
    DEFAULT_TIER_PATTERNS,
    ERROR_PATHS,
    Classifier,
    properties_of,
    tier_name,
)
from runs_app.models import Cassette, Provider, TestCaseResult, TierRule, Waiver

CASSETTES = "cassettes"
ALL_NATIVE = "\x00every native provider"  # the evidence key of unit cases that enumerate every native provider
OBLIGATIONS: tuple[str, ...] = (*CASE_TIERS, CASSETTES)

PASSING = "passing"
FAILING = "failing"
MISSING = "missing"
NOT_APPLICABLE = "not_applicable"
WAIVED = "waived"

_PASSED_OUTCOMES = {TestCaseResult.Outcome.PASSED, TestCaseResult.Outcome.FLAKY}
_FAILED_OUTCOMES = {TestCaseResult.Outcome.FAILED, TestCaseResult.Outcome.ERROR}


@dataclass
class _TierEvidence:
    run_id: Any
    commit: str
    started_at: datetime.datetime
    cases: list[tuple[int, str, str | None]] = field(default_factory=list)  # (test case id, outcome, check)


@dataclass
class _Inputs:
    """Everything the cells are computed from, fetched in a fixed handful of queries."""

    tiers: dict[tuple[str, str], _TierEvidence]
    cassettes: dict[str, dict[str, dict[str, Any]]]  # provider -> scenario -> latest cassette row
    waivers: dict[tuple[int, str], list[Waiver]]


def tier_patterns() -> dict[str, list[str]]:
    """Each tier's test-name patterns: its TierRule row's, else the defaults (the grid says them too)."""
    patterns = {tier: list(default) for tier, default in DEFAULT_TIER_PATTERNS.items()}
    for rule in TierRule.objects.all():
        tier = tier_name(rule.tier)
        if tier is not None:
            patterns[tier] = [p for p in (rule.patterns or []) if isinstance(p, str) and p]
    return patterns


def _collect_tier_evidence(classifier: Classifier) -> dict[tuple[str, str], _TierEvidence]:
    # Newest run first, a run's cases together: the first run seen for a (provider, tier) is its latest.
    rows = (
        TestCaseResult.objects.order_by("-run__started_at", "-run_id", "id")
        .values_list(
            "id",
            "name",
            "classname",
            "outcome",
            "properties",
            "provider",
            "tier",
            "run_id",
            "run__commit",
            "run__started_at",
        )
        .iterator(chunk_size=2000)
    )
    evidence: dict[tuple[str, str], _TierEvidence] = {}
    for case_id, name, classname, outcome, properties, provider, tier, run_id, commit, started_at in rows:
        provider_name, tier_name = classifier.attribute(
            name=name, classname=classname, provider=provider, tier=tier, properties=properties
        )
        if tier_name is None:
            continue
        if provider_name is None:
            # The seed's checklist tests that enumerate every native provider in one test (identity, default
            # endpoints, the cassette floor) name none: they count toward each native provider's checks.
            text = f"{classname}::{name}" if classname else name
            if tier_name != "unit" or not checks.enumerates_providers(text):
                continue
            provider_name = ALL_NATIVE
        key = (provider_name, tier_name)
        found = evidence.get(key)
        if found is None:
            found = evidence[key] = _TierEvidence(run_id=run_id, commit=commit or "", started_at=started_at)
        if found.run_id == run_id:
            text = f"{classname}::{name}" if classname else name
            check = checks.check_of(tier_name, text, properties_of(properties).get("check", ""))
            found.cases.append((case_id, outcome, check))
    return evidence


def _collect_cassettes(provider_names: Iterable[str]) -> dict[str, dict[str, dict[str, Any]]]:
    names = list(provider_names)
    providers = {Provider.key(name): name for name in names}
    result: dict[str, dict[str, dict[str, Any]]] = {}
    rows = Cassette.objects.order_by("-uploaded_at", "-id").values(
        "id", "name", "provider", "scenario", "uploaded_at", "commit", "run__commit"
    )
    for row in rows:
        provider, scenario = providers.get(Provider.key(row["provider"])), row["scenario"]
        if provider is None:
            # A provider registered after the upload (or one whose name holds "_", such as sap_ai_core) may have been
            # split wrongly from the file name then: read the name again against the registry as it is now.
            parsed = parse_cassette_name(row["name"], names)
            if parsed is not None and Provider.key(parsed[0]) in providers:
                provider, scenario = providers[Provider.key(parsed[0])], parsed[1]
        if provider is None or not scenario.strip():
            continue
        result.setdefault(provider, {}).setdefault(canonical_scenario(scenario), row)
    _mark_misfits([row for scenarios in result.values() for row in scenarios.values()])
    return result


def _mark_misfits(rows: list[dict[str, Any]]) -> None:
    """Each counted cassette's ``misfit``: why its stream does not show what its scenario's name claims (or None),
    read from the bytes of the latest cassettes only (one query)."""
    checked = {row["id"]: row for row in rows if row["scenario"] and canonical_scenario(row["scenario"]) in fits.RULES}
    for row in rows:
        row["misfit"] = None
    for cassette_id, content in Cassette.objects.filter(id__in=list(checked)).values_list("id", "content"):
        row = checked[cassette_id]
        try:
            summaries = cassette_summaries(orjson.loads(bytes(content)))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            row["misfit"] = f"its interactions cannot be read ({exc})"
            continue
        row["misfit"] = fits.misfit(canonical_scenario(row["scenario"]), summaries)


def _collect_waivers(providers: list[Provider]) -> dict[tuple[int, str], list[Waiver]]:
    waivers: dict[tuple[int, str], list[Waiver]] = {}
    for waiver in Waiver.objects.filter(provider__in=providers).select_related("created_by"):
        waivers.setdefault((waiver.provider_id, waiver.obligation.strip().lower()), []).append(waiver)
    return waivers


def _run_label(commit: str) -> str:
    return f"commit {commit[:12]}" if commit else "no commit recorded"


def _kind(provider: Provider) -> str:
    if provider.onboarding == Provider.Onboarding.OPENAI_COMPATIBLE:
        return "an OpenAI-compatible preset (covered by the shared OpenAI tests)"
    return "this provider"


def _cell(state: str, reason: str, **values: Any) -> dict[str, Any]:
    return {
        "state": state,
        "reason": reason,
        "passed": values.get("passed", 0),
        "failed": values.get("failed", 0),
        "total": values.get("total", 0),
        "commit": values.get("commit", ""),
        "date": values.get("date"),
        "waiver": None,
        "evidence": {
            "test_case_ids": list(values.get("test_case_ids", [])),
            "cassette_ids": list(values.get("cassette_ids", [])),
        },
    }


def _required(provider: Provider, tier: str) -> bool:
    """Whether a provider owes a tier; error paths are owed wherever conformance is (the seed lets OpenAI-compatible
    presets off both), unless named on their own; a tier marked not applicable (with its reason) is not owed."""
    owed = provider.required_tiers or []
    if provider.not_applicable_reason(tier):
        return False
    return tier in owed or (tier == ERROR_PATHS and "conformance" in owed)


def _not_owed(provider: Provider, obligation: str, what: str) -> str:
    """Why a provider does not owe an obligation: the reason it was marked not applicable, else its kind's."""
    reason = provider.not_applicable_reason(obligation)
    return f"marked not applicable: {reason}" if reason else f"{what} are not required for {_kind(provider)}"


def _check_rows(tier: str, cases: list[tuple[int, str, str | None]]) -> list[dict[str, Any]]:
    """Each of the tier's checks with its cases' tally: passing once a case covering it passed and none failed."""
    rows = []
    for check in checks.names(tier):
        outcomes = [outcome for _, outcome, covered in cases if covered == check]
        passed = sum(outcome in _PASSED_OUTCOMES for outcome in outcomes)
        failed = sum(outcome in _FAILED_OUTCOMES for outcome in outcomes)
        state = FAILING if failed else PASSING if passed else MISSING
        rows.append({"check": check, "state": state, "passed": passed, "failed": failed})
    return rows


def _tier_cell(
    provider: Provider, tier: str, evidence: _TierEvidence | None, shared: _TierEvidence | None = None
) -> dict[str, Any]:
    """A tier's cell: its tests' state (:func:`_tier_state`), then each of its checks (a passing tier whose checks
    are not all covered fails, naming them). ``shared``: the unit cases that enumerate every native provider."""
    cell = _tier_state(provider, tier, evidence)
    covering = (evidence.cases if evidence else []) + (shared.cases if shared and tier == "unit" else [])
    cell["checks"] = _check_rows(tier, covering)
    uncovered = [row["check"] for row in cell["checks"] if row["state"] == MISSING]
    if cell["state"] == PASSING and uncovered:
        cell["state"] = FAILING
        cell["reason"] += f", but no passing test covers {', '.join(uncovered)}"
    return cell


def _tier_state(provider: Provider, tier: str, evidence: _TierEvidence | None) -> dict[str, Any]:
    required = _required(provider, tier)
    if evidence is None:
        if not required:
            return _cell(NOT_APPLICABLE, _not_owed(provider, tier, f"{tier} tests"))
        return _cell(MISSING, f"no {tier} test results for {provider.name} in any uploaded run")

    outcomes = [outcome for _, outcome, _ in evidence.cases]
    total = len(outcomes)
    passed = sum(outcome in _PASSED_OUTCOMES for outcome in outcomes)
    errors = outcomes.count(TestCaseResult.Outcome.ERROR)
    failed = sum(outcome in _FAILED_OUTCOMES for outcome in outcomes)
    flaky = outcomes.count(TestCaseResult.Outcome.FLAKY)
    skipped = outcomes.count(TestCaseResult.Outcome.SKIPPED)
    where = f"in the latest run ({_run_label(evidence.commit)})"
    tests = f"{tier} test" if total == 1 else f"{tier} tests"

    if failed:
        state = FAILING
        reason = f"{failed} of {total} {tests} failed {where}"
        if errors:
            reason += f" ({errors} with an error)"
    elif passed == 0:
        state = MISSING
        if total == 1:
            reason = f"the only {tests} for {provider.name} was skipped {where}"
        else:
            reason = f"all {total} {tests} for {provider.name} were skipped {where}"
    else:
        state = PASSING
        if skipped:
            reason = f"{passed} of {total} {tests} passed and {skipped} skipped {where}"
        else:
            reason = f"all {total} {tests} passed {where}" if total > 1 else f"the {tests} passed {where}"
        if flaky:
            reason += f"; {flaky} flaky (failed, then passed on a rerun)"
    if not required:
        state = NOT_APPLICABLE
        reason = f"{_not_owed(provider, tier, f'{tier} tests')}; {reason}"
    return _cell(
        state,
        reason,
        passed=passed,
        failed=failed,
        total=total,
        commit=evidence.commit,
        date=evidence.started_at.isoformat(),
        test_case_ids=[case_id for case_id, _, _ in evidence.cases],
    )


def _cassette_cell(provider: Provider, cassettes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The cassettes' cell: the floor and the required scenarios, counted only with cassettes that show what their
    names claim (one that does not fails the cell, naming it and why)."""
    if reason := provider.not_applicable_reason(CASSETTES):
        return _cell(NOT_APPLICABLE, f"marked not applicable: {reason}") | {
            "count": 0, "floor": 0, "missing_scenarios": [], "scenarios": [], "misfits": {},
        }  # fmt: skip
    present = {s: row for s, row in cassettes.items() if not row.get("misfit")}
    misfits = {s: f"{row['name']}: {row['misfit']}" for s, row in sorted(cassettes.items()) if row.get("misfit")}
    required = [s.strip().lower() for s in (provider.required_scenarios or []) if s.strip()]
    floor = provider.cassette_floor
    count = len(present)
    missing = sorted(s for s in set(required) if s not in present)
    covered = len(set(required)) - len(missing)
    latest = max(present.values(), key=lambda row: row["uploaded_at"]) if present else None
    values: dict[str, Any] = {
        "passed": covered,
        "failed": len(missing),
        "total": len(set(required)),
        "commit": (latest["commit"] or latest["run__commit"] or "") if latest else "",
        "date": latest["uploaded_at"].isoformat() if latest else None,
        "cassette_ids": [present[s]["id"] for s in sorted(present)],
    }
    if not required and floor == 0:
        cell = _cell(NOT_APPLICABLE, f"no cassettes are required for {provider.name}", **values)
    elif count == 0:
        wanted = f"; required: {', '.join(sorted(set(required)))}" if required else ""
        cell = _cell(MISSING, f"no cassettes for {provider.name} (floor {floor}{wanted})", **values)
    elif count >= floor and not missing:
        cell = _cell(
            PASSING,
            f"{plural(count, 'cassette')} cover every required scenario (floor {floor})",
            **values,
        )
    else:
        tally = f"{count} of floor {floor}" if count < floor else f"{count}, floor {floor} met"
        if missing:
            reason = f"no cassette for {', '.join(missing)} ({tally})"
        else:
            reason = f"{plural(count, 'cassette')} of floor {floor}"
        cell = _cell(FAILING, reason, **values)
    if misfits:
        cell["state"] = FAILING
        cell["reason"] += "; not counted, as they do not show what their names claim: " + "; ".join(misfits.values())
    cell.update(count=count, floor=floor, missing_scenarios=missing, scenarios=sorted(present), misfits=misfits)
    return cell


def _apply_waiver(cell: dict[str, Any], waivers: list[Waiver], today: datetime.date) -> None:
    """Turn a failing or missing cell into a waived one while a waiver runs; an expired waiver is only mentioned."""
    if cell["state"] not in (FAILING, MISSING) or not waivers:
        return
    active = [w for w in waivers if w.expires_on >= today]
    if active:
        waiver = max(active, key=lambda w: w.expires_on)
        cell["state"] = WAIVED
        cell["waiver"] = {
            "reason": waiver.reason,
            "expires_on": waiver.expires_on.isoformat(),
            "by": waiver.created_by.get_username() if waiver.created_by else "",
        }
    else:
        expired = max(w.expires_on for w in waivers)
        cell["reason"] += f" (a waiver expired on {expired.isoformat()})"


def _fetch(providers: list[Provider], names: list[str]) -> _Inputs:
    """The evidence for ``providers``; ``names`` is the whole registry, against which cases are attributed."""
    classifier = Classifier(names, tier_patterns())
    return _Inputs(
        tiers=_collect_tier_evidence(classifier),
        cassettes=_collect_cassettes(names),
        waivers=_collect_waivers(providers),
    )


def _provider_entry(provider: Provider, inputs: _Inputs, today: datetime.date) -> dict[str, Any]:
    cells: dict[str, dict[str, Any]] = {}
    shared = inputs.tiers.get((ALL_NATIVE, "unit")) if provider.onboarding == Provider.Onboarding.NATIVE else None
    for tier in CASE_TIERS:
        cells[tier] = _tier_cell(provider, tier, inputs.tiers.get((provider.name, tier)), shared)
    cells[CASSETTES] = _cassette_cell(provider, inputs.cassettes.get(provider.name, {}))
    for obligation, cell in cells.items():
        _apply_waiver(cell, inputs.waivers.get((provider.pk, obligation), []), today)
    return {"name": provider.name, "onboarding": provider.onboarding, "cells": cells}


def coverage_report(today: datetime.date | None = None) -> dict[str, Any]:
    """Every registered provider's obligations as a JSON-serialisable dict.

    Shape: ``{"obligations": [...], "generated_at": iso, "providers": [{"name", "onboarding", "cells":
    {obligation: cell}}]}``; a cell is ``{"state", "reason", "passed", "failed", "total", "commit", "date",
    "waiver", "evidence": {"test_case_ids", "cassette_ids"}}`` and the cassettes cell adds ``count``, ``floor`` and
    ``missing_scenarios``, ``scenarios`` (those it has) and ``misfits`` (scenario → why its cassette does not show
    what its name claims: not counted); a tier's cell adds ``checks``, each of the seed's
    checks in that tier (``{"check", "state", "passed", "failed"}``). ``today`` decides which waivers are still
    running (default: the local date).
    Runs six queries whatever the number of providers, runs or cases.
    """
    today = today or timezone.localdate()
    providers = list(Provider.objects.all())
    inputs = _fetch(providers, [provider.name for provider in providers])
    return {
        "obligations": list(OBLIGATIONS),
        "generated_at": timezone.now().isoformat(),
        "providers": [_provider_entry(provider, inputs, today) for provider in providers],
    }


def provider_coverage(provider: Provider, today: datetime.date | None = None) -> dict[str, Any]:
    """One provider's entry of :func:`coverage_report` (``{"name", "onboarding", "cells"}``)."""
    today = today or timezone.localdate()
    # Attribution is against the whole registry, so that a case naming two providers lands on the same one here
    # as on the grid.
    names = list(Provider.objects.values_list("name", flat=True))
    return _provider_entry(provider, _fetch([provider], names), today)
