"""Run scripts: answers and failure kinds configured for a named run over the API (``PUT /api/runs/{id}/script``),
served through the real SDKs before any scenario, counted once each, with precise 422s for a bad script."""

from __future__ import annotations

import uuid

import anthropic
import openai
import pytest

from tests.conftest import make_client, make_scenario


def named(client, run_id: uuid.UUID):
    return client.with_options(default_headers={"X-Harness-Run": str(run_id)}, max_retries=0)


def ask(client, text: str = "hi", model: str = "gpt-4o") -> str:
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content


def test_it_serves_a_runs_answers_in_order_per_model(oai):
    run_id = uuid.uuid4()
    script = {
        "answers": [
            {"text": "first"},
            {"text": "second"},
            {"model": "gpt-4o-mini", "json": {"found": True}},
        ]
    }
    assert make_client().put(f"/runs/{run_id}/script", json=script).status_code == 200
    client = named(oai, run_id)
    assert [ask(client), ask(client), ask(client)] == ["first", "second", "second"]
    assert ask(client, model="gpt-4o-mini") == '{"found": true}'
    assert ask(oai) not in ("first", "second")  # another run: no script
    used = make_client().get(f"/runs/{run_id}/script").json()
    assert [a["used"] for a in used["answers"]] == [1, 2, 1]


def test_it_serves_a_configured_failure_kind_then_the_answer(claude):
    run_id = uuid.uuid4()
    script = {"answers": [{"text": "recovered"}], "errors": [{"kind": "rate_limit", "times": 1}]}
    make_client().put(f"/runs/{run_id}/script", json=script)
    client = claude.with_options(default_headers={"X-Harness-Run": str(run_id)}, max_retries=0)
    with pytest.raises(anthropic.RateLimitError):
        client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    message = client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert message.content[0].text == "recovered"
    events = make_client().get(f"/runs/{run_id}").json()["events"]
    assert [e["kind"] for e in events if e["kind"] in ("failure_injected", "response")] == [
        "failure_injected",
        "response",
        "response",
    ]


def test_it_plays_the_scenario_a_script_names(oai):
    make_scenario("scripted", [{"turn": 1, "response": {"kind": "text", "assistant_text": "from the scenario"}}])
    run_id = uuid.uuid4()
    make_client().put(f"/runs/{run_id}/script", json={"scenario": "scripted"})
    assert ask(named(oai, run_id), "no id in this prompt") == "from the scenario"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"answers": [{"text": "a", "json": 1}]}, "body.answers.0", "exactly one of"),
        ({"errors": [{"kind": "teapot"}]}, "body.errors.0", "unknown failure kind 'teapot'"),
        ({"errors": [{"kind": "timeout", "times": 0}]}, "body.errors.0", "positive number or 'always'"),
        ({"answers": "all"}, "body.answers", "must be a list"),
        ({"scenario": 5}, "body.scenario", "must be a scenario id"),
        ([], "body", "must be an object"),
    ],
)
def test_it_refuses_a_bad_script_naming_the_field(body, field, message):
    run_id = uuid.uuid4()
    response = make_client().put(f"/runs/{run_id}/script", json=body)
    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert error["field"] == field and message in error["message"]
    assert make_client().get(f"/runs/{run_id}/script").status_code == 404  # nothing half-written


@pytest.mark.django_db
def test_it_needs_a_write_token_to_script_a_run():
    run_id = uuid.uuid4()
    assert make_client("read").put(f"/runs/{run_id}/script", json={}).status_code == 403
    assert make_client().put(f"/runs/{run_id}/script", json={}).status_code == 200
    assert make_client().delete(f"/runs/{run_id}/script").status_code == 204
    assert make_client().get(f"/runs/{run_id}/script").status_code == 404


def test_it_leaves_unnamed_runs_alone(oai):
    assert isinstance(ask(oai), str)
    with pytest.raises(openai.NotFoundError):
        oai.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], extra_headers={"X-Harness-Scenario": "none-such"}
        )
