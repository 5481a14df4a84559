"""What runs cost where people and CI read it: ``manage.py load_prices``, the price admin, the run page (per response,
per run, per test, per pytest session), the runs list's column, the overview's figure, the API's run and verdict
outputs; an unpriced model shown as such, never as $0."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from runs_app.ci.schemas import VerdictOut
from runs_app.models import ModelPrice, Run, RunEvent
from runs_app.pricing.costs import model_of, run_costs, verdict_cost_text
from tests.conftest import change_url, make_ci_run, make_client, make_run, make_verdict, text

pytestmark = pytest.mark.django_db

OPUS = "claude-opus-4-1"


def price(model: str = OPUS, input: str = "15", output: str = "75", cached: str | None = "1.50") -> ModelPrice:
    return ModelPrice.objects.create(
        model=model,
        input_usd_per_mtok=Decimal(input),
        output_usd_per_mtok=Decimal(output),
        cached_input_usd_per_mtok=None if cached is None else Decimal(cached),
        priced_on=dt.date(2026, 11, 24),
        source="seed 001",
    )


def answered(
    run: Run, model: str, usage: dict[str, Any] | None, *, path: str = "/v1/messages", **response: Any
) -> None:
    """A request to ``model`` and its answer (with ``usage``) appended to the run's events."""
    seq = (run.events.count() or 0) + 1
    turn = seq // 2 + 1
    body = {"model": model, "messages": []} if model else {"contents": []}
    now = timezone.now()
    RunEvent.objects.create(
        run=run, seq=seq, timestamp=now, kind="request", turn=turn, data={"path": path, "body": body}
    )
    data = {"status": 200, **response}
    if usage is not None:
        data["usage"] = usage
    RunEvent.objects.create(run=run, seq=seq + 1, timestamp=now, kind="response", turn=turn, data=data)


# -- load_prices -----------------------------------------------------------------------------------------------------


def write(tmp_path: Path, rows: Any) -> str:
    path = tmp_path / "prices.json"
    path.write_text(rows if isinstance(rows, str) else json.dumps(rows, indent=2))
    return str(path)


ROW = {"model": OPUS, "input_usd_per_mtok": "15", "output_usd_per_mtok": "75", "priced_on": "2026-11-24"}


def test_load_prices_upserts_by_model_and_is_idempotent(tmp_path, capsys):
    price("Claude-Opus-4-1", input="99")  # the same model, in another case: updated, not duplicated
    path = write(tmp_path, [ROW, {**ROW, "model": "gpt-4o", "cached_input_usd_per_mtok": "1.25"}])
    call_command("load_prices", path)
    assert "1 created, 1 updated, 0 unchanged" in capsys.readouterr().out
    call_command("load_prices", path)
    assert "0 created, 0 updated, 2 unchanged" in capsys.readouterr().out
    assert ModelPrice.objects.count() == 2
    opus = ModelPrice.objects.get(model=OPUS)
    assert (opus.input_usd_per_mtok, opus.cached_input_usd_per_mtok) == (Decimal(15), None)
    assert ModelPrice.objects.get(model="gpt-4o").cached_input_usd_per_mtok == Decimal("1.25")


def test_load_prices_missing_only_never_changes_a_stored_price(tmp_path, capsys):
    price(input="99")
    call_command("load_prices", write(tmp_path, [ROW, {**ROW, "model": "m2"}]), "--missing-only")
    assert "1 created, 0 updated, 1 unchanged" in capsys.readouterr().out
    assert ModelPrice.objects.get(model=OPUS).input_usd_per_mtok == Decimal(99)


def test_load_prices_loads_the_shipped_file_by_default(capsys):
    call_command("load_prices")
    assert ModelPrice.objects.get(model=OPUS).output_usd_per_mtok == Decimal(75)


def test_a_bad_row_is_a_command_error_naming_line_and_field_and_nothing_is_written(tmp_path):
    path = write(tmp_path, [ROW, {**ROW, "model": "m2", "output_usd_per_mtok": "lots"}])
    with pytest.raises(CommandError, match=r"line 8 \(row 2\), field 'output_usd_per_mtok': 'lots' is not a number"):
        call_command("load_prices", path)
    assert ModelPrice.objects.count() == 0


def test_a_missing_file_is_a_command_error(tmp_path):
    with pytest.raises(CommandError, match="cannot be read"):
        call_command("load_prices", str(tmp_path / "nope.json"))


# -- the admin -------------------------------------------------------------------------------------------------------


def test_the_admin_lists_and_edits_prices(admin_client):
    row = price(cached=None)
    listing = text(admin_client.get("/admin/runs_app/modelprice/"))
    assert OPUS in listing and "— (input price)" in listing
    form = {
        "model": OPUS,
        "input_usd_per_mtok": "14.5",
        "output_usd_per_mtok": "70",
        "cached_input_usd_per_mtok": "",
        "priced_on": "2026-11-25",
        "source": "renegotiated",
    }
    assert admin_client.post(change_url(row), form).status_code == 302
    row.refresh_from_db()
    assert row.input_usd_per_mtok == Decimal("14.5")


def test_the_admin_refuses_a_negative_price_and_a_twin_in_another_case(admin_client):
    price()
    form = {
        "model": "CLAUDE-OPUS-4-1",
        "input_usd_per_mtok": "1",
        "output_usd_per_mtok": "1",
        "priced_on": "2026-11-25",
    }
    page = text(admin_client.post("/admin/runs_app/modelprice/add/", form))
    assert "is priced already" in page
    page = text(
        admin_client.post("/admin/runs_app/modelprice/add/", {**form, "model": "x", "input_usd_per_mtok": "-1"})
    )
    assert "greater than or equal to 0" in page
    assert ModelPrice.objects.count() == 1


# -- what a run costs ------------------------------------------------------------------------------------------------


def test_the_model_comes_from_the_body_else_from_the_path():
    assert model_of("gpt-4o", "/v1/chat/completions") == "gpt-4o"
    assert model_of(None, "/v1beta/models/gemini-2.5-pro:streamGenerateContent") == "gemini-2.5-pro"
    assert (
        model_of(None, "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse")
        == "anthropic.claude-3-haiku-20240307-v1:0"
    )
    assert model_of("", "/openai/deployments/my-gpt/chat/completions") == "my-gpt"


def test_run_costs_price_each_response_at_its_own_model_and_skip_failures(django_assert_num_queries):
    price()
    price("claude-haiku-4-5", input="1", output="5", cached=None)
    run, empty = make_run(protocol="anthropic"), make_run()
    answered(
        run, "claude-opus-4-1-20250805", {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 2000}
    )
    answered(run, "claude-haiku-4-5-20251001", {"input_tokens": 1000, "output_tokens": 1000})
    answered(run, OPUS, None, failure="rate_limit", status=429)  # a failure is not billed
    with django_assert_num_queries(2):  # the prices, then the responses of every run asked for
        totals = run_costs([run.id, empty.id])
    # opus: 1000×15 + 2000×1.5 + 100×75 = 25,500 µ$; haiku: 1000×1 + 1000×5 = 6,000 µ$
    assert totals[run.id].usd == Decimal("0.0315")
    assert totals[run.id].known and totals[run.id].priced == 2
    assert totals[empty.id].responses == 0


def test_a_response_recorded_with_its_model_is_priced_at_it_and_repeats_are_counted():
    price()
    price("claude-haiku-4-5", input="1", output="5", cached=None)
    run = make_run(protocol="anthropic")
    for _ in range(3):  # the same scripted answer three times: one group of three in the database
        answered(run, "ignored-by-the-recorded-model", {"input_tokens": 1000, "output_tokens": 1000})
        RunEvent.objects.filter(run=run, seq=run.events.count()).update(data={**run.events.last().data, "model": OPUS})
    answered(run, "claude-haiku-4-5", {"input_tokens": 1000, "output_tokens": 1000})  # recorded without: the request's
    total = run_costs([run.id])[run.id]
    # opus: 3 × (1000×15 + 1000×75) = 270,000 µ$; haiku: 1000×1 + 1000×5 = 6,000 µ$
    assert (total.usd, total.priced, total.unpriced) == (Decimal("0.276"), 4, 0)


def test_the_endpoint_records_each_answers_model(harness_server, transactional_db):
    from tests.judging import play, subject_scenario

    run = play(harness_server, subject_scenario())
    assert run.events.get(kind="response").data["model"] == "gpt-4o"


def test_the_run_page_shows_each_answers_cost_and_the_runs(admin_client):
    price()
    run = make_run(protocol="anthropic")
    answered(run, OPUS, {"input_tokens": 1000, "output_tokens": 200})
    page = text(admin_client.get(f"/runs/{run.id}/"))
    assert page.count("$0.03") == 2  # the answer's and the run's: 1000×15 + 200×75 = 30,000 µ$


def test_an_unpriced_model_shows_as_such_never_as_free(admin_client):
    price()
    run = make_run()
    answered(run, "house-model-1", {"prompt_tokens": 10, "completion_tokens": 2}, path="/v1/chat/completions")
    answered(run, OPUS, {"input_tokens": 1000, "output_tokens": 200})
    page = text(admin_client.get(f"/runs/{run.id}/"))
    assert "no price for house-model-1" in page
    assert "≥ $0.03, 1 response unpriced (no price for house-model-1)" in page
    listing = text(admin_client.get("/runs/"))
    assert "≥ $0.03" in listing and "$0.00" not in listing


def test_the_runs_list_has_a_cost_column_read_in_one_query_for_the_page(admin_client, django_assert_max_num_queries):
    price()
    for _ in range(3):
        answered(make_run(), OPUS, {"input_tokens": 1_000_000, "output_tokens": 0})
    with django_assert_max_num_queries(12) as few:
        page = text(admin_client.get("/runs/"))
    assert '<th scope="col">Cost</th>' in page
    assert page.count("$15.00") == 3
    for _ in range(10):
        answered(make_run(), "unknown-model", {"input_tokens": 5})
    with django_assert_max_num_queries(12) as many:
        page = text(admin_client.get("/runs/"))
    assert len(many.captured_queries) == len(few.captured_queries)
    assert page.count(">no price<") == 10


def test_the_run_page_adds_up_the_test_and_the_pytest_session(admin_client):
    price()
    runs = []
    for i in range(2):
        run = make_ci_run(source="pytest", name="tests/test_app.py::test_plan", external_id=f"pytest-aaaaaaaaaaaa-{i}")
        answered(run, OPUS, {"input_tokens": 1_000_000, "output_tokens": 0})
        runs.append(run)
    other = make_ci_run(source="pytest", name="tests/test_app.py::test_other", external_id="pytest-aaaaaaaaaaaa-9")
    answered(other, "mystery", {"input_tokens": 1})
    page = text(admin_client.get(f"/runs/{runs[0].id}/"))
    assert "This test, every run" in page and "$30.00" in page
    assert "pytest session aaaaaaaaaaaa" in page
    assert "≥ $30.00, 1 response unpriced (no price for mystery)" in page


def test_the_overview_shows_the_periods_cost_and_the_costliest_tests(admin_client):
    price()
    run = make_ci_run(source="pytest", name="tests/test_app.py::test_plan", started_at=timezone.now())
    answered(run, OPUS, {"input_tokens": 1_000_000, "output_tokens": 10_000})
    answered(make_run(), "mystery", {"input_tokens": 1})
    page = text(admin_client.get("/?period=7d"))
    assert 'id="widget-cost"' in page
    assert "≥ $15.75, 1 response unpriced (no price for mystery)" in page
    assert "tests/test_app.py::test_plan" in page and "$15.75" in page


# -- the API ---------------------------------------------------------------------------------------------------------


def test_the_api_gives_each_runs_cost_and_unpriced_count():
    price()
    run = make_run()
    answered(run, OPUS, {"input_tokens": 1, "output_tokens": 1})
    answered(run, "mystery", {"input_tokens": 1})
    unpriced = make_run(started_at=timezone.now() - dt.timedelta(minutes=1))
    answered(unpriced, "mystery", {"input_tokens": 1})
    nothing = make_run(started_at=timezone.now() - dt.timedelta(minutes=2))
    client = make_client("read")
    items = {item["id"]: item for item in client.get("/runs").json()["items"]}
    assert items[str(run.id)]["cost_usd"] == "0.000090"  # 15 + 75 µ$, as a decimal string
    assert items[str(run.id)]["unpriced_responses"] == 1
    assert items[str(run.id)]["unpriced_models"] == ["mystery"]
    assert items[str(unpriced.id)]["cost_usd"] is None
    assert items[str(nothing.id)]["cost_usd"] == "0.000000"
    detail = client.get(f"/runs/{run.id}").json()
    assert (detail["cost_usd"], detail["unpriced_responses"]) == ("0.000090", 1)


def test_the_api_list_reads_costs_for_a_page_at_once(django_assert_max_num_queries):
    price()
    for _ in range(20):
        answered(make_run(), OPUS, {"input_tokens": 1})
    client = make_client("read")
    with django_assert_max_num_queries(8):
        assert len(client.get("/runs?limit=20").json()["items"]) == 20


# -- the judge's own cost --------------------------------------------------------------------------------------------


def test_a_verdict_shows_the_judges_own_cost(admin_client):
    price("claude-sonnet-4-5", input="3", output="15", cached=None)
    run = make_run()
    verdict = make_verdict(run=run, judge_model="claude-sonnet-4-5-20250929", input_tokens=1200, output_tokens=85)
    unpriced = make_verdict(run=run, judge_model="judge-x", input_tokens=10, output_tokens=1)
    # 1200×3 + 85×15 = 4,875 µ$
    assert "$0.0049" in text(admin_client.get(f"/runs/{run.id}/"))
    assert "no price for judge-x" in text(admin_client.get(f"/runs/{run.id}/"))
    assert "$0.0049" in text(admin_client.get(change_url(verdict)))
    assert "no price for judge-x" in text(admin_client.get(change_url(unpriced)))
    queue = text(admin_client.get(f"/admin/runs_app/judgeverdict/queue/?at={verdict.pk}"))
    assert "tokens 1200 in / 85 out · cost $0.0049" in queue
    # The API's verdict output (the upload's answer, the judge's)
    assert VerdictOut.from_orm(verdict).model_dump()["judge_cost_usd"] == Decimal("0.004875")
    assert VerdictOut.from_orm(unpriced).model_dump()["judge_cost_usd"] is None


def test_a_verdict_without_usage_says_so_and_the_upload_answers_its_cost_field():
    run = make_run()
    verdict = make_verdict(run=run, judge_model="claude-sonnet-4-5")
    assert verdict_cost_text(verdict) == "no usage reported"
    body = {"criteria": [{"criterion": "c", "verdict": "PASS", "reason": ""}], "overall": "PASS", "summary": "ok"}
    out = make_client().post(f"/runs/{run.id}/verdicts", json={**body, "judge_model": "claude-sonnet-4-5"})
    assert out.status_code == 201
    assert out.json()["judge_cost_usd"] is None


def test_a_model_the_admin_has_no_row_for_is_priced_from_genai_prices_and_the_page_says_so(admin_client):
    run = make_run()
    answered(run, "gpt-4o", {"prompt_tokens": 1000, "completion_tokens": 1000}, path="/v1/chat/completions")
    page = text(admin_client.get(f"/runs/{run.id}/"))
    assert "no price" not in page
    assert page.count("$0.0125") == 2  # the answer's and the run's: $2.50 in and $10 out per million tokens
    assert "genai-prices " in page and "OpenAI gpt-4o" in page  # which prices the figure used
    ModelPrice.objects.create(
        model="gpt-4o", input_usd_per_mtok=1, output_usd_per_mtok=1, priced_on=dt.date(2026, 11, 27), source="ours"
    )
    page = text(admin_client.get(f"/runs/{run.id}/"))
    assert page.count("$0.002") == 2 and "OpenAI gpt-4o" not in page  # the admin's row overrides it
