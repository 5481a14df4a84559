"""The cost arithmetic (harnessweb/engine/pricing.py): which row prices a model, the tokens each protocol's usage
reports, a response's cost (cached tokens, unpriced models, rounding), totals that say when they are lower bounds,
and the price file's errors naming the line and the field."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from harnessweb.engine.price_catalog import catalog_price
from harnessweb.engine.pricing import (
    SHIPPED,
    Price,
    PriceFileError,
    PriceTable,
    Tally,
    Tokens,
    Total,
    cost_of,
    describe,
    describe_cost,
    format_usd,
    parse_prices,
    read_prices,
    served,
    tokens_of,
    total_of,
)

OPUS = Price("claude-opus-4-1", Decimal(15), Decimal(75), Decimal("1.50"))
SONNET = Price("claude-sonnet-4-5", Decimal(3), Decimal(15))  # no cached price
TABLE = PriceTable([OPUS, SONNET, Price("gpt-4o", Decimal("2.5"), Decimal(10))])


def test_it_finds_a_row_by_exact_name_ignoring_case() -> None:
    assert TABLE.find("claude-opus-4-1") is OPUS
    assert TABLE.find("Claude-Opus-4-1") is OPUS


@pytest.mark.parametrize(
    "model",
    ["claude-opus-4-1-20250805", "claude-opus-4-1@20250805", "claude-opus-4-1-latest", "claude-opus-4-1-20250805-v1:0"],
)
def test_it_prices_a_dated_model_id_at_its_base_row(model: str) -> None:
    assert TABLE.find(model) is OPUS


def test_it_prices_a_dated_openai_id_at_its_base_row() -> None:
    assert TABLE.find("gpt-4o-2024-08-06").model == "gpt-4o"  # type: ignore[union-attr]


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude-opus-4-1x", "claude-opus-4-5", "claude-opus", ""])
def test_it_never_prices_another_model_whose_name_merely_starts_the_same(model: str) -> None:
    assert TABLE.find(model) is None


def test_it_takes_the_longest_star_prefix_and_prefers_exact_and_dated_rows() -> None:
    broad = Price("claude-*", Decimal(1), Decimal(1))
    opus = Price("claude-opus-*", Decimal(2), Decimal(2))
    table = PriceTable([broad, opus, OPUS])
    assert table.find("claude-opus-4-5") is opus
    assert table.find("claude-haiku-9") is broad
    assert table.find("claude-opus-4-1-20250805") is OPUS
    assert table.find("gpt-4o") is None


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        ({"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}, Tokens(10, 0, 5)),  # the harness's own
        (
            {"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 60}},
            Tokens(40, 60, 7),
        ),
        ({"input_tokens": 100, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 80}}, Tokens(20, 80, 3)),
        (
            {"input_tokens": 12, "output_tokens": 4, "cache_read_input_tokens": 500, "cache_creation_input_tokens": 30},
            Tokens(42, 500, 4),
        ),
        (
            {"promptTokenCount": 90, "candidatesTokenCount": 8, "thoughtsTokenCount": 2, "cachedContentTokenCount": 50},
            Tokens(40, 50, 10),
        ),
        (
            {"inputTokens": 9, "outputTokens": 3, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 1},
            Tokens(10, 100, 3),
        ),
        ({"billed_units": {"input_tokens": 6, "output_tokens": 2}, "tokens": {"input_tokens": 60}}, Tokens(6, 0, 2)),
    ],
)
def test_it_reads_each_protocols_usage_with_its_cached_tokens(usage: dict, tokens: Tokens) -> None:
    assert tokens_of(usage) == tokens


@pytest.mark.parametrize("usage", [None, {}, "12", {"foo": 1}, {"input_tokens": -3}, {"input_tokens": True}])
def test_it_reads_no_tokens_from_no_usage(usage: object) -> None:
    assert tokens_of(usage) is None


def test_it_prices_input_cached_and_output_tokens_exactly() -> None:
    usage = {"input_tokens": 1000, "output_tokens": 200, "cache_read_input_tokens": 5000}
    cost = cost_of("claude-opus-4-1-20250805", usage, TABLE)
    # 1000 × 15 + 5000 × 1.50 + 200 × 75, per million
    assert cost.usd == Decimal("0.0375")
    assert describe_cost(cost) == "$0.0375"


def test_it_prices_cached_tokens_at_the_input_price_when_the_row_has_no_cached_price() -> None:
    cost = cost_of(
        "claude-sonnet-4-5", {"prompt_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 1000}}, TABLE
    )
    assert cost.usd == Decimal("0.003")
    assert cost.cached_at_input_price
    assert describe_cost(cost) == "$0.003 (cached tokens at the input price: no cached price)"


def test_an_unpriced_model_is_unknown_never_free() -> None:
    cost = cost_of("mystery-1", {"input_tokens": 10, "output_tokens": 10}, TABLE)
    assert cost.usd is None
    assert describe_cost(cost) == "no price for mystery-1"
    total = total_of([cost])
    assert describe(total) == "no price for mystery-1"
    assert total.api_usd is None


def test_a_response_without_usage_is_unknown() -> None:
    assert describe_cost(cost_of("claude-opus-4-1", None, TABLE)) == "no usage reported"


def test_a_total_over_partly_unpriced_responses_is_a_lower_bound_and_says_so() -> None:
    priced = cost_of("gpt-4o", {"prompt_tokens": 40_000, "completion_tokens": 2_000}, TABLE)  # $0.12
    total = total_of([priced, cost_of("x-1", {"input_tokens": 1}, TABLE), cost_of("x-1", {"input_tokens": 2}, TABLE)])
    assert total.usd == Decimal("0.12")
    assert not total.known
    assert (total.priced, total.unpriced) == (1, 2)
    assert describe(total) == "≥ $0.12, 2 responses unpriced (no price for x-1)"
    assert total.api_usd == Decimal("0.120000")


def test_totals_add_up() -> None:
    a = total_of([cost_of("gpt-4o", {"prompt_tokens": 1_000_000}, TABLE)])
    b = total_of([cost_of("nope", {"prompt_tokens": 1}, TABLE), cost_of("gpt-4o", None, TABLE)])
    a += b
    assert (a.usd, a.priced, a.unpriced, a.unpriced_models, a.unpriced_no_usage) == (Decimal("2.5"), 1, 2, {"nope"}, 1)
    assert describe(a) == "≥ $2.50, 2 responses unpriced (no price for nope; 1 reported no usage)"


@pytest.mark.parametrize(
    ("usd", "text"),
    [
        ("0", "$0.00"),
        ("0.00004", "< $0.0001"),
        ("0.00005", "< $0.0001"),
        ("0.00015", "$0.0002"),  # half up
        ("0.12345", "$0.1235"),
        ("0.1", "$0.10"),
        ("0.003", "$0.003"),
        ("1", "$1.00"),
        ("1234.565", "$1,234.57"),
    ],
)
def test_it_rounds_dollars_for_people_half_up_and_never_shows_a_tiny_cost_as_zero(usd: str, text: str) -> None:
    assert format_usd(Decimal(usd)) == text


def test_the_api_figure_is_whole_micro_dollars() -> None:
    total = total_of([cost_of("claude-opus-4-1", {"input_tokens": 1}, TABLE)])  # $0.000015
    assert total.api_usd == Decimal("0.000015")
    assert total_of([cost_of("claude-sonnet-4-5", {"output_tokens": 1}, TABLE)]).api_usd == Decimal("0.000015")
    assert Total().api_usd == Decimal("0.000000")


def test_failed_responses_are_not_billed() -> None:
    assert served({"status": 200, "usage": {}})
    assert not served({"status": 429, "failure": "rate_limit"})
    assert not served({"status": None, "failure": "network_error", "dropped": True})
    assert not served({"status": 500})


def test_the_shipped_file_holds_seed_001s_opus_prices() -> None:
    table = read_prices(SHIPPED)
    opus = table.find("claude-opus-4-1-20250805")
    assert opus is not None
    assert (opus.input, opus.output) == (Decimal(15), Decimal(75))
    assert opus.priced_on == dt.date(2026, 11, 24)
    assert "Seed 001" in opus.source
    assert table.find("claude-sonnet-4-5-20250929") is not None  # the judge's


def test_it_reads_prices_as_decimals_not_floats() -> None:
    text = '[{"model": "m", "input_usd_per_mtok": 0.1, "output_usd_per_mtok": "0.30", "priced_on": "2026-01-02"}]'
    (price,) = parse_prices(text)
    assert price.input == Decimal("0.1")
    assert price.output == Decimal("0.30")
    assert price.cached_input is None


GOOD = {"model": "m", "input_usd_per_mtok": 1, "output_usd_per_mtok": 1, "priced_on": "2026-01-01"}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"input_usd_per_mtok": None}, "line 3 (row 2), field 'input_usd_per_mtok': required"),
        ({"input_usd_per_mtok": -1}, "field 'input_usd_per_mtok': must be between 0"),
        ({"input_usd_per_mtok": "abc"}, "field 'input_usd_per_mtok': 'abc' is not a number"),
        ({"output_usd_per_mtok": True}, "field 'output_usd_per_mtok': must be a number"),
        ({"priced_on": "yesterday"}, "field 'priced_on': 'yesterday' is not a date"),
        ({"prize": 1}, "field 'prize': unknown field"),
        ({"model": ""}, "field 'model': must be a non-empty"),
        ({"model": "a*b"}, "field 'model': '*' may only end"),
        ({"model": "M1"}, "field 'model': 'M1' is priced twice (also line 2)"),
        ({"input_usd_per_mtok": "1.0000001"}, "at most 6 decimal places"),
        ("just a string", "line 3 (row 2): must be an object"),
    ],
)
def test_a_bad_row_names_its_line_and_field(changes: dict | str, message: str) -> None:
    row = json.dumps(changes if isinstance(changes, str) else {**GOOD, **changes})
    first = '{"model": "m1", "input_usd_per_mtok": 1, "output_usd_per_mtok": 2, "priced_on": "2026-01-01"}'
    with pytest.raises(PriceFileError) as caught:
        parse_prices(f"[\n  {first},\n  {row}\n]", "prices.json")
    assert message in str(caught.value)
    assert str(caught.value).startswith("prices.json, line")


def test_a_file_that_is_not_json_or_not_an_array_says_where() -> None:
    with pytest.raises(PriceFileError, match=r"p\.json, line 2: not JSON"):
        parse_prices('[\n{"model": }]', "p.json")
    with pytest.raises(PriceFileError, match="must be a JSON array"):
        parse_prices('{"model": "m"}', "p.json")


def test_a_tally_priced_once_per_model_equals_the_sum_of_each_responses_cost() -> None:
    responses = [
        ("claude-opus-4-1-20250805", {"input_tokens": 333, "output_tokens": 7, "cache_read_input_tokens": 11}),
        ("claude-opus-4-1", {"input_tokens": 1, "output_tokens": 1}),
        ("gpt-4o-2024-08-06", {"prompt_tokens": 999_999, "completion_tokens": 3}),
        ("mystery", {"input_tokens": 5}),
        ("claude-opus-4-1", None),
    ]
    tally = Tally()
    for model, usage in responses:
        tally.add(model, usage)
    one_by_one = total_of(cost_of(model, usage, TABLE) for model, usage in responses)
    summed = tally.total(TABLE)
    assert (summed.usd, summed.priced, summed.unpriced) == (one_by_one.usd, one_by_one.priced, one_by_one.unpriced)
    assert (summed.unpriced_models, summed.unpriced_no_usage) == ({"mystery"}, 1)
    assert describe(summed) == describe(one_by_one)


# ---------------------------------------------------------------------------------------------------------------
# genai-prices behind the table


def test_genai_prices_prices_a_model_no_row_names_and_says_so() -> None:
    price = catalog_price("gpt-4o-2024-08-06")
    assert price is not None
    assert (price.input, price.output, price.cached_input) == (Decimal("2.5"), Decimal("10"), Decimal("1.25"))
    assert price.source.startswith("genai-prices ") and price.source.endswith("OpenAI gpt-4o")


def test_genai_prices_finds_bedrock_ids_and_takes_a_tiered_prices_base_tier() -> None:
    bedrock = catalog_price("us.anthropic.claude-sonnet-4-20250514-v1:0")
    assert bedrock is not None and bedrock.input == Decimal("3") and "anthropic.claude-sonnet-4" in bedrock.source
    tiered = catalog_price("gemini-2.5-pro")
    assert tiered is not None and tiered.input == Decimal("1.25") and tiered.source.endswith("(base tier)")
    assert catalog_price("house-model-1") is None
    assert catalog_price("  ") is None


def test_a_row_of_the_table_overrides_genai_prices() -> None:
    table = PriceTable([Price("gpt-4o", Decimal("1"), Decimal("2"))], fallback=catalog_price)
    assert table.find("gpt-4o-2024-08-06").input == Decimal("1")  # the row, by its dated name
    assert table.find("claude-opus-4-1").source.startswith("genai-prices ")
    assert table.find("house-model-1") is None
    assert PriceTable([]).find("gpt-4o") is None  # no fallback: only the rows price
