"""Coverage that cannot pass vacuously (seed 003): a provider registered without explicit obligations owes what the
seed asks of its kind until an obligation is marked not applicable with a reason, and a cassette counts only when
its stream shows what its name claims."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from runs_app.ci.recordings import cassette_summaries
from runs_app.coverage import fits
from runs_app.coverage.gate import gaps
from runs_app.coverage.report import coverage_report, provider_coverage
from runs_app.models import NATIVE_SCENARIOS, PRESET_SCENARIOS, Provider
from tests.conftest import VCR_DIR
from tests.coverage_report_helpers import make_cassette

pytestmark = pytest.mark.django_db


def recorded(name: str) -> dict[str, Any]:
    return json.loads((VCR_DIR / f"{name}.json").read_text())


def test_a_provider_registered_without_obligations_owes_every_tier_and_six_scenarios() -> None:
    provider = Provider.objects.create(name="newcomer")
    assert provider.required_tiers == ["unit", "contract", "conformance", "e2e"]
    assert provider.required_scenarios == list(NATIVE_SCENARIOS) and len(NATIVE_SCENARIOS) == 6
    cells = provider_coverage(provider)["cells"]
    assert {obligation: cell["state"] for obligation, cell in cells.items()} == {
        "unit": "missing",
        "contract": "missing",
        "error_paths": "missing",
        "conformance": "missing",
        "e2e": "missing",
        "cassettes": "missing",
    }
    # The gate fails it until the evidence exists.
    assert [gap for gap in gaps(coverage_report()) if gap.provider == "newcomer"]


def test_a_preset_registered_without_obligations_owes_three_scenarios() -> None:
    provider = Provider.objects.create(name="presetco", onboarding=Provider.Onboarding.OPENAI_COMPATIBLE)
    assert provider.required_tiers == [] and provider.required_scenarios == list(PRESET_SCENARIOS)
    cells = provider_coverage(provider)["cells"]
    assert cells["cassettes"]["state"] == "missing" and cells["unit"]["state"] == "not_applicable"
    for scenario in PRESET_SCENARIOS:
        make_cassette("presetco", scenario)
    assert provider_coverage(provider)["cells"]["cassettes"]["state"] == "passing"


def test_an_obligation_marked_not_applicable_shows_its_reason() -> None:
    provider = Provider.objects.create(
        name="batchonly", not_applicable={"e2e": "batch API only: no agent loop", "cassettes": "no HTTP API"}
    )
    cells = provider_coverage(provider)["cells"]
    assert cells["e2e"] == {**cells["e2e"], "state": "not_applicable"}
    assert cells["e2e"]["reason"] == "marked not applicable: batch API only: no agent loop"
    assert cells["cassettes"]["state"] == "not_applicable" and "no HTTP API" in cells["cassettes"]["reason"]
    assert cells["unit"]["state"] == "missing"


@pytest.mark.parametrize(
    "not_applicable, message",
    [
        ({"e2e": "  "}, "give the reason e2e is not applicable"),
        ({"weekly": "why"}, "'weekly' is not an obligation"),
        (["e2e"], "give an object of obligation"),
    ],
)
def test_a_reason_must_be_given_and_name_an_obligation(not_applicable: Any, message: str) -> None:
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as caught:
        Provider(name="x", not_applicable=not_applicable).clean()
    assert message in str(caught.value)


def test_the_repositorys_real_cassettes_show_what_their_names_claim() -> None:
    checked = 0
    for path in sorted(VCR_DIR.glob("*_*.json")):
        if path.stem.endswith("manifest"):
            continue
        from runs_app.ci.cassettes import canonical_scenario

        scenario = canonical_scenario(path.stem.partition("_")[2])
        assert fits.misfit(scenario, cassette_summaries(json.loads(path.read_text()))) is None, path.name
        checked += scenario in fits.RULES
    assert checked >= 36


@pytest.mark.parametrize(
    "recording, claimed, why",
    [
        ("openai_simple_text", "tool_call_single", "tool_call_single needs exactly one tool call, then done: it has 0"),
        ("openai_tool_call_single", "simple_text", "simple_text needs start, text deltas, done: it has no text delta"),
        ("openai_tool_call_multiple", "tool_call_single", "it has 2 tool call(s), not exactly 1"),
        ("openai_simple_text", "unicode_text", "its text holds no non-ASCII character"),
        ("openai_simple_text", "error_auth_401", "it answers status 200 without an error event, not 401"),
        ("openai_rate_limit_429", "error_auth_401", "it answers status 429 without an error event, not 401"),
        ("openai_auth_failure_401", "simple_text", "it ends in an error (status 401)"),
    ],
)
def test_a_cassette_that_does_not_fit_its_name_says_why(recording: str, claimed: str, why: str) -> None:
    reason = fits.misfit(claimed, cassette_summaries(recorded(recording)))
    assert reason is not None and why in reason


def test_a_misfit_cassette_is_not_counted_and_fails_the_cell_in_the_gate() -> None:
    Provider.objects.create(name="acme", required_tiers=[], cassette_floor=1, required_scenarios=["simple_text"])
    make_cassette("acme", "simple_text")
    assert provider_coverage(Provider.objects.get(name="acme"))["cells"]["cassettes"]["state"] == "passing"
    wrong = copy.deepcopy(recorded("openai_tool_call_single"))
    wrong["test_name"] = "claims text, holds a tool call"
    cassette = make_cassette("acme", "simple_text")
    cassette.content = json.dumps(wrong).encode()
    cassette.save()
    cell = provider_coverage(Provider.objects.get(name="acme"))["cells"]["cassettes"]
    assert cell["state"] == "failing" and cell["count"] == 0 and cell["missing_scenarios"] == ["simple_text"]
    assert cell["misfits"] == {
        "simple_text": "verify_acme_simple_text.json: simple_text needs start, text deltas, done: it has no text delta"
    }
    assert "do not show what their names claim" in cell["reason"]
    found = [gap for gap in gaps(coverage_report()) if gap.provider == "acme"]
    assert [(gap.state, gap.closes) for gap in found] == [("failing", "record verify_acme_simple_text.json again")]
    assert found[0].reason == cell["misfits"]["simple_text"]
