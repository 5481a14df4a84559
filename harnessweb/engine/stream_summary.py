"""Seed 003's ``StreamSummary`` of one HTTP response, from its bytes, on every protocol the harness speaks.

:func:`summarize` reads a response body (Chat Completions, Messages, Responses, Gemini, Cohere and
legacy-completions streams; their non-streamed JSON bodies; the harness's own JSON answer; any provider's JSON
error) into the events a streaming
client sees (start, text/thinking/tool-call start, delta and end, done, error) and folds them the way the seed's
``summarize_events`` does: the timeline, the accumulated text and thinking, the finished tool calls, the stop
reason, and the error that stopped the stream. Runs and cassettes are both summarised by it, so the two compare
field for field.

Amazon Bedrock's Converse bodies and binary event streams are read by :mod:`harnessweb.engine.stream_bedrock`,
Ollama's NDJSON by :mod:`harnessweb.engine.stream_ollama`.

Pure: no Django, no I/O. The body is parsed as a client parses it: by lines, whatever the network chunking.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from harnessweb.engine import stream_bedrock, stream_ollama
from harnessweb.engine.stream_events import (
    ErrorInfo,
    Folder,
    StreamBroken,
    StreamSummary,
    ThinkingBlock,
    ToolCall,
    error_info,
)

__all__ = ["ErrorInfo", "StreamSummary", "ThinkingBlock", "ToolCall", "detect", "sse_events", "summarize"]


# ---------------------------------------------------------------------------------------------------------------
# Each protocol's payloads as client events


def _anthropic(f: Folder, payload: dict[str, Any], whole: bool) -> None:
    kind = payload.get("type")
    if whole:  # a message object: its blocks at once
        f.start()
        for index, block in enumerate(payload.get("content") or []):
            _anthropic_block(f, index, block)
            f.close()
        f.finish(payload.get("stop_reason"))
        f.s.usage = payload.get("usage")
        f.done()
    elif kind == "message_start":
        f.start()
        f.s.usage = (payload.get("message") or {}).get("usage")
    elif kind == "content_block_start":
        _anthropic_block(f, payload.get("index"), payload.get("content_block") or {})
    elif kind == "content_block_delta":
        delta, index = payload.get("delta") or {}, payload.get("index")
        if delta.get("type") == "text_delta":
            f.text(delta.get("text") or "", index)
        elif delta.get("type") == "thinking_delta":
            f.thinking(delta.get("thinking") or "", index)
        elif delta.get("type") == "signature_delta":
            f.signature(delta.get("signature") or "")
        elif delta.get("type") == "input_json_delta":
            f.tool_call(index, arguments=delta.get("partial_json") or "")
    elif kind == "content_block_stop":
        f.close()
    elif kind == "message_delta":
        f.finish((payload.get("delta") or {}).get("stop_reason"))
        f.s.usage = {**(f.s.usage or {}), **(payload.get("usage") or {})}
    elif kind == "message_stop":
        f.done()
    elif kind == "error":
        f.error(f.s.status, payload)


def _anthropic_block(f: Folder, index: Any, block: dict[str, Any]) -> None:
    kind = block.get("type")
    if kind == "text":
        f.text(block.get("text") or "", index)
    elif kind == "thinking":
        f.thinking(block.get("thinking") or "", index, block.get("signature") or "")
    elif kind == "redacted_thinking":
        f.redacted_thinking(block.get("data") or "", index)
    elif kind in ("tool_use", "server_tool_use"):
        given = block.get("input")
        arguments = json.dumps(given, ensure_ascii=False, separators=(",", ":")) if given else ""
        f.tool_call(index, block.get("id") or "", block.get("name") or "", arguments)


def _openai(f: Folder, payload: dict[str, Any], whole: bool) -> None:
    if "error" in payload and not payload.get("choices"):
        f.error(f.s.status, payload)
        return
    f.start()
    if payload.get("usage"):
        f.s.usage = payload["usage"]
    choice = next((c for c in payload.get("choices") or [] if c.get("index", 0) == 0), None)
    if choice is None:
        return
    delta = choice.get("message") if whole else choice.get("delta")
    delta = delta or {}
    reasoning = delta.get("reasoning") or delta.get("reasoning_content")
    if reasoning:
        f.thinking(reasoning)
    if isinstance(choice.get("text"), str) and choice["text"]:  # legacy completions
        f.text(choice["text"])
    if delta.get("content"):
        f.text(delta["content"])
    for position, call in enumerate(delta.get("tool_calls") or []):
        function = call.get("function") or {}
        key = ("call", call.get("index", position))
        f.tool_call(key, call.get("id") or "", function.get("name") or "", function.get("arguments") or "")
    f.finish(choice.get("finish_reason"))
    if whole:
        f.done()


def _responses(f: Folder, payload: dict[str, Any], whole: bool) -> None:
    kind = payload.get("type") or ""
    if whole or kind in ("response.completed", "response.incomplete", "response.failed"):
        response = payload.get("response", payload) if not whole else payload
        if whole:
            f.start()
            for index, item in enumerate(response.get("output") or []):
                _responses_item(f, index, item)
                f.close()
        f.s.usage = response.get("usage")
        if response.get("status") == "failed" or kind == "response.failed":
            f.error(f.s.status, response.get("error") or {})
            return
        f.finish("length" if response.get("status") == "incomplete" else "stop")
        f.done()
    elif kind == "response.created":
        f.start()
    elif kind == "response.output_item.added":
        item = payload.get("item") or {}
        if item.get("type") == "function_call":
            f.tool_call(payload.get("output_index"), item.get("call_id") or "", item.get("name") or "")
    elif kind == "response.output_text.delta":
        f.text(payload.get("delta") or "", payload.get("output_index"))
    elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        f.thinking(payload.get("delta") or "", payload.get("output_index"))
    elif kind == "response.function_call_arguments.delta":
        f.tool_call(payload.get("output_index"), arguments=payload.get("delta") or "")
    elif kind == "response.output_item.done":
        f.close()
    elif kind == "error":
        f.error(f.s.status, payload)


def _responses_item(f: Folder, index: int, item: dict[str, Any]) -> None:
    if item.get("type") == "message":
        for part in item.get("content") or []:
            if part.get("type") == "output_text":
                f.text(part.get("text") or "", index)
    elif item.get("type") == "reasoning":
        for part in [*(item.get("summary") or []), *(item.get("content") or [])]:
            f.thinking(part.get("text") or "", index)
    elif item.get("type") == "function_call":
        f.tool_call(index, item.get("call_id") or "", item.get("name") or "", item.get("arguments") or "")


def _gemini(f: Folder, payload: dict[str, Any], whole: bool) -> None:
    if "error" in payload and "candidates" not in payload:
        f.error(f.s.status, payload)
        return
    f.start()
    if payload.get("usageMetadata"):
        f.s.usage = payload["usageMetadata"]
    candidate = next((c for c in payload.get("candidates") or [] if c.get("index", 0) == 0), None)
    if candidate is None:
        return
    for part in (candidate.get("content") or {}).get("parts") or []:
        if part.get("functionCall"):
            call = part["functionCall"]
            key = ("call", len(f.calls))
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False, separators=(",", ":"))
            f.tool_call(key, call.get("id") or "", call.get("name") or "", arguments)
            f.close()
        elif part.get("thought"):
            f.thinking(part.get("text") or "", "thought", part.get("thoughtSignature") or "")
        elif "text" in part:
            f.text(part.get("text") or "", "text")
    f.finish(candidate.get("finishReason"))
    if whole:
        f.done()


def _cohere(f: Folder, payload: dict[str, Any], whole: bool) -> None:
    """Cohere's v2 chat: a response object, or one typed event (the ``tool_plan`` an answer gives before calling
    tools is its text)."""
    kind, index = payload.get("type"), payload.get("index")
    message = (payload.get("delta") or {}).get("message") or {}
    if whole:
        f.start()
        message = payload.get("message") or {}
        if message.get("tool_plan"):
            f.text(message["tool_plan"], "plan")
        for position, item in enumerate(message.get("content") or []):
            if item.get("type") == "thinking":
                f.thinking(item.get("thinking") or "", ("content", position))
            else:
                f.text(item.get("text") or "", ("content", position))
        for position, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            key = ("call", position)
            f.tool_call(key, call.get("id") or "", function.get("name") or "", function.get("arguments") or "")
        f.finish(payload.get("finish_reason"))
        f.s.usage = payload.get("usage")
        f.done()
    elif kind == "message-start":
        f.start()
    elif kind in ("content-start", "content-delta"):
        content = message.get("content") or {}
        if content.get("type") == "thinking" or "thinking" in content:
            f.thinking(content.get("thinking") or "", ("content", index))
        else:
            f.text(content.get("text") or "", ("content", index))
    elif kind == "tool-plan-delta":
        f.text(message.get("tool_plan") or "", "plan")
    elif kind in ("tool-call-start", "tool-call-delta"):
        call = message.get("tool_calls") or {}
        function = call.get("function") or {}
        f.tool_call(("call", index), call.get("id") or "", function.get("name") or "", function.get("arguments") or "")
    elif kind in ("content-end", "tool-call-end"):
        f.close()
    elif kind == "message-end":
        delta = payload.get("delta") or {}
        f.s.usage = delta.get("usage")
        if delta.get("error"):
            f.error(f.s.status, {"message": delta["error"]})
            return
        f.finish(delta.get("finish_reason"))
        f.done()


def _harness(f: Folder, payload: dict[str, Any], whole: bool) -> None:
    """The harness's own answer (the AI SDK provider's): one JSON body of the specification's content parts."""
    f.start()
    for index, part in enumerate(payload.get("content") or []):
        meta = (part.get("providerMetadata") or {}).get("anthropic") or {}
        if part.get("type") == "text":
            f.text(part.get("text") or "", index)
        elif part.get("type") == "reasoning" and meta.get("redactedData"):
            f.redacted_thinking(meta["redactedData"], index)
        elif part.get("type") == "reasoning":
            f.thinking(part.get("text") or "", index, meta.get("signature") or "")
        elif part.get("type") == "tool-call":
            f.tool_call(index, part.get("toolCallId") or "", part.get("toolName") or "", part.get("input") or "")
        f.close()
    f.finish({"tool-calls": "tool_calls"}.get(payload.get("finishReason") or "", payload.get("finishReason")))
    f.s.usage = payload.get("usage")
    f.done()


_READERS = {
    "anthropic": _anthropic,
    "openai": _openai,
    "azure": _openai,  # OpenAI's protocol at Azure's path
    "vertex": _gemini,  # Gemini's and Anthropic's protocols at Vertex AI's paths
    "vertex_claude": _anthropic,
    "completions": _openai,
    "responses": _responses,
    "gemini": _gemini,
    "cohere": _cohere,
    "bedrock": stream_bedrock.converse,  # its event streams: stream_bedrock.event_stream
    "bedrock_claude": _anthropic,
    "harness": _harness,
    "ollama": stream_ollama.read,
}


_COHERE_EVENTS = frozenset(
    {"message-start", "content-start", "content-delta", "content-end", "tool-plan-delta", "tool-call-start",
     "tool-call-delta", "tool-call-end", "citation-start", "citation-end", "message-end"}
)  # fmt: skip


def detect(payload: Any) -> str:
    """The protocol a JSON payload (a stream's event or a whole body) belongs to, or ``""``."""
    if not isinstance(payload, dict):
        return ""
    kind, obj = str(payload.get("type") or ""), payload.get("object")
    if kind in _COHERE_EVENTS or ("finish_reason" in payload and isinstance(payload.get("message"), dict)):
        return "cohere"  # before Anthropic's: Cohere's event names start with "message" too
    if kind.startswith("response.") or obj == "response":
        return "responses"
    if kind.startswith(("message", "content_block")) or kind in ("ping", "message"):
        return "anthropic"
    if obj in ("chat.completion", "chat.completion.chunk"):
        return "openai"
    if obj == "text_completion":
        return "completions"
    if "candidates" in payload or "usageMetadata" in payload:
        return "gemini"
    if "output" in payload and "stopReason" in payload:
        return "bedrock"
    if "finishReason" in payload and isinstance(payload.get("content"), list):
        return "harness"
    return "ollama" if stream_ollama.is_ollama(payload) else ""


# ---------------------------------------------------------------------------------------------------------------
# Bytes → payloads


def _decoded(body: bytes) -> tuple[str, str | None]:
    """The text a client decodes, up to the first byte that is not UTF-8, and the error there."""
    try:
        return body.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return body[: exc.start].decode("utf-8"), f"invalid UTF-8 at byte {exc.start}"


def sse_events(text: str) -> Iterator[tuple[str | None, str]]:
    """Server-sent events by lines (``\\n``, ``\\r\\n`` or ``\\r``): ``(event name, data)``; comments skipped, an
    event without data not dispatched, an unterminated last event dropped as clients drop it."""
    name: str | None = None
    data: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")[:-1]:
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = None, []
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)


def _is_sse(text: str) -> bool:
    head = text.lstrip()[:16]
    return head.startswith(("data:", "event:", ":", "id:", "retry:"))


def _payloads(text: str) -> Iterable[tuple[Any, bool]]:
    """Each JSON payload and whether it is a whole body (True) or one event of a stream."""
    if _is_sse(text):
        for event, data in sse_events(text):
            if data.strip() == "[DONE]":
                yield "[DONE]", False
                continue
            try:
                yield json.loads(data), False
            except ValueError as exc:
                name = f" ({event})" if event else ""
                raise StreamBroken(f"invalid JSON in a data line{name}: {exc}") from None
        return
    try:
        value = json.loads(text)
    except ValueError as exc:
        if stream_ollama.is_ndjson(text):  # Ollama's stream: one JSON object a line
            yield from stream_ollama.payloads(text)
            return
        raise StreamBroken(f"the body is not JSON: {exc}") from None
    if isinstance(value, list):  # Gemini's streamed JSON array: each element one chunk
        for item in value:
            yield item, False
        yield "[END]", False
    else:
        yield value, True


def _header(headers: Iterable[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name), None)


def summarize(
    body: bytes | str,
    *,
    status: int = 200,
    headers: Iterable[tuple[str, str]] | None = None,
    protocol: str = "",
) -> StreamSummary:
    """The seed's StreamSummary of one response.

    ``headers``, when given, are checked as the seed's error paths check them (a 200 without a content type, or a
    stream under a content type that is neither SSE nor JSON, is a stream error before any event). ``protocol``
    names the protocol when the body does not say it (it usually does: each payload is recognised by its shape).
    An error status gives no event: its provider error goes to ``error`` and ``stream_error``
    (``HTTP 429: rate_limit_error: …``), as a client's ``stream()`` fails before streaming.
    """
    raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    summary = StreamSummary(status=status, protocol=protocol)
    text, utf8_error = _decoded(raw)
    if status >= 400:
        try:
            payload = json.loads(text) if text.strip() else {}
        except ValueError:
            payload = {"message": text.strip()[:500]}
        summary.error = error_info(status, payload)
        summary.error.type = summary.error.type or stream_bedrock.error_type(list(headers or ()))  # Bedrock's header
        detail = ": ".join(part for part in (summary.error.type, summary.error.message) if part)
        summary.stream_error = f"HTTP {status}" + (f": {detail}" if detail else "")
        return summary
    if headers is not None:
        headers = list(headers)
        content_type = (_header(headers, "content-type") or "").split(";")[0].strip().lower()
        if not content_type:
            summary.stream_error = "protocol error: missing content-type"
            return summary
        known = ("text/event-stream", "application/json", stream_bedrock.CONTENT_TYPE, stream_ollama.CONTENT_TYPE)
        if content_type not in known and not content_type.endswith("+json"):
            summary.stream_error = f"protocol error: unexpected content-type {content_type}"
            return summary
    if stream_bedrock.eventstream.is_eventstream(raw):  # Amazon Bedrock's binary event stream
        try:
            stream_bedrock.event_stream(Folder(summary), raw, _anthropic)
        except StreamBroken as exc:
            summary.stream_error = str(exc)
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            summary.stream_error = f"an event not shaped as its protocol's: {type(exc).__name__}: {exc}"
        return summary
    if not text.strip() and utf8_error is None:
        summary.stream_error = "empty body"
        return summary
    f = Folder(summary)
    try:
        for payload, whole in _payloads(text):
            if payload == "[DONE]":
                f.done()
                continue
            if payload == "[END]":  # the end of Gemini's JSON array
                if f.finish_reason is not None:
                    f.done()
                continue
            summary.protocol = summary.protocol or detect(payload)
            reader = _READERS.get(summary.protocol)
            if reader is None and isinstance(payload, dict) and "error" in payload:
                f.error(status, payload)  # an error event before anything says which protocol this is
                continue
            if reader is None or not isinstance(payload, dict):
                raise StreamBroken("a payload of no protocol the harness knows")
            reader(f, payload, whole)
        # Gemini streams have no terminator: the last chunk's finishReason ends them.
        gemini = _READERS.get(summary.protocol) is _gemini  # on Gemini's paths or Vertex AI's
        if gemini and _is_sse(text) and not summary.has_done and f.finish_reason is not None:
            f.done()
    except StreamBroken as exc:
        summary.stream_error = str(exc)
    except (AttributeError, TypeError, KeyError, IndexError) as exc:  # JSON of the protocol's name, not its shape
        summary.stream_error = f"a payload not shaped as its protocol's: {type(exc).__name__}: {exc}"
    if utf8_error and summary.stream_error is None:
        summary.stream_error = utf8_error
    return summary
