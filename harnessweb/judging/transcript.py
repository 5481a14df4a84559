"""A run's events read as a judge reads them (the pure half of seed 001's ``fromDatabase``): the conversation the
last request carried plus the answer it got, and the timeline in words (requests, answers, tool calls, injected
failures, refusals, disconnects); a conversation a CI job uploaded (normalised by ``runs_app/ci/messages.py``) as
messages with their tool calls and results; several runs' conversations merged without repeating what each request
carried again.

Pure: it takes events as plain dicts (``kind``, ``turn``, ``data``) and uploaded messages as dicts (``role``,
``parts``, ``name``), so it is tested without a database.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from harnessweb.engine import routes, wire
from harnessweb.engine.wire import gemini_live, realtime
from harnessweb.judging.verdicts import TranscriptMessage

# A timeline line quotes at most this much of a text.
QUOTE_CHARS = 300
# The socket sessions, by the protocol their turns record: they are no HTTP play route, so not in ``wire.BY_NAME``.
SOCKET_WIRES = {realtime.PROTOCOL: realtime, gemini_live.PROTOCOL: gemini_live}


def _quote(text: Any) -> str:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "…"


def _parsed(data: Mapping[str, Any]) -> Any:
    """The neutral request a recorded request event carried, or None when its body is not a conversation."""
    name = str(data.get("protocol", ""))
    protocol = SOCKET_WIRES.get(name) or routes.play_wire(str(data.get("path", ""))) or wire.BY_NAME.get(name)
    body = data.get("body")
    if protocol is None or not isinstance(body, dict):
        return None
    try:
        return protocol.parse_request(body)
    except Exception:  # a body the endpoint refused (the run records it too): nothing to read as a conversation
        return None


def _calls(calls: Any) -> list[str]:
    if not isinstance(calls, list):
        return []
    return [f"{call.get('name', '?')}({_quote(call.get('arguments', ''))})" for call in calls if isinstance(call, dict)]


def _answer(data: Mapping[str, Any]) -> str:
    """An answer event's text and tool calls, as one assistant message ("" for a failed attempt)."""
    if data.get("failure"):
        return ""
    parts = [str(data["text"])] if data.get("text") else []
    parts += [f"(calls {call})" for call in _calls(data.get("tool_calls"))]
    return "\n".join(parts)


def conversation(events: Iterable[Mapping[str, Any]]) -> list[TranscriptMessage]:
    """The conversation as the last request sent it (system prompt first), then the answer that request got."""
    last_request = None
    answer = ""
    for event in events:
        data = event.get("data") or {}
        if event.get("kind") == "request":
            parsed = _parsed(data)
            if parsed is not None:
                last_request, answer = parsed, ""
        elif event.get("kind") == "response" and last_request is not None:
            answer = _answer(data) or answer
    if last_request is None:
        return []
    messages = [TranscriptMessage("system", last_request.system)] if last_request.system else []
    messages += [TranscriptMessage(m.role, m.text) for m in last_request.messages]
    if answer:
        messages.append(TranscriptMessage("assistant", answer))
    return messages


def _describe(kind: str, data: Mapping[str, Any]) -> str | None:
    if kind == "request":
        parsed = _parsed(data)
        said = f": the user said «{_quote(parsed.last_user)}»" if parsed is not None and parsed.last_user else ""
        if data.get("protocol") in SOCKET_WIRES:  # a socket's turn: a response the client asked for on it
            return f"response asked on the socket {data.get('path', '')}{said}"
        return f"request {data.get('method', 'POST')} {data.get('path', '')}{said}"
    if kind == "match":
        if data.get("scenario"):
            return f"answered by scenario {data['scenario']}"
        return f"answered by {data.get('mode') or 'the endpoint'}"
    if kind == "validation":
        return None if data.get("ok", True) else f"validation problem: {_quote(data.get('problem', ''))}"
    if kind == "failure_injected":
        attempt = f" (attempt {data['attempt']} of {data['of']})" if data.get("attempt") and data.get("of") else ""
        return f"injected failure {data.get('status')}{attempt}: {_quote(data.get('message') or '')}"
    if kind == "response":
        if data.get("failure"):
            status = f"HTTP {data['status']}" if data.get("status") is not None else "an error on the socket"
            how = "connection dropped" if data.get("dropped") else status
            return f"failed response: {how} ({data['failure']})"
        said = [f"text «{_quote(data['text'])}»"] if data.get("text") else []
        said += [f"tool call {call}" for call in _calls(data.get("tool_calls"))]
        finish = f", finish {data['finish_reason']}" if data.get("finish_reason") else ""
        return f"answer: {'; '.join(said) or 'empty'}{finish}"
    if kind == "rejected":
        return f"refused with HTTP {data.get('status')}: {_quote(data.get('message', ''))}"
    if kind == "client_disconnected":
        return f"the client disconnected after {data.get('after_ms')} ms"
    return f"{kind}: {_quote(dict(data))}"


def timeline(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per event that says something ("turn 2 · injected failure rate_limit (attempt 1 of 2): …")."""
    lines = []
    for event in events:
        line = _describe(str(event.get("kind", "")), event.get("data") or {})
        if line is not None:
            turn = event.get("turn")
            lines.append(f"turn {turn} · {line}" if turn else line)
    return lines


def _part_text(part: Mapping[str, Any]) -> str:
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text", ""))
    if kind == "tool_call":
        return f"(calls {part.get('name', '?')}({_quote(part.get('arguments', ''))}))"
    if kind == "tool_result":
        failed = " failed" if part.get("is_error") else ""
        return f"(result{failed} of call {part.get('tool_call_id', '?')}: {part.get('content', '')})"
    if kind == "reasoning":
        return f"(reasoning: {part.get('text', '')})"
    if kind == "image":
        return f"(image {part.get('source', '')})"
    return f"({part.get('kind', kind)} part: {_quote(part.get('data', ''))})"


def uploaded_conversation(rows: Iterable[Mapping[str, Any]]) -> list[TranscriptMessage]:
    """A conversation as a CI job uploaded it (RunMessage rows in order) as the judge reads it: each message's text,
    tool calls, tool results and reasoning, in the order of its parts."""
    messages = []
    for row in rows:
        parts = row.get("parts") or []
        content = "\n".join(_part_text(part) for part in parts if isinstance(part, Mapping))
        name = f" ({row['name']})" if row.get("name") else ""
        messages.append(TranscriptMessage(f"{row.get('role', '?')}{name}", content))
    return messages


def merge_conversations(conversations: Iterable[list[TranscriptMessage]]) -> list[TranscriptMessage]:
    """Several runs' conversations in time order as one: a conversation that starts with the one before it (each
    request carries the history again) adds only what is new."""
    merged: list[TranscriptMessage] = []
    previous: list[TranscriptMessage] = []
    for messages in conversations:
        shared = 0
        while shared < min(len(previous), len(messages)) and previous[shared] == messages[shared]:
            shared += 1
        merged += messages[shared:]
        previous = messages
    return merged
