"""Anthropic's Message Batches through the official SDK against the live server: a batch in_progress then ended,
its results read by the SDK's own ``results()`` (JSONL from ``results_url``), each request answered as
``/v1/messages`` answers it and recorded as a run; errored, expired and canceled requests, a batch its scenario
fails, requests refused at create naming the field, the list's pages and a delete."""

from __future__ import annotations

import time
from typing import Any

import anthropic
import httpx2
import pytest

from harnessweb.engine.redaction import fingerprint
from tests.conftest import make_scenario, wait_for

FAST = {"X-Harness-Batch-Step": "0"}


def request(custom_id: str, text: str, **params: Any) -> dict[str, Any]:
    messages = [{"role": "user", "content": text}]
    return {"custom_id": custom_id, "params": {"model": "claude-harness", "max_tokens": 64, "messages": messages,
                                               **params}}  # fmt: skip


def ended(claude: anthropic.Anthropic, batch_id: str) -> Any:
    return wait_for(lambda: (b := claude.messages.batches.retrieve(batch_id)).processing_status == "ended" and b,
                    timeout=10, message=f"batch {batch_id} to end")  # fmt: skip


def results(claude: anthropic.Anthropic, batch_id: str) -> dict[str, Any]:
    return {item.custom_id: item.result for item in claude.messages.batches.results(batch_id)}


@pytest.fixture
def hello(transactional_db: None) -> None:
    make_scenario("msgbatch-hello", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello, batch."}}])


def test_it_processes_a_batch_then_ends_it_with_each_result_as_the_endpoint_answers(
    claude: anthropic.Anthropic, hello: None
) -> None:
    batch = claude.messages.batches.create(
        requests=[request("greet", "msgbatch-hello"), request("other", "Anything at all")],  # type: ignore[list-item]
        extra_headers={"X-Harness-Batch-Step": "0.3"},
    )
    assert (batch.type, batch.processing_status, batch.results_url) == ("message_batch", "in_progress", None)
    assert batch.request_counts.processing == 2 and batch.id.startswith("msgbatch_")
    done = ended(claude, batch.id)
    assert done.request_counts.model_dump() == {"processing": 0, "succeeded": 2, "errored": 0, "canceled": 0,
                                                "expired": 0}  # fmt: skip
    assert done.ended_at is not None and done.ended_at >= done.created_at
    assert done.results_url.endswith(f"/v1/messages/batches/{batch.id}/results")
    got = results(claude, batch.id)
    assert list(got) == ["greet", "other"] and got["greet"].type == "succeeded"
    same = claude.messages.create(model="claude-harness", max_tokens=64,
                                  messages=[{"role": "user", "content": "msgbatch-hello"}])  # fmt: skip
    assert got["greet"].message.model_dump() == same.model_dump()


def test_it_records_each_request_as_a_run(claude: anthropic.Anthropic, hello: None) -> None:
    from runs_app.models import RunEvent

    batch = claude.messages.batches.create(requests=[request("one", "msgbatch-hello")], extra_headers=FAST)  # type: ignore[list-item]
    ended(claude, batch.id)
    event = RunEvent.objects.get(kind="request", data__batch__id=batch.id)
    assert event.data["path"] == "/v1/messages" and event.data["batch"]["custom_id"] == "one"
    assert event.run.protocol == "anthropic" and event.run.scenario_id == "msgbatch-hello"
    assert event.run.status == "passed" and event.data["key"]["fingerprint"] == fingerprint(claude.api_key)
    assert claude.api_key not in str(event.data) and event.data["key"]["fingerprint"] in str(event.data)


def test_it_gives_errored_results_for_requests_the_endpoint_refuses_or_fails(
    claude: anthropic.Anthropic, transactional_db: None
) -> None:
    failing = {"turn": 1, "failures_before_success": "always", "failure_status": "overloaded",
               "response": {"kind": "text", "assistant_text": "never"}}  # fmt: skip
    make_scenario("msgbatch-overloaded", [failing])
    no_tokens = {"custom_id": "no-max", "params": {"model": "claude", "messages": [{"role": "user", "content": "x"}]}}
    batch = claude.messages.batches.create(
        requests=[request("busy", "msgbatch-overloaded"), no_tokens, request("ok", "lorem")],  # type: ignore[list-item]
        extra_headers=FAST,
    )
    done = ended(claude, batch.id)
    assert (done.request_counts.succeeded, done.request_counts.errored) == (1, 2)
    got = results(claude, batch.id)
    assert got["busy"].type == "errored" and got["busy"].error.error.type == "overloaded_error"
    assert got["no-max"].type == "errored" and "max_tokens" in got["no-max"].error.error.message
    assert got["ok"].type == "succeeded"


def test_it_fails_or_expires_a_batch_as_its_scenario_scripts(
    claude: anthropic.Anthropic, transactional_db: None
) -> None:
    text = {"kind": "text", "assistant_text": "answered"}
    make_scenario("msgbatch-fails", [{"turn": 1, "response": text}], batch={"status": "failed", "message": "Gone"})
    make_scenario("msgbatch-expires", [{"turn": 1, "response": text}], batch={"status": "expired", "answered": 1})
    failed = claude.messages.batches.create(requests=[request("a", "msgbatch-fails")], extra_headers=FAST)  # type: ignore[list-item]
    ended(claude, failed.id)
    got = results(claude, failed.id)
    assert got["a"].type == "errored" and got["a"].error.error.message == "Gone"
    expiring = [request("a", "msgbatch-expires"), request("b", "msgbatch-expires")]
    expired = claude.messages.batches.create(requests=expiring, extra_headers=FAST)  # type: ignore[arg-type]
    assert ended(claude, expired.id).request_counts.expired == 1
    assert [r.type for r in results(claude, expired.id).values()] == ["succeeded", "expired"]


def test_it_cancels_a_batch_whose_requests_then_read_canceled(claude: anthropic.Anthropic, hello: None) -> None:
    from runs_app.models import RunEvent

    batch = claude.messages.batches.create(requests=[request("a", "msgbatch-hello")],  # type: ignore[list-item]
                                           extra_headers={"X-Harness-Batch-Step": "0.5"})  # fmt: skip
    canceling = claude.messages.batches.cancel(batch.id)
    assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at is not None
    done = ended(claude, batch.id)
    assert done.request_counts.canceled == 1
    assert results(claude, batch.id)["a"].type == "canceled"
    assert not RunEvent.objects.filter(data__batch__id=batch.id).exists()


def test_it_refuses_a_batch_naming_the_request(claude: anthropic.Anthropic) -> None:
    cases = [
        ([], "requests: a list of at least 1 request"),
        ([{"custom_id": "bad id!", "params": {}}], "requests.0.custom_id: String should match pattern"),
        ([request("a", "x"), request("a", "y")], "requests.1.custom_id: 'a' is used by an earlier request"),
        ([{"custom_id": "a"}], "requests.0.params: Field required"),
    ]
    for requests, message in cases:
        with pytest.raises(anthropic.BadRequestError) as raised:
            claude.messages.batches.create(requests=requests)  # type: ignore[arg-type]
        assert raised.value.body["error"]["type"] == "invalid_request_error"
        assert raised.value.body["error"]["message"].startswith(message)
    with pytest.raises(anthropic.NotFoundError, match="msgbatch_missing"):
        claude.messages.batches.retrieve("msgbatch_missing")


def test_it_lists_batches_by_pages_and_deletes_an_ended_one(claude: anthropic.Anthropic, hello: None) -> None:
    made = [claude.messages.batches.create(requests=[request("a", "msgbatch-hello")], extra_headers=FAST).id  # type: ignore[list-item]
            for _ in range(3)]  # fmt: skip
    time.sleep(0.01)
    page = claude.messages.batches.list(limit=2)
    assert [b.id for b in page.data] == made[::-1][:2] and page.has_more and page.last_id == made[1]
    assert [b.id for b in claude.messages.batches.list(limit=2)][:3] == made[::-1]  # the SDK follows after_id
    assert [b.id for b in claude.messages.batches.list(before_id=made[1])][:1] == [made[2]]
    deleted = claude.messages.batches.delete(made[0])
    assert (deleted.id, deleted.type) == (made[0], "message_batch_deleted")
    with pytest.raises(anthropic.NotFoundError):
        claude.messages.batches.retrieve(made[0])


def test_it_refuses_results_before_the_batch_ended(
    claude: anthropic.Anthropic, harness_server: Any, hello: None
) -> None:
    batch = claude.messages.batches.create(requests=[request("a", "msgbatch-hello")],  # type: ignore[list-item]
                                           extra_headers={"X-Harness-Batch-Step": "60"})  # fmt: skip
    early = httpx2.get(f"{harness_server.url}/v1/messages/batches/{batch.id}/results",
                       headers={"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"})  # fmt: skip
    assert early.status_code == 400 and "has not ended yet" in early.json()["error"]["message"]
    with pytest.raises(anthropic.BadRequestError, match="still processing"):
        claude.messages.batches.delete(batch.id)
