"""OpenAI Realtime over a WebSocket (``/v1/realtime?model=…``): receive, ask the session engine, decide, send.

Thin: the session's state and every event's shape are :mod:`harnessweb.engine.wire.realtime`'s; each response is
decided by the engine (``playback.decide``) on the session's conversation, as an HTTP request's would be. A session
is a run (the one ``X-Harness-Run`` names, else its own), each response a turn recorded like an HTTP turn's.
Routed before the dashboard's origin and session checks: SDK clients send no Origin and no cookie, only their key.
``ProviderSocket`` holds what a provider's socket session shares (Gemini Live's consumer is one too).
"""

from __future__ import annotations

import asyncio
import contextlib
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
from harnessweb.engine.wire.common import WireError
from runs_app.endpoint import current, steps
from runs_app.endpoint.connection import close_connection
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
        refused = await self.key_refusal()
        if refused is None:
            named = current.run_of(keys.run_named(self.headers, query_key))
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
        self.started = time.perf_counter()
        request = keys.stamped(request, self.headers, self.query_key)
        key = keys.presented(self.headers, self.query_key)
        data = {"method": "GET", "path": self.path, "protocol": self.protocol, "body": body}
        data.update(headers=redact_headers(self.headers), key=vars(key) if key else None)
        recorder.event(self.run, "request", request.turn, data)
        catalog = await _catalog()
        try:
            decision, _ = steps.played(catalog, request, self.headers, None, settings.HARNESS_PACING)
        except steps.Refusal as refusal:
            await self.rejected(request.turn, refusal.status, refusal.message)
            return refusal.status, refusal.message
        scenario = catalog.by_id.get(decision.scenario_id)
        if (refused := await self.key_refusal(scenario)) is not None:
            await self.rejected(request.turn, refused.status, refused.message)
            return refused.status, refused.message
        self.played = decision.scenario_id
        steps.matched(recorder, self.run, decision)
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

    async def stream(
        self,
        messages: list[tuple[dict[str, Any], bool]],
        interval_ms: int,
        finish: Any = None,
        drop_after: int | None = None,
    ) -> None:
        """Send a response's messages, ``interval_ms`` before each delta but the first; ``finish`` records it before
        the last one, which waits for its commit; ``drop_after`` messages, then the connection cut."""
        paced = False
        for i, (message, delta) in enumerate(messages):
            if drop_after is not None and i == drop_after:
                return drop(self.base_send)
            if delta and paced and interval_ms:
                await asyncio.sleep(interval_ms / 1000)
            paced = paced or delta
            if i == len(messages) - 1 and finish is not None:
                finish()
                await get_recorder().durable()
            await self.emit(message)

    def failed(self, decision: Decision, failure: Failure, dropped: bool) -> None:
        """Record how a failed attempt went out."""
        timings = {"duration_ms": self._duration()}
        steps.failed(get_recorder(), self.run, decision.turn, timings, None, failure, True, dropped)

    def _duration(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 3)

    def served(self, decision: Decision, request: ChatRequest, frames: int, problem: str = "") -> None:
        """The response's events and the run's status, as an HTTP turn's (``steps.served``; ``problem``: an expected
        MCP call never made, at the run's scripted end)."""
        reply = decision.reply
        summary = {"text": reply.text, "reasoning": reply.reasoning, "tool_calls": reply.tool_calls}
        summary.update(finish_reason=reply.finish, usage=vars(reply.usage), chunks=frames)
        summary.update(duration_ms=self._duration(), status=200, stream=True, model=request.model)
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
        step = realtime.receive(self.session, text_data if text_data is not None else bytes_data or b"")
        for event in step.events:
            await self.emit(event)
        if step.commit:
            for event in realtime.commit_audio(self.session, await self.input_transcript()):
                await self.emit(event)
        active = self.task is not None and not self.task.done()
        if step.cancel:
            if not active or self.response is None:
                error = realtime.RealtimeError(
                    "Cancellation failed: no active response found", None, "response_cancel_not_active"
                )
                return await self.emit(realtime.refused(self.session, error, None))
            assert self.task is not None
            self.task.cancel()
            await self.emit(realtime.cancelled(self.session, self.response))
        if step.respond is not None:
            if active:
                message = "Conversation already has an active response in progress"
                error = realtime.RealtimeError(message, None, "conversation_already_has_active_response")
                return await self.emit(realtime.refused(self.session, error, None))
            self.task = asyncio.ensure_future(self.respond(step.respond))

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
        await self.emit(created)
        if attempt:
            return await self.fail(decision, decision.failure)
        step = scenario.turn(decision.turn) if scenario is not None and not decision.problem else None
        audio, transcript = (step.audio, step.transcript) if step is not None else (None, None)
        events = realtime.response_events(self.session, self.response, decision.reply, audio, transcript)
        await self.stream(
            events, decision.reply.interval_ms, lambda: self.served(decision, request, len(events), problem)
        )

    async def fail(self, decision: Decision, failure: Any) -> None:
        """A failure the turn scripts: the connection cut mid-response (``network_error``), held first
        (``timeout``), or an ``error`` event and a failed ``response.done``."""
        assert self.response is not None
        if failure.status == "network_error":
            events = realtime.response_events(self.session, self.response, decision.reply)
            self.failed(decision, failure, dropped=True)
            await get_recorder().durable()
            return await self.stream(events, decision.reply.interval_ms, drop_after=max(1, len(events) // 2))
        if failure.status == "timeout":
            hold = failure.retry_after_ms if failure.retry_after_ms is not None else settings.HARNESS_TIMEOUT_HOLD_MS
            await asyncio.sleep(hold / 1000)
        events = [(e, False) for e in realtime.failure_events(self.session, self.response, failure)]
        await self.stream(events, 0, lambda: self.failed(decision, failure, dropped=False))
