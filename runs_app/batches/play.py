"""A batch's lines played: each request body for its path answered by the engine as the synchronous endpoint answers
it (the same read, key check, run script, scenario decision, attempt counter and kept answer) and recorded through
the recorder as a run of its own conversation, its events the same kinds the endpoint writes.

What a line cannot be is a network exchange: a failure the scenario scripts is the provider's error in the line (its
status and body), never a held timeout, a cut connection or a broken body, and a scenario's cassette is not replayed
into a line. Async, as the recorder's queue lives on the server's loop.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import replace
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.conf import settings

from harnessweb.engine import respond, routes
from harnessweb.engine.batch_objects import Answer, expired
from harnessweb.engine.batches import Line
from harnessweb.engine.exchange import ChatRequest, Decision
from harnessweb.engine.wire import embeddings
from harnessweb.engine.wire.common import Encoded, WireError
from runs_app.endpoint import conversations, scripts, steps
from runs_app.endpoint.recorder import RunState, get_recorder
from scenarios_app.catalog import cached_catalog, current_catalog


def conversation_key(request: ChatRequest, fingerprint: str) -> str:
    """A line's conversation: its key's fingerprint (the batch never holds the key), system prompt and first user
    message, so that lines of different keys never share a run."""
    raw = "\x1f".join(("batch", request.protocol, fingerprint, request.system, request.first_user))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


async def answer_lines(batch_id: str, lines: list[Line], context: dict[str, Any], answered: int | None) -> list[Answer]:
    """Every line's answer in order (``answered``: only the first so many are played, the others expired), once
    their events are committed, so a client that reads the batch ended can read its runs."""
    count = len(lines) if answered is None else min(answered, len(lines))
    answers = [await play_line(batch_id, line, context) for line in lines[:count]]
    answers += [expired(line) for line in lines[count:]]
    await get_recorder().durable()
    return answers


async def play_line(batch_id: str, line: Line, context: dict[str, Any]) -> Answer:
    """One line's answer: its body played at its path with the headers the batch was created with."""
    headers: dict[str, str] = context.get("headers", {})
    request_id = f"req_{uuid.uuid4().hex[:24]}"
    route = routes.resolve("POST", line.url, headers)
    if isinstance(route, routes.Refusal):
        return _answer(line, route.wire.encode_error(route.status, route.message, request_id=request_id), request_id)
    wire = route.wire

    def error(status: int, message: str, param: str | None = None) -> Answer:
        return _answer(line, wire.encode_error(status, message, param=param, request_id=request_id), request_id)

    try:
        payload, request = respond.read_request(route, orjson.dumps(line.body))
    except WireError as exc:
        return error(exc.status, exc.message, exc.param)
    if isinstance(request, embeddings.EmbeddingRequest):
        catalog = cached_catalog() or await sync_to_async(current_catalog)()
        named = headers.get(routes.SCENARIO_HEADER)
        if named is not None and named not in catalog.by_id:
            return error(404, f"Scenario '{named}' not found (from the {routes.SCENARIO_HEADER} header)")
        pins = catalog.pins if named is None else {pin.input: pin for pin in catalog.by_id[named].embeddings}
        encode = getattr(wire, "encode_embeddings", embeddings.encode_embeddings)
        return _answer(line, encode(request, pins), request_id)
    if isinstance(request, Encoded):
        return _answer(line, request, request_id)
    if request.stream:
        return error(400, "stream: a batch's requests are answered whole; leave stream out", "stream")
    if request.continues:
        full = await conversations.continued(wire, request)
        if full is None:
            return _answer(line, wire.encode_unknown_answer(request.continues, request_id), request_id)
        request = full
    return await _play(batch_id, line, context, route, request, payload, request_id)


async def _play(
    batch_id: str, line: Line, context: dict[str, Any], route: routes.Route, request: ChatRequest, payload: Any,
    request_id: str,
) -> Answer:  # fmt: skip
    """The consumer's ``play`` for a line: the run, its events, a script's entry or the scenario's decision, the
    key checks, a failure's attempt, then the reply."""
    started = time.perf_counter()
    headers: dict[str, str] = context.get("headers", {})
    key = context.get("key")
    wire = route.wire
    if key:
        request = replace(request, key_place=key["place"], key_fingerprint=key["fingerprint"])
    explicit = uuid.UUID(context["run"]) if context.get("run") else None
    recorder = get_recorder()
    run = await recorder.resolve(explicit, conversation_key(request, key["fingerprint"] if key else ""),
                                 request.turn, request.protocol)  # fmt: skip
    batch = {"id": batch_id, "custom_id": line.custom_id, "line": line.number}
    data = {"method": "POST", "path": line.url, "headers": headers, "body": payload, "key": key, "batch": batch}
    recorder.event(run, "request", request.turn, data)

    def refuse(status: int, message: str, encoded: Encoded | None = None) -> Answer:
        steps.refused(recorder, run, request.turn, status, message)
        encoded = encoded or wire.encode_error(status, message, request_id=request_id)
        return _answer(line, encoded, request_id, run)

    taken = await scripts.taken(run.id, request.model) if explicit is not None else None
    catalog = cached_catalog() or await sync_to_async(current_catalog)()
    try:
        decision, failure = steps.played(catalog, request, headers, taken, False)
    except steps.Refusal as refusal:
        return refuse(refusal.status, refusal.message)
    scenario = catalog.by_id.get(decision.scenario_id)
    required = settings.HARNESS_REQUIRE_KEY
    if (refused := respond.key_refusal(route, headers, "", required, scenario, request_id)) is not None:
        return refuse(refused.status, refused.message, refused.encoded)
    steps.matched(recorder, run, decision)
    attempt, total = 1, 1  # a configured failure kind: one attempt of one
    if failure is None and decision.failure is not None:
        total = decision.failures_before_success
        attempt = await steps.attempt(run, decision)
        failure = decision.failure if attempt else None
    if failure is not None:
        steps.injected(recorder, run, decision.turn, failure, attempt, total)
        encoded = wire.encode_failure(failure, request_id)
        steps.failed(recorder, run, decision.turn, _timings(started), encoded.status, failure, False, False)
        return _answer(line, encoded, request_id, run)
    problem = ""
    if steps.expects_calls(decision, scenario):  # the scripted end of a scenario that expects MCP calls
        problem = await steps.unmet_call(recorder, run, decision, scenario)
    return await _serve(line, wire, decision, request, request_id, run, started, problem)


async def _serve(
    line: Line, wire: Any, decision: Decision, request: ChatRequest, request_id: str, run: RunState, started: float,
    problem: str,
) -> Answer:  # fmt: skip
    """The consumer's ``serve`` for a line: the reply kept when clients may refer back to it, encoded, recorded
    with the run's new status (``problem``: an expected MCP call never made, at the run's scripted end)."""
    reply = decision.reply
    if request.keep:
        reply = respond.own_reply(request, reply)
        await conversations.remember(wire, request, reply)
    out = respond.reply_outgoing(wire, reply, request)
    summary = respond.response_summary(decision, out.encoded)
    summary.update(_timings(started), status=out.encoded.status, stream=False, model=request.model)
    steps.served(get_recorder(), run, decision, summary, problem)
    return _answer(line, out.encoded, request_id, run)


def _timings(started: float) -> dict[str, Any]:
    elapsed = round((time.perf_counter() - started) * 1000, 3)
    return {"ttfb_ms": elapsed, "duration_ms": elapsed, "frame_ms": [0]}


def _answer(line: Line, encoded: Encoded, request_id: str, run: RunState | None = None) -> Answer:
    body = orjson.loads(encoded.body)
    return Answer(line.custom_id, encoded.status, body, request_id, str(run.id) if run is not None else None)
