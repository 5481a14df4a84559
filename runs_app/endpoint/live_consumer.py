"""Gemini Live over a WebSocket (``BidiGenerateContent``, google-genai's ``client.aio.live.connect``): receive, ask
the session engine, decide, send.

Thin: the session's state and every message's shape are :mod:`harnessweb.engine.wire.gemini_live`'s; the turn
logic (a session is a run, each response a turn, recorded and paced as over HTTP) is ``ProviderSocket``'s. The API
key arrives as ``x-goog-api-key`` (or ``?key=``), checked as Gemini's HTTP routes check it.
"""

from __future__ import annotations

import asyncio
import uuid
from urllib.parse import parse_qs

from django.conf import settings

from harnessweb.engine import routes
from harnessweb.engine.exchange import Decision, Failure
from harnessweb.engine.wire import gemini, gemini_live
from harnessweb.engine.wire.common import WireError
from runs_app.endpoint.realtime_consumer import CLOSE_REFUSED, ProviderSocket


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
        step = gemini_live.receive(self.session, text_data if text_data is not None else bytes_data or b"")
        for message in step.messages:
            await self.emit(message)
        if step.close:
            return await self.end(step.close)
        if step.respond:
            if self.task is not None and not self.task.done():
                return await self.end("A turn is still being answered: wait for turnComplete or a toolCall.")
            self.task = asyncio.ensure_future(self.respond())

    async def respond(self) -> None:
        try:
            request = gemini_live.chat_request(self.session)
        except WireError as exc:
            return await self.end(exc.message)
        outcome = await self.decided(request, gemini_live.recorded_body(self.session))
        if len(outcome) == 2:  # refused
            return await self.end(str(outcome[1]))
        decision, _, attempt, problem = outcome
        if attempt:
            assert decision.failure is not None
            return await self.fail(decision, decision.failure)
        messages = gemini_live.response_messages(self.session, decision.reply)
        await self.stream(
            messages, decision.reply.interval_ms, lambda: self.served(decision, request, len(messages), problem)
        )

    async def fail(self, decision: Decision, failure: Failure) -> None:
        """A failure the turn scripts: the connection cut mid-turn (``network_error``), else the session closed
        with Gemini's status and message (held first for a ``timeout``)."""
        if failure.status == "network_error":
            messages = gemini_live.response_messages(self.session, decision.reply)
            self.failed(decision, failure, dropped=True)
            return await self.stream(messages, decision.reply.interval_ms, drop_after=max(1, len(messages) // 2))
        if failure.status == "timeout":
            hold = failure.retry_after_ms if failure.retry_after_ms is not None else settings.HARNESS_TIMEOUT_HOLD_MS
            await asyncio.sleep(hold / 1000)
        self.failed(decision, failure, dropped=False)
        await self.end(gemini_live.failure_reason(failure))
