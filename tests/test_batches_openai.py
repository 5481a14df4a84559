"""OpenAI's Files and Batch APIs through the official SDK against the live server: files uploaded, listed, read and
deleted; a batch moving validating → in_progress → finalizing → completed, each line answered as the synchronous
endpoint answers it and recorded as a run; per-line errors in the error file, a scripted failed or expired batch, an
input refused naming its line, a cancel, and the lists' pages."""

from __future__ import annotations

import time
from typing import Any

import httpx2
import openai
import orjson
import pytest

from tests.conftest import make_scenario, wait_for

FAST = {"X-Harness-Batch-Step": "0"}  # the first read finds the batch ended


def jsonl(*items: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(item) + b"\n" for item in items)


def chat_line(custom_id: str, text: str, model: str = "gpt-4o-mini", **body: Any) -> dict[str, Any]:
    messages = [{"role": "user", "content": text}]
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": model, "messages": messages, **body}}  # fmt: skip


def upload(oai: openai.OpenAI, content: bytes, name: str = "input.jsonl", purpose: str = "batch") -> Any:
    return oai.files.create(file=(name, content), purpose=purpose)  # type: ignore[arg-type]


def batch_of(oai: openai.OpenAI, *lines: dict[str, Any], headers: dict[str, str] | None = None, **kw: Any) -> Any:
    endpoint = lines[0]["url"] if lines else "/v1/chat/completions"
    source = upload(oai, jsonl(*lines))
    return oai.batches.create(input_file_id=source.id, endpoint=endpoint, completion_window="24h",
                              extra_headers=headers or FAST, **kw)  # fmt: skip


def ended(oai: openai.OpenAI, batch_id: str, timeout: float = 10) -> Any:
    """Poll as a client does until the batch ends."""
    return wait_for(lambda: (b := oai.batches.retrieve(batch_id)).status in ("completed", "failed", "expired",
                    "cancelled") and b, timeout=timeout, message=f"batch {batch_id} to end")  # fmt: skip


def file_lines(oai: openai.OpenAI, file_id: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in oai.files.content(file_id).content.splitlines()]


@pytest.fixture
def hello(transactional_db: None) -> None:
    make_scenario("batch-hello", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello from a batch."}}])


# -- files ---------------------------------------------------------------------------------------------------------


def test_it_uploads_reads_lists_and_deletes_files(oai: openai.OpenAI) -> None:
    first = upload(oai, b'{"a": 1}\n', "first.jsonl")
    second = upload(oai, b"notes\x00\xff", "notes.bin", purpose="user_data")
    assert (first.object, first.purpose, first.filename, first.bytes) == ("file", "batch", "first.jsonl", 9)
    assert oai.files.retrieve(second.id).filename == "notes.bin"
    assert oai.files.content(second.id).content == b"notes\x00\xff"  # the bytes as uploaded
    assert [f.id for f in oai.files.list(purpose="user_data")][:1] == [second.id]
    assert second.id not in [f.id for f in oai.files.list(purpose="batch")]
    newest_first = [f.id for f in oai.files.list(limit=1)]  # the SDK follows the pages
    assert newest_first.index(second.id) < newest_first.index(first.id)
    page = oai.files.list(limit=1)
    assert page.has_more and len(page.data) == 1
    assert [f.id for f in oai.files.list(order="asc")].index(first.id) < [
        f.id for f in oai.files.list(order="asc")
    ].index(second.id)
    deleted = oai.files.delete(first.id)
    assert (deleted.id, deleted.deleted) == (first.id, True)
    with pytest.raises(openai.NotFoundError, match=f"No such File object: {first.id}"):
        oai.files.retrieve(first.id)


def test_it_refuses_an_upload_naming_what_is_wrong(oai: openai.OpenAI, harness_server: Any) -> None:
    with pytest.raises(openai.BadRequestError) as bad:
        oai.files.create(file=("x.jsonl", b"{}\n"), purpose="nonsense")  # type: ignore[arg-type]
    assert bad.value.body["param"] == "purpose" and "Supported values are" in bad.value.body["message"]
    with pytest.raises(openai.BadRequestError, match="Must be .jsonl"):
        upload(oai, b"{}\n", "input.csv")
    with pytest.raises(openai.BadRequestError, match="The file is empty"):
        upload(oai, b"")
    big = httpx2.post(f"{harness_server.url}/v1/files", files={"file": ("a.jsonl", b"x" * (6 * 1024 * 1024))},
                      data={"purpose": "batch"}, headers={"Authorization": "Bearer sk-test"})  # fmt: skip
    assert big.status_code == 413
    assert big.json()["error"]["type"] == "invalid_request_error" and "limit" in big.json()["error"]["message"]


# -- a batch's life ------------------------------------------------------------------------------------------------


def test_it_moves_a_batch_through_its_states_and_answers_each_line_as_the_endpoint_does(
    oai: openai.OpenAI, hello: None
) -> None:
    lines = [chat_line("first", "batch-hello"), chat_line("second", "Say something else")]
    batch = batch_of(oai, *lines, headers={"X-Harness-Batch-Step": "0.4"}, metadata={"job": "nightly"})
    assert (batch.status, batch.request_counts.total, batch.metadata) == ("validating", 0, {"job": "nightly"})
    seen, deadline = [batch.status], time.monotonic() + 10
    while seen[-1] != "completed" and time.monotonic() < deadline:
        time.sleep(0.05)
        current = oai.batches.retrieve(batch.id)
        if current.status != seen[-1]:
            seen.append(current.status)
    assert seen == ["validating", "in_progress", "finalizing", "completed"]
    done = oai.batches.retrieve(batch.id)
    assert done.request_counts.model_dump() == {"total": 2, "completed": 2, "failed": 0}
    assert (
        done.created_at <= done.in_progress_at <= done.finalizing_at <= done.completed_at and done.error_file_id is None
    )
    output = {line["custom_id"]: line for line in file_lines(oai, done.output_file_id)}
    assert list(output) == ["first", "second"] and output["first"]["id"].startswith("batch_req_")
    synchronous = oai.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "batch-hello"}]
    )
    assert output["first"]["response"]["status_code"] == 200
    assert output["first"]["response"]["body"] == synchronous.model_dump(exclude_unset=True)
    assert output["first"]["error"] is None and output["first"]["response"]["request_id"].startswith("req_")
    assert done.usage is not None and done.usage.total_tokens > 0
    assert oai.files.retrieve(done.output_file_id).purpose == "batch_output"


def test_it_records_each_line_as_a_run_of_its_scenario(oai: openai.OpenAI, hello: None) -> None:
    from runs_app.models import RunEvent

    done = ended(oai, batch_of(oai, chat_line("only", "batch-hello")).id)
    assert done.status == "completed"
    request = RunEvent.objects.get(kind="request", data__batch__id=done.id)
    assert request.data["batch"] == {"id": done.id, "custom_id": "only", "line": 1}
    assert request.data["key"]["fingerprint"] and "sk-test" not in orjson.dumps(request.data).decode()
    assert request.run.scenario_id == "batch-hello" and request.run.status == "passed"
    assert list(request.run.events.values_list("kind", flat=True)) == ["request", "match", "validation", "response"]


def test_it_answers_responses_and_embeddings_batches(oai: openai.OpenAI, hello: None) -> None:
    responses = {"custom_id": "r", "method": "POST", "url": "/v1/responses",
                 "body": {"model": "gpt-4o", "input": "batch-hello"}}  # fmt: skip
    done = ended(oai, batch_of(oai, responses).id)
    body = file_lines(oai, done.output_file_id)[0]["response"]["body"]
    assert body["object"] == "response" and body["output"][0]["content"][0]["text"] == "Hello from a batch."
    embed = {"custom_id": "e", "method": "POST", "url": "/v1/embeddings",
             "body": {"model": "text-embedding-3-small", "input": "a text"}}  # fmt: skip
    done = ended(oai, batch_of(oai, embed).id)
    body = file_lines(oai, done.output_file_id)[0]["response"]["body"]
    same = oai.embeddings.create(model="text-embedding-3-small", input="a text")
    assert body["data"][0]["embedding"] == same.data[0].embedding


def test_it_writes_each_line_the_endpoint_refuses_or_fails_to_the_error_file(
    oai: openai.OpenAI, transactional_db: None
) -> None:
    make_scenario("batch-limited", [{"turn": 1, "failures_before_success": "always", "failure_status": "rate_limit",
                                     "response": {"kind": "text", "assistant_text": "never"}}])  # fmt: skip
    bad_body = {"custom_id": "no-messages", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m"}}
    lines = [chat_line("limited", "batch-limited"), bad_body, chat_line("fine", "lorem please")]
    done = ended(oai, batch_of(oai, *lines).id)
    assert done.status == "completed"
    assert done.request_counts.model_dump() == {"total": 3, "completed": 1, "failed": 2}
    errors = {line["custom_id"]: line["response"] for line in file_lines(oai, done.error_file_id)}
    assert errors["limited"]["status_code"] == 429
    assert errors["limited"]["body"]["error"]["code"] == "rate_limit_exceeded"
    assert errors["no-messages"]["status_code"] == 400 and errors["no-messages"]["body"]["error"]["param"] == "messages"
    assert [line["custom_id"] for line in file_lines(oai, done.output_file_id)] == ["fine"]


def test_it_fails_a_batch_whose_input_is_invalid_naming_the_line(oai: openai.OpenAI) -> None:
    source = upload(oai, jsonl(chat_line("a", "hi")) + b"{not json\n" + jsonl(chat_line("a", "again")))
    batch = oai.batches.create(input_file_id=source.id, endpoint="/v1/chat/completions", completion_window="24h",
                               extra_headers=FAST)  # fmt: skip
    done = ended(oai, batch.id)
    assert done.status == "failed" and done.failed_at is not None and done.output_file_id is None
    found = [(e.code, e.line) for e in done.errors.data]
    assert found == [("invalid_json_line", 2), ("duplicate_custom_id", 3)]
    assert done.request_counts.model_dump() == {"total": 0, "completed": 0, "failed": 0}


def test_it_fails_or_expires_a_batch_as_its_scenario_scripts(oai: openai.OpenAI, transactional_db: None) -> None:
    text = {"kind": "text", "assistant_text": "answered"}
    make_scenario("batch-fails", [{"turn": 1, "response": text}], batch={"status": "failed", "message": "Quota gone"})
    make_scenario("batch-expires", [{"turn": 1, "response": text}], batch={"status": "expired", "answered": 1})
    failed = ended(oai, batch_of(oai, chat_line("a", "batch-fails")).id)
    assert (failed.status, failed.errors.data[0].message) == ("failed", "Quota gone")
    lines = [chat_line("a", "batch-expires"), chat_line("b", "batch-expires"), chat_line("c", "batch-expires")]
    expired = ended(oai, batch_of(oai, *lines).id)
    assert expired.status == "expired" and expired.expired_at is not None
    assert expired.request_counts.model_dump() == {"total": 3, "completed": 1, "failed": 2}
    assert [line["custom_id"] for line in file_lines(oai, expired.output_file_id)] == ["a"]
    errors = file_lines(oai, expired.error_file_id)
    assert [(e["custom_id"], e["error"]["code"], e["response"]) for e in errors] == [
        ("b", "batch_expired", None), ("c", "batch_expired", None)]  # fmt: skip


def test_it_cancels_a_batch_before_its_lines_are_answered(oai: openai.OpenAI, hello: None) -> None:
    from runs_app.models import RunEvent

    batch = batch_of(oai, chat_line("a", "batch-hello"), headers={"X-Harness-Batch-Step": "0.5"})
    cancelling = oai.batches.cancel(batch.id)
    assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
    done = ended(oai, batch.id)
    assert done.status == "cancelled" and done.in_progress_at is None and done.output_file_id is None
    assert done.request_counts.model_dump() == {"total": 1, "completed": 0, "failed": 0}
    assert not RunEvent.objects.filter(data__batch__id=batch.id).exists()
    with pytest.raises(openai.BadRequestError, match="Cannot cancel a batch with status 'cancelled'"):
        oai.batches.cancel(batch.id)


def test_it_lists_batches_newest_first_by_pages(oai: openai.OpenAI, hello: None) -> None:
    made = [batch_of(oai, chat_line("a", "batch-hello")).id for _ in range(3)]
    page = oai.batches.list(limit=2)
    assert [b.id for b in page.data] == made[::-1][:2] and page.has_more
    listed = [b.id for b in oai.batches.list(limit=2)]  # the SDK follows ``after``
    assert listed[:3] == made[::-1]
    assert {b.status for b in page.data} == {"completed"}  # a list is a read: the batches moved on


def test_it_refuses_a_batch_naming_the_field(oai: openai.OpenAI) -> None:
    source = upload(oai, jsonl(chat_line("a", "hi")))
    notes = upload(oai, b"text", "n.txt", purpose="user_data")
    cases = [
        ({"input_file_id": source.id, "endpoint": "/v1/completions"}, openai.BadRequestError, "endpoint"),
        ({"input_file_id": "file-missing", "endpoint": "/v1/chat/completions"}, openai.NotFoundError, "input_file_id"),
        ({"input_file_id": notes.id, "endpoint": "/v1/chat/completions"}, openai.BadRequestError, "input_file_id"),
    ]
    for fields, error, param in cases:
        with pytest.raises(error) as raised:
            oai.batches.create(completion_window="24h", **fields)  # type: ignore[arg-type]
        assert raised.value.body["param"] == param
    with pytest.raises(openai.BadRequestError, match="x-harness-batch-step"):
        oai.batches.create(input_file_id=source.id, endpoint="/v1/chat/completions", completion_window="24h",
                           extra_headers={"X-Harness-Batch-Step": "soon"})  # fmt: skip
    with pytest.raises(openai.NotFoundError, match="No batch found with id 'batch_nope'"):
        oai.batches.retrieve("batch_nope")


def test_it_takes_the_key_rules_of_every_endpoint(harness_server: Any, transactional_db: None) -> None:
    for method, path in (("GET", "/v1/batches"), ("POST", "/v1/files"), ("GET", "/v1/files/file-x/content")):
        refused = httpx2.request(method, f"{harness_server.url}{path}", headers={"X-Harness-Require-Key": "1"})
        assert refused.status_code == 401 and "You didn't provide an API key" in refused.json()["error"]["message"]
    listed = httpx2.get(f"{harness_server.url}/v1/batches", headers={"X-Harness-Require-Key": "1",
                                                                     "Authorization": "Bearer sk-test-1"})  # fmt: skip
    assert listed.status_code == 200 and listed.json()["object"] == "list"
