"""The pure half of batches: the clock's states at given moments, an input file read with errors naming the line,
an upload's form, Anthropic's requests refused naming the field, and the objects and files built from answers."""

from __future__ import annotations

import httpx2
import orjson
import pytest

from harnessweb.engine import batch_objects as objects
from harnessweb.engine import batches
from harnessweb.engine.batches import Clock, Line, phase
from harnessweb.engine.playback import Catalog
from harnessweb.engine.schemas import Scenario
from harnessweb.engine.wire.common import WireError


def test_it_moves_through_the_states_one_step_apart() -> None:
    clock = Clock(created_at=100.0, step_s=2.0)
    seen = [(phase(clock, t).status, phase(clock, t).answers) for t in (100, 101.9, 102, 104, 106, 500)]
    assert seen == [("validating", False), ("validating", False), ("in_progress", True), ("finalizing", True),
                    ("completed", True), ("completed", True)]  # fmt: skip
    assert phase(clock, 106).at == {"validating": 100, "in_progress": 102, "finalizing": 104, "completed": 106}
    assert phase(clock, 106, answered=False).status == "in_progress"  # another reader is answering the lines
    assert phase(Clock(100.0, 0.0), 100.0).status == "completed"
    assert batches.created(Clock(100.0, 0.0)).status == "validating"


def test_it_ends_failed_expired_or_cancelled_as_the_clock_says() -> None:
    assert [phase(Clock(0, 1, "failed"), t).status for t in (0, 1)] == ["validating", "failed"]
    assert not phase(Clock(0, 1, "failed"), 9).answers
    assert [phase(Clock(0, 1, "expired"), t).status for t in (0, 1, 2)] == ["validating", "in_progress", "expired"]
    early = Clock(0, 1, cancelled_at=0.5)
    assert [(phase(early, t).status, phase(early, t).answers) for t in (0.5, 1.5)] == [
        ("cancelling", False), ("cancelled", False)]  # fmt: skip
    late = Clock(0, 1, cancelled_at=1.5)
    assert phase(late, 9).answers and phase(late, 9).at["in_progress"] == 1
    assert not batches.cancellable("completed") and batches.cancellable("finalizing")


def test_it_reads_an_input_file_naming_each_line_it_refuses() -> None:
    good = {"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {"input": "x"}}
    data = b"\n".join([
        orjson.dumps(good), b"", b"[1]", b"{oops", orjson.dumps({**good, "method": "GET", "custom_id": "b"}),
        orjson.dumps({**good, "url": "/v1/chat/completions", "custom_id": "c"}), orjson.dumps(good),
        orjson.dumps({"custom_id": "d", "method": "POST", "url": "/v1/embeddings"}),
    ])  # fmt: skip
    lines, errors = batches.parse_lines(data, "/v1/embeddings")
    assert lines == [Line(1, "a", "/v1/embeddings", {"input": "x"})]
    assert [(e.code, e.line, e.param) for e in errors] == [
        ("invalid_json_line", 3, None), ("invalid_json_line", 4, None), ("invalid_method", 5, "method"),
        ("invalid_url", 6, "url"), ("duplicate_custom_id", 7, "custom_id"),
        ("missing_required_parameter", 8, "body"),
    ]  # fmt: skip
    assert batches.parse_lines(b"\n \n", "/v1/embeddings")[1][0].code == "empty_file"
    assert batches.parse_lines(orjson.dumps(good) + b"\n", "/v1/embeddings", limit=0)[1][0].code == "too_many_requests"


def test_it_reads_an_upload_as_the_sdk_sends_it() -> None:
    sent = httpx2.Request("POST", "http://h/v1/files", files={"file": ("dir/in.jsonl", b"{}\n\x00")},
                          data={"purpose": "batch", "expires_after[anchor]": "created_at",
                                "expires_after[seconds]": "3600"})  # fmt: skip
    upload = batches.read_upload(sent.headers["content-type"], sent.read())
    assert upload == batches.Upload("in.jsonl", b"{}\n\x00", "batch", 3600)
    with pytest.raises(WireError, match="multipart/form-data"):
        batches.read_upload("application/json", b"{}")
    no_purpose = httpx2.Request("POST", "http://h/v1/files", files={"file": ("a.jsonl", b"x")})
    with pytest.raises(WireError) as raised:
        batches.read_upload(no_purpose.headers["content-type"], no_purpose.read())
    assert (raised.value.message, raised.value.param) == ("Missing required parameter: 'purpose'.", "purpose")


def test_it_refuses_message_requests_naming_the_field() -> None:
    ok = {"custom_id": "a-1", "params": {"model": "m"}}
    assert batches.parse_message_requests({"requests": [ok]}) == [Line(1, "a-1", "/v1/messages", {"model": "m"})]
    with pytest.raises(WireError, match=r"requests\.1\.custom_id: 'a-1' is used by an earlier request"):
        batches.parse_message_requests({"requests": [ok, ok]})
    with pytest.raises(WireError, match=r"requests\.0\.params: Field required"):
        batches.parse_message_requests({"requests": [{"custom_id": "x"}]})
    with pytest.raises(WireError, match="at most 1"):
        batches.parse_message_requests({"requests": [ok, {**ok, "custom_id": "b"}]}, limit=1)


def test_it_takes_the_outcome_the_first_line_s_scenario_scripts() -> None:
    text = {"kind": "text", "assistant_text": "hi"}
    scripted = Scenario.model_validate({"id": "expires", "turns": [{"turn": 1, "response": text}],
                                        "batch": {"status": "expired", "answered": 2}})  # fmt: skip
    catalog = Catalog.build([scripted])
    line = Line(1, "a", "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "expires"}]})
    plain = Line(1, "a", "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "other"}]})
    assert batches.scripted_outcome(catalog, [line], {}) == scripted.batch
    assert batches.scripted_outcome(catalog, [plain], {}) is None
    assert batches.scripted_outcome(catalog, [plain], {"x-harness-scenario": "expires"}) == scripted.batch
    broken = Line(1, "a", "/v1/chat/completions", {"model": "m"})  # refused when played: scripts nothing
    assert batches.scripted_outcome(catalog, [broken], {}) is None


def test_it_refuses_a_step_that_is_no_number_of_seconds() -> None:
    assert batches.step_of({}, 1.5) == 1.5
    assert batches.step_of({"x-harness-batch-step": "0"}, 1.5) == 0
    for bad in ("soon", "-1", "nan", "7200"):
        with pytest.raises(WireError, match="x-harness-batch-step"):
            batches.step_of({"x-harness-batch-step": bad}, 1.0)


def test_it_writes_output_and_error_files_by_custom_id() -> None:
    answers = [objects.Answer("a", 200, {"ok": 1}, "req_1"), objects.Answer("b", 429, {"error": {}}, "req_2"),
               objects.expired(Line(3, "c", "/v1/embeddings", {}))]  # fmt: skip
    output, errors = objects.output_files("batch_1", answers)
    assert output == (b'{"id":"' + objects.request_line_id("batch_1", "a").encode()
                      + b'","custom_id":"a","response":{"status_code":200,"request_id":"req_1","body":{"ok":1}},'
                      b'"error":null}\n')  # fmt: skip
    assert [orjson.loads(x)["custom_id"] for x in errors.splitlines()] == ["b", "c"]
    assert orjson.loads(errors.splitlines()[1])["error"]["code"] == "batch_expired"
    row = objects.BatchRow("batch_1", "/v1/embeddings", "file-1", "24h", 100.0, None, 3)
    done = objects.batch_object(row, phase(Clock(100.0, 0.0, "expired"), 100.0), answers)
    assert done["request_counts"] == {"total": 3, "completed": 1, "failed": 2} and done["expired_at"] == 100


def test_it_counts_and_lists_an_anthropic_batch_s_results() -> None:
    lines = [Line(1, "a", "/v1/messages", {}), Line(2, "b", "/v1/messages", {})]
    answers = [objects.Answer("a", 200, {"id": "msg"}), objects.Answer("b", 400, {"type": "error"})]
    ended = phase(Clock(0.0, 0.0), 0.0)
    obj = objects.message_batch("msgbatch_1", 0.0, ended, lines, answers, "http://h/r")
    assert obj["processing_status"] == "ended" and obj["results_url"] == "http://h/r"
    assert obj["request_counts"] == {"processing": 0, "succeeded": 1, "errored": 1, "canceled": 0, "expired": 0}
    assert obj["created_at"] == "1970-01-01T00:00:00.000000Z"
    cancelled = phase(Clock(0.0, 1.0, cancelled_at=0.5), 2.0)
    assert [r["result"]["type"] for r in objects.results(cancelled, lines, None, "")] == ["canceled", "canceled"]
    running = objects.message_batch("msgbatch_1", 0.0, phase(Clock(0.0, 1.0), 1.0), lines, answers, "u")
    assert running["request_counts"]["processing"] == 2 and running["results_url"] is None
