"""Amazon Bedrock's answers read into the client-side events of seed 003's ``StreamSummary``
(:mod:`harnessweb.engine.stream_summary` calls these): a Converse JSON body, and an AWS event stream, whether
ConverseStream's events or InvokeModelWithResponseStream's ``chunk`` events (each an Anthropic event, base64 in
``{"bytes": …}``). An exception event is the stream's error event; a checksum that does not hold breaks the stream.

Pure: no Django, no I/O.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from harnessweb.engine.stream_events import Folder, StreamBroken
from harnessweb.engine.wire import eventstream

CONTENT_TYPE = eventstream.CONTENT_TYPE.decode()
ChunkReader = Callable[[Folder, dict[str, Any], bool], None]


def _arguments(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if value else ""


def converse(f: Folder, payload: dict[str, Any], whole: bool) -> None:
    """A non-streamed ``ConverseResponse``: its message's blocks at once."""
    f.start()
    message = (payload.get("output") or {}).get("message") or {}
    for index, block in enumerate(message.get("content") or []):
        reasoning = block.get("reasoningContent") or {}
        if "text" in block:
            f.text(block.get("text") or "", index)
        elif "reasoningText" in reasoning:
            text = reasoning["reasoningText"] or {}
            f.thinking(text.get("text") or "", index, text.get("signature") or "")
        elif "redactedContent" in reasoning:
            f.redacted_thinking(reasoning["redactedContent"] or "", index)
        elif "toolUse" in block:
            use = block["toolUse"] or {}
            f.tool_call(index, use.get("toolUseId") or "", use.get("name") or "", _arguments(use.get("input")))
        f.close()
    f.finish(payload.get("stopReason"))
    f.s.usage = payload.get("usage")
    f.done()


def _converse_event(f: Folder, kind: str, payload: dict[str, Any]) -> None:
    index = payload.get("contentBlockIndex")
    if kind == "messageStart":
        f.start()
    elif kind == "contentBlockStart":
        use = (payload.get("start") or {}).get("toolUse") or {}
        f.tool_call(index, use.get("toolUseId") or "", use.get("name") or "")
    elif kind == "contentBlockDelta":
        delta = payload.get("delta") or {}
        reasoning = delta.get("reasoningContent") or {}
        if "text" in delta:
            f.text(delta.get("text") or "", index)
        elif "text" in reasoning:
            f.thinking(reasoning.get("text") or "", index)
        elif "signature" in reasoning:
            f.signature(reasoning.get("signature") or "")
        elif "redactedContent" in reasoning:
            f.redacted_thinking(reasoning.get("redactedContent") or "", index)
        elif "toolUse" in delta:
            f.tool_call(index, arguments=(delta.get("toolUse") or {}).get("input") or "")
    elif kind == "contentBlockStop":
        f.close()
    elif kind == "messageStop":
        f.finish(payload.get("stopReason"))
    elif kind == "metadata":  # the last event: the answer's usage
        f.s.usage = payload.get("usage")
        f.done()


def event_stream(f: Folder, body: bytes, chunk_reader: ChunkReader) -> None:
    """Fold an event stream's messages: Converse's events by their ``:event-type``, InvokeModel's chunks through
    ``chunk_reader`` (Anthropic's events), an exception as the error event. Raises StreamBroken for framing that
    does not hold or a payload that is not JSON."""
    try:
        for headers, raw in eventstream.messages(body):
            try:
                payload = json.loads(raw.decode("utf-8")) if raw else {}
            except ValueError as exc:
                raise StreamBroken(f"invalid JSON in an event ({headers.get(':event-type')}): {exc}") from None
            if headers.get(":message-type") in ("exception", "error"):
                kind = headers.get(":exception-type") or headers.get(":error-code") or ""
                message = payload.get("message") or headers.get(":error-message") or ""
                f.error(f.s.status, {"type": kind, "message": message})
                return
            kind = headers.get(":event-type") or ""
            if kind == "chunk":
                f.s.protocol = f.s.protocol or "anthropic"  # the chunks are Anthropic's events
                try:
                    chunk_reader(f, json.loads(base64.b64decode(payload.get("bytes") or "")), False)
                except ValueError as exc:
                    raise StreamBroken(f"a chunk whose bytes are not base64 JSON: {exc}") from None
            else:
                f.s.protocol = f.s.protocol or "bedrock"
                _converse_event(f, kind, payload)
    except eventstream.FramingError as exc:
        raise StreamBroken(f"event stream: {exc}") from None


def error_type(headers: list[tuple[str, str]] | None) -> str:
    """The exception an error response names in ``x-amzn-ErrorType`` (``ThrottlingException``), or ``""``."""
    value = next((v for k, v in headers or () if k.lower() == "x-amzn-errortype"), "")
    return value.split(":", 1)[0]
