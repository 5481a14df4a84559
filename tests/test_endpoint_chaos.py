"""Chaos by probability through the real openai and anthropic SDKs: a run's script (``chaos``) or the
``X-Harness-Chaos`` header fails requests at random, the same seed giving the same failures; each is recorded as an
injected failure marked chaos with its seed, and the run page says so."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from harnessweb.engine import chaos
from tests.conftest import make_client, wait_for

LABEL = {
    None: "ok",
    "rate_limit": "rate_limit",
    "server_error": "server_error",
    "network_error": "network_error",
    "invalid_json_in_stream": "malformed",
}
EVERY_KIND = {"rate_limit": 0.15, "server_error": 0.15, "network_error": 0.15, "malformed": 0.15}


def predicted(config: dict[str, Any], count: int) -> list[str]:
    """What the engine says requests 0..count-1 get, as the client sees them."""
    made = chaos.from_data(config)
    return [LABEL[f.status if (f := chaos.decide(made, n)) else None] for n in range(count)]


def outcome(client: openai.OpenAI, stream: bool = True) -> str:
    """One call's outcome as the SDK reports it."""
    messages = [{"role": "user", "content": "hello"}]
    try:
        if stream:
            chunks = client.chat.completions.create(model="gpt-4o", messages=messages, stream=True)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        else:
            text = client.chat.completions.create(model="gpt-4o", messages=messages).choices[0].message.content
        assert text
        return "ok"
    except openai.RateLimitError:
        return "rate_limit"
    except openai.InternalServerError:
        return "server_error"
    except (openai.APIConnectionError, httpx2.TransportError):  # a cut mid-stream surfaces while iterating
        return "network_error"
    except json.JSONDecodeError:
        return "malformed"


def scripted_run(oai: openai.OpenAI, script: dict[str, Any], retries: int = 0) -> tuple[uuid.UUID, openai.OpenAI]:
    run_id = uuid.uuid4()
    assert make_client().put(f"/runs/{run_id}/script", json=script).status_code == 200
    return run_id, oai.with_options(default_headers={"X-Harness-Run": str(run_id)}, max_retries=retries)


def injected(run_id: uuid.UUID, count: int) -> list[dict[str, Any]]:
    """The run's injected failures, once ``count`` are recorded (a cut connection's come after the cut)."""

    def found() -> list[dict[str, Any]] | None:
        events = make_client().get(f"/runs/{run_id}").json()["events"]
        rows = [e["data"] for e in events if e["kind"] == "failure_injected"]
        return rows if len(rows) >= count else None

    return wait_for(found, message=f"{count} injected failures")


def test_the_same_seed_gives_the_same_failures_twice(oai):
    config = {"seed": 1, **EVERY_KIND}
    expected = predicted(config, 14)
    assert {"ok", "rate_limit", "server_error", "network_error", "malformed"} <= set(expected)  # every kind shows
    first_id, first = scripted_run(oai, {"chaos": config})
    second_id, second = scripted_run(oai, {"chaos": config})
    assert [outcome(first) for _ in range(14)] == expected
    assert [outcome(second) for _ in range(14)] == expected
    for run_id in (first_id, second_id):
        rows = injected(run_id, 14 - expected.count("ok"))
        assert [r["ordinal"] for r in rows] == [n for n, o in enumerate(expected) if o != "ok"]
        assert all(r["chaos"] is True and r["seed"] == 1 and r["attempt"] == r["of"] == 1 for r in rows)
    assert make_client().get(f"/runs/{first_id}/script").json()["chaos"]["used"] == 14


def test_default_retries_ride_out_the_failures_the_same_way_twice(oai):
    config = {"seed": 3, "server_error": 0.3, "network_error": 0.2}
    draws = predicted(config, 40)

    def expected(calls: int) -> tuple[list[str], int]:  # the SDK tries each call up to 3 times on these kinds
        results, at = [], 0
        for _ in range(calls):
            tries = draws[at : at + 3]
            taken = tries[: tries.index("ok") + 1] if "ok" in tries else tries
            at += len(taken)
            results.append(taken[-1])
        return results, at

    wanted, requests = expected(5)
    assert requests > 5  # some calls were retried
    outcomes = []
    for _ in range(2):
        run_id, client = scripted_run(oai, {"chaos": config}, retries=2)
        outcomes.append([outcome(client, stream=False) for _ in range(5)])
        assert make_client().get(f"/runs/{run_id}/script").json()["chaos"]["used"] == requests
    assert outcomes[0] == outcomes[1] == wanted


@pytest.mark.parametrize("kind", list(chaos.CHAOS_KINDS))
def test_a_rate_of_one_fails_every_request_its_way(oai, kind):
    run_id, client = scripted_run(oai, {"chaos": {"seed": 1, kind: 1.0}})
    assert [outcome(client) for _ in range(3)] == [kind] * 3
    rows = injected(run_id, 3)
    assert [(r["status"], r["ordinal"]) for r in rows] == [(chaos.CHAOS_KINDS[kind], n) for n in range(3)]


def test_a_request_chaos_fails_leaves_the_scripts_answer_for_the_retry(oai):
    # A seed whose first request fails and second passes: the retry gets the first configured answer.
    seed = next(s for s in range(100) if predicted({"seed": s, "server_error": 0.5}, 2) == ["server_error", "ok"])
    script = {"answers": [{"text": "first"}, {"text": "second"}], "chaos": {"seed": seed, "server_error": 0.5}}
    run_id, client = scripted_run(oai, script, retries=1)
    reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "first"
    stored = make_client().get(f"/runs/{run_id}/script").json()
    assert [a["used"] for a in stored["answers"]] == [1, 0] and stored["chaos"]["used"] == 2


def test_the_header_fails_one_keys_requests_reproducibly(harness_server, transactional_db):
    header = "seed=1; rate_limit=0.2; server_error=0.2; malformed=0.2"
    expected = predicted({"seed": 1, "rate_limit": 0.2, "server_error": 0.2, "malformed": 0.2}, 10)
    assert len(set(expected)) == 4
    for _ in range(2):  # two keys: each its own sequence from request 0
        client = openai.OpenAI(
            base_url=f"{harness_server.url}/v1",
            api_key=f"sk-chaos-{uuid.uuid4().hex}",
            max_retries=0,
            default_headers={"X-Harness-Chaos": header},
        )
        assert [outcome(client) for _ in range(10)] == expected


def test_the_header_replaces_the_scripts_chaos(oai):
    run_id, client = scripted_run(oai, {"chaos": {"seed": 1, "rate_limit": 1.0}, "answers": [{"text": "kept"}]})
    headers = {"X-Harness-Chaos": "seed=2; server_error=1"}
    assert outcome(client.with_options(default_headers={**client.default_headers, **headers})) == "server_error"
    stored = make_client().get(f"/runs/{run_id}/script").json()
    assert stored["chaos"]["used"] == 0 and stored["answers"][0]["used"] == 0  # neither taken
    row = injected(run_id, 1)[0]
    assert (row["chaos"], row["seed"], row["ordinal"], row["status"]) == (True, 2, 0, "server_error")


def test_a_bad_header_is_a_400_naming_it_in_each_protocols_format(oai, claude):
    bad = {"X-Harness-Chaos": "seed=7; rate_limit=1.5"}
    with pytest.raises(openai.BadRequestError) as error:
        oai.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "x"}], extra_headers=bad
        )  # fmt: skip
    assert error.value.body["param"] == "X-Harness-Chaos"
    assert error.value.body["message"] == "X-Harness-Chaos: rate_limit must be a rate from 0 to 1, got 1.5"
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}],
            extra_headers={"X-Harness-Chaos": "seed=1; teapot=0.5"},
        )  # fmt: skip
    assert refused.value.body["error"]["type"] == "invalid_request_error"
    assert refused.value.body["error"]["message"].startswith("X-Harness-Chaos: 'teapot' is not a chaos kind")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"chaos": {"seed": 1, "rate_limit": 1.5}}, "body.chaos.rate_limit", "must be a rate from 0 to 1"),
        ({"chaos": {"seed": 1, "timeout": 0.1}}, "body.chaos.timeout", "unknown chaos kind"),
        ({"chaos": {"seed": "x"}}, "body.chaos.seed", "must be a whole number"),
        ({"chaos": {"server_error": 0.6, "malformed": 0.6}}, "body.chaos", "the rates add up to 1.2"),
        ({"chaos": 0.5}, "body.chaos", "must be an object"),
    ],
)
def test_a_bad_scripts_chaos_is_a_422_naming_the_field(body, field, message):
    run_id = uuid.uuid4()
    response = make_client().put(f"/runs/{run_id}/script", json=body)
    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert error["field"] == field and message in error["message"]


def test_the_run_page_shows_chaos_failures_with_their_seed(oai, admin_client):
    run_id, client = scripted_run(oai, {"chaos": {"seed": 42, "rate_limit": 1.0}})
    assert [outcome(client, stream=False) for _ in range(2)] == ["rate_limit", "rate_limit"]
    injected(run_id, 2)
    html = admin_client.get(f"/runs/{run_id}/").content.decode()
    assert 'class="event tone-warn kind-failure_injected"' in html
    for n in (1, 2):
        assert f"rate_limit (chaos · seed 42 · request {n}): Simulated rate limit (chaos seed 42)" in html
