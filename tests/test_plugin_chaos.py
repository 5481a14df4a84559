"""``harness.chaos(seed=..., rate_limit=...)``: the plugin's chaos by probability, in process (the same engine as the
server's script path, so the same seed fails the same calls) and in server mode (the run's script)."""

from __future__ import annotations

import json

import httpx2
import openai
import pytest

from harnessweb.engine import chaos
from harnessweb.testing.harness import Harness, HarnessError
from tests.conftest import make_token

pytest_plugins = ["pytester"]
LABEL = {None: "ok", "invalid_json_in_stream": "malformed"}


def predicted(count: int, seed: int, **rates: float) -> list[str]:
    made = chaos.Chaos(seed, **rates)
    return [LABEL.get(s := f.status if (f := chaos.decide(made, n)) else None, s) for n in range(count)]


def outcome(client: openai.OpenAI) -> str:
    try:
        chunks = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True
        )  # fmt: skip
        return "ok" if "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) else "empty"
    except openai.RateLimitError:
        return "rate_limit"
    except openai.InternalServerError:
        return "server_error"
    except (openai.APIConnectionError, httpx2.TransportError):
        return "network_error"
    except json.JSONDecodeError:
        return "malformed"


def test_the_same_seed_fails_the_same_calls_as_the_server_would(harness: Harness) -> None:
    rates = {"rate_limit": 0.15, "server_error": 0.15, "network_error": 0.15, "malformed": 0.15}
    expected = predicted(14, 1, **rates)
    assert len(set(expected)) == 5
    harness.chaos(seed=1, **rates)
    client = harness.openai_client(max_retries=0)
    assert [outcome(client) for _ in range(14)] == expected
    kinds = [c.error["kind"] if c.error else None for c in harness.calls]
    assert [LABEL.get(k, k) for k in kinds] == expected
    harness.chaos(seed=1, **rates)  # set again: from the first request
    assert [outcome(client) for _ in range(14)] == expected


def test_a_failed_call_leaves_the_answer_for_the_retry_and_no_rates_turn_it_off(harness: Harness) -> None:
    harness.set_response(text="first")
    harness.set_response(text="second")
    harness.chaos(seed=5, server_error=1.0)
    client = harness.openai_client(max_retries=0)
    assert [outcome(client) for _ in range(2)] == ["server_error", "server_error"]
    harness.chaos()
    reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "first"


def test_a_bad_rate_names_the_field(harness: Harness) -> None:
    with pytest.raises(HarnessError, match=r"^harness\.chaos\.rate_limit: must be a rate from 0 to 1, got 2"):
        harness.chaos(seed=1, rate_limit=2)
    with pytest.raises(HarnessError, match=r"^harness\.chaos\.timeout: unknown chaos kind"):
        harness.chaos(seed=1, timeout=0.5)


SERVER_TESTS = """
import openai
import pytest


def ask(client):
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])


def test_chaos_on_the_server(harness):
    harness.set_response(text="after the chaos")
    harness.chaos(seed=4, server_error=1.0)
    client = harness.openai_client(max_retries=0)
    for _ in range(2):
        with pytest.raises(openai.InternalServerError):
            ask(client)
    harness.set_response(text="still after")  # another push keeps the server's count of chaos's requests
    harness.chaos()
    assert ask(client).choices[0].message.content == "after the chaos"
    assert [c.error and c.error["kind"] for c in harness.calls] == ["server_error", "server_error", None]
"""


@pytest.mark.django_db(transaction=True)
def test_server_mode_puts_chaos_in_the_runs_script(pytester: pytest.Pytester, harness_server) -> None:
    pytester.makepyfile(test_chaos_server=SERVER_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-url", harness_server.url, "--harness-token", make_token("write")
    )
    result.assert_outcomes(passed=1)
