"""Ollama's answers read into the client-side events of seed 003's ``StreamSummary``
(:mod:`harnessweb.engine.stream_summary` calls these): an NDJSON stream (``application/x-ndjson``, one JSON object a
line, the last ``"done": true`` with ``done_reason`` and the counts), a whole ``/api/chat`` or ``/api/generate``
answer, and Ollama's ``{"error": "..."}``. A line that is not JSON breaks the stream there, as it breaks the
``ollama`` package's ``json.loads`` of each line.

Pure: no Django, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from harnessweb.engine.stream_events import Folder, StreamBroken

CONTENT_TYPE = "application/x-ndjson"
COUNTS = ("total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count",
          "eval_duration")  # fmt: skip


def is_ollama(payload: Any) -> bool:
    """Whether a JSON payload is one of Ollama's answer lines (chat's ``message`` or generate's ``response``)."""
    return (
        isinstance(payload, dict)
        and "done" in payload
        and "created_at" in payload
        and (isinstance(payload.get("message"), dict) or "response" in payload)
    )


def is_ndjson(text: str) -> bool:
    """Whether a body is Ollama's NDJSON stream: its first line one of Ollama's answer lines (or its error)."""
    first = text.lstrip().split("\n", 1)[0]
    try:
        payload = json.loads(first)
    except ValueError:
        return False
    return is_ollama(payload) or (isinstance(payload, dict) and set(payload) == {"error"})


def payloads(text: str) -> Iterator[tuple[Any, bool]]:
    """Each line's JSON, as one event of a stream; raises StreamBroken at a line that is not JSON (an unterminated
    last line is read, as the ``ollama`` package's ``iter_lines`` reads it)."""
    for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield json.loads(line), False
        except ValueError as exc:
            raise StreamBroken(f"invalid JSON on line {number}: {exc}") from None


def read(f: Folder, payload: dict[str, Any], whole: bool) -> None:
    """One answer line (or the whole answer): thinking, text and whole tool calls; the ``done`` line's reason and
    counts end it. An ``{"error"}`` line is the stream's error."""
    if "error" in payload and "done" not in payload:
        f.error(f.s.status, payload)
        return
    f.start()
    message = payload.get("message") if isinstance(payload.get("message"), dict) else {}
    thinking = message.get("thinking") or payload.get("thinking")
    if thinking:
        f.thinking(thinking)
    text = message.get("content") if message else payload.get("response")
    if text:
        f.text(text)
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        given = json.dumps(arguments, ensure_ascii=False, separators=(",", ":")) if arguments else ""
        f.tool_call(("call", len(f.calls)), call.get("id") or "", function.get("name") or "", given)
    if payload.get("done"):
        f.finish("tool_calls" if f.calls else payload.get("done_reason") or "stop")
        f.s.usage = {name: payload[name] for name in COUNTS if name in payload}
        f.done()
