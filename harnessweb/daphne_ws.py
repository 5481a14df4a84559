"""daphne's WebSocket protocol, with the ASGI ``websocket.close`` message's ``reason`` sent in the close frame.

daphne 4.2's ``WebSocketProtocol.handle_reply`` calls ``serverClose(code=...)`` and drops the message's ``reason``
(``daphne/ws_protocol.py``), while uvicorn sends it. Gemini Live says why it ends a session in that reason, and
google-genai turns the close code and reason into its ``APIError``: without it, a failure a scenario scripts on
Live reaches the client under daphne (what ``make run`` serves) without its message. ``install`` makes every
WebSocket daphne builds from now on this subclass; ``harnessweb.serve`` calls it before daphne starts.
"""

from __future__ import annotations

from typing import Any

from daphne import ws_protocol

CLOSE_REASON_BYTES = 123  # RFC 6455 §5.5: a control frame's payload is at most 125 bytes, 2 of them the code


def close_reason(reason: str) -> str:
    """``reason`` cut to what a close frame carries (123 bytes of UTF-8), never inside a character."""
    return reason.encode()[:CLOSE_REASON_BYTES].decode(errors="ignore")


class ReasonedWebSocketProtocol(ws_protocol.WebSocketProtocol):
    """daphne's WebSocket, whose ``websocket.close`` carries its ``reason`` into the close frame when one is given."""

    def handle_reply(self, message: dict[str, Any]) -> None:
        reason = message.get("reason")
        # A socket not accepted yet is refused with an HTTP 403 (daphne's serverReject): no close frame to carry it.
        if message.get("type") == "websocket.close" and reason and self.state != self.STATE_CONNECTING:
            self.serverClose(code=message.get("code"), reason=reason)
            return
        super().handle_reply(message)

    def serverClose(self, code: int | None = None, reason: str | None = None) -> None:  # noqa: N802 (daphne's name)
        """Close the socket with ``code`` (1000 when None) and, when given, ``reason`` cut to 123 bytes."""
        self.sendClose(code=1000 if code is None else code, reason=close_reason(reason) if reason else None)


def install() -> None:
    """Make the WebSockets daphne's factory builds ours (daphne offers no setting: its factory's ``protocol``)."""
    ws_protocol.WebSocketFactory.protocol = ReasonedWebSocketProtocol
