"""The panels of a run page's turn card, from recorded events: the timeline rows, the request as sent, the answer,
the stream viewer's blocks and the scenario's expectations beside what came."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from harnessweb.engine import asked, respond, routes, wire
from harnessweb.engine.expectations import expectations, mcp_call_expectations
from harnessweb.engine.pricing import Cost, describe_cost
from harnessweb.engine.schemas import Scenario as ScenarioSchema
from harnessweb.engine.schemas import ScenarioTurn
from harnessweb.engine.wire import gemini_live, realtime
from harnessweb.engine.wire.common import WireError
from harnessweb.text import plural, pretty_json
from runs_app.live.resilience import describe, format_ms
from runs_app.live.worddiff import closest_passage, sides, word_diff
from runs_app.models import KeptAnswer, Run, RunEvent
from scenarios_app.models import Scenario

EVENT_LOOK = {
    # kind: (label, icon, tone)
    "request": ("Request", "→", "info"),
    "match": ("Matched", "≡", "info"),
    "validation": ("Validation", "✓", "ok"),
    "failure_injected": ("Injected failure", "⚡", "warn"),
    "response": ("Response", "←", "ok"),
    "rejected": ("Rejected", "✖", "bad"),
    "client_disconnected": ("Client disconnected", "⏏", "warn"),
    "message": ("Message", "⇄", "info"),  # a socket's client message that asked for no response
    "mcp_session": ("MCP session", "⇄", "info"),
    "mcp_call": ("MCP tool call", "⚙", "info"),
    "mcp_result": ("MCP tool answer", "↩", "ok"),
}


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _offset(event: RunEvent, start: datetime | None) -> str:
    if start is None:
        return ""
    return "+" + format_ms(max(0.0, (event.timestamp - start).total_seconds() * 1000))


def _event_summary(event: RunEvent) -> tuple[str, str, str]:
    """One line about an event, and its icon and tone (validation failures and injected failures stand out)."""
    label, icon, tone = EVENT_LOOK.get(event.kind, (event.kind, "•", "info"))
    data = event.data or {}
    if event.kind == "request":
        body = data.get("body") if isinstance(data.get("body"), dict) else {}
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        tools = body.get("tools") if isinstance(body.get("tools"), list) else []
        stream = "streaming" if body.get("stream") else "not streaming"
        counts = f"{plural(len(messages), 'message')} · {plural(len(tools), 'tool')}"
        return f"{data.get('method', 'POST')} {data.get('path', '')} · {stream} · {counts}", icon, tone
    if event.kind == "match":
        scenario = data.get("scenario") or "no scenario"
        return f"{data.get('mode', '')} · {scenario} · turn {data.get('turn', event.turn)}", icon, tone
    if event.kind == "validation":
        if data.get("ok", True):
            return "Expectations met", icon, tone
        return f"Validation failed: {data.get('problem', '')}", "✖", "bad"
    if event.kind == "failure_injected":
        advice = f" · Retry-After {format_ms(data['retry_after_ms'])}" if data.get("retry_after_ms") is not None else ""
        retryable = "" if data.get("retryable", True) else " · not retryable"
        if isinstance(limit := data.get("rate_limit"), dict):  # the key's budget spent (engine/ratelimit.py)
            window = limit.get("window_s")
            window = f"{window:g}" if isinstance(window, int | float) else window
            where = f"rate limit · {limit.get('requests')} requests per {window} s spent"
            return f"{data.get('status', '')} ({where}): {data.get('message', '')}{advice}", icon, tone
        if data.get("chaos"):  # drawn at random: the seed (and request number) reproduce it
            where = f"chaos · seed {data.get('seed')} · request {data.get('ordinal', 0) + 1}"
            return f"{data.get('status', '')} ({where}): {data.get('message', '')}{advice}{retryable}", icon, tone
        return (
            f"{data.get('status', '')} (failure {data.get('attempt', '?')} of {data.get('of', '?')}): "
            f"{data.get('message', '')}{advice}{retryable}",
            icon,
            tone,
        )
    if event.kind == "response":
        timing = f"TTFB {format_ms(data.get('ttfb_ms'))} · {format_ms(data.get('duration_ms'))}"
        if data.get("failure"):
            if data.get("dropped"):
                return f"Connection dropped mid-response ({data['failure']}) · {timing}", "✂", "bad"
            return f"HTTP {data.get('status')} ({data['failure']}) · {timing}", "✖", "bad"
        return (
            f"HTTP {data.get('status', 200)} · finish {data.get('finish_reason', '')} · "
            f"{plural(data.get('chunks') or 0, 'chunk')} · {timing}",
            icon,
            tone,
        )
    if event.kind == "rejected":
        return f"HTTP {data.get('status')}: {data.get('message', '')}", icon, tone
    if event.kind == "client_disconnected":
        return f"after {format_ms(data.get('after_ms'))}", icon, tone
    if event.kind.startswith("mcp_"):
        return _mcp_summary(event.kind, data, icon, tone)
    return _compact(data)[:200], icon, tone


def _mcp_summary(kind: str, data: dict[str, Any], icon: str, tone: str) -> tuple[str, str, str]:
    """An MCP event in one line: the session opened, the tool called with its arguments, or its answer."""
    where = f"{data.get('server', '')} · {data.get('tool', '')}"
    if kind == "mcp_session":
        client = data.get("client") if isinstance(data.get("client"), dict) else {}
        version = data.get("protocol_version", "")
        return f"{data.get('server', '')} · {client.get('name', 'client')} · {version}", icon, tone
    if kind == "mcp_call":
        undeclared = "" if data.get("declared", True) else " · not declared"
        return f"{where} {_compact(data.get('arguments') or {})[:160]}{undeclared}", icon, tone
    if data.get("problem"):
        return f"{where}: {data['problem']}", "✖", "bad"
    error = data.get("error") if isinstance(data.get("error"), dict) else None
    if error:
        return f"{where} · JSON-RPC error {error.get('code')}: {error.get('message', '')}", "✖", "bad"
    content = (data.get("result") or {}).get("content") or []
    text = " ".join(str(c.get("text", c.get("type", ""))) for c in content if isinstance(c, dict))
    if data.get("is_error"):
        return f"{where} · tool error: {text[:160]}", "⚠", "warn"
    answer = "no scripted answer" if data.get("answer") is None else f"answer {data['answer'] + 1}"
    return f"{where} · {answer}: {text[:160]}", icon, tone


def event_row(event: RunEvent, start: datetime | None) -> dict[str, Any]:
    """One line of a turn's timeline, with the event's data as JSON to unfold."""
    summary, icon, tone = _event_summary(event)
    return {
        "seq": event.seq,
        "kind": event.kind,
        "label": EVENT_LOOK.get(event.kind, (event.kind,))[0],
        "icon": icon,
        "tone": tone,
        "summary": summary,
        "offset": _offset(event, start),
        "timestamp": event.timestamp,
        "json": pretty_json(event.data),
    }


def _parts(content: Any) -> list[dict[str, str]]:
    """A message's content as displayable parts, whatever the protocol's shape (string, list of typed parts)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"kind": "text", "title": "", "text": content}]
    if not isinstance(content, list):
        return [{"kind": "other", "title": "", "text": pretty_json(content)}]
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
            parts.append({"kind": "text", "title": "", "text": part["text"]})
        elif kind == "tool_use":
            parts.append(
                {"kind": "tool_call", "title": str(part.get("name", "")), "text": pretty_json(part.get("input"))}
            )
        elif kind == "tool_result":
            inner = part.get("content")
            text = inner if isinstance(inner, str) else "\n".join(p["text"] for p in _parts(inner))
            parts.append({"kind": "tool_result", "title": str(part.get("tool_use_id", "")), "text": text})
        elif kind == "thinking":
            parts.append({"kind": "reasoning", "title": "thinking", "text": str(part.get("thinking", ""))})
        elif kind == "redacted_thinking":
            parts.append({"kind": "reasoning", "title": "redacted thinking", "text": "…"})
        else:
            parts.append({"kind": "other", "title": str(kind or ""), "text": pretty_json(part)})
    return parts


def _arguments(raw: Any) -> str:
    """Tool-call arguments pretty-printed when they are JSON text, as sent otherwise."""
    if isinstance(raw, str):
        try:
            return pretty_json(json.loads(raw))
        except ValueError:
            return raw
    return pretty_json(raw)


def _message(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {"role": "?", "parts": [{"kind": "other", "title": "", "text": pretty_json(raw)}]}
    kind = raw.get("type")
    # Responses API input items that are not messages: an earlier answer's function call, a tool's output.
    if kind == "function_call":
        call = {"kind": "tool_call", "title": str(raw.get("name", "")), "text": _arguments(raw.get("arguments"))}
        return {"role": "assistant", "parts": [call]}
    if kind == "function_call_output":
        output = raw.get("output")
        text = output if isinstance(output, str) else "\n".join(p["text"] for p in _parts(output))
        return {"role": "tool", "parts": [{"kind": "tool_result", "title": str(raw.get("call_id", "")), "text": text}]}
    if kind not in (None, "message"):
        return {
            "role": str(raw.get("role", "assistant")),
            "parts": [{"kind": "other", "title": str(kind), "text": pretty_json(raw)}],
        }
    parts = _parts(raw.get("content"))
    if isinstance(raw.get("tool_plan"), str) and raw["tool_plan"]:  # Cohere: the text before its tool calls
        parts.insert(0, {"kind": "text", "title": "tool plan", "text": raw["tool_plan"]})
    calls = raw.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            title = str(function.get("name", ""))
            parts.append({"kind": "tool_call", "title": title, "text": _arguments(function.get("arguments"))})
    role = str(raw.get("role", "?"))
    if role == "tool" and raw.get("tool_call_id"):
        parts = [{**p, "title": p["title"] or str(raw["tool_call_id"])} for p in parts]
    return {"role": role, "parts": parts}


def _gemini_content(content: Any) -> Any:
    """A Gemini ``content`` ({role, parts}) in the shape :func:`_message` reads (typed content parts)."""
    if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
        return content
    parts = []
    for part in content["parts"]:
        if not isinstance(part, dict):
            parts.append(part)
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            parts.append({"type": "tool_use", "name": call.get("name", ""), "input": call.get("args")})
        elif isinstance(part.get("functionResponse"), dict):
            answer = part["functionResponse"]
            parts.append(
                {
                    "type": "tool_result",
                    "tool_use_id": answer.get("name", ""),
                    "content": pretty_json(answer.get("response")),
                }
            )
        elif part.get("thought"):
            parts.append({"type": "thinking", "thinking": part.get("text", "")})
        else:
            parts.append({"type": "text", "text": part.get("text", "")})
    role = {"model": "assistant"}.get(content.get("role", "user"), content.get("role", "user"))
    return {"role": role, "content": parts}


def _converse_block(raw: Any) -> Any:
    """A Bedrock Converse content block (keyed by its kind: ``text``, ``toolUse``…) as a typed part."""
    if not isinstance(raw, dict):
        return raw
    if isinstance(raw.get("text"), str):
        return {"type": "text", "text": raw["text"]}
    if isinstance(raw.get("toolUse"), dict):
        return {"type": "tool_use", "name": raw["toolUse"].get("name", ""), "input": raw["toolUse"].get("input")}
    if isinstance(raw.get("toolResult"), dict):
        result = raw["toolResult"]
        parts = [p for p in result.get("content") or [] if isinstance(p, dict)]
        content = [_converse_block(p if "text" in p else {"text": pretty_json(p.get("json"))}) for p in parts]
        return {"type": "tool_result", "tool_use_id": result.get("toolUseId", ""), "content": content}
    reasoning = raw.get("reasoningContent")
    if isinstance(reasoning, dict):
        text = (reasoning.get("reasoningText") or {}).get("text")
        return {"type": "thinking", "thinking": text} if isinstance(text, str) else {"type": "redacted_thinking"}
    return raw


def _converse_view(body: dict[str, Any]) -> dict[str, Any]:
    """A Converse body's messages, system prompt and tools in the shapes the panel reads."""
    messages = [
        {**m, "content": [_converse_block(b) for b in m.get("content") or []]} if isinstance(m, dict) else m
        for m in body.get("messages") or []
    ]
    system = [_converse_block(b) for b in body.get("system") or [] if isinstance(b, dict) and "text" in b]
    config = body.get("toolConfig") if isinstance(body.get("toolConfig"), dict) else {}
    specs = [t["toolSpec"] for t in config.get("tools") or [] if isinstance(t, dict) and "toolSpec" in t]
    tools = [{**s, "input_schema": (s.get("inputSchema") or {}).get("json")} for s in specs if isinstance(s, dict)]
    return {"messages": messages, "system": system, "tools": tools}


def _tools(body: dict[str, Any]) -> list[dict[str, str]]:
    tools = []
    raw_tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    # Gemini groups its functions under functionDeclarations.
    raw_tools = [d for t in raw_tools for d in (t.get("functionDeclarations") or [t]) if isinstance(d, dict)]
    for raw in raw_tools:
        spec = raw.get("function") if isinstance(raw.get("function"), dict) else raw  # Chat Completions nests it
        schema = spec.get("parameters", spec.get("input_schema"))
        tools.append(
            {
                "name": str(spec.get("name", "")),
                "description": str(spec.get("description", "") or ""),
                "schema": pretty_json(schema) if schema is not None else "",
            }
        )
    return tools


def _wire_for(path: str) -> ModuleType:
    if path == realtime.PATH or gemini_live.is_live_path(path):  # a socket's session, as its turns recorded it
        return realtime if path == realtime.PATH else gemini_live
    return routes.play_wire(path) or wire.openai


def request_panel(event: RunEvent) -> dict[str, Any]:
    """The request of a turn as sent: parameters, system prompt, messages and tools, plus the raw body."""
    data = event.data or {}
    body = sent = data.get("body") if isinstance(data.get("body"), dict) else {}
    if _wire_for(str(data.get("path", ""))) is wire.bedrock:  # Converse keys each block by its kind: typed here
        body = {**body, **_converse_view(body)}
    raw_messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    # The Responses API sends ``input`` (a string or items), legacy completions a ``prompt``, Gemini ``contents``.
    if isinstance(body.get("contents"), list):
        raw_messages = [_gemini_content(c) for c in body["contents"]]
    conversation = body.get("input", body.get("prompt"))
    if isinstance(conversation, str):
        raw_messages = [{"role": "user", "content": conversation}]
    elif isinstance(conversation, list) and not raw_messages:
        raw_messages = (
            conversation
            if all(isinstance(m, dict) for m in conversation)
            else [{"role": "user", "content": conversation}]
        )
    messages = [_message(m) for m in raw_messages]
    # Anthropic keeps the system prompt beside the messages, the Responses API in ``instructions``.
    for key in ("system", "instructions"):
        if body.get(key):
            messages.insert(0, {"role": "system", "parts": _parts(body[key])})
    gemini_system = body.get("systemInstruction") or body.get("system_instruction")
    if isinstance(gemini_system, dict):
        messages.insert(0, _message(_gemini_content({**gemini_system, "role": "system"})))
    skip = {"messages", "tools", "system", "input", "prompt", "instructions", "contents", "systemInstruction"}
    key = data.get("key") if isinstance(data.get("key"), dict) else None
    return {
        "seq": event.seq,
        "path": data.get("path", ""),
        "key": f"{key.get('place', '')}, fingerprint {key.get('fingerprint', '')}" if key else "none",
        "key_fingerprint": str(key.get("fingerprint") or "") if key else "",  # links to the runs of that key
        "params": [{"name": k, "value": _compact(v)} for k, v in body.items() if k not in skip],
        "messages": messages,
        "tools": _tools(body),
        "json": pretty_json(sent),
        "headers": pretty_json(data.get("headers") or {}),
    }


def stream_blocks(data: dict[str, Any]) -> list[dict[str, str]]:
    """A recorded response as the stream viewer shows it: reasoning, text, then each tool call with its arguments."""
    blocks = []
    if data.get("reasoning"):
        blocks.append({"kind": "reasoning", "name": "", "text": data["reasoning"]})
    if data.get("text"):
        blocks.append({"kind": "text", "name": "", "text": data["text"]})
    for call in data.get("tool_calls") or []:
        if isinstance(call, dict):
            blocks.append(
                {"kind": "tool_call", "name": str(call.get("name", "")), "text": str(call.get("arguments", ""))}
            )
    return blocks


def response_panel(event: RunEvent, costs: Mapping[int, Cost] | None = None) -> dict[str, Any]:
    """A turn's latest answer: status, timings, finish reason, usage, its cost (from ``costs``, by seq), tool calls
    and the recorded summary."""
    data = event.data or {}
    cost = (costs or {}).get(event.seq)
    if event.kind == "rejected":
        return {"seq": event.seq, "rejected": True, "status": data.get("status"), "message": data.get("message", "")}
    calls = [
        {"id": c.get("id", ""), "name": c.get("name", ""), "arguments": _arguments(c.get("arguments"))}
        for c in data.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return {
        "seq": event.seq,
        "failure": data.get("failure", ""),
        "described": describe(str(data.get("failure", ""))),
        "dropped": bool(data.get("dropped")),
        "status": data.get("status"),
        "stream": data.get("stream"),
        "finish_reason": data.get("finish_reason", ""),
        "chunks": data.get("chunks"),
        "ttfb": format_ms(data.get("ttfb_ms")),
        "duration": format_ms(data.get("duration_ms")),
        "usage": [{"name": k, "value": v} for k, v in usage.items()],
        "cost": describe_cost(cost) if cost else "",
        "cost_known": bool(cost and cost.usd is not None),
        "cost_source": cost.price.source if cost and cost.price and cost.usd is not None else "",
        "tool_calls": calls,
        "json": pretty_json(data),
    }


def expectation_rows(scenario: ScenarioSchema, step: ScenarioTurn | None, request: RunEvent) -> list[dict[str, Any]]:
    """What the scenario expects of this turn's request beside what the request carried, one row per expectation
    (the engine's own checks, so the page and the run's verdict never disagree)."""
    data = request.data or {}
    played = _wire_for(data.get("path", ""))
    try:
        sent = played.parse_request(data.get("body"))
    except WireError as exc:
        return [{"what": "Request", "expected": "a valid request", "actual": exc.message, "ok": False}]
    # What the request demanded (a required tool, a structured output's schema), as the engine read it.
    sent = replace(sent, **asked.demands(data["body"], sent.tools))
    if sent.continues:  # the conversation the engine read: the kept one it continues, then the request's own
        kept = KeptAnswer.objects.filter(id=sent.continues, protocol=played.PROTOCOL).values_list("conversation")
        sent = respond.continued(played, sent, kept[0][0]) if kept else sent
    key = data.get("key") if isinstance(data.get("key"), dict) else {}
    sent = replace(sent, key_place=str(key.get("place", "")), key_fingerprint=str(key.get("fingerprint", "")))
    rows = [vars(row) for row in expectations(scenario, step, sent)]
    for row in rows:
        # A missing fragment beside what the system prompt says in its place, word by word.
        passage = closest_passage(sent.system, row["expected"]) if row["what"] == "System prompt includes" else ""
        if not row["ok"] and passage:
            row["diff"] = sides(word_diff(row["expected"], passage))
    return rows


def expectations_panel(run: Run, turn: int, request: RunEvent | None, stored: Scenario | None) -> dict[str, Any] | None:
    """The scenario's expectations for a turn, read from the scenario as stored now (saying if it changed since)."""
    if not run.scenario_id or request is None:
        return None
    if stored is None:
        return {"missing": True, "scenario_id": run.scenario_id, "rows": []}
    try:
        scenario = stored.to_schema()
    except ValidationError:  # only reachable by editing the table by hand; the page must still show the run
        return {"missing": True, "scenario_id": run.scenario_id, "rows": []}
    step = scenario.turn(turn)
    return {
        "missing": False,
        "scenario_id": run.scenario_id,
        "changed": stored.updated_at > run.started_at,
        "updated_at": stored.updated_at,
        "revision": stored.revision,
        "no_turn": step is None,
        "rows": expectation_rows(scenario, step, request) + mcp_call_rows(run, scenario, turn),
    }


def mcp_call_rows(run: Run, scenario: ScenarioSchema, turn: int) -> list[dict[str, Any]]:
    """The tool calls the scenario expects of its agent (``mcp.expect_calls``) beside the calls the run recorded,
    on its last turn's card (the calls come between the model's turns)."""
    if scenario.mcp is None or not scenario.mcp.expect_calls or turn != scenario.last_turn:
        return []
    recorded = RunEvent.objects.filter(run=run, kind="mcp_call").order_by("seq").values_list("data", flat=True)
    calls = [(str(d.get("server", "")), str(d.get("tool", "")), d.get("arguments") or {}) for d in recorded]
    return [vars(row) for row in mcp_call_expectations(scenario.mcp, calls)]
