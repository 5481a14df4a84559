"""What a CI job uploaded beside its run, on the run page: the conversation as turns (roles, tool calls with their
arguments, tool results), each turn's trace log with its outcome, the artifacts (text shown escaped, HTML only in a
sandboxed frame), and the isolated response that frame loads an artifact's content from."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.urls import reverse

from harnessweb.text import pretty_json
from runs_app.models import Artifact, Run, RunMessage, TraceLog

# What an artifact's content is served with: nothing of it runs, nothing loads from anywhere, and the CSP's own
# ``sandbox`` puts it in an opaque origin even when opened on its own, so it never reads the dashboard's cookies.
ARTIFACT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'; sandbox"
# The frame's own sandbox: no allow-scripts, no allow-same-origin, nothing else allowed either.
FRAME_SANDBOX = ""
PREVIEW_CHARS = 20_000  # a text artifact on the page; the whole of it is one link away
FORMAT_LABELS = {"openai": "OpenAI's", "anthropic": "Anthropic's"}


def _part(part: dict[str, Any], tools: dict[str, str]) -> dict[str, str]:
    """A normalised part (runs_app/ci/messages.py) as the run page's message parts show one; ``tools`` names the
    tool of each call id, for the results."""
    kind = part.get("type", "other")
    if kind == "text":
        return {"kind": "text", "title": "", "text": str(part.get("text", ""))}
    if kind == "tool_call":
        title = str(part.get("name", "")) + (f" · {part['id']}" if part.get("id") else "")
        return {"kind": "tool_call", "title": title, "text": pretty_json(part.get("arguments"))}
    if kind == "tool_result":
        call_id = str(part.get("tool_call_id", ""))
        title = " · ".join(filter(None, [tools.get(call_id, ""), call_id, "error" if part.get("is_error") else ""]))
        return {"kind": "tool_result", "title": title, "text": str(part.get("content", ""))}
    if kind == "reasoning":
        return {"kind": "reasoning", "title": "thinking", "text": str(part.get("text", ""))}
    if kind == "image":
        return {"kind": "other", "title": "image", "text": str(part.get("source", ""))}
    return {"kind": "other", "title": str(part.get("kind", kind)), "text": pretty_json(part.get("data", part))}


def _opens_turn(message: RunMessage) -> bool:
    # A user's message opens a turn; a tool's results belong to the turn whose tool calls they answer.
    return message.role == "user" and any(p.get("type") != "tool_result" for p in message.parts)


def conversation_context(run: Run | None) -> dict[str, Any] | None:
    """Context of ``runs_app/run_conversation.html``: the uploaded messages in turns (a user's message opens one;
    what comes before the first, a system prompt, is shown first); None when nothing was uploaded."""
    if run is None:
        return None
    messages = list(run.messages.order_by("position"))
    if not messages:
        return None
    tools = {
        str(p.get("id")): str(p.get("name", ""))
        for m in messages
        for p in m.parts
        if isinstance(p, dict) and p.get("type") == "tool_call" and p.get("id")
    }
    turns: list[dict[str, Any]] = []
    for message in messages:
        if not turns or _opens_turn(message):
            number = sum(1 for turn in turns if turn["number"]) + 1 if _opens_turn(message) else 0
            turns.append({"number": number, "label": f"Turn {number}" if number else "Before the first turn",
                          "messages": []})  # fmt: skip
        turns[-1]["messages"].append(
            {
                "position": message.position,
                "role": message.role,
                "name": message.name,
                "parts": [_part(p, tools) for p in message.parts if isinstance(p, dict)],
            }
        )
    calls = sum(1 for m in messages for p in m.parts if isinstance(p, dict) and p.get("type") == "tool_call")
    shape = FORMAT_LABELS.get(messages[0].format, messages[0].format)
    return {"turns": turns, "count": len(messages), "tool_calls": calls, "format": shape}


def artifacts_context(run: Run | None) -> list[dict[str, Any]]:
    """Context of ``runs_app/run_artifacts.html``: each artifact with the address of its isolated content, and a
    text artifact's beginning (the template escapes it)."""
    if run is None:
        return []
    rows = []
    for artifact in run.artifacts.order_by("name"):
        text = artifact.content if artifact.kind == Artifact.Kind.TEXT else ""
        rows.append(
            {
                "id": artifact.pk,
                "name": artifact.name,
                "kind": artifact.kind,
                "size": artifact.size,
                "raw_url": reverse("runs:artifact_raw", args=[artifact.pk]),
                "preview": text[:PREVIEW_CHARS],
                "cut": len(text) > PREVIEW_CHARS,
                "sandbox": FRAME_SANDBOX,
            }
        )
    return rows


def trace_logs_context(run: Run | None) -> list[dict[str, Any]]:
    """Context of ``runs_app/run_trace_logs.html``: each turn's trace log with its outcome (a failed one opened),
    its beginning shown escaped; the admin's viewer has the whole of a long one."""
    if run is None:
        return []
    return [
        {
            "id": log.pk,
            "turn": log.turn_number,
            "file_path": log.file_path,
            "outcome": log.outcome or "none",
            "label": {"success": "SUCCESS", "failed": "FAILED"}.get(log.outcome, "no footer"),
            "preview": log.content[:PREVIEW_CHARS],
            "cut": len(log.content) > PREVIEW_CHARS,
            "admin_url": reverse("admin:runs_app_tracelog_change", args=[log.pk]),
        }
        for log in TraceLog.objects.filter(run=run).order_by("turn_number", "id")
    ]


def artifact_response(artifact: Artifact) -> HttpResponse:
    """An artifact's content as the frame loads it: HTML or plain text under a CSP that runs nothing and loads
    nothing, never sniffed as anything else, never cached for another user."""
    kind = "text/html" if artifact.kind == Artifact.Kind.HTML else "text/plain"
    response = HttpResponse(artifact.content, content_type=f"{kind}; charset=utf-8")
    response["Content-Security-Policy"] = ARTIFACT_CSP
    response["X-Content-Type-Options"] = "nosniff"
    response["Referrer-Policy"] = "no-referrer"
    response["Cross-Origin-Resource-Policy"] = "same-origin"
    response["Cache-Control"] = "private, no-cache"
    return response
