"""The in-process wire half of a test's harness (``harness.py``): one request on a provider's wire (method, path,
query, headers, body) → what the server would send for it, the headers to add and the call it recorded
(:func:`exchange`), taking the server's steps in the server's order (key check, cassettes, routes, reading the
request, kept answers, the one step every call takes, ``Harness.answer``, and the encoders). ``Harness.exchange`` is
this function on its harness, which it takes as ``Any`` (the harness imports this module); the transport
(``transport.py``) calls it for every SDK client the harness hands out.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

from harnessweb.engine import keys, ratelimit, respond, routes
from harnessweb.engine.exchange import Failure, InvalidRequest, NothingMatched, ScenarioNotFound
from harnessweb.engine.redaction import redact_json
from harnessweb.engine.routes import SCENARIO_HEADER
from harnessweb.engine.wire.common import Encoded, WireError
from harnessweb.engine.wire.embeddings import EmbeddingRequest, encode_embeddings
from harnessweb.testing import calls as history
from harnessweb.testing import cassettes
from harnessweb.testing.keychecks import KeyRefused, OnWire

Exchanged = tuple[respond.Outgoing, list[tuple[bytes, bytes]], history.Call | None]


def run_header(harness: Any) -> bytes:
    """``X-Harness-Run``'s value, the harness's run id (kept: every response carries it)."""
    kept = harness.__dict__.get("_run_bytes")
    if kept is None or kept[0] is not harness.run_id:
        kept = harness._run_bytes = (harness.run_id, str(harness.run_id).encode())
    return kept[1]


def exchange(harness: Any, method: str, path: str, query: str, headers: dict[str, str], body: bytes) -> Exchanged:
    """A request on a provider's wire → what the server would send for it, the headers to add, and its call."""
    route = routes.resolve(method, path, headers, query)
    request_id = f"req_{uuid.uuid4().hex[:24]}"
    extra = [(b"x-harness-run", run_header(harness)), (route.wire.REQUEST_ID_HEADER, request_id.encode())]

    def error(status: int, message: str, param: str | None = None) -> respond.Outgoing:
        return respond.Outgoing(route.wire.encode_error(status, message, param=param, request_id=request_id))

    query_key = parse_qs(query).get("key", [""])[0]  # Gemini's ?key=
    on_wire = None if isinstance(route, routes.Refusal) else OnWire(route, headers, query_key, request_id)
    # The server's one key check: a conversation's once its scenario is known (answer), but one a cassette
    # answers (header or use_cassette) and any other route's now, before anything is replayed.
    if on_wire is not None and (route.kind != "play" or cassettes.named(harness, headers)):
        named = harness._catalog.by_id.get(headers.get(SCENARIO_HEADER) or harness._scenario or "")
        if refused := on_wire.refusal(harness.options.require_key, named):
            return respond.Outgoing(refused.encoded), extra, None
    if (taped := cassettes.intercept(harness, route, method, path, headers, body, request_id)) is not None:
        return taped[0], [], taped[1]  # the recording's own headers, request id included, as the server sends
    if isinstance(route, routes.Refusal):
        return error(route.status, route.message), extra, None
    if route.kind in routes.BATCH_KINDS:  # the Files and Batch APIs: the server's batch consumer only
        return error(404, f"{path} is served by the harness server only: start it with harness serve"), extra, None
    if route.kind == "models":
        return respond.Outgoing(route.wire.encode_models(sorted(harness._catalog.by_id))), extra, None
    if route.kind == "model":
        return respond.Outgoing(route.wire.encode_model(route.param)), extra, None
    if route.kind == "kept_response":
        kept = harness._kept.get((route.wire.PROTOCOL, route.param))
        if kept is None:
            return error(404, f"Response with id '{route.param}' not found."), extra, None
        return respond.Outgoing(route.wire.encode_object(kept[1])), extra, None
    try:
        body_json, request = respond.read_request(route, body)
    except WireError as exc:
        return error(exc.status, exc.message, exc.param), extra, None
    if isinstance(request, Encoded):
        return respond.Outgoing(request), extra, None
    if isinstance(request, EmbeddingRequest):
        fingerprint = key.fingerprint if (key := keys.presented(headers, query_key)) else ""
        named = harness._catalog.by_id.get(headers.get(SCENARIO_HEADER) or harness._scenario or "")
        setting, wire = ratelimit.from_environment(), route.wire
        rated, spent = ratelimit.gate(ratelimit.limiter_of(harness), setting, named, wire.PROTOCOL, fingerprint, None)
        extra += rated  # counted against the key's budget like a conversation, spending no tokens
        if spent is not None:
            return respond.Outgoing(wire.encode_failure(ratelimit.failure(spent), request_id)), extra, None
        encode = getattr(route.wire, "encode_embeddings", encode_embeddings)  # Cohere's has its own shape
        return respond.Outgoing(encode(request, harness._catalog.pins)), extra, None
    wire = route.wire
    if request.continues:
        kept = harness._kept.get((wire.PROTOCOL, request.continues))
        if kept is None:
            return respond.Outgoing(wire.encode_unknown_answer(request.continues, request_id)), extra, None
        request = respond.continued(wire, request, kept[0])
    if key := keys.presented(headers, query_key):  # keys.stamped, without a dataclass replace's cost
        request = respond.evolved(request, key_place=key.place, key_fingerprint=key.fingerprint)
    try:
        call, decision, failure = harness.answer(request, body_json, path, headers.get(SCENARIO_HEADER), wire=on_wire)
    except KeyRefused as exc:
        return respond.Outgoing(exc.refusal.encoded), extra, harness._calls[-1]
    except ScenarioNotFound as exc:
        return error(404, f"Scenario '{exc}' not found (from the {SCENARIO_HEADER} header)"), extra, None
    except NothingMatched as exc:
        return error(404, str(exc)), extra, harness._calls[-1]
    except InvalidRequest as exc:
        return error(400, str(exc)), extra, harness._calls[-1]
    if (taped := cassettes.from_scenario(harness, route, call, decision, path, body, request_id)) is not None:
        return taped, [], call  # the scenario names a cassette: replayed (or refused) as the server does
    scenario = harness._catalog.by_id.get(decision.scenario_id)  # its key's rate limit, as the server counts it
    usage = None if failure is not None else decision.reply.usage
    limiter, setting = ratelimit.limiter_of(harness), ratelimit.from_environment()
    rated, spent = ratelimit.gate(limiter, setting, scenario, wire.PROTOCOL, request.key_fingerprint, usage)
    extra += rated
    failure = ratelimit.failure(spent) if spent is not None else failure
    if failure is not None:
        out = respond.failure_outgoing(wire, failure, decision, request, request_id, harness.options.timeout_hold_ms)
        call.error = failure_record(failure, None if out.drop_after is not None else out.encoded.status)
        return out, extra, call
    reply = decision.reply
    if request.keep:
        reply = respond.own_reply(request, reply)
        answer_id, conversation, response = respond.kept(wire, request, reply)
        harness._kept[(wire.PROTOCOL, answer_id)] = (conversation, response)
    out = respond.reply_outgoing(wire, reply, request)
    served = decision if reply is decision.reply else replace(decision, reply=reply)  # a replace is a call's cost
    call.response = redact_json(respond.response_summary(served, out.encoded))
    return out, extra, call


def failure_record(failure: Failure, status: int | None) -> dict[str, Any]:
    """A call's ``error`` for a failure the harness served: the HTTP status (None for a cut connection) and kind."""
    return {"status": status, "kind": failure.status, "message": failure.message}
