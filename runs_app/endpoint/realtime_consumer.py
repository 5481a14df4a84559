"""OpenAI Realtime over a WebSocket (``/v1/realtime?model=…``): receive, ask the session engine, decide, send.

Thin: the session's state and every event's shape are :mod:`harnessweb.engine.wire.realtime`'s; each response is
decided by the engine (``playback.decide``) on the session's conversation, as an HTTP request's would be. A session
is a run (the one ``X-Harness-Run`` names, else its own; a named run's script answers first, as over HTTP), each
response a turn recorded like an HTTP turn's: its first message's time and each message's (the waterfall's dots),
what it streams shown live to the run's watchers (``inflight``); a client message that asks for no response is a
``message`` event on the same time axis.
Routed before the dashboard's origin and session checks: SDK clients send no Origin and no cookie, only their key.
``ProviderSocket`` holds what a provider's socket session shares (Gemini Live's consumer is one too).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import uuid
from typing import Any
from urllib.parse import parse_qs

import orjson
from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from harnessweb.engine import keys, respond, routes
from harnessweb.engine.exchange import ChatRequest, Decision, Failure, ScenarioNotFound
from harnessweb.engine.playback import select_scenario
from harnessweb.engine.redaction import redact_headers
from harnessweb.engine.routes import SCENARIO_HEADER
from harnessweb.engine.wire import openai, realtime
from harnessweb.engine.wire.common import Piece, WireError
from runs_app.endpoint import current, inflight, scripts, steps
from runs_app.endpoint.connection import close_connection
from runs_app.endpoint.consumer import LIVE_INTERVAL_S
from runs_app.endpoint.recorder import RunState, get_recorder
from scenarios_app.catalog import cached_catalog, current_catalog

DROP_GRACE_S = 0.2  # after a cut, what was written has this long to go out before the connection is aborted
KEY_SUBPROTOCOL = "openai-insecure-api-key."
CLOSE_REFUSED = 1000  # after the error event that says why (daphne allows 1000 or 3000-4999 only)


async def _catalog() -> Any:
    return cached_catalog() or await sync_to_async(current_catalog)()


def drop(send: Any) -> None:
    """Cut the TCP connection under the socket (a simulated network error): no close frame, the client sees 1006.
    daphne's websocket protocol holds its transport itself; uvicorn's and daphne's HTTP ones as the endpoint's."""
    transport = getattr(send.args[0], "transport", None) if getattr(send, "args", None) else None
    if transport is None:
        return close_connection(send)
    transport.loseConnection()  # what was written goes out first
    if hasattr(transport, "abortConnection"):  # over TLS a clean close waits for the client's close_notify: cut it
        asyncio.get_running_loop().call_later(DROP_GRACE_S, _abort, transport)


def _abort(transport: Any) -> None:
    with contextlib.suppress(Exception):  # already closed
        transport.abortConnection()


def _type(raw: str | bytes) -> str:
    """A client event's type as sent (the engine has answered it already, an invalid one with an error)."""
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return "(invalid JSON)"
    return str(event.get("type", "")) if isinstance(event, dict) else "(not an object)"


class NoSuchSocket(AsyncWebsocketConsumer):
    """A provider path that serves no socket: the handshake is refused (HTTP 403), never an error in the server."""

    async def connect(self) -> None:
        await self.close()


class ProviderSocket(AsyncWebsocketConsumer):
    """What a provider's socket session shares (Realtime's, Live's): the session is a run, each response a turn,
    decided, recorded and paced as an HTTP turn is. A subclass says how its protocol reads and refuses."""

    protocol = ""
    path = ""
    route: routes.Route

    async def open(self, query_key: str = "") -> respond.KeyRefusal | None:
        """The socket's headers, its key checked (its refusal, if any) and its run resolved."""
        self.headers = self.socket_headers()
        self.query_key = query_key
        self.request_id = f"req_{uuid.uuid4().hex[:24]}"
        self.task: asyncio.Task[None] | None = None
        self.played = ""  # the scenario this session's last response played
        self.begin(None)
        self.explicit = None  # the run the socket names: its script is consulted
        refused = await self.key_refusal()
        if refused is None:
            named = self.explicit = current.run_of(keys.run_named(self.headers, query_key))
            key = f"{self.protocol}:{uuid.uuid4().hex}"  # a session is a run of its own
            self.run: RunState = await get_recorder().resolve(named, key, 1, self.protocol)
        return refused

    def socket_headers(self) -> dict[str, str]:
        return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in self.scope["headers"]}

    async def key_refusal(self, scenario: Any = None) -> respond.KeyRefusal | None:
        """The provider's refusal when keys must arrive and this socket's did not (the HTTP routes' one check)."""
        if scenario is None and (named := self.headers.get(SCENARIO_HEADER)):
            scenario = (await _catalog()).by_id.get(named)
        required = settings.HARNESS_REQUIRE_KEY
        return respond.key_refusal(self.route, self.headers, self.query_key, required, scenario, self.request_id)

    async def disconnect(self, code: int) -> None:
        if self.task is not None:
            self.task.cancel()

    async def rejected(self, turn: int, status: int, message: str) -> None:
        """Record a response refused before any turn played (an unknown scenario, nothing matched, no key)."""
        recorder = get_recorder()
        steps.refused(recorder, self.run, turn, status, message)
        await recorder.durable()

    async def decided(self, request: ChatRequest, body: Any) -> tuple[Decision, Any, int, str] | tuple[int, str]:
        """The request recorded and decided: the decision, its scenario, the failure attempt it takes (0: none) and,
        at the run's scripted end, an expected MCP call never made; or, refused, the status and message (recorded;
        the key's refusal first)."""
        recorder = get_recorder()
        self.begin(request.turn)
        request = keys.stamped(request, self.headers, self.query_key)
        key = keys.presented(self.headers, self.query_key)
        data = {"method": "GET", "path": self.path, "protocol": self.protocol, "body": body}
        data.update(headers=redact_headers(self.headers), key=vars(key) if key else None)
        recorder.event(self.run, "request", request.turn, data)
        # A named run may carry a script (answers and failures configured by its test) before any scenario.
        taken = await scripts.taken(self.run.id, request.model) if self.explicit is not None else None
        catalog = await _catalog()
        try:
            decision, failure = steps.played(catalog, request, self.headers, taken, settings.HARNESS_PACING)
        except steps.Refusal as refusal:
            await self.rejected(request.turn, refusal.status, refusal.message)
            return refusal.status, refusal.message
        scenario = catalog.by_id.get(decision.scenario_id)
        if (refused := await self.key_refusal(scenario)) is not None:
            await self.rejected(request.turn, refused.status, refused.message)
            return refused.status, refused.message
        self.played = decision.scenario_id
        steps.matched(recorder, self.run, decision)
        if failure is not None:  # a configured failure kind: one attempt of one, served as the turn's own would be
            steps.injected(recorder, self.run, decision.turn, failure, 1, 1)
            return dataclasses.replace(decision, failure=failure), scenario, 1, ""
        attempt = await steps.attempt(self.run, decision) if decision.failure is not None and self.run.id else 0
        if attempt:
            assert decision.failure is not None
            steps.injected(
                recorder, self.run, decision.turn, decision.failure, attempt, decision.failures_before_success
            )
        problem = ""
        if not attempt and steps.expects_calls(decision, scenario):
            problem = await steps.unmet_call(recorder, self.run, decision, scenario)
        return decision, scenario, attempt, problem

    async def emit(self, message: dict[str, Any]) -> None:
        await self.send(text_data=orjson.dumps(message).decode())

    def begin(self, turn: int | None) -> None:
        """A response's clock, from the client's message that asked for it (its first message and each one's time
        after it, as the HTTP endpoint keeps a stream's: ``inflight.Sending``); a new attempt for the watchers."""
        self.request_id = f"req_{uuid.uuid4().hex[:24]}"
        self.turn = turn
        self.started = time.perf_counter()
        self.first_byte: float | None = None
        self.frame_ms: list[int] = []
        self.live: list[Piece] = []  # pieces the client has that the watchers have not yet
        self.live_at = self.started

    def mark(self) -> None:
        """A message of the response is going out now."""
        now = time.perf_counter()
        if self.first_byte is None:
            self.first_byte = now
        self.frame_ms.append(round((now - self.first_byte) * 1000))

    def pieces(self, message: dict[str, Any]) -> list[Piece]:
        """What a message of the response adds to the answer, for the run page's watchers (the protocol's own)."""
        return []

    async def feed(self, force: bool = False) -> None:
        """Send the watchers what the client got since, coalesced as the HTTP endpoint's (``LIVE_INTERVAL_S``)."""
        now = time.perf_counter()
        if self.live and (force or now - self.live_at >= LIVE_INTERVAL_S):
            pieces, self.live, self.live_at = self.live, [], now
            await inflight.send(self, pieces)

    def next_turn(self) -> int:
        """The turn the session's next response plays (the protocol's own count)."""
        return 1

    def note(self, kind: str, replies: list[dict[str, Any]], **more: Any) -> None:
        """A client message that asks for no response, as the run's ``message`` event: its type and the types of
        the server's messages that answered it, never its payload (the next request event holds the conversation,
        and audio is large). It is on the turn being answered, else the one the next response plays."""
        run = getattr(self, "run", None)
        if run is None:
            return
        active = self.task is not None and not self.task.done()
        turn = self.turn if active and self.turn is not None else self.next_turn()
        data: dict[str, Any] = {"protocol": self.protocol, "type": kind, "replies": [self.kind_of(r) for r in replies]}
        errors = [self.error_of(r) for r in replies if self.error_of(r)]
        data.update(({"error": errors[0]} if errors else {}), **more)
        get_recorder().event(run, "message", turn, data)

    def kind_of(self, message: dict[str, Any]) -> str:
        """A server message's type."""
        return str(message.get("type", ""))

    def error_of(self, message: dict[str, Any]) -> str:
        """The error a server message carries ("" for none)."""
        return ""

    async def stream(
        self,
        messages: list[tuple[dict[str, Any], bool]],
        interval_ms: int,
        finish: Any = None,
        drop_after: int | None = None,
    ) -> None:
        """Send a response's messages, ``interval_ms`` before each delta but the first, each one's time kept and its
        pieces shown live; ``finish`` records it before the last one, which waits for its commit; ``drop_after``
        messages, then the connection cut (and ``finish`` after it)."""
        paced = False
        try:
            for i, (message, delta) in enumerate(messages):
                if drop_after is not None and i == drop_after:
                    drop(self.base_send)
                    if finish is not None:  # before any await: the cut ends the session, cancelling this task
                        finish()
                    return await self.feed(force=True)
                if delta and paced and interval_ms:
                    await asyncio.sleep(interval_ms / 1000)
                paced = paced or delta
                self.mark()  # the last message's too: it is ready now, and goes out once its events are committed
                if i == len(messages) - 1 and finish is not None:
                    await self.feed(force=True)  # watchers see what the client has before the response's events
                    finish()
                    await get_recorder().durable()
                await self.emit(message)
                self.live += self.pieces(message)
                await self.feed()
            await self.feed(force=True)
        finally:
            inflight.end(self.request_id)

    def failed(self, decision: Decision, failure: Failure, dropped: bool) -> None:
        """Record how a failed attempt went out."""
        steps.failed(get_recorder(), self.run, decision.turn, self.timings(), None, failure, True, dropped)

    def timings(self) -> dict[str, Any]:
        """The response's time to its first message and in all, and each message's after the first (a copy: the
        event is queued while messages may still go out), as ``consumer.py`` records a stream's frames."""
        now = time.perf_counter()
        ttfb = round((self.first_byte - self.started) * 1000, 3) if self.first_byte is not None else None
        return {"ttfb_ms": ttfb, "duration_ms": round((now - self.started) * 1000, 3), "frame_ms": list(self.frame_ms)}

    def served(self, decision: Decision, request: ChatRequest, frames: int, problem: str = "") -> None:
        """The response's events and the run's status, as an HTTP turn's (``steps.served``; ``problem``: an expected
        MCP call never made, at the run's scripted end)."""
        reply = decision.reply
        summary = {"text": reply.text, "reasoning": reply.reasoning, "tool_calls": reply.tool_calls}
        summary.update(finish_reason=reply.finish, usage=vars(reply.usage), chunks=frames)
        summary.update(self.timings(), status=200, stream=True, model=request.model)
        steps.served(get_recorder(), self.run, decision, summary, problem)


class RealtimeConsumer(ProviderSocket):
    """One Realtime session: a run whose turns are its responses."""

    protocol = realtime.PROTOCOL
    path = realtime.PATH
    route = routes.Route("play", openai)  # OpenAI's key rules and refusal

    async def connect(self) -> None:
        model = parse_qs(self.scope.get("query_string", b"").decode("latin-1")).get("model", [""])[0]
        self.session, created = realtime.open_session(f"sess_{uuid.uuid4().hex[:24]}", model)
        self.response: realtime.Response | None = None
        await self.accept(subprotocol="realtime" if "realtime" in self.scope.get("subprotocols", ()) else None)
        await self.emit(created)
        try:
            refused = await self.open()
        except WireError as exc:  # an X-Harness-Run that is no UUID
            return await self.refuse(openai.encode_error(400, exc.message, param=exc.param).body)
        if refused is not None:
            return await self.refuse(refused.encoded.body)
        if not model:
            return await self.refuse(
                openai.encode_error(400, "Missing required parameter: 'model'.", param="model").body
            )

    def socket_headers(self) -> dict[str, str]:
        """The headers, with the key a native WebSocket (a browser's, the node SDK's ``OpenAIRealtimeWebSocket``)
        sends as the subprotocol ``openai-insecure-api-key.<key>`` read as its bearer key; the subprotocol header,
        which carries it, is never kept."""
        headers = super().socket_headers()
        headers.pop("sec-websocket-protocol", None)
        offered = self.scope.get("subprotocols") or ()
        key = next((p.removeprefix(KEY_SUBPROTOCOL) for p in offered if p.startswith(KEY_SUBPROTOCOL)), "")
        if key and "authorization" not in headers:
            headers["authorization"] = f"Bearer {key}"
        return headers

    async def refuse(self, body: bytes) -> None:
        await self.emit(realtime.error_event(self.session, realtime.http_error(body)))
        await self.close(code=CLOSE_REFUSED)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        raw = text_data if text_data is not None else bytes_data or b""
        step = realtime.receive(self.session, raw)
        replies = list(step.events)
        for event in step.events:
            await self.emit(event)
        if step.commit:
            for event in realtime.commit_audio(self.session, await self.input_transcript()):
                replies.append(event)
                await self.emit(event)
        active = self.task is not None and not self.task.done()
        if step.interrupt and active and self.response is not None:  # server VAD: the user spoke over it
            assert self.task is not None
            self.task.cancel()
            replies.append(realtime.cancelled(self.session, self.response, "turn_detected"))
            await self.emit(replies[-1])
            active = False
        if step.cancel:
            replies.append(await self.cancel(active))
        if step.respond is not None:
            if not active:  # its request event stands for it
                self.task = asyncio.ensure_future(self.respond(step.respond))
                return
            message = "Conversation already has an active response in progress"
            error = realtime.RealtimeError(message, None, "conversation_already_has_active_response")
            replies.append(realtime.refused(self.session, error, None))
            await self.emit(replies[-1])
        if replies or step.commit or step.cancel:  # (an audio chunk taken in silence is no event: they are many)
            self.note(_type(raw), replies)

    async def cancel(self, active: bool) -> dict[str, Any]:
        """``response.cancel``: the active response stopped and its ``response.done``, else an error (sent)."""
        if not active or self.response is None:
            error = realtime.RealtimeError(
                "Cancellation failed: no active response found", None, "response_cancel_not_active"
            )
            answer = realtime.refused(self.session, error, None)
        else:
            assert self.task is not None
            self.task.cancel()
            answer = realtime.cancelled(self.session, self.response)
        await self.emit(answer)
        return answer

    def next_turn(self) -> int:
        return realtime.chat_request(self.session).turn

    def error_of(self, message: dict[str, Any]) -> str:
        error = message.get("error") if message.get("type") == "error" else None
        return str(error.get("message", "")) if isinstance(error, dict) else ""

    def pieces(self, message: dict[str, Any]) -> list[Piece]:
        kind, at = message.get("type"), int(message.get("output_index") or 0)
        if kind in ("response.output_text.delta", "response.output_audio_transcript.delta"):
            return [Piece(at, "text", str(message.get("delta", "")))]
        if kind == "response.function_call_arguments.delta":
            return [Piece(at, "arguments", str(message.get("delta", "")))]
        item = message.get("item") or {}
        if kind == "response.output_item.added" and item.get("type") == "function_call":
            return [Piece(at, "tool_call", str(item.get("name", "")))]
        return []

    async def input_transcript(self) -> str:
        """What the committed audio says: the ``input_transcript`` of the turn the next response plays."""
        catalog = await _catalog()
        request = realtime.chat_request(self.session)
        try:
            scenario, _ = select_scenario(catalog, request, self.headers.get(SCENARIO_HEADER) or self.played or None)
        except ScenarioNotFound:
            return ""
        step = scenario.turn(request.turn) if scenario is not None else None
        return (step.input_transcript or "") if step is not None else ""

    async def respond(self, params: dict[str, Any]) -> None:
        request = realtime.chat_request(self.session, params)
        outcome = await self.decided(request, realtime.recorded_body(self.session, params))
        if len(outcome) == 2:  # refused
            status, message = outcome
            await self.emit(
                realtime.error_event(self.session, realtime.http_error(openai.encode_error(status, message).body))
            )
            return await self.close(code=CLOSE_REFUSED) if status in (401, 403) else None
        decision, scenario, attempt, problem = outcome
        self.response, created = realtime.begin_response(self.session, params)
        self.mark()  # the response's first message
        await self.emit(created)
        if attempt:
            return await self.fail(decision, decision.failure)
        step = scenario.turn(decision.turn) if scenario is not None and not decision.problem else None
        audio, transcript = (step.audio, step.transcript) if step is not None else (None, None)
        events = realtime.response_events(self.session, self.response, decision.reply, audio, transcript)
        await self.stream(  # (its messages: response.created and these)
            events, decision.reply.interval_ms, lambda: self.served(decision, request, len(events) + 1, problem)
        )

    async def fail(self, decision: Decision, failure: Any) -> None:
        """A failure the turn scripts: the connection cut mid-response (``network_error``), held first
        (``timeout``), or an ``error`` event and a failed ``response.done``."""
        assert self.response is not None
        if failure.status == "network_error":
            events = realtime.response_events(self.session, self.response, decision.reply)
            finish = lambda: self.failed(decision, failure, dropped=True)  # noqa: E731
            return await self.stream(events, decision.reply.interval_ms, finish, drop_after=max(1, len(events) // 2))
        if failure.status == "timeout":
            hold = failure.retry_after_ms if failure.retry_after_ms is not None else settings.HARNESS_TIMEOUT_HOLD_MS
            await asyncio.sleep(hold / 1000)
        events = [(e, False) for e in realtime.failure_events(self.session, self.response, failure)]
        await self.stream(events, 0, lambda: self.failed(decision, failure, dropped=False))
