"""Cassettes read as streams: each interaction's response bytes and its StreamSummary, and a cassette converted into
an editable scenario (its turns' text, tool calls and thinking with signatures; its errors as failure settings).

Pure: works on the cassette's JSON (``{version, test_name, recorded_at, interactions}``, validated beforehand by
``runs_app.ci.cassettes.CassetteFile``), no Django; the scenario it builds validates with the engine's schema.
"""

from __future__ import annotations

import base64
import json
import math
import re
from typing import Any
from urllib.parse import urlsplit

from harnessweb.engine import routes, schemas
from harnessweb.engine.stream_summary import StreamSummary, summarize
from harnessweb.engine.wire import BY_NAME
from harnessweb.engine.wire.common import WireError

# The failure kind a recorded error status plays back as; any other status is a model_error with that status.
KIND_OF_STATUS = {
    400: "bad_request",
    401: "auth_error",
    403: "permission_error",
    404: "not_found",
    413: "request_too_large",
    429: "rate_limit",
    500: "server_error",
    502: "bad_gateway",
    503: "unavailable",
    529: "overloaded",
}
# What a broken 200 (its summary's stream error) plays back as.
BROKEN_KINDS = (
    ("invalid JSON", "invalid_json_in_stream"),
    ("the body is not JSON", "invalid_json_in_stream"),
    ("invalid UTF-8", "invalid_utf8"),
    ("protocol error: missing", "missing_content_type"),
    ("protocol error: unexpected", "wrong_content_type"),
)


class NothingToConvert(ValueError):
    """The cassette holds no interaction on a protocol the harness serves."""


def response_body(response: dict[str, Any]) -> bytes:
    """A recorded response's body: its chunks joined (base64 ones decoded)."""
    if response.get("body_chunks_base64") is not None:
        return b"".join(base64.b64decode(chunk) for chunk in response["body_chunks_base64"])
    return "".join(response.get("body_chunks") or []).encode("utf-8")


def protocol_of(request: dict[str, Any]) -> str:
    """The protocol a recorded request speaks, from its URL's path (Azure's deployments path is Chat Completions);
    ``""`` for one the harness does not serve."""
    path = urlsplit(str(request.get("url") or "")).path.rstrip("/")
    wire = routes.play_wire(path) or routes.play_wire(re.sub(r"^.*?(/v1(?:beta)?/)", r"\1", path))
    if wire is not None:
        return wire.PROTOCOL
    if path.endswith("/chat/completions"):
        return "openai"
    return ""


def summarize_interaction(interaction: dict[str, Any]) -> StreamSummary:
    """The StreamSummary of one recorded response, from its bytes."""
    response = interaction["response"]
    headers = [(str(name), str(value)) for name, value in response.get("headers") or []]
    protocol = protocol_of(interaction.get("request") or {})
    return summarize(response_body(response), status=int(response["status"]), headers=headers, protocol=protocol)


def cassette_summaries(data: dict[str, Any]) -> list[StreamSummary]:
    """One StreamSummary per interaction, in order."""
    return [summarize_interaction(interaction) for interaction in data.get("interactions") or []]


# ---------------------------------------------------------------------------------------------------------------
# A cassette → a scenario


def scenario_id_for(name: str) -> str:
    """A scenario id from a cassette's name (its file name without ``.json``), as the schema allows ids."""
    stem = re.sub(r"\.json$", "", name.strip(), flags=re.IGNORECASE)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).lstrip("._-")[:100]
    return slug or "cassette"


def _turn_of(protocol: str, request: dict[str, Any]) -> int:
    """The turn a recorded request asks for (assistant messages + 1), read by the protocol's own parser."""
    body = request.get("body")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            body = None
    try:
        return BY_NAME[protocol].parse_request(body).turn
    except (WireError, KeyError, TypeError, AttributeError, ValueError):
        # A body the provider refused (the recorded 400s): count the assistant messages by hand.
        messages = []
        if isinstance(body, dict):
            messages = body.get("messages") or body.get("contents") or body.get("input") or []
        roles = [m.get("role") for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
        return sum(1 for role in roles if role in ("assistant", "model")) + 1


def _header(headers: list[Any], name: str) -> str | None:
    return next((str(value) for key, value in headers or [] if str(key).lower() == name), None)


def retry_after_ms(headers: list[Any]) -> int | None:
    """The wait a recorded error asks for: ``retry-after-ms``, else ``Retry-After`` in seconds (an HTTP date is
    not a wait a scenario can replay)."""
    for name, scale in (("retry-after-ms", 1), ("retry-after", 1000)):
        value = _header(headers, name)
        if value is None:
            continue
        try:
            wait = float(value.strip())
        except ValueError:
            continue
        if math.isfinite(wait) and wait >= 0:
            return min(600_000, math.ceil(wait * scale))
    return None


def _error_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except ValueError:
        return {}
    if isinstance(payload, list) and payload:
        payload = payload[0]
    error = payload.get("error") if isinstance(payload, dict) else None
    return dict(error) if isinstance(error, dict) else {}


def failure_settings(interaction: dict[str, Any], summary: StreamSummary) -> dict[str, Any]:
    """A failing interaction as a turn's failure settings: its kind, status, message, retry wait and error fields."""
    response = interaction["response"]
    status, headers = int(response["status"]), response.get("headers") or []
    if status < 400:  # a 200 whose body is broken
        error = summary.stream_error or ""
        kind = next((k for prefix, k in BROKEN_KINDS if error.startswith(prefix)), "truncated_stream")
        return {"failure_status": kind}
    kind = KIND_OF_STATUS.get(status, "model_error")
    settings: dict[str, Any] = {"failure_status": kind}
    if kind == "model_error":
        settings["failure_http_status"] = status
    error = _error_object(response_body(response))
    message = error.pop("message", None) or (summary.error.message if summary.error else "")
    if message:
        settings["failure_message"] = str(message)
    # The recorded error's other fields (OpenAI's type and code, Gemini's status…) are merged back on replay.
    extra = {key: value for key, value in error.items() if key not in ("code",) or isinstance(value, str)}
    if extra:
        settings["failure_error"] = extra
    wait = retry_after_ms(headers)
    if wait is not None:
        settings["failure_retry_after_ms"] = wait
    should_retry = (_header(headers, "x-should-retry") or "").strip().lower()
    if should_retry in ("true", "false"):
        settings["failure_retryable"] = should_retry == "true"
    else:
        settings["failure_retryable"] = status in (408, 409, 429) or status >= 500
    return settings


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {"value": value}


def _usage(usage: dict[str, Any] | None) -> dict[str, int] | None:
    """The recorded usage in the scenario's names (each protocol names its counts its own way)."""
    if not usage:
        return None
    names = {
        "input_tokens": ("input_tokens", "prompt_tokens", "promptTokenCount"),
        "output_tokens": ("output_tokens", "completion_tokens", "candidatesTokenCount"),
        "total_tokens": ("total_tokens", "totalTokenCount"),
    }
    found = {}
    for ours, theirs in names.items():
        value = next((usage[name] for name in theirs if isinstance(usage.get(name), int)), None)
        if value is not None and value >= 0:
            found[ours] = value
    return found or None


def response_of(summary: StreamSummary) -> dict[str, Any]:
    """A recorded answer as a scenario response: text, or tool calls (with the text before them), and its thinking
    blocks with their signatures (redacted thinking as its data)."""
    reasoning = []
    for block in summary.thinking_blocks:
        entry: dict[str, Any] = {"text": block.text}
        if block.signature:
            entry["signature"] = block.signature
        if block.redacted_data:
            entry["redacted_data"] = block.redacted_data
        reasoning.append(entry)
    response: dict[str, Any] = {"kind": "text", "assistant_text": summary.text}
    if summary.tool_calls:
        calls = []
        for call in summary.tool_calls:
            spec: dict[str, Any] = {"tool_name": call.name or "tool", "arguments": _arguments(call.arguments)}
            if call.id:
                spec["call_id"] = call.id
            calls.append(spec)
        response = {"kind": "tool-call", "tool_calls": calls}
        if summary.text:
            response["assistant_text"] = summary.text
    if reasoning:
        response["reasoning"] = reasoning
    return response


def _failed(summary: StreamSummary) -> bool:
    return summary.status >= 400 or summary.stream_error is not None or not summary.has_done


def scenario_from_cassette(
    data: dict[str, Any], name: str, scenario_id: str | None = None, provider: str = ""
) -> schemas.Scenario:
    """The cassette as a scenario: each interaction read into the turn its request asks for; a turn's failing
    interactions before its first answer become ``failures_before_success`` with the first failure's settings
    (``always`` when no answer follows); later repeats of an answered turn are left out.

    Raises :class:`NothingToConvert` when no interaction speaks a protocol the harness serves.
    """
    turns: dict[int, dict[str, Any]] = {}
    notes: list[str] = []
    served = 0
    for index, interaction in enumerate(data.get("interactions") or []):
        request = interaction.get("request") or {}
        protocol = protocol_of(request)
        if not protocol:
            notes.append(f"interaction {index} ({request.get('method', '?')} {request.get('url', '?')}) skipped")
            continue
        served += 1
        summary = summarize_interaction(interaction)
        number = _turn_of(protocol, request)
        turn = turns.setdefault(number, {"failures": 0, "failure": None, "answer": None})
        if turn["answer"] is not None:
            continue  # a repeat of an answered turn (a recording made twice)
        if _failed(summary):
            turn["failures"] += 1
            if turn["failure"] is None:
                turn["failure"] = failure_settings(interaction, summary)
            if summary.status < 400:  # a broken body still carries what was streamed
                turn["partial"] = summary
            continue
        turn["answer"] = summary
    if not served:
        raise NothingToConvert(f"{name}: no interaction speaks a protocol the harness serves")
    scenario_turns = []
    for number, turn in sorted(turns.items()):
        summary = turn["answer"] or turn.get("partial")
        item: dict[str, Any] = {"turn": number}
        item["response"] = response_of(summary) if summary else {"kind": "text", "assistant_text": ""}
        if summary is not None:
            usage = _usage(summary.usage)
            if usage:
                item["usage"] = usage
            if summary.stop_reason == "length":
                item["finish_reason"] = "length"
        if turn["failure"] is not None:
            item.update(turn["failure"])
            item["failures_before_success"] = turn["failures"] if turn["answer"] is not None else "always"
        scenario_turns.append(item)
    provider = provider or re.sub(r"^verify_", "", name).split("_")[0].lower()  # the registry's, else a guess
    description = f"Imported from the cassette {name}" + (f" ({'; '.join(notes)})" if notes else "")
    return schemas.Scenario.model_validate(
        {
            "id": scenario_id or scenario_id_for(name),
            "description": description[:2000],
            "tags": ["cassette", *([provider] if provider else [])],
            "turns": scenario_turns,
        }
    )
