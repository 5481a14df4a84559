"""The fake provider endpoints: parse, decide, encode, send. The only async module.

The consumer is routed straight from the ASGI router (no Django view or middleware stack on this path). Its
database work is one cached catalog check per request; runs and events are written in batches by the recorder.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.http import AsyncHttpConsumer
from django.conf import settings

from harnessweb.engine import chaos, keys, ratelimit, respond, routes
from harnessweb.engine.exchange import ChatRequest, Decision, Failure
from harnessweb.engine.redaction import redact_headers
from harnessweb.engine.routes import SCENARIO_HEADER
from harnessweb.engine.wire import embeddings, responses
from harnessweb.engine.wire.common import Encoded, Piece, WireError
from runs_app import metrics
from runs_app.endpoint import cassette_replay, conversations, current, inflight, scripts, steps
from runs_app.endpoint.connection import close_connection
from runs_app.endpoint.recorder import RunState, get_recorder
from scenarios_app.catalog import cached_catalog, current_catalog

log = logging.getLogger(__name__)
LIVE_INTERVAL_S = 0.05
CHAOS_ORDINALS = chaos.Ordinals()  # the X-Harness-Chaos header's request numbers per key, in this process
RATE_LIMITER = ratelimit.Limiter()  # the rate-limit buckets per key, in this process (each worker counts its own)


# Content types whose body servers read as form fields, never as JSON: a JSON body sent with one gets a 400 naming it
# (the same under daphne and uvicorn: harnessweb/serve.py). Other types (none, text/plain) are still read as JSON.
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def conversation_key(headers: dict[str, str], request: ChatRequest, query_key: str = "") -> str:
    """API key (a header, or Gemini's ``?key=``), system prompt and first user message: tests with their own keys
    never share a run."""
    found = keys.secret(headers, query_key)
    raw = "\x1f".join((request.protocol, found[1] if found else "", request.system, request.first_user))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class ClientGone(Exception):
    """The client hung up while the response waited."""


class FakeEndpointConsumer(AsyncHttpConsumer):
    """``POST /v1/chat/completions``, ``POST /v1/messages`` and ``GET /v1/models``."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # Our own loop instead of AsyncConsumer's: no channel layer per request, no connection cleanup per
        # message, and a client that hangs up is noticed while the response waits (see pause()), which
        # AsyncHttpConsumer would only see after handle() returned.
        self.scope = scope
        self.base_send = send
        self.headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        # Until the route is known, errors (a body too large) take the format the request's path and headers expect.
        self.protocol = routes.error_wire(scope["path"], self.headers)
        self.started = time.perf_counter()
        self.first_byte: float | None = None
        self.status = 0  # the response's status, for the metrics
        self.rate_headers: list[tuple[bytes, bytes]] = []  # where the key's rate-limit budget stands (rate_limited)
        self.frame_ms: list[int] = []  # when each frame went out, ms after the first byte (the response event's)
        self.run: RunState | None = None
        self.turn: int | None = None
        self.request_id = f"req_{uuid.uuid4().hex[:24]}"
        self._receive = receive
        self._disconnect: asyncio.Future[Any] | None = None
        body = await self._read_body(receive)
        if body is None:
            return
        try:
            await self.handle(body)
        except ClientGone:
            if self.run is not None:
                elapsed = round((time.perf_counter() - self.started) * 1000, 3)
                get_recorder().event(self.run, "client_disconnected", self.turn, {"after_ms": elapsed})
        finally:
            first_byte = None if self.first_byte is None else self.first_byte - self.started
            metrics.observe_request(
                self.protocol.PROTOCOL,
                scope["method"],
                scope["path"],
                self.status,
                time.perf_counter() - self.started,
                first_byte,
            )
            inflight.end(self.request_id)
            if self._disconnect is not None:
                self._disconnect.cancel()

    async def pause(self, seconds: float) -> None:
        """Wait, unless the client hangs up meanwhile (then raise ClientGone).

        Only responses that wait (pacing, a held timeout) watch ``receive``: a response sent at once needs no
        second task, which keeps the common case cheap.
        """
        if self._disconnect is None:
            self._disconnect = asyncio.ensure_future(self._receive())
        done, _ = await asyncio.wait({self._disconnect}, timeout=seconds)
        if done and self._disconnect.result().get("type") == "http.disconnect":
            raise ClientGone

    async def _read_body(self, receive: Any) -> bytes | None:
        limit = settings.HARNESS_MAX_BODY_BYTES
        declared = self.headers.get("content-length", "0")
        if declared.isdigit() and int(declared) > limit:
            await self.reply(self._error(413, f"Request body is larger than the limit of {limit} bytes"))
            return None
        parts, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self.reply(self._error(413, f"Request body is larger than the limit of {limit} bytes"))
                return None
            parts.append(chunk)
            if not message.get("more_body"):
                return b"".join(parts)

    # -- sending -------------------------------------------------------------------------------------------------

    async def send_out(self, out: respond.Outgoing, finish: Callable[[], None] | None = None) -> None:
        """Send a response as the engine planned it: held, paced, or cut after some frames."""
        if out.hold_ms:
            await self.pause(out.hold_ms / 1000)
        await self.reply(
            out.encoded, interval_ms=out.interval_ms, drop_after=out.drop_after, finish=finish, stall_ms=out.stall_ms
        )

    async def reply(
        self,
        encoded: Encoded,
        *,
        interval_ms: int = 0,
        drop_after: int | None = None,
        finish: Callable[[], None] | None = None,
        stall_ms: int = 0,
    ) -> None:
        """Send an encoded response; ``stall_ms`` between the headers and the first frame (a slow first byte),
        ``interval_ms`` between frames, and ``drop_after`` frames cuts the connection there (a network error).

        ``finish`` records how the response went; it runs before the last frame, which waits for the commit of
        what it recorded, so a client that has the end of the response can read it back (a cut response has no
        end: it is recorded after the cut).
        """
        headers = list(encoded.headers)
        if self.run is not None:
            headers.append((b"x-harness-run", str(self.run.id).encode()))
        headers.append((self.protocol.REQUEST_ID_HEADER, self.request_id.encode()))
        headers += self.rate_headers
        frames = encoded.frames if drop_after is None else encoded.frames[:drop_after]
        self.status = encoded.status
        last = len(frames) - 1 if drop_after is None else -1
        await self.send_headers(status=encoded.status, headers=headers)
        # The first frame waits: a stall, or a one-frame answer (a JSON body) whose events are committed first.
        waits = last == 0 and finish is not None and get_recorder().writing
        if frames and (stall_ms or waits):
            # ASGI lets a server hold the start until the first body message (daphne does: Twisted writes the
            # headers on the first write): an empty one sends the headers now, and the client reads them while the
            # body waits (through the SDK on daphne, a plain call 80 µs faster; uvicorn sends them at once anyway).
            await self.send_body(b"", more_body=True)
        # What the client receives is also shown live to the run's watchers, coalesced to a message every
        # LIVE_INTERVAL_S at most, so an unpaced stream costs one channel-layer message.
        live: list[Piece] = []
        last_live = time.perf_counter()
        paced_from = 0.0
        # An unpaced stream's frames go out together up to its last (one write for the server, one read for the
        # client, the same bytes): a client parses a stream by lines, never by network chunks.
        held: list[bytes] | None = [] if not interval_ms and not stall_ms else None
        for i, frame in enumerate(frames):
            if i and interval_ms:  # on the clock from the first frame: a busy loop's delays do not add up
                await self.pause(max(0.0, paced_from + i * interval_ms / 1000 - time.perf_counter()))
            elif not i and stall_ms:
                await self.pause(stall_ms / 1000)
            if not i:
                paced_from = time.perf_counter()
            self._mark()  # the last frame's time too: it is ready now, and goes out once its events are committed
            if i == last and held:
                await self.send_body(b"".join(held), more_body=True)
            if i == last and finish is not None:
                if live and self.run is not None:  # watchers see what the client has before the response's events
                    await inflight.send(self, live)
                    live = []
                await self._finish(finish)
            if held is not None and i != last:
                held.append(frame)
            else:
                await self.send_body(frame, more_body=i != last)
            piece = encoded.pieces[i] if i < len(encoded.pieces) else None
            if piece is not None and self.run is not None:
                live.append(piece)
                if time.perf_counter() - last_live >= LIVE_INTERVAL_S:
                    await inflight.send(self, live)
                    live, last_live = [], time.perf_counter()
        if drop_after is not None:
            if held:
                await self.send_body(b"".join(held), more_body=True)
            close_connection(self.base_send)
            if finish is not None:
                finish()
        elif not frames:
            if finish is not None:
                await self._finish(finish)
            await self.send_body(b"")
        if live and self.run is not None:
            await inflight.send(self, live)

    def _mark(self) -> None:
        now = time.perf_counter()
        if self.first_byte is None:
            self.first_byte = now
        self.frame_ms.append(round((now - self.first_byte) * 1000))

    async def _finish(self, finish: Callable[[], None]) -> None:
        if self.first_byte is None:  # a one-frame response: its first byte is its last
            self.first_byte = time.perf_counter()
        finish()
        await get_recorder().durable()

    def _error(self, status: int, message: str, param: str | None = None) -> Encoded:
        return self.protocol.encode_error(status, message, param=param, request_id=self.request_id)

    # -- handling ------------------------------------------------------------------------------------------------

    async def handle(self, body: bytes) -> None:
        self.query = self.scope.get("query_string", b"").decode("latin-1")
        self.query_key = parse_qs(self.query).get("key", [""])[0]  # Gemini's ?key=
        route = routes.resolve(self.scope["method"], self.scope["path"], self.headers, self.query)
        self.protocol = route.wire
        if not isinstance(route, routes.Refusal):
            # A conversation's key is checked once its scenario is known (play); any other route's now, and a
            # request whose headers name a cassette before it is replayed (or recorded).
            self.route = route
            checked_now = route.kind != "play" or cassette_replay.named(self.headers)
            if checked_now and (refused := await self.key_refusal()) is not None:
                return await self.reply(refused.encoded)
        if await cassette_replay.intercept(self, body):  # X-Harness-Cassette / X-Harness-Record
            return
        if isinstance(route, routes.Refusal):
            return await self.reply(self._error(route.status, route.message))
        if route.kind == "models":
            return await self.models()
        if route.kind == "model":
            return await self.reply(self.protocol.encode_model(route.param))
        if route.kind == "kept_response":
            kept = await conversations.kept_response(route.param, responses.PROTOCOL)
            if kept is None:
                return await self.reply(self._error(404, f"Response with id '{route.param}' not found."))
            return await self.reply(responses.encode_object(kept))
        media_type = self.headers.get("content-type", "").partition(";")[0].strip().lower()
        if media_type in FORM_TYPES and not hasattr(route.wire, "read_body"):  # a form its wire reads (audio)
            message = f"Content-Type {media_type} is not supported here: send the body as JSON (application/json)"
            return await self.reply(self._error(400, message, "content-type"))
        if route.kind == "answer" and getattr(route.wire, "ANSWERS_FIXTURES", False):
            # A scenario's image fixture is known where its catalog was built: this worker may not have built it yet.
            cached_catalog() or await sync_to_async(current_catalog)()
        try:
            payload, request = respond.read_request(route, body)
            explicit = current.run_of(keys.run_named(self.headers, self.query_key))  # else the session run
        except WireError as exc:
            return await self.reply(self._error(exc.status, exc.message, exc.param))
        if isinstance(request, Encoded):
            return await self.reply(request)
        if isinstance(request, embeddings.EmbeddingRequest):
            return await self.embed(request)
        if request.continues:
            full = await conversations.continued(self.protocol, request)
            if full is None:
                return await self.reply(self.protocol.encode_unknown_answer(request.continues, self.request_id))
            request = full
        await self.play(request, explicit, payload)

    async def models(self) -> None:
        catalog = cached_catalog() or await sync_to_async(current_catalog)()
        await self.reply(self.protocol.encode_models(sorted(catalog.by_id)))

    async def embed(self, request: embeddings.EmbeddingRequest) -> None:
        """Deterministic vectors, or those the scenarios pin (only the named scenario's, with the header)."""
        catalog = cached_catalog() or await sync_to_async(current_catalog)()
        pins = catalog.pins
        named = self.headers.get(SCENARIO_HEADER)
        if named is not None:
            if named not in catalog.by_id:
                message = f"Scenario '{named}' not found (from the {SCENARIO_HEADER} header)"
                return await self.reply(self._error(404, message))
            pins = {pin.input: pin for pin in catalog.by_id[named].embeddings}
        fingerprint = key.fingerprint if (key := keys.presented(self.headers, self.query_key)) else ""
        limits, scenario = settings.HARNESS_RATE_LIMIT, catalog.by_id.get(named or "")
        self.rate_headers, spent = ratelimit.gate(
            RATE_LIMITER, limits, scenario, self.protocol.PROTOCOL, fingerprint, None
        )
        if spent is not None:  # counted against the key's budget like a conversation, spending no tokens
            return await self.reply(self.protocol.encode_failure(ratelimit.failure(spent), self.request_id))
        encode = getattr(self.protocol, "encode_embeddings", embeddings.encode_embeddings)  # Cohere's has its own
        await self.reply(encode(request, pins))

    async def play(self, request: ChatRequest, explicit: uuid.UUID | None, payload: Any) -> None:
        recorder = get_recorder()
        self.turn = request.turn
        request = keys.stamped(request, self.headers, self.query_key)
        key = conversation_key(self.headers, request, self.query_key)
        sent_key = {"place": request.key_place, "fingerprint": request.key_fingerprint} if request.key_place else None
        run = await recorder.resolve(explicit, key, request.turn, request.protocol)
        self.run = run
        recorder.event(
            run,
            "request",
            request.turn,
            {
                "method": self.scope["method"],
                "path": self.scope["path"],
                "headers": redact_headers(self.headers),
                "body": payload,
                "key": sent_key,
            },
        )
        try:  # chaos by probability for one key (the header's: counted in this process), else the run script's
            hit = chaos.header_hit(self.headers, request.key_fingerprint, CHAOS_ORDINALS)
        except ValueError as exc:
            return await self.refuse(400, str(exc), self._error(400, str(exc), chaos.HEADER_NAME))
        # A named run may carry a script (answers and failures configured by its test) before any scenario.
        script_chaos = chaos.HEADER not in self.headers
        taken = await scripts.taken(run.id, request.model, script_chaos, hit) if explicit is not None else None
        hit = taken.chaos if taken is not None else hit
        catalog = cached_catalog() or await sync_to_async(current_catalog)()
        try:
            decision, failure = steps.played(catalog, request, self.headers, taken, settings.HARNESS_PACING)
        except steps.Refusal as refusal:
            return await self.refuse(refusal.status, refusal.message)
        scenario = catalog.by_id.get(decision.scenario_id)  # the scenario played (a configured answer plays none)
        if (refused := await self.key_refusal(scenario)) is not None:
            return await self.refuse(refused.status, refused.message, refused.encoded)
        steps.matched(recorder, run, decision)
        if await cassette_replay.from_scenario(self, scenario):  # a scenario that names a cassette
            return

        serves = hit is None and failure is None  # what a configured failure or chaos sends spends no tokens
        if (limited := self.rate_limited(request, decision, scenario, serves)) is not None:
            return await self.fail(decision, request, ratelimit.failure(limited), 1, 1, limited.event_data())
        if hit is not None:  # chaos: a failure kind drawn from the seed, sent as a scripted one is
            return await self.fail(decision, request, hit.failure, 1, 1, hit.event_data())
        if failure is not None:  # a configured failure kind: one attempt of as many as the script gives
            return await self.fail(decision, request, failure, 1, 1)
        if decision.failure is not None and run.id and (attempt := await steps.attempt(run, decision)):
            return await self.fail(decision, request, decision.failure, attempt, decision.failures_before_success)
        problem = ""
        if steps.expects_calls(decision, scenario):  # the scripted end of a scenario that expects MCP calls
            problem = await steps.unmet_call(recorder, run, decision, scenario)
        await self.serve(decision, request, problem)

    def rate_limited(
        self, request: ChatRequest, decision: Decision, scenario: Any, serves: bool
    ) -> ratelimit.Standing | None:
        """Count this request against its key's budget (the scenario's, else HARNESS_RATE_LIMIT), keep the headers
        saying where it stands for the answer, and the standing when the budget was spent (a 429 goes out)."""
        usage = decision.reply.usage if serves else None
        setting, key = settings.HARNESS_RATE_LIMIT, request.key_fingerprint
        self.rate_headers, spent = ratelimit.gate(RATE_LIMITER, setting, scenario, self.protocol.PROTOCOL, key, usage)
        return spent

    async def key_refusal(self, scenario: Any = None) -> respond.KeyRefusal | None:
        """The provider's refusal when keys must arrive and this request's did not (``respond.key_refusal``, every
        route's one check), with the scenario that answers (else the one the header names)."""
        if scenario is None and (named := self.headers.get(SCENARIO_HEADER)):
            scenario = (cached_catalog() or await sync_to_async(current_catalog)()).by_id.get(named)
        required = settings.HARNESS_REQUIRE_KEY
        return respond.key_refusal(self.route, self.headers, self.query_key, required, scenario, self.request_id)

    async def refuse(self, status: int, message: str, encoded: Encoded | None = None) -> None:
        run = self.run
        assert run is not None
        recorder = get_recorder()
        await self.reply(
            encoded or self._error(status, message),
            finish=lambda: steps.refused(recorder, run, self.turn, status, message),
        )

    async def serve(self, decision: Decision, request: ChatRequest, problem: str = "") -> None:
        """A reply sent; at the run's scripted end ``problem`` (an expected tool call never made) fails the run."""
        reply = decision.reply
        if request.keep:
            reply = respond.own_reply(request, reply)
            # Before the first byte: a client may continue from this answer as soon as it has read it.
            await conversations.remember(self.protocol, request, reply)
        out = respond.reply_outgoing(self.protocol, reply, request)
        run = self.run
        assert run is not None
        recorder = get_recorder()

        def finish() -> None:
            summary = respond.response_summary(decision, out.encoded)
            summary.update(self._timings(), status=out.encoded.status, stream=request.stream, model=request.model)
            steps.served(recorder, run, decision, summary, problem)

        await self.send_out(out, finish)

    async def fail(
        self,
        decision: Decision,
        request: ChatRequest,
        failure: Failure,
        attempt: int,
        of: int,
        extra: dict[str, Any] | None = None,
    ) -> None:
        run = self.run
        assert run is not None
        recorder = get_recorder()
        metrics.observe_failure(failure.status)
        steps.injected(recorder, run, decision.turn, failure, attempt, of, extra)
        hold = settings.HARNESS_TIMEOUT_HOLD_MS
        out = respond.failure_outgoing(self.protocol, failure, decision, request, self.request_id, hold)
        dropped = out.drop_after is not None
        status = None if dropped else out.encoded.status

        def finish() -> None:
            steps.failed(recorder, run, decision.turn, self._timings(), status, failure, request.stream, dropped)

        await self.send_out(out, finish)

    def _timings(self) -> dict[str, Any]:
        now = time.perf_counter()
        ttfb = round((self.first_byte - self.started) * 1000, 3) if self.first_byte else None
        # A copy: frames still to be sent must not change the event already queued.
        return {"ttfb_ms": ttfb, "duration_ms": round((now - self.started) * 1000, 3), "frame_ms": list(self.frame_ms)}

    async def http_disconnect(self, message: dict[str, Any]) -> None:
        raise StopConsumer()
