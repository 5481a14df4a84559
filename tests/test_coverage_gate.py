"""Coverage as a CI gate (seed 003's enforcement): ``manage.py check_coverage`` and ``GET /api/coverage?gate=1`` fail
while a provider owes an obligation, naming each gap check by check (tier 1's six checks, tier 2's scenarios, the
five error paths, a tier of their own) and the cassette file that would close a cassette gap."""

from __future__ import annotations

import json
from io import StringIO
from xml.etree import ElementTree as ET

import pytest
from django.core.management import CommandError, call_command

from runs_app.models import Provider, Waiver
from tests.conftest import make_client, make_user
from tests.coverage_report_helpers import TODAY, make_build, make_case, make_cases, make_cassette

pytestmark = pytest.mark.django_db


@pytest.fixture
def registry(db: None) -> None:
    """One native provider that owes everything, and one preset that owes only its three cassettes."""
    Provider.objects.all().delete()
    Provider.objects.create(
        name="acme", required_tiers=["unit", "contract", "conformance", "e2e"], cassette_floor=3,
        required_scenarios=["simple_text", "tool_call_single", "error_auth_401"],
    )  # fmt: skip
    Provider.objects.create(
        name="presetco", onboarding=Provider.Onboarding.OPENAI_COMPATIBLE, required_tiers=[], cassette_floor=3,
        required_scenarios=["simple_text"],
    )  # fmt: skip


def meet_everything(provider: str = "acme") -> None:
    run = make_build()
    make_cases(run, provider, "unit", ["passed"] * 6)
    make_cases(run, provider, "contract", ["passed"] * 4)
    make_cases(run, provider, "error_paths", ["passed"] * 5)
    make_cases(run, provider, "conformance", ["passed"])
    make_cases(run, provider, "e2e", ["passed"])
    for scenario in ("simple_text", "tool_call_single", "error_auth_401"):
        make_cassette(provider, scenario)


def check(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("check_coverage", *args, stdout=out)
    except SystemExit as exc:
        return int(exc.code), out.getvalue()
    return 0, out.getvalue()


def test_it_names_every_gap_check_by_check_and_the_cassettes_that_close_them(registry) -> None:
    run = make_build()
    make_cases(run, "acme", "unit", ["passed"] * 4)  # identity, request_mapping, auth, endpoint
    make_case(run, "acme_error_invalid_utf8", "pi_agent_rust::provider_error_paths", "failed")
    make_cassette("acme", "simple_text")
    code, text = check("--provider", "acme")
    assert code == 1
    assert text.startswith("Coverage gate failed:")
    assert "- acme: unit/tool_serialization missing: no passing test covers it" in text
    assert "- acme: unit/vcr_fixtures missing: no passing test covers it" in text
    assert "unit/identity" not in text
    assert "- acme: contract/simple_text missing: no passing test covers it" in text
    assert (
        "- acme: error_paths/invalid_utf8 failing: 1 test(s) covering it failed (to close it: fix the failing" in text
    )
    assert "- acme: error_paths/http_500 missing: no passing test covers it" in text
    assert "(to close it: verify_acme_tool_call_single.json)" in text
    assert "(to close it: verify_acme_error_auth_401.json)" in text
    assert "- acme: conformance missing: no conformance test results for acme in any uploaded run" in text


def test_it_passes_when_every_obligation_is_met_or_waived(registry) -> None:
    meet_everything()
    make_cassette("presetco", "simple_text")
    assert check("--provider", "acme") == (0, "Coverage gate passed: 1 provider(s), every obligation met.\n")
    code, text = check()
    assert code == 1 and "presetco: cassettes failing: 1 cassettes of the floor 3" in text
    assert "verify_presetco_tool_call_single.json, verify_presetco_error_auth_401.json" in text
    provider = Provider.objects.get(name="presetco")
    Waiver.objects.create(provider=provider, obligation="cassettes", reason="new", expires_on=TODAY.replace(year=2099),
                          created_by=make_user("lead"))  # fmt: skip
    assert check()[0] == 0


def test_it_writes_json_and_junit_for_ci(registry) -> None:
    code, text = check("--format", "json")
    data = json.loads(text)
    assert code == 1 and data["ok"] is False and data["providers"] == ["acme", "presetco"]
    first = data["gaps"][0]
    assert first == {
        "provider": "acme", "obligation": "unit", "check": "identity", "state": "missing",
        "reason": "no passing test covers it",
        "closes": "a passing unit test whose name holds identity (or a 'check' property)",
    }  # fmt: skip
    code, xml = check("--format", "junit", "--provider", "presetco")
    suite = ET.fromstring(xml.encode())
    cases = suite.findall("testcase")
    # Five tiers not owed, passing; the cassettes fail twice: the required scenario, and the floor.
    assert suite.get("failures") == "2" and len(cases) == 7
    failed = [c for c in cases if c.find("failure") is not None]
    assert {(c.get("classname"), c.get("name")) for c in failed} == {("coverage.presetco", "cassettes")}
    assert "verify_presetco_simple_text.json" in failed[0].find("failure").text


def test_it_refuses_an_unknown_provider_naming_the_registered_ones(registry) -> None:
    with pytest.raises(CommandError, match=r"--provider: no provider named 'nope' \(registered: acme, presetco\)"):
        call_command("check_coverage", "--provider", "nope")


def test_it_answers_the_gate_over_the_api_with_412_until_met(registry) -> None:
    client = make_client("read")
    response = client.get("/coverage?gate=1&provider=acme")
    assert response.status_code == 412
    assert response.json()["ok"] is False and {g["obligation"] for g in response.json()["gaps"]} >= {
        "unit",
        "cassettes",
    }
    meet_everything()
    response = client.get("/coverage?gate=1&provider=acme")
    assert response.status_code == 200 and response.json() == {"ok": True, "providers": ["acme"], "gaps": []}
    assert client.get("/coverage?gate=1&provider=nope").status_code == 404
    plain = client.get("/coverage?provider=acme").json()
    assert [entry["name"] for entry in plain["providers"]] == ["acme"]
    assert [row["check"] for row in plain["providers"][0]["cells"]["error_paths"]["checks"]] == [
        "http_500", "wrong_content_type", "missing_content_type", "invalid_json", "invalid_utf8",
    ]  # fmt: skip


def test_it_counts_the_checklist_tests_that_enumerate_every_native_provider(registry) -> None:
    run = make_build()
    for name in ("checklist_all_native_providers_have_identity", "checklist_providers_have_default_endpoint",
                 "checklist_vcr_fixture_coverage_floor"):  # fmt: skip
        make_case(run, name, "pi_agent_rust::provider_unit_checklist")
    for name in ("request_mapping", "auth_key_flows_through", "tool_serialization"):
        make_case(run, f"checklist_acme_{name}", "pi_agent_rust::provider_unit_checklist")
    code, text = check("--provider", "acme")
    assert "acme: unit/" not in text  # all six checks covered, three by the shared tests


def test_it_shows_each_check_on_the_cells_page(admin_client, registry) -> None:
    make_cases(make_build(), "acme", "error_paths", ["passed", "failed"])
    page = admin_client.get("/coverage/acme/error_paths/").content.decode()
    assert "<h2>Checks</h2>" in page
    assert '<tr><td>http_500</td><td class="state-passing">passing</td><td>1</td><td>0</td></tr>' in page
    assert '<tr><td>wrong_content_type</td><td class="state-failing">failing</td><td>0</td><td>1</td></tr>' in page
    assert '<tr><td>invalid_utf8</td><td class="state-missing">missing</td>' in page
