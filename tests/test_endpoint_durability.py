"""An acknowledged response is a recorded response: once a client has the end of a response (the last byte,
``[DONE]``, ``message_stop``), the run and that response's events are readable at once, by the API and the ORM,
with no waiting; failures and refusals too."""

from __future__ import annotations

import httpx
import openai
import pytest

from runs_app.models import Run
from tests.conftest import make_scenario, make_token

pytestmark = pytest.mark.backends  # make test runs these on PostgreSQL too


def ask(client: openai.OpenAI, text: str, **kw: object) -> object:
    return client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": text}], **kw
    )


@pytest.mark.parametrize("stream", [False, True])
def test_it_lets_the_client_read_its_run_the_moment_the_response_ends(oai, harness_server, stream):
    token = make_token("read")
    api = httpx.Client(base_url=harness_server.url, headers={"Authorization": f"Bearer {token}"})
    for i in range(20):
        raw = ask(oai, f"read your writes {stream} {i}", stream=stream)
        list(raw.parse()) if stream else raw.parse()
        run_id = raw.headers["x-harness-run"]
        got = api.get(f"/api/runs/{run_id}")  # no wait, no retry
        assert got.status_code == 200, (i, got.text)
        kinds = [e["kind"] for e in got.json()["events"]]
        assert kinds[-1] == "response" and kinds.count("response") == 1, (i, kinds)


def test_it_records_an_injected_failure_before_the_client_sees_it(oai):
    make_scenario("fails-once", [{"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit",
                                  "response": {"kind": "text", "assistant_text": "ok"}}])  # fmt: skip
    with pytest.raises(openai.RateLimitError) as caught:
        oai.with_options(max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "fails-once"}]
        )
    run = Run.objects.get(id=caught.value.response.headers["x-harness-run"])
    assert list(run.events.values_list("kind", flat=True))[-2:] == ["failure_injected", "response"]


def test_it_records_a_refusal_before_the_client_sees_it(oai):
    with pytest.raises(openai.NotFoundError) as caught:
        ask(oai, "anything", extra_headers={"X-Harness-Scenario": "no-such-scenario"})
    run = Run.objects.get(id=caught.value.response.headers["x-harness-run"])
    assert run.events.filter(kind="rejected").exists() and run.status == "errored"
