"""Chaos by probability, the pure half (``harnessweb.engine.chaos``): the header and the script's ``chaos`` read with
errors naming the field, and the failure each request gets decided from the seed and its number alone."""

from __future__ import annotations

from collections import Counter

import pytest

from harnessweb.engine import chaos
from harnessweb.engine.configured import Answers


def kinds(config: chaos.Chaos, count: int) -> list[str | None]:
    return [f.status if (f := chaos.decide(config, n)) else None for n in range(count)]


def test_it_reads_the_header():
    config = chaos.parse_header("seed=7; rate_limit=0.2; server_error=0.1")
    assert config == chaos.Chaos(seed=7, rate_limit=0.2, server_error=0.1)
    assert chaos.parse_header(" seed = 3 , malformed=1 ;") == chaos.Chaos(seed=3, malformed=1.0)


def test_it_reads_the_scripts_form_and_writes_it_back():
    data = {"seed": 11, "rate_limit": 0.5, "network_error": 0.25}
    config = chaos.from_data(data)
    assert config.to_data() == {
        "seed": 11,
        "rate_limit": 0.5,
        "server_error": 0.0,
        "network_error": 0.25,
        "malformed": 0.0,
    }
    assert chaos.from_data(config.to_data()) == config
    assert chaos.from_data({}) == chaos.Chaos()  # seed 0, nothing fails


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("seed=7; rate_limit=1.5", "X-Harness-Chaos: rate_limit must be a rate from 0 to 1, got 1.5"),
        ("seed=7; rate_limit=-0.1", "X-Harness-Chaos: rate_limit must be a rate from 0 to 1, got -0.1"),
        ("seed=7; teapot=0.1", "X-Harness-Chaos: 'teapot' is not a chaos kind; use one of seed, rate_limit"),
        ("used=3", "X-Harness-Chaos: 'used' is not a chaos kind"),
        ("seed=7; rate_limit", "X-Harness-Chaos: 'rate_limit' is not name=value"),
        ("seed=seven", "X-Harness-Chaos: seed must be a whole number, got 'seven'"),
        ("seed=7; server_error=lots", "X-Harness-Chaos: server_error must be a number from 0 to 1, got 'lots'"),
        ("seed=-1", "X-Harness-Chaos: seed must be a whole number from 0"),
        ("seed=1; seed=2", "X-Harness-Chaos: seed is given twice"),
        (
            "rate_limit=0.6; server_error=0.6",
            "X-Harness-Chaos: the rates add up to 1.2; together they may be at most 1",
        ),
        ("rate_limit=nan", "X-Harness-Chaos: rate_limit must be a rate from 0 to 1, got nan"),
        (" ; ", "X-Harness-Chaos: empty"),
    ],
)
def test_it_names_what_is_wrong_with_the_header(header, message):
    with pytest.raises(ValueError) as error:
        chaos.parse_header(header)
    assert str(error.value).startswith(message)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"seed": 1, "rate_limit": 2}, "chaos.rate_limit: must be a rate from 0 to 1, got 2"),
        ({"seed": 1, "server_error": "0.1"}, "chaos.server_error: must be a rate from 0 to 1, got '0.1'"),
        ({"seed": 1, "timeout": 0.1}, "chaos.timeout: unknown chaos kind"),
        ({"seed": True}, "chaos.seed: must be a whole number"),
        ({"seed": 1.5}, "chaos.seed: must be a whole number"),
        ({"malformed": 0.7, "network_error": 0.4}, "chaos: the rates add up to 1.1"),
        ([0.1], "chaos: must be an object"),
    ],
)
def test_it_names_the_field_of_a_bad_configuration(data, message):
    with pytest.raises(ValueError) as error:
        chaos.from_data(data)
    assert str(error.value).startswith(message)


def test_the_same_seed_gives_the_same_failures():
    config = chaos.Chaos(seed=7, rate_limit=0.2, server_error=0.2, network_error=0.2, malformed=0.2)
    first = kinds(config, 50)
    assert first == kinds(config, 50)
    assert first != kinds(chaos.Chaos(**{**config.to_data(), "seed": 8}), 50)
    # Every kind maps to the failure kind every wire already encodes.
    assert set(first) == {"rate_limit", "server_error", "network_error", "invalid_json_in_stream", None}


def test_the_draw_is_fixed_across_machines():
    # sha256("harness-chaos:7:0")[:8] as a fraction of 2**64: a change here changes every recorded seed's failures.
    assert chaos.draw(7, 0) == pytest.approx(0.6918, abs=1e-4)
    assert [round(chaos.draw(0, n), 4) for n in range(3)] == [0.2401, 0.7846, 0.5246]


def test_rates_are_met_over_many_requests():
    config = chaos.Chaos(seed=1, rate_limit=0.1, server_error=0.2, malformed=0.05)
    counts = Counter(kinds(config, 4000))
    assert 0.08 < counts["rate_limit"] / 4000 < 0.12
    assert 0.18 < counts["server_error"] / 4000 < 0.22
    assert 0.035 < counts["invalid_json_in_stream"] / 4000 < 0.065
    assert counts["network_error"] == 0


@pytest.mark.parametrize("kind", list(chaos.CHAOS_KINDS))
def test_a_rate_of_one_fails_every_request(kind):
    assert set(kinds(chaos.Chaos(seed=3, **{kind: 1.0}), 200)) == {chaos.CHAOS_KINDS[kind]}


def test_a_rate_of_zero_fails_none():
    assert set(kinds(chaos.Chaos(seed=3), 200)) == {None}


def test_a_chaos_failure_is_a_scripted_failure_kind_with_the_seed_in_its_message():
    failure = chaos.decide(chaos.Chaos(seed=9, rate_limit=1), 0)
    assert failure is not None
    assert (failure.status, failure.retryable, failure.retry_after_ms) == ("rate_limit", True, 1000)
    assert failure.message == "Simulated rate limit (chaos seed 9)"
    hit = chaos.hit(chaos.Chaos(seed=9, rate_limit=1), 4)
    assert hit is not None and hit.event_data() == {"chaos": True, "seed": 9, "ordinal": 4}
    assert chaos.hit(chaos.Chaos(seed=9), 4) is None


def test_the_header_numbers_requests_per_key_and_configuration():
    ordinals = chaos.Ordinals()
    headers = {"x-harness-chaos": "seed=5; server_error=0.5"}
    ours = [chaos.header_hit(headers, "aaa", ordinals) for _ in range(10)]
    theirs = [chaos.header_hit(headers, "bbb", ordinals) for _ in range(10)]
    assert [h and h.ordinal for h in ours] == [h and h.ordinal for h in theirs]  # each key from 0
    expected = kinds(chaos.Chaos(seed=5, server_error=0.5), 10)
    assert [h.failure.status if h else None for h in ours] == expected
    # Another seed for the same key starts its own sequence.
    other = chaos.header_hit({"x-harness-chaos": "seed=6; server_error=1"}, "aaa", ordinals)
    assert other is not None and other.ordinal == 0
    assert chaos.header_hit({}, "aaa", ordinals) is None


def test_ordinals_forget_the_least_recently_used_key():
    ordinals = chaos.Ordinals(limit=2)
    assert [ordinals.take("a"), ordinals.take("a"), ordinals.take("b"), ordinals.take("a")] == [0, 1, 0, 2]
    ordinals.take("c")  # "b" is the least recently used: forgotten
    assert (ordinals.take("a"), ordinals.take("b")) == (3, 0)


def test_a_script_carries_its_chaos_and_counts_each_request():
    answers = Answers.from_data({"answers": [{"text": "hi"}], "chaos": {"seed": 2, "server_error": 1}})
    first = answers.take_chaos()
    assert first is not None and (first.seed, first.ordinal, first.failure.status) == (2, 0, "server_error")
    data = answers.to_data()
    assert data["chaos"] == {"seed": 2, "rate_limit": 0.0, "server_error": 1.0, "network_error": 0.0, "malformed": 0.0,
                             "used": 1}  # fmt: skip
    again = Answers.from_data(data)
    second = again.take_chaos()
    assert second is not None and second.ordinal == 1  # the count survives the JSON form (the script's row)
    assert "chaos" not in Answers.from_data({"answers": []}).to_data()
    assert Answers().take_chaos() is None


def test_a_script_names_its_bad_chaos_field():
    with pytest.raises(ValueError, match=r"^chaos\.rate_limit: must be a rate from 0 to 1"):
        Answers.from_data({"chaos": {"seed": 1, "rate_limit": 3}})
