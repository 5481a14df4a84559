"""A cassette converted into an editable scenario (runs_app/ci/recordings.py, conversion.py): every real cassette
converts into a valid scenario; errors become failure settings; the converted scenario, played through the
official SDK, gives what the recording gave; ``manage.py import_cassette`` and the admin's button (staff, CSRF,
POST) with their errors."""

from __future__ import annotations

import json
import uuid
from io import StringIO

import anthropic
import openai
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from runs_app.ci.recordings import NothingToConvert, scenario_from_cassette, summarize_interaction
from runs_app.models import Cassette
from scenarios_app.models import Scenario
from tests.conftest import VCR_DIR, change_url, make_user, text

NAMES = sorted(p.name for p in VCR_DIR.glob("*.json") if "interactions" in json.loads(p.read_text()))


def cassette(name: str) -> dict:
    return json.loads((VCR_DIR / name).read_text())


def store(name: str, content: bytes | None = None) -> Cassette:
    raw = content if content is not None else (VCR_DIR / name).read_bytes()
    return Cassette.objects.create(name=name, provider="p", scenario="s", content=raw, digest=name.ljust(64, "0")[:64],
                                   size=len(raw))  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_it_converts_every_cassette_into_a_valid_scenario_with_its_answers(name):
    data = cassette(name)
    scenario = scenario_from_cassette(data, name)
    assert scenario.id == name.removesuffix(".json") and "cassette" in scenario.tags
    answers = [summarize_interaction(i) for i in data["interactions"]]
    answered = [s for s in answers if s.has_done and s.stream_error is None]
    turn = scenario.turns[0]
    if answered:  # the turn answers as the first answer recorded
        assert turn.response.assistant_text in (answered[0].text, None if not answered[0].text else "")
        calls = getattr(turn.response, "tool_calls", [])
        assert [(c.tool_name, c.arguments) for c in calls] == [
            (c.name, json.loads(c.arguments)) for c in answered[0].tool_calls
        ]
        assert [r.signature for r in turn.response.reasoning] == [
            b.signature or None for b in answered[0].thinking_blocks
        ]
    else:  # only errors: the turn always fails as recorded
        assert turn.failures_before_success == "always" and turn.failure_message == answers[0].error.message


@pytest.mark.parametrize(
    ("name", "kind", "retry_after_ms", "retryable"),
    [
        ("anthropic_rate_limit_429.json", "rate_limit", 30_000, True),
        ("openai_rate_limit_429.json", "rate_limit", 60_000, True),
        ("anthropic_server_error_500.json", "server_error", None, True),
        ("anthropic_auth_failure_401.json", "auth_error", None, False),
        ("anthropic_overloaded_529.json", "overloaded", None, True),
        ("anthropic_forbidden_403.json", "permission_error", None, False),
        ("gemini_bad_request_400.json", "bad_request", None, False),
    ],
)
def test_it_turns_recorded_errors_into_failure_settings(name, kind, retry_after_ms, retryable):
    [turn] = scenario_from_cassette(cassette(name), name).turns
    assert (turn.failure_status, turn.failure_retry_after_ms, turn.failure_retryable) == (
        kind,
        retry_after_ms,
        retryable,
    )
    assert turn.failures_before_success == "always" and turn.failure_message


def test_it_counts_the_failures_before_a_turn_is_answered():
    [turn] = scenario_from_cassette(cassette("anthropic_extended_thinking.json"), "x.json").turns
    assert turn.failures_before_success == 4 and turn.failure_status == "bad_request"
    assert turn.response.assistant_text == "Result: 156" and turn.response.reasoning[0].signature


def test_it_reads_a_status_without_a_kind_as_a_model_error_with_that_status():
    data = cassette("openai_rate_limit_429.json")
    data["interactions"][0]["response"]["status"] = 409
    [turn] = scenario_from_cassette(data, "conflict.json").turns
    assert (turn.failure_status, turn.failure_http_status, turn.failure_retryable) == ("model_error", 409, True)


def test_it_refuses_a_cassette_with_nothing_to_convert():
    data = cassette("openai_simple_text.json")
    data["interactions"][0]["request"]["url"] = "https://example.com/not/a/model/api"
    with pytest.raises(NothingToConvert, match="no interaction speaks a protocol"):
        scenario_from_cassette(data, "other.json")


def test_it_plays_a_converted_thinking_and_tool_cassette_through_the_sdk_as_recorded(claude):
    name = "anthropic_thinking_with_tool_calls.json"
    call_command("import_cassette", str(VCR_DIR / name), "--id", "vcr-thinking-tools", stdout=StringIO())
    recorded = summarize_interaction(cassette(name)["interactions"][1])
    ask = {
        "model": "claude-x", "max_tokens": 2048, "messages": [{"role": "user", "content": "vcr-thinking-tools"}],
        "extra_headers": {"X-Harness-Run": str(uuid.uuid4())},
        "extra_body": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
    }  # fmt: skip
    # As recorded: first the 400 the recording's first attempt got (not retryable), then the answer.
    with pytest.raises(anthropic.BadRequestError, match="`temperature` may only be set to 1"):
        claude.messages.create(**ask)
    message = claude.messages.create(**ask)
    thinking = next(b for b in message.content if b.type == "thinking")
    tool = next(b for b in message.content if b.type == "tool_use")
    assert thinking.thinking == recorded.thinking and thinking.signature == recorded.thinking_blocks[0].signature
    assert (tool.name, tool.input) == ("echo", json.loads(recorded.tool_calls[0].arguments))


def test_it_plays_a_converted_rate_limit_with_its_retry_wait(oai):
    call_command("import_cassette", str(VCR_DIR / "openai_rate_limit_429.json"), "--id", "vcr-429", stdout=StringIO())
    with pytest.raises(openai.RateLimitError) as raised:
        oai.with_options(max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "vcr-429"}]
        )
    assert raised.value.response.headers["retry-after"] == "60"
    assert "Rate limit reached for gpt-4o-mini" in str(raised.value) and raised.value.code == "rate_limit_exceeded"


# -- the management command -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_imports_a_file_or_a_stored_cassette_by_name():
    out = StringIO()
    call_command("import_cassette", str(VCR_DIR / "gemini_tool_call_single.json"), stdout=out)
    assert "Created scenario gemini_tool_call_single (1 turn)" in out.getvalue()
    assert Scenario.objects.get(id="gemini_tool_call_single").data["turns"][0]["response"]["kind"] == "tool-call"
    store("verify_openai_simple_text.json", (VCR_DIR / "openai_simple_text.json").read_bytes())
    out = StringIO()
    call_command("import_cassette", "verify_openai_simple_text", "--id", "pong", stdout=out)
    assert "Created scenario pong" in out.getvalue()
    call_command("import_cassette", "verify_openai_simple_text.json", "--id", "pong", stdout=out)
    assert "Unchanged scenario pong" in out.getvalue()


@pytest.mark.django_db
def test_it_says_clearly_what_it_cannot_import(tmp_path):
    with pytest.raises(CommandError, match="No file 'nope' and no stored cassette named 'nope'"):
        call_command("import_cassette", "nope")
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("import_cassette", str(tmp_path))  # a folder
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(CommandError, match="broken.json is not JSON"):
        call_command("import_cassette", str(tmp_path / "broken.json"))
    (tmp_path / "empty.json").write_text('{"version": "1.0", "interactions": []}')
    with pytest.raises(CommandError, match="empty.json is not a VCR cassette: interactions"):
        call_command("import_cassette", str(tmp_path / "empty.json"))
    data = cassette("openai_simple_text.json")
    data["interactions"][0]["request"]["url"] = "https://example.com/elsewhere"
    (tmp_path / "elsewhere.json").write_text(json.dumps(data))
    with pytest.raises(CommandError, match="Nothing to convert"):
        call_command("import_cassette", str(tmp_path / "elsewhere.json"))
    with pytest.raises(CommandError, match="not valid: id"):
        call_command("import_cassette", str(VCR_DIR / "openai_simple_text.json"), "--id", "bad id!")
    assert not Scenario.objects.exists()


# -- the admin --------------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_shows_each_interactions_summary_on_the_cassette_page_escaped(staff_client):
    data = cassette("openai_simple_text.json")
    data["interactions"][0]["response"]["body_chunks"][1] = data["interactions"][0]["response"]["body_chunks"][
        1
    ].replace('"content":"p"', '"content":"<script>alert(1)</script>"')
    row = store("openai_simple_text.json", json.dumps(data).encode())
    page = text(staff_client.get(change_url(row)))
    assert "Stream summaries (seed 003)" in page and "start → text_start → text_delta" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;ong" in page and "<script>alert(1)" not in page
    assert "Convert to scenario" in page and 'value="openai_simple_text"' in page


@pytest.mark.django_db
def test_it_converts_from_the_admin_with_a_post(staff_client):
    row = store("anthropic_rate_limit_429.json")
    url = change_url(row).replace("/change/", "/convert/")
    assert staff_client.get(url).status_code == 405
    done = staff_client.post(url, {"scenario_id": "limited"}, follow=True)
    assert 'Scenario <a href="/scenarios/limited/">limited</a> created from this cassette.' in text(done)
    turn = Scenario.objects.get(id="limited").data["turns"][0]
    assert (turn["failure_status"], turn["failure_retry_after_ms"]) == ("rate_limit", 30000)
    refused = staff_client.post(url, {"scenario_id": "no good"}, follow=True)
    assert "is not valid: id" in text(refused) and not Scenario.objects.filter(id="no good").exists()


@pytest.mark.django_db
def test_it_keeps_conversion_to_staff_with_csrf():
    row = store("anthropic_simple_text.json")
    url = change_url(row).replace("/change/", "/convert/")
    anonymous = Client().post(url)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    plain = Client()
    plain.force_login(make_user("plain"))
    assert plain.post(url).status_code == 302 and not Scenario.objects.exists()
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_user("boss", staff=True))
    assert strict.post(url).status_code == 403
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_it_says_why_a_stored_cassette_has_no_summary(staff_client):
    row = store("odd.json", b"not json")
    page = text(staff_client.get(change_url(row)))
    assert "odd.json is not JSON" in page
