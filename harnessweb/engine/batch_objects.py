"""The objects the Files and Batch APIs send, pure: OpenAI's ``file`` and ``batch`` objects and lists, a batch's
output and error files (JSONL, one line per request with its ``custom_id``), Anthropic's ``message_batch`` and its
results (JSONL), built from a batch's :class:`~harnessweb.engine.batches.Phase` and the answers its lines got.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from harnessweb.engine.batches import ENDED, WINDOW_S, Line, Phase

EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."
FAILED_MESSAGE = "The batch failed as its scenario scripts."


@dataclass(frozen=True)
class Answer:
    """What one line of a batch got: the status and JSON body the synchronous endpoint would have sent (status 0: not
    answered, the batch expired first), its request id and the run that recorded it."""

    custom_id: str
    status: int
    body: Any
    request_id: str = ""
    run_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200

    def as_data(self) -> dict[str, Any]:
        return {"custom_id": self.custom_id, "status": self.status, "body": self.body,
                "request_id": self.request_id, "run_id": self.run_id}  # fmt: skip

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Answer:
        return cls(data["custom_id"], data["status"], data["body"], data.get("request_id", ""), data.get("run_id"))


def expired(line: Line) -> Answer:
    """A line the batch never answered: it expired first."""
    return Answer(line.custom_id, 0, None)


# ---------------------------------------------------------------------------------------------------------------
# OpenAI


def file_object(
    file_id: str, filename: str, purpose: str, size: int, created_at: float, expires_at: float | None
) -> dict[str, Any]:
    """OpenAI's ``file`` object."""
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": int(created_at),
        "expires_at": None if expires_at is None else int(expires_at),
        "filename": filename,
        "purpose": purpose,
        "status": "processed",
        "status_details": None,
    }


def page(data: Sequence[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    """OpenAI's cursor page: the objects, the first and last ids, and whether more follow."""
    first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
    return {"object": "list", "data": list(data), "first_id": first, "last_id": last, "has_more": has_more}


def deleted_file(file_id: str) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "deleted": True}


@dataclass(frozen=True)
class BatchRow:
    """What a stored batch says of itself, for its object: ids, endpoint, times and what it holds."""

    id: str
    endpoint: str
    input_file_id: str
    completion_window: str
    created_at: float
    metadata: dict[str, str] | None
    total: int
    errors: tuple[dict[str, Any], ...] = ()
    model: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None


def batch_object(row: BatchRow, phase: Phase, answers: Sequence[Answer] | None) -> dict[str, Any]:
    """OpenAI's ``batch`` object in this phase: its status and the time each state reached began, the request counts
    (total once validated; completed and failed once answered) and, once ended, the output and error files."""
    at = {f"{name}_at": int(t) for name, t in phase.at.items() if name != "validating"}
    validated = phase.status not in ("validating", "failed")
    done = [a for a in answers or () if phase.answers]
    completed = sum(1 for a in done if a.ok)
    counts = {"total": row.total if validated else 0, "completed": completed, "failed": len(done) - completed}
    ended = phase.status in ENDED
    obj: dict[str, Any] = {
        "id": row.id,
        "object": "batch",
        "endpoint": row.endpoint,
        "model": row.model,
        "errors": {"object": "list", "data": list(row.errors)} if row.errors and phase.status == "failed" else None,
        "input_file_id": row.input_file_id,
        "completion_window": row.completion_window,
        "status": phase.status,
        "output_file_id": row.output_file_id if ended else None,
        "error_file_id": row.error_file_id if ended else None,
        "created_at": int(row.created_at),
        "in_progress_at": None,
        "expires_at": int(row.created_at + WINDOW_S),
        "finalizing_at": None,
        "completed_at": None,
        "failed_at": None,
        "expired_at": None,
        "cancelling_at": None,
        "cancelled_at": None,
        "request_counts": counts,
        "usage": usage(done) if done else None,
        "metadata": row.metadata,
    }
    obj.update(at)
    return obj


def usage(answers: Sequence[Answer]) -> dict[str, Any]:
    """A batch's token usage: the sum of its answers' (Chat Completions' prompt and completion tokens, the
    Responses API's input and output tokens, embeddings' prompt tokens)."""
    total_in = total_out = 0
    for answer in answers:
        used = answer.body.get("usage") if isinstance(answer.body, dict) else None
        if isinstance(used, dict):
            total_in += int(used.get("prompt_tokens", used.get("input_tokens", 0)) or 0)
            total_out += int(used.get("completion_tokens", used.get("output_tokens", 0)) or 0)
    return {
        "input_tokens": total_in,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": total_out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": total_in + total_out,
    }


def request_line_id(batch_id: str, custom_id: str) -> str:
    """A line's ``batch_req_…`` id: the same for the same batch and ``custom_id``."""
    return "batch_req_" + hashlib.sha256(f"{batch_id}\x1f{custom_id}".encode()).hexdigest()[:24]


def output_files(batch_id: str, answers: Sequence[Answer]) -> tuple[bytes, bytes]:
    """A batch's output file (the answered lines) and error file (lines answered with an error, and lines the batch
    expired before answering, ``batch_expired``), each JSONL in the input's order."""
    output, errors = [], []
    for answer in answers:
        line: dict[str, Any] = {"id": request_line_id(batch_id, answer.custom_id), "custom_id": answer.custom_id}
        if answer.status == 0:
            line.update(response=None, error={"code": "batch_expired", "message": EXPIRED_MESSAGE})
        else:
            line.update(
                response={"status_code": answer.status, "request_id": answer.request_id, "body": answer.body},
                error=None,
            )
        (output if answer.ok else errors).append(orjson.dumps(line) + b"\n")
    return b"".join(output), b"".join(errors)


# ---------------------------------------------------------------------------------------------------------------
# Anthropic

ANTHROPIC_STATUS = {"cancelling": "canceling"}  # every ended state is "ended"; the others are "in_progress"


def rfc3339(t: float) -> str:
    """A time as Anthropic writes it: ``2026-11-27T18:45:03.123456Z``."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def message_batch(
    batch_id: str, created_at: float, phase: Phase, lines: Sequence[Line], answers: Sequence[Answer] | None,
    results_url: str,
) -> dict[str, Any]:  # fmt: skip
    """Anthropic's ``message_batch`` in this phase: ``in_progress`` (every request ``processing``), ``canceling``,
    or ``ended`` with each request counted as succeeded, errored, canceled or expired and the results' URL."""
    ended = phase.status in ENDED
    status = "ended" if ended else ANTHROPIC_STATUS.get(phase.status, "in_progress")
    counts = {"processing": 0 if ended else len(lines), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    if ended:
        for result in results(phase, lines, answers, ""):
            counts[result["result"]["type"]] += 1
    end = next((t for name, t in phase.at.items() if name in ENDED), None)
    return {
        "id": batch_id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": counts,
        "ended_at": rfc3339(end) if end is not None else None,
        "created_at": rfc3339(created_at),
        "expires_at": rfc3339(created_at + WINDOW_S),
        "archived_at": None,
        "cancel_initiated_at": rfc3339(phase.at["cancelling"]) if "cancelling" in phase.at else None,
        "results_url": results_url if ended else None,
    }


def results(
    phase: Phase, lines: Sequence[Line], answers: Sequence[Answer] | None, message: str
) -> list[dict[str, Any]]:
    """Each request's result once the batch ended, in request order: ``succeeded`` with the message, ``errored``
    with the error the endpoint answered (or, for a batch its scenario fails, ``message`` as an ``api_error``),
    ``expired``, or ``canceled`` for a request a cancel reached before it was answered."""
    got = {a.custom_id: a for a in answers or ()} if phase.answers else {}
    out = []
    for line in lines:
        answer = got.get(line.custom_id)
        if phase.status == "failed":
            error = {"type": "api_error", "message": message or FAILED_MESSAGE}
            result: dict[str, Any] = {"type": "errored", "error": {"type": "error", "error": error, "request_id": None}}
        elif answer is None:
            result = {"type": "canceled" if phase.status == "cancelled" else "expired"}
        elif answer.status == 0:
            result = {"type": "expired"}
        elif answer.ok:
            result = {"type": "succeeded", "message": answer.body}
        else:
            result = {"type": "errored", "error": answer.body}
        out.append({"custom_id": line.custom_id, "result": result})
    return out


def jsonl(items: Sequence[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(item) + b"\n" for item in items)


def message_page(data: Sequence[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    """Anthropic's page: the objects, the first and last ids, and whether more follow."""
    first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
    return {"data": list(data), "has_more": has_more, "first_id": first, "last_id": last}


def deleted_message_batch(batch_id: str) -> dict[str, Any]:
    return {"id": batch_id, "type": "message_batch_deleted"}
