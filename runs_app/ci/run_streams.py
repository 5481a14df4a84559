"""A run's responses as bytes again: each request the run served, paired with what it got, re-encoded by the
engine's own encoders, then summarised (seed 003's StreamSummary) and written as a VCR cassette.

A response event holds what was served (text, reasoning, tool calls, finish reason, usage; or the failure kind with
its status, message and retry wait), not the bytes: those are not stored, so they are made again here from the
recorded request and that summary, by the same ``encode_reply`` / ``failure_outgoing`` the endpoint sends with.
What the events do not hold is not in the bytes: ids are the encoder's deterministic ones, the chunking is the
default one, a thinking block carries the server's own signature (an authored one is not recorded), a Gemini
stream is framed as a JSON array (the ``?alt=sse`` query is not recorded), and an answer served broken or cut (a
broken body, a dropped connection) carries no text. The run's summary and its exported cassette's summary are one
function of the same bytes.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings

from harnessweb.engine import respond, routes
from harnessweb.engine.exchange import Block, ChatRequest, Decision, Failure, Reply, Usage, sign_thinking
from harnessweb.engine.redaction import redact, redact_json, redact_text, redact_url
from harnessweb.engine.wire.common import Encoded, WireError
from harnessweb.judging.transcript import SOCKET_WIRES
from runs_app.ci.recordings import summarize_interaction
from runs_app.models import Run, RunEvent

BASE_URL = "http://harness.local"  # the host of an exported request: the harness, wherever it ran
CASSETTE_VERSION = "1.0"


@dataclass
class Exchange:
    """One request of the run and what it got: the request event, an injected failure's event, the response (or
    refusal) event."""

    request: RunEvent
    failure: RunEvent | None = None
    answer: RunEvent | None = None


def exchanges(events: list[RunEvent]) -> list[Exchange]:
    """The run's requests in order, each with the events that answered it (a request never answered is left out:
    the client went away before anything was sent)."""
    found: list[Exchange] = []
    current: Exchange | None = None
    for event in events:
        if event.kind == "request":
            current = Exchange(event)
        elif current is not None and event.kind == "failure_injected":
            current.failure = event
        elif current is not None and event.kind in ("response", "rejected"):
            current.answer = event
            found.append(current)
            current = None
    return found


def _reply(data: dict[str, Any]) -> Reply:
    """The served answer from its response event: reasoning (signed as the engine signs it: an authored signature
    is not recorded), then text, then tool calls (the order every encoder sends them in)."""
    blocks = []
    if data.get("reasoning"):
        reasoning = str(data["reasoning"])
        signature = sign_thinking(reasoning, settings.HARNESS_SIGNATURE_KEY)
        blocks.append(Block("reasoning", text=reasoning, signature=signature))
    if data.get("text"):
        blocks.append(Block("text", text=str(data["text"])))
    for call in data.get("tool_calls") or []:
        blocks.append(
            Block("tool_call", call_id=str(call.get("id") or ""), name=str(call.get("name") or ""),
                  arguments=str(call.get("arguments") or ""))
        )  # fmt: skip
    usage = data.get("usage") or {}
    counts = [int(usage.get(name) or 0) for name in ("input_tokens", "output_tokens", "total_tokens")]
    finish = data.get("finish_reason") if data.get("finish_reason") in ("stop", "tool_calls", "length") else "stop"
    if finish == "stop" and any(b.type == "tool_call" for b in blocks):
        finish = "tool_calls"
    return Reply(tuple(blocks), finish, Usage(*counts))


def _request(data: dict[str, Any]) -> tuple[Any, ChatRequest]:
    """The wire and the neutral request of a recorded request event; raises WireError for one the protocol
    cannot read."""
    if data.get("protocol") in SOCKET_WIRES:
        raise WireError(socket_refusal(str(data["protocol"])))
    headers = {str(k).lower(): str(v) for k, v in (data.get("headers") or {}).items()}
    route = routes.resolve(str(data.get("method") or "POST"), str(data.get("path") or ""), headers)
    if isinstance(route, routes.Refusal) or route.kind != "play":
        raise WireError(f"{data.get('path')!r} is not a conversation path")
    _, request = respond.read_request(route, orjson.dumps(data.get("body")))
    assert isinstance(request, ChatRequest)
    return route.wire, request


def encoded(exchange: Exchange) -> tuple[Encoded, int | None]:
    """The bytes an exchange's response was (made again), and after how many frames the connection was cut."""
    answer = exchange.answer
    assert answer is not None
    data = answer.data if isinstance(answer.data, dict) else {}
    wire, request = _request(exchange.request.data if isinstance(exchange.request.data, dict) else {})
    if answer.kind == "rejected":
        return wire.encode_error(int(data.get("status") or 400), str(data.get("message") or "")), None
    if data.get("failure"):
        injected = (exchange.failure.data if exchange.failure is not None else None) or {}
        status = data.get("status")
        failure = Failure(
            status=str(data["failure"]),
            message=str(injected.get("message") or ""),
            retryable=bool(injected.get("retryable", True)),
            retry_after_ms=injected.get("retry_after_ms"),
            http_status=status if isinstance(status, int) and status >= 400 else None,
        )
        decision = Decision("scenario", "", exchange.request.turn or 1, Reply((), "stop", Usage(0, 0, 0)))
        out = respond.failure_outgoing(wire, failure, decision, request, "", 0)
        return out.encoded, out.drop_after
    return wire.encode_reply(_reply(data), request), None


def _headers(pairs: tuple[tuple[bytes, bytes], ...]) -> list[list[str]]:
    return [[name.decode("latin-1"), value.decode("latin-1")] for name, value in pairs]


def interaction(exchange: Exchange) -> dict[str, Any]:
    """One exchange as a cassette interaction; its secrets redacted (the recorder redacted them already: this holds
    for events written by anything else too)."""
    out, drop_after = encoded(exchange)
    request = exchange.request.data
    frames = [frame for frame in out.frames[:drop_after] if frame]
    response: dict[str, Any] = {"status": out.status, "headers": _headers(out.headers)}
    try:
        response["body_chunks"] = [redact_text(frame.decode("utf-8")) for frame in frames]
    except UnicodeDecodeError:
        response["body_chunks_base64"] = [base64.b64encode(frame).decode("ascii") for frame in frames]
    headers = redact((str(name), str(value)) for name, value in (request.get("headers") or {}).items())
    return {
        "request": {
            "method": str(request.get("method") or "POST"),
            "url": redact_url(BASE_URL + str(request.get("path") or "")),
            "headers": headers,
            "body": redact_json(request.get("body")),
        },
        "response": response,
    }


def _events(run: Run) -> list[RunEvent]:
    return list(RunEvent.objects.filter(run=run).order_by("seq"))


def run_interactions(run: Run) -> tuple[list[tuple[Exchange, dict[str, Any]]], list[dict[str, Any]]]:
    """Each served exchange with its interaction, and the ones that could not be made again (with why)."""
    made, skipped = [], []
    for exchange in exchanges(_events(run)):
        try:
            made.append((exchange, interaction(exchange)))
        except (WireError, ValueError, TypeError, KeyError, AttributeError) as exc:
            skipped.append({"seq": exchange.request.seq, "turn": exchange.request.turn, "reason": str(exc)})
    return made, skipped


def run_summaries(run: Run) -> dict[str, Any]:
    """``{run_id, responses: [{seq, turn, summary}], skipped: [...]}``: a StreamSummary per response served."""
    made, skipped = run_interactions(run)
    responses = [
        {"seq": exchange.answer.seq if exchange.answer else None, "turn": exchange.request.turn,
         "summary": summarize_interaction(item).model_dump()}
        for exchange, item in made
    ]  # fmt: skip
    return {"run_id": str(run.id), "responses": responses, "skipped": skipped}


def run_cassette(run: Run) -> dict[str, Any] | None:
    """The run as a VCR cassette (seed 003's format), or None when it served nothing that can be exported."""
    made, _ = run_interactions(run)
    if not made:
        return None
    return {
        "version": CASSETTE_VERSION,
        "test_name": f"run_{run.id}",
        "recorded_at": run.started_at.isoformat().replace("+00:00", "Z"),
        "interactions": [item for _, item in made],
    }


def socket_refusal(protocol: str, run_id: object = "<run id>") -> str:
    """Why a socket session's response is not exported: a cassette holds HTTP exchanges, one request and one
    response each, and a socket's messages in and out are neither (its events are the run's record)."""
    return (
        f"a {protocol} socket session: a VCR cassette holds HTTP exchanges only; "
        f"its messages and timings are the run's events (GET /api/runs/{run_id})"
    )


def cassette_file_name(run_id: uuid.UUID) -> str:
    return f"run_{run_id}.json"
