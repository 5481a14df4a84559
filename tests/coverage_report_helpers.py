"""The registry, builds, JUnit cases, cassettes and waivers the coverage tests make (tests/test_coverage_*.py)."""

from __future__ import annotations

import datetime
import hashlib
import importlib
import itertools
import json
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import User

from runs_app.coverage import checks
from runs_app.coverage.report import coverage_report
from runs_app.models import Cassette, JUnitReport, Provider, Run, Waiver
from runs_app.models import TestCaseResult as CaseResult  # an alias pytest does not try to collect
from tests.conftest import VCR_DIR, make_ci_run

seed_migration = importlib.import_module("runs_app.migrations.0003_seed_providers")

TODAY = datetime.date(2026, 6, 1)
NATIVES = {
    "anthropic": 3,
    "openai": 3,
    "gemini": 3,
    "cohere": 3,
    "azure": 1,
    "bedrock": 1,
    "vertex": 1,
    "copilot": 1,
    "gitlab": 1,
}
PRESETS = [
    "alibaba-cn",
    "kimi-for-coding",
    "minimax",
    "modelscope",
    "moonshotai-cn",
    "nebius",
    "ovhcloud",
    "scaleway",
    "sap_ai_core",
    "siliconflow",
    "upstage",
    "venice",
    "zai",
    "zhipuai-coding-plan",
]
SIX_SCENARIOS = [
    "simple_text",
    "tool_call_single",
    "unicode_text",
    "error_auth_401",
    "error_bad_request_400",
    "error_rate_limit_429",
]
_counter = itertools.count()


@pytest.fixture(name="registry")
def registry_fixture(db: None) -> None:
    """Seed 003's whole registry, as the seed_providers migration (0003) writes it. A fresh install keeps only the
    providers the harness serves (0015, tests/test_coverage_served.py); these tests attribute cases and cassettes
    against the whole registry, so its function puts every row back (it is idempotent). Tests on a live server
    (transactional_db) flush the database, migration data included, which this also repairs."""
    seed_migration.seed(django_apps, None)


def at(day: int, hour: int = 12) -> datetime.datetime:
    return datetime.datetime(2026, 5, day, hour, tzinfo=datetime.UTC)


def make_build(**fields: Any) -> Run:
    """A CI run of commit abc1234 on main, started on 1 May: the runs the grid reads its results from."""
    return make_ci_run(**{"name": "ci", "commit": "abc1234", "branch": "main", "started_at": at(1), **fields})


def make_case(run: Run, name: str, classname: str = "", outcome: str = "passed", **fields: Any) -> CaseResult:
    report, _ = JUnitReport.objects.get_or_create(run=run, digest=f"report-{run.pk}")
    return CaseResult.objects.create(report=report, run=run, name=name, classname=classname, outcome=outcome, **fields)


def make_cases(run: Run, provider: str, tier: str, outcomes: list[str]) -> list[CaseResult]:
    """Cases that say their provider and tier in their properties, as a CI that knows them uploads them; a tier the
    seed splits into checks gets one case per check in turn (the first ``len(outcomes)`` of them, round)."""
    covered = checks.names(tier) or ("case",)
    return [
        make_case(
            run,
            f"{tier}_{covered[i % len(covered)]}_{i}",
            "suite",
            outcome,
            properties={"provider": provider, "tier": tier},
        )  # fmt: skip
        for i, outcome in enumerate(outcomes)
    ]


ALL_UNIT = ["passed"] * 6  # a case for each of tier 1's six checks


# Each scenario's cassette is a real recording of it (tests/fixtures/vcr), so that it shows what its name claims.
_RECORDED = {
    "error_auth_401": "openai_auth_failure_401",
    "error_bad_request_400": "openai_bad_request_400",
    "error_rate_limit_429": "openai_rate_limit_429",
    "unicode_text": "openai_unicode_content",
}


def recording(scenario: str) -> dict[str, Any]:
    """A real cassette of a scenario (OpenAI's, or Anthropic's for the scenarios only it recorded)."""
    from runs_app.ci.cassettes import canonical_scenario

    name = _RECORDED.get(canonical_scenario(scenario), f"openai_{canonical_scenario(scenario)}")
    path = VCR_DIR / f"{name}.json"
    if not path.exists():
        path = VCR_DIR / f"anthropic_{canonical_scenario(scenario)}.json"
    return json.loads(path.read_text()) if path.exists() else {"interactions": []}


def make_cassette(provider: str, scenario: str, name: str | None = None, **fields: Any) -> Cassette:
    content = json.dumps({**recording(scenario), "test_name": f"{provider}/{scenario}/{next(_counter)}"}).encode()
    return Cassette.objects.create(
        name=name or f"verify_{provider}_{scenario}.json",
        provider=provider,
        scenario=scenario,
        content=content,
        digest=hashlib.sha256(content).hexdigest(),
        size=len(content),
        **fields,
    )


def make_waiver(provider: str, obligation: str, expires_on: datetime.date, reason: str = "vendor outage") -> Waiver:
    user, _ = User.objects.get_or_create(username="lead")
    return Waiver.objects.create(
        provider=Provider.objects.get(name=provider),
        obligation=obligation,
        reason=reason,
        expires_on=expires_on,
        created_by=user,
    )


def cells_of(name: str, today: datetime.date = TODAY) -> dict[str, dict[str, Any]]:
    report = coverage_report(today=today)
    return next(entry for entry in report["providers"] if entry["name"] == name)["cells"]
