"""A form state mapped both ways onto the pydantic scenario: :func:`state_to_data` gives the dict the model
validates (plus the JSON syntax errors of the fields edited as JSON text), :func:`scenario_to_state` the way back,
:func:`error_field` puts a pydantic error location on the field that caused it, and :func:`validate_state` does
the whole round. Pure: no Django, no database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from harnessweb.engine.schemas import Scenario, ScenarioTurn, TextResponse
from harnessweb.text import pretty_json
from scenarios_app.editor.fields import (
    ALL,
    KEPT,
    KINDS,
    MATCH_FIELDS,
    MULTILINE_FIELDS,
    PACING_FIELDS,
    SCOPE_FIELDS,
    USAGE_FIELDS,
    Errors,
    FormState,
    flatten,
    parse_form,
    walk_fields,
)
from scenarios_app.editor.kept import (
    REASONING_SHOWN,
    RESPONSE,
    RESPONSE_SHOWN,
    SCENARIO_SHOWN,
    TURN_SHOWN,
    overlay,
    read_kept,
    scenario_kept,
    segment_kept,
    turn_kept,
)


def split_list(text: str) -> list[str]:
    """A comma-separated list (tags, tool names): items trimmed, empty ones dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def split_lines(text: str) -> list[str]:
    """One item per line (system prompt fragments, which may hold commas): kept as typed, empty lines dropped."""
    return [line for line in text.split("\n") if line.strip()]


_JSON_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")


def _number_or_text(value: str) -> Any:
    """A typed number as a number (so the raw tab shows 0.2, not "0.2"); anything else as the text itself, for the
    model to refuse with its own message."""
    text = value.strip()
    if _JSON_NUMBER.fullmatch(text):
        return json.loads(text)
    return value


def _put(target: dict[str, Any], key: str, value: str, number: bool = False) -> None:
    """Set ``key`` unless the field was left empty: the model then applies its default (or says it is required)."""
    if value.strip() != "":
        target[key] = _number_or_text(value) if number else value


def _json(value: str, name: str, errors: Errors) -> Any:
    """The parsed JSON of a field, or the text itself with a syntax error recorded under the field's name (the raw
    tab then still shows what was typed)."""
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        errors.setdefault(name, []).append(f"Invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
        return value


def _turn_to_data(turn: dict[str, Any], i: int, errors: Errors) -> dict[str, Any]:
    p = f"turns-{i}-"
    kind = turn["kind"]
    response: dict[str, Any] = {"kind": kind}
    reasoning = []
    for j, segment in enumerate(turn["reasoning"]):
        item = {"text": segment["text"]}
        _put(item, "signature", segment["signature"])
        kept_item = read_kept(segment.get(KEPT, ""), f"{p}reasoning-{j}", errors)
        reasoning.append(overlay(kept_item, item, REASONING_SHOWN))
    if kind == "text":
        # Required for a text answer, and an empty answer is a valid one.
        response["assistant_text"] = turn["assistant_text"]
    elif kind != "structured":  # structured data is all a structured turn answers
        _put(response, "assistant_text", turn["assistant_text"])
    if kind == "tool-call":
        calls = []
        for j, call in enumerate(turn["tool_calls"]):
            item: dict[str, Any] = {"tool_name": call["tool_name"]}
            if call["arguments"].strip():
                item["arguments"] = _json(call["arguments"], f"{p}tool_calls-{j}-arguments", errors)
            _put(item, "call_id", call["call_id"])
            _put(item, "assistant_text", call["assistant_text"])
            calls.append(item)
        response["tool_calls"] = calls
    elif kind == "final-report":
        response["report_content"] = turn["report_content"]
        _put(response, "report_format", turn["report_format"])
        _put(response, "status", turn["status"])
        if turn["report_content_json"].strip():
            response["report_content_json"] = _json(turn["report_content_json"], f"{p}report_content_json", errors)
    elif kind == "structured" and turn["data"].strip():  # left empty: the model says it is required
        response["data"] = _json(turn["data"], f"{p}data", errors)
    response["reasoning"] = reasoning

    data: dict[str, Any] = {"response": response}
    _put(data, "turn", turn["turn"], number=True)
    data["expected_tools"] = split_list(turn["expected_tools"])
    data["allow_missing_tools"] = turn["allow_missing_tools"]
    if turn["ignore_tool_choice"]:
        data["ignore_tool_choice"] = True
    for name in ("expected_temperature", "expected_top_p", "failures_before_success"):
        _put(data, name, turn[name], number=True)
    _put(data, "expected_reasoning", turn["expected_reasoning"])
    expect: dict[str, Any] = {}
    _put(expect, "last_message_contains", turn["expect_last_message_contains"])
    _put(expect, "last_message_regex", turn["expect_last_message_regex"])
    if turn["expect_tool_calls_answered"]:
        expect["tool_calls_answered"] = True
    _put(expect, "min_earlier_messages", turn["expect_min_earlier_messages"], number=True)
    fragments = split_lines(turn["expect_system_prompt_must_include"])
    if fragments:
        expect["system_prompt_must_include"] = fragments
    if expect:  # a turn that checks nothing of the conversation has no block
        data["expect"] = expect
    _put(data, "failure_status", turn["failure_status"])
    if turn["failure_throws"]:
        data["failure_throws"] = True
    _put(data, "failure_message", turn["failure_message"])
    data["failure_retryable"] = turn["failure_retryable"]
    _put(data, "failure_retry_after_ms", turn["failure_retry_after_ms"], number=True)
    _put(data, "failure_http_status", turn["failure_http_status"], number=True)
    if turn["failure_error"].strip():
        data["failure_error"] = _json(turn["failure_error"], f"{p}failure_error", errors)
    scope = {f: split_list(turn[f"failure_scope_{f}"]) for f in SCOPE_FIELDS}
    if any(scope.values()):
        data["failure_scope"] = {f: items for f, items in scope.items() if items}
    usage: dict[str, Any] = {}
    for f in USAGE_FIELDS:
        _put(usage, f, turn["usage"][f], number=True)
    if usage:  # counts left empty are counted from the request and the answer
        data["usage"] = usage
    _put(data, "finish_reason", turn["finish_reason"])
    # What the card has no input for (audio, an image fixture, provider metadata…) comes back as it was stored.
    kept = read_kept(turn.get(KEPT, ""), f"turns-{i}", errors)
    kept_response = kept.get(RESPONSE)
    data["response"] = overlay(kept_response if isinstance(kept_response, dict) else {}, response, RESPONSE_SHOWN)
    return overlay(kept, data, TURN_SHOWN)


def state_to_data(state: FormState) -> tuple[dict[str, Any], Errors]:
    """The dict for the pydantic model, and the JSON syntax errors found on the way (keyed by field name).

    Fields of the response kinds a turn did not choose are left out, so a half-filled tool call under a text turn
    neither errs nor leaks into the data.
    """
    errors: Errors = {}
    data: dict[str, Any] = {
        "id": state["id"].strip(),
        "description": state["description"],
        "tags": split_list(state["tags"]),
        "system_prompt_must_include": split_lines(state["system_prompt_must_include"]),
    }
    if state["pacing_enabled"]:
        pacing: dict[str, Any] = {}
        for f in PACING_FIELDS:
            _put(pacing, f, state["pacing"][f], number=True)
        data["pacing"] = pacing
    if state["match_enabled"]:
        match: dict[str, Any] = {}
        for f in MATCH_FIELDS:
            if f == "tools_include":
                match[f] = split_list(state["match"][f])
            elif state["match"][f] != "":
                match[f] = state["match"][f]
        data["match"] = match
    _put(data, "priority", state["priority"], number=True)
    if state["expect_key_fingerprint"].strip() or state["expect_key_place"]:
        data["expect_key"] = {"fingerprint": state["expect_key_fingerprint"].strip()}
        _put(data["expect_key"], "place", state["expect_key_place"])
    data["turns"] = [_turn_to_data(turn, i, errors) for i, turn in enumerate(state["turns"])]
    return overlay(read_kept(state.get(KEPT, ""), ALL, errors), data, SCENARIO_SHOWN), errors


def _str(value: Any) -> str:
    """A number or text as the form shows it; None as an empty field. Floats keep their repr (0.2, not 0.20…)."""
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def blank_tool_call() -> dict[str, str]:
    """An empty tool call row, arguments ``{}``."""
    return {"tool_name": "", "call_id": "", "arguments": "{}", "assistant_text": ""}


def blank_reasoning() -> dict[str, str]:
    """An empty reasoning segment row."""
    return {"text": "", "signature": "", KEPT: ""}


def turn_to_state(turn: Mapping[str, Any]) -> dict[str, Any]:
    """One turn in canonical (snake_case) form as its card's form state."""
    response = turn.get("response") or {}
    kind = response.get("kind", "text")
    usage = turn.get("usage") or {}
    calls = [
        {
            "tool_name": _str(call.get("tool_name")),
            "call_id": _str(call.get("call_id")),
            "arguments": pretty_json(call.get("arguments", {})),
            "assistant_text": _str(call.get("assistant_text")),
        }
        for call in (response.get("tool_calls") or [])
    ]
    report_json = response.get("report_content_json")
    failure_error = turn.get("failure_error")
    scope = turn.get("failure_scope") or {}
    expect = turn.get("expect") or {}
    return {
        "turn": _str(turn.get("turn")),
        "kind": kind,
        "assistant_text": _str(response.get("assistant_text")),
        # A blank row is ready for a turn switched to tool-call; other kinds ignore it.
        "tool_calls": calls or [blank_tool_call()],
        "reasoning": [
            {"text": _str(s.get("text")), "signature": _str(s.get("signature")), KEPT: segment_kept(s)}
            for s in (response.get("reasoning") or [])
        ],
        "report_content": _str(response.get("report_content")),
        "report_format": _str(response.get("report_format", "markdown")),
        "report_content_json": "" if report_json is None else pretty_json(report_json),
        "status": _str(response.get("status", "success")),
        "data": "" if response.get("data") is None else pretty_json(response["data"]),
        "expected_tools": ", ".join(turn.get("expected_tools") or []),
        "allow_missing_tools": bool(turn.get("allow_missing_tools", False)),
        "ignore_tool_choice": bool(turn.get("ignore_tool_choice", False)),
        "expected_temperature": _str(turn.get("expected_temperature")),
        "expected_top_p": _str(turn.get("expected_top_p")),
        "expected_reasoning": _str(turn.get("expected_reasoning")),
        "expect_last_message_contains": _str(expect.get("last_message_contains")),
        "expect_last_message_regex": _str(expect.get("last_message_regex")),
        "expect_tool_calls_answered": bool(expect.get("tool_calls_answered", False)),
        "expect_min_earlier_messages": _str(expect.get("min_earlier_messages")),
        "expect_system_prompt_must_include": "\n".join(expect.get("system_prompt_must_include") or []),
        "failures_before_success": _str(turn.get("failures_before_success", 0)),
        "failure_status": _str(turn.get("failure_status", "model_error")),
        "failure_throws": bool(turn.get("failure_throws", False)),
        "failure_message": _str(turn.get("failure_message")),
        "failure_retryable": bool(turn.get("failure_retryable", True)),
        "failure_retry_after_ms": _str(turn.get("failure_retry_after_ms")),
        "failure_http_status": _str(turn.get("failure_http_status")),
        "failure_error": "" if failure_error is None else pretty_json(failure_error),
        **{f"failure_scope_{f}": ", ".join(scope.get(f) or []) for f in SCOPE_FIELDS},
        "usage": {f: _str(usage.get(f)) for f in USAGE_FIELDS},
        "finish_reason": _str(turn.get("finish_reason")),
        KEPT: turn_kept(turn),
    }


def scenario_to_state(data: Mapping[str, Any]) -> FormState:
    """A scenario in canonical form (``Scenario.canonical()``, or the stored ``data``) as the editor's state."""
    pacing = data.get("pacing")
    match = data.get("match")
    expect_key = data.get("expect_key") or {}
    return {
        "id": _str(data.get("id")),
        "description": _str(data.get("description")),
        "tags": ", ".join(data.get("tags") or []),
        "system_prompt_must_include": "\n".join(data.get("system_prompt_must_include") or []),
        "priority": _str(data.get("priority", 0)),
        "expect_key_fingerprint": _str(expect_key.get("fingerprint")),
        "expect_key_place": _str(expect_key.get("place")),
        KEPT: scenario_kept(data),
        "pacing_enabled": pacing is not None,
        "pacing": {
            "chunk_words": _str((pacing or {}).get("chunk_words", 5)),
            "interval_ms": _str((pacing or {}).get("interval_ms", 0)),
        },
        "match_enabled": match is not None,
        "match": {
            f: ", ".join((match or {}).get(f) or []) if f == "tools_include" else _str((match or {}).get(f))
            for f in MATCH_FIELDS
        },
        "turns": [turn_to_state(turn) for turn in data.get("turns") or []],
    }


def new_turn_data(number: int) -> dict[str, Any]:
    """A new turn with the model's defaults: a text answer still to be written."""
    return ScenarioTurn(turn=number, response=TextResponse(kind="text", assistant_text="")).model_dump(
        mode="json", exclude_none=True
    )


def new_scenario_state() -> FormState:
    """The form of a new scenario: no id yet and one empty text turn."""
    state = scenario_to_state(Scenario(id="new", turns=[new_turn_data(1)]).canonical())
    state["id"] = ""
    return state


def _has_provider_fields(data: Mapping[str, Any]) -> bool:
    """Whether a response or a reasoning entry holds provider metadata or redacted data, which the form has no
    fields for."""
    for turn in data.get("turns") or []:
        response = turn.get("response") or {}
        if "provider_metadata" in response:
            return True
        for segment in response.get("reasoning") or []:
            if "provider_metadata" in segment or "redacted_data" in segment:
                return True
    return False


def form_problem(data: Mapping[str, Any]) -> str:
    """Why the form cannot show this (valid, canonical) scenario without changing it, or "" when it can.

    One-line inputs lose line breaks and list fields re-split their items, so a scenario written elsewhere may hold
    values the form would silently alter; the editor keeps such a scenario on the raw tab instead.
    """
    if data.get("embeddings"):
        return "its embedding pins are edited on the raw tab"
    if data.get("cassette"):
        return "the cassette it replays is named on the raw tab"
    if data.get("require_key"):
        return "its key requirement (require_key) is set on the raw tab"
    if data.get("default_usage") is not None:
        return "its default usage (default_usage) is set on the raw tab"
    if data.get("mcp"):
        return "its MCP servers are edited on the raw tab"
    if data.get("batch"):
        return "its batch outcome (batch) is set on the raw tab"
    if _has_provider_fields(data):
        return "its provider metadata and redacted thinking are edited on the raw tab"
    state = scenario_to_state(data)
    for name, value in flatten(state).items():
        if ("\n" in value or "\r" in value) and name.rsplit("-", 1)[-1] not in MULTILINE_FIELDS:
            return f"{name} holds a line break, which a one-line field cannot keep"
    if "\r" in "".join(flatten(state).values()):
        return "a text holds a carriage return, which browsers rewrite"
    scenario, errors = validate_state(parse_form(flatten(state)))
    if scenario is None or scenario.canonical() != dict(data):
        return "a list item holds a comma or spaces around it, or an empty line, which the form would drop"
    return ""


def error_field(loc: tuple[Any, ...] | list[Any]) -> str:
    """The form field name for a pydantic error location.

    ``("turns", 0, "response", "tool-call", "tool_calls", 1, "arguments")`` → ``turns-0-tool_calls-1-arguments``:
    the response level and the union's kind tag are dropped (the form has one card per turn), list items of
    comma/line lists point at the list's field, and a location inside a JSON field points at that field.
    """
    parts = list(loc)
    if not parts:
        return ALL
    head = parts[0]
    if head in ("pacing", "match"):
        return f"{head}-{parts[1]}" if len(parts) > 1 else head
    if head == "expect_key":  # the fingerprint and the place, each a field of its own
        return f"expect_key_{parts[1]}" if len(parts) > 1 else "expect_key_fingerprint"
    if head != "turns":
        return str(head)
    if len(parts) < 2 or not isinstance(parts[1], int):
        return "turns"
    prefix = f"turns-{parts[1]}"
    rest = parts[2:]
    if not rest:
        return prefix
    if rest[0] == "response":
        rest = rest[1:]
        if rest and rest[0] in KINDS:
            rest = rest[1:]
        if not rest:
            return f"{prefix}-kind"  # no kind, or one the union does not know
    field = rest[0]
    if field in ("tool_calls", "reasoning") and len(rest) > 1 and isinstance(rest[1], int):
        return f"{prefix}-{field}-{rest[1]}" + (f"-{rest[2]}" if len(rest) > 2 else "")
    if field == "usage" and len(rest) > 1:
        return f"{prefix}-usage-{rest[1]}"
    if field == "failure_scope" and len(rest) > 1:  # a list item points at its list's comma-separated field
        return f"{prefix}-failure_scope_{rest[1]}"
    if field == "expect" and len(rest) > 1:  # the block's fields are the turn's expect_… fields
        return f"{prefix}-expect_{rest[1]}"
    return f"{prefix}-{field}"


def field_names(state: FormState) -> list[str]:
    """Every field and error slot the editor renders for ``state``, in page order."""
    return [name for name, _ in walk_fields(state)]


def _nearest(name: str, known: set[str]) -> str:
    """The slot for an error: the field itself, else the closest enclosing group (``turns-0-reasoning-1``), else
    the form-wide slot."""
    while name not in known and "-" in name:
        name = name.rsplit("-", 1)[0]
    return name if name in known else ALL


def validate_state(state: FormState) -> tuple[Scenario | None, Errors]:
    """Validate the form with the pydantic model; the scenario when valid, else None and the model's messages
    keyed by the field (or group) that caused them."""
    data, errors = state_to_data(state)
    scenario: Scenario | None = None
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        known = set(field_names(state))
        for err in exc.errors():
            name = error_field(err["loc"])
            if name in errors and any(m.startswith("Invalid JSON") for m in errors[name]):
                continue  # the syntax error says more than the model's type error on the same text
            slot = _nearest(name, known)
            message = err["msg"]
            if slot == ALL and err["loc"]:
                message = f"{'.'.join(str(p) for p in err['loc'])}: {message}"
            errors.setdefault(slot, []).append(message)
    return (None if errors else scenario), errors
