"""Gemini Live over a WebSocket (``BidiGenerateContent``, google-genai's ``client.aio.live.connect``): receive, ask
the session engine, decide, send.

Thin: the session's state and every message's shape are :mod:`harnessweb.engine.wire.gemini_live`'s; the turn
logic (a session is a run, each response a turn, recorded and paced as over HTTP) is ``ProviderSocket``'s. The API
key arrives as ``x-goog-api-key`` (or ``?key=``), checked as Gemini's HTTP routes check it. A client message that
asks for no turn (``setup``, content without ``turnComplete``) is a ``message`` event on the run's time axis.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any
from urllib.parse import parse_qs

import orjson
from django.conf import settings

from harnessweb.engine import routes
from harnessweb.engine.exchange import Decision, Failure, ScenarioNotFound
from harnessweb.engine.playback import select_scenario
from harnessweb.engine.routes import SCENARIO_HEADER
from harnessweb.engine.wire import gemini, gemini_live
from harnessweb.engine.wire.common import Piece, WireError
from runs_app.endpoint.realtime_consumer import CLOSE_REFUSED, ProviderSocket, _catalog


class LiveConsumer(ProviderSocket):
    """One Live session: a run whose turns are the model's turns."""

    protocol = gemini_live.PROTOCOL
    path = gemini_live.PATH
    route = routes.Route("play", gemini)  # Gemini's key rules and refusal

    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.session = gemini_live.LiveSession(f"live_{uuid.uuid4().hex[:24]}")
        await self.accept()
        try:
            refused = await self.open(query.get("key", [""])[0])
        except WireError as exc:  # an X-Harness-Run that is no UUID
            return await self.end(exc.message)
        if refused is not None:
            await self.end(refused.message)

    async def end(self, reason: str) -> None:
        """Close the session as the API ends one it refuses: the reason in the close frame."""
        await self.close(code=CLOSE_REFUSED, reason=gemini_live.close_reason(reason))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        raw = text_data if text_data is not None else bytes_data or b""
        step = gemini_live.receive(self.session, raw)
        for message in step.messages:
            await self.emit(message)
        kind = _kind(raw)
        if step.close:
            self.note(kind, list(step.messages), closed=step.close)
            return await self.end(step.close)
        if step.interrupt and self.task is not None and not self.task.done():  # the user spoke over the model
            self.task.cancel()
            self.task = None  # cancelled: a turn the same message ends may start
            await self.emit(gemini_live.INTERRUPTED)
        if step.hear:  # the user's speech ended: its words are the scenario's, then the model answers
            for message in gemini_live.heard(self.session, await self.input_transcript()):
                await self.emit(message)
        if step.respond or step.hear:
            if self.task is not None and not self.task.done():
                reason = "A turn is still being answered: wait for turnComplete or a toolCall."
                self.note(kind, [], closed=reason)
                return await self.end(reason)
            self.task = asyncio.ensure_future(self.respond())  # its request event stands for the message
        elif step.messages or kind != "realtimeInput":  # (audio chunks are many: no events)
            self.note(kind, list(step.messages))

    def kind_of(self, message: dict[str, Any]) -> str:
        return next(iter(message), "")

    def next_turn(self) -> int:
        return sum(1 for content in self.session.contents if content.get("role") == "model") + 1

    def pieces(self, message: dict[str, Any]) -> list[Piece]:
        content = message.get("serverContent") or {}
        parts = (content.get("modelTurn") or {}).get("parts") or []
        found = [Piece(0, "text", part["text"]) for part in parts if isinstance(part.get("text"), str)]
        calls = (message.get("toolCall") or {}).get("functionCalls") or []
        for at, call in enumerate(calls, start=1):  # (block 0: the text, if any)
            arguments = orjson.dumps(call.get("args") or {}).decode()
            found += [Piece(at, "tool_call", str(call.get("name", ""))), Piece(at, "arguments", arguments)]
        return found

    async def input_transcript(self) -> str:
        """What the user's speech says: the ``input_transcript`` of the turn it plays."""
        request = gemini_live.upcoming_request(self.session)
        try:
            scenario, _ = select_scenario(
                await _catalog(), request, self.headers.get(SCENARIO_HEADER) or self.played or None
            )
        except ScenarioNotFound:
            return ""
        step = scenario.turn(request.turn) if scenario is not None else None
        return (step.input_transcript or "") if step is not None else ""

    async def respond(self) -> None:
        try:
            request = gemini_live.chat_request(self.session)
        except WireError as exc:
            return await self.end(exc.message)
        outcome = await self.decided(request, gemini_live.recorded_body(self.session))
        if len(outcome) == 2:  # refused
            return await self.end(str(outcome[1]))
        decision, scenario, attempt, problem = outcome
        if attempt:
            assert decision.failure is not None
            return await self.fail(decision, decision.failure)
        step = scenario.turn(decision.turn) if scenario is not None and not decision.problem else None
        spoken = (step.audio, step.transcript) if step is not None else (None, None)
        messages = gemini_live.response_messages(self.session, decision.reply, *spoken)
        await self.stream(
            messages, decision.reply.interval_ms, lambda: self.served(decision, request, len(messages), problem)
        )

    async def fail(self, decision: Decision, failure: Failure) -> None:
        """A failure the turn scripts: the connection cut mid-turn (``network_error``), else the session closed
        with Gemini's status and message (held first for a ``timeout``)."""
        if failure.status == "network_error":
            messages = gemini_live.response_messages(self.session, decision.reply)
            finish = lambda: self.failed(decision, failure, dropped=True)  # noqa: E731
            drop_after = max(1, len(messages) // 2)
            return await self.stream(messages, decision.reply.interval_ms, finish, drop_after=drop_after)
        if failure.status == "timeout":
            hold = failure.retry_after_ms if failure.retry_after_ms is not None else settings.HARNESS_TIMEOUT_HOLD_MS
            await asyncio.sleep(hold / 1000)
        self.failed(decision, failure, dropped=False)
        await self.end(gemini_live.failure_reason(failure))


def _kind(raw: str | bytes) -> str:
    """A client message's kind: its one field's name in the API's camelCase (google-genai sends snake_case), so a
    timeline reads the same whatever the client (the engine has answered the message already)."""
    try:
        message = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return "(invalid JSON)"
    if not isinstance(message, dict):
        return "(not an object)"
    head, *rest = str(next(iter(message), "")).split("_")
    return head + "".join(word.capitalize() for word in rest)
