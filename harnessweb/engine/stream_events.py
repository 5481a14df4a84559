"""The events a streaming client sees (start, text/thinking/tool-call start, delta and end, done, error) folded
into seed 003's ``StreamSummary``, as the seed's ``summarize_events`` folds them; and a provider's error body read.
:mod:`harnessweb.engine.stream_summary` reads each protocol's bytes into these events.

Pure: no Django, no I/O.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ToolCall(BaseModel):
    id: str = ""
    name: str = ""
    arguments: str = ""  # the JSON text as streamed (cut short when the stream was)


class ThinkingBlock(BaseModel):
    text: str = ""
    signature: str = ""
    redacted_data: str = ""  # Anthropic's redacted_thinking: opaque data, no text


class ErrorInfo(BaseModel):
    status: int
    type: str = ""
    message: str = ""


class StreamSummary(BaseModel):
    """The seed's fields (``timeline`` … ``stream_error``), plus what a reader of the bytes also needs: the protocol
    recognised, the HTTP status, each thinking block with its signature, the provider's error and the usage."""

    timeline: list[str] = Field(default_factory=list)
    event_count: int = 0
    has_start: bool = False
    has_done: bool = False
    has_error_event: bool = False
    text: str = ""
    thinking: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    text_deltas: int = 0
    thinking_deltas: int = 0
    tool_call_deltas: int = 0
    stop_reason: str | None = None  # stop | length | tool_use | error
    stream_error: str | None = None
    protocol: str = ""
    status: int = 200
    thinking_blocks: list[ThinkingBlock] = Field(default_factory=list)
    error: ErrorInfo | None = None
    usage: dict[str, Any] | None = None


_STOP_REASONS = {
    # Anthropic
    "end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "refusal": "error",
    "max_tokens": "length", "tool_use": "tool_use", "model_context_window_exceeded": "length",
    # OpenAI and legacy completions
    "stop": "stop", "length": "length", "tool_calls": "tool_use", "function_call": "tool_use",
    "content_filter": "error",
    # Gemini (STOP with function calls is a tool use: see _Folder.finish)
    "STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "error", "RECITATION": "error", "OTHER": "error",
    "MALFORMED_FUNCTION_CALL": "error", "BLOCKLIST": "error", "PROHIBITED_CONTENT": "error", "SPII": "error",
    # Cohere (its MAX_TOKENS is Gemini's)
    "COMPLETE": "stop", "STOP_SEQUENCE": "stop", "TOOL_CALL": "tool_use", "ERROR": "error", "TIMEOUT": "error",
}  # fmt: skip


class StreamBroken(Exception):
    """The stream cannot be read on: its message becomes ``stream_error``."""


class Folder:
    """Receives the client-side events and folds them into a summary, as the seed's ``summarize_events``."""

    def __init__(self, summary: StreamSummary) -> None:
        self.s = summary
        self.open: tuple[str, Any] | None = None  # the block being streamed: (kind, key)
        self.calls: dict[Any, ToolCall] = {}
        self.thinking_block: ThinkingBlock | None = None
        self.finish_reason: str | None = None

    def emit(self, name: str) -> None:
        self.s.timeline.append(name)
        self.s.event_count += 1

    def start(self) -> None:
        if not self.s.has_start:
            self.s.has_start = True
            self.emit("start")

    def _enter(self, kind: str, key: Any) -> bool:
        """Make ``(kind, key)`` the open block, closing the one before; True when it opens here."""
        self.start()
        if self.open == (kind, key):
            return False
        self.close()
        self.open = (kind, key)
        self.emit(f"{kind}_start")
        if kind == "thinking":
            self.thinking_block = ThinkingBlock()
            self.s.thinking_blocks.append(self.thinking_block)
        return True

    def text(self, delta: str, key: Any = 0) -> None:
        self._enter("text", key)
        if delta:
            self.s.text += delta
            self.s.text_deltas += 1
            self.emit("text_delta")

    def thinking(self, delta: str, key: Any = 0, signature: str = "") -> None:
        self._enter("thinking", key)
        if delta:
            self.s.thinking += delta
            self.s.thinking_deltas += 1
            self.emit("thinking_delta")
            assert self.thinking_block is not None
            self.thinking_block.text += delta
        if signature:
            self.signature(signature)

    def signature(self, signature: str) -> None:
        if self.thinking_block is not None:
            self.thinking_block.signature += signature

    def redacted_thinking(self, data: str, key: Any) -> None:
        self._enter("thinking", key)
        assert self.thinking_block is not None
        self.thinking_block.redacted_data = data

    def tool_call(self, key: Any, call_id: str = "", name: str = "", arguments: str = "") -> None:
        """A tool call's opening (with its id and name) or one more piece of its arguments."""
        if self._enter("tool_call", key):
            self.calls[key] = ToolCall(id=call_id, name=name)
        call = self.calls[key]
        call.id, call.name = call.id or call_id, call.name or name
        if arguments:
            call.arguments += arguments
            self.s.tool_call_deltas += 1
            self.emit("tool_call_delta")

    def close(self) -> None:
        if self.open is None:
            return
        kind, key = self.open
        self.open = None
        self.emit(f"{kind}_end")
        if kind == "tool_call":
            self.s.tool_calls.append(self.calls[key])
        self.thinking_block = None

    def finish(self, reason: str | None) -> None:
        if reason:
            self.finish_reason = reason

    def done(self) -> None:
        self.close()
        self.start()
        reason = _STOP_REASONS.get(self.finish_reason or "", "stop" if self.finish_reason is None else "error")
        if reason == "stop" and self.s.tool_calls and self.s.protocol in ("gemini", "vertex", "responses"):
            reason = "tool_use"  # neither names a tool use in its finish: the calls do
        self.s.stop_reason = reason
        self.s.has_done = True
        self.emit("done")

    def error(self, status: int, payload: Any) -> None:
        self.close()
        self.s.error = error_info(status, payload)
        self.s.has_error_event = True
        self.s.stop_reason = "error"
        self.emit("error")


def error_info(status: int, payload: Any) -> ErrorInfo:
    """A provider's error body (OpenAI's, Anthropic's, Gemini's, a list around one) as status, type and message."""
    if isinstance(payload, list) and payload:
        payload = payload[0]
    error = payload.get("error", payload) if isinstance(payload, dict) else {}
    if not isinstance(error, dict):
        return ErrorInfo(status=status, message=str(error))
    kind = error.get("type") or error.get("status") or error.get("code") or ""
    return ErrorInfo(status=status, type=str(kind), message=str(error.get("message") or ""))
