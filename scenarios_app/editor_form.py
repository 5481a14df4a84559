"""The scenario editor's form, mapped both ways onto the pydantic :class:`~scenarios_app.schemas.Scenario`.

Pure: no Django, no database, so every rule here is unit tested on its own.

- The browser posts flat field names (``turns-0-tool_calls-1-arguments``). :func:`parse_form` reads them into a
  *form state*: nested dicts and lists of the strings and booleans as typed, so that an invalid value is shown back
  exactly as the author left it.
- :func:`state_to_data` turns a state into the dict the pydantic model validates (plus the JSON syntax errors of the
  fields edited as JSON, which the model never sees as text); :func:`scenario_to_state` is the way back.
- :func:`error_field` puts a pydantic error location on the form field that caused it; :func:`validate_state` does
  the whole round (state → data → model) and returns the model's messages keyed by field name.
- :func:`bind` pairs a state with its errors for the templates; :func:`apply_op` adds, removes, moves and
  duplicates turns, tool calls and reasoning segments.
- :func:`to_raw` and :func:`from_raw` are the raw tab: the same data as JSON or YAML text.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harnessweb.text import pretty_json
from scenarios_app import loader
from scenarios_app.schemas import Scenario, ScenarioTurn, TextResponse

FormState = dict[str, Any]
Errors = dict[str, list[str]]

KINDS = ("text", "tool-call", "final-report")
REPORT_STATUSES = ("success", "failure", "partial")
FAILURE_STATUSES = ("model_error", "rate_limit", "timeout", "network_error", "invalid_response")
REASONING_CHOICES = ("", "enabled", "disabled")
RAW_FORMATS = ("json", "yaml")
ALL = "__all__"  # the slot for errors that belong to no field

PACING_FIELDS = ("chunk_words", "interval_ms")
MATCH_FIELDS = (
    "model",
    "system_contains",
    "first_user_contains",
    "first_user_regex",
    "last_user_contains",
    "last_user_regex",
    "tools_include",
)
USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens")
TOOL_CALL_FIELDS = ("tool_name", "call_id", "arguments", "assistant_text")
REASONING_FIELDS = ("text", "signature")
TURN_TEXT_FIELDS = (
    "turn",
    "kind",
    "assistant_text",
    "report_content",
    "report_format",
    "report_content_json",
    "status",
    "expected_tools",
    "expected_temperature",
    "expected_top_p",
    "expected_reasoning",
    "failures_before_success",
    "failure_status",
    "failure_message",
    "failure_retry_after_ms",
    "failure_error",
    "finish_reason",
)
TURN_FLAGS = ("allow_missing_tools", "failure_retryable")
# Fields the editor shows as <textarea>; every other text field is a one-line <input>, which browsers strip of
# line breaks, so a value holding one cannot be edited in the form without changing it.
MULTILINE_FIELDS = frozenset(
    {
        "description",
        "system_prompt_must_include",
        "assistant_text",
        "arguments",
        "text",
        "report_content",
        "report_content_json",
        "failure_message",
        "failure_error",
    }
)


# -- form data → state --------------------------------------------------------------------------------------------


def _text(data: Mapping[str, Any], name: str, default: str = "") -> str:
    value = data.get(name)
    if value is None:
        return default
    # Browsers submit a textarea's line breaks as CRLF; the data keeps the LF the author meant.
    return str(value).replace("\r\n", "\n")


def _indices(data: Mapping[str, Any], prefix: str) -> list[int]:
    """The item numbers posted under ``prefix`` (``turns-`` → 0, 1, …), in order."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)-")
    found = {int(m.group(1)) for key in data for m in [pattern.match(key)] if m}
    return sorted(found)


def parse_form(data: Mapping[str, Any]) -> FormState:
    """The posted form (a QueryDict or any mapping of field name → string) as a form state.

    Checkboxes count as checked when their name is present, as browsers send them.
    """
    state: FormState = {
        "id": _text(data, "id"),
        "description": _text(data, "description"),
        "tags": _text(data, "tags"),
        "system_prompt_must_include": _text(data, "system_prompt_must_include"),
        "priority": _text(data, "priority"),
        "pacing_enabled": "pacing_enabled" in data,
        "pacing": {f: _text(data, f"pacing-{f}") for f in PACING_FIELDS},
        "match_enabled": "match_enabled" in data,
        "match": {f: _text(data, f"match-{f}") for f in MATCH_FIELDS},
        "turns": [],
    }
    for i in _indices(data, "turns-"):
        p = f"turns-{i}-"
        turn: dict[str, Any] = {f: _text(data, p + f) for f in TURN_TEXT_FIELDS}
        turn.update({f: p + f in data for f in TURN_FLAGS})
        turn["usage"] = {f: _text(data, f"{p}usage-{f}") for f in USAGE_FIELDS}
        turn["tool_calls"] = [
            {f: _text(data, f"{p}tool_calls-{j}-{f}") for f in TOOL_CALL_FIELDS}
            for j in _indices(data, f"{p}tool_calls-")
        ]
        turn["reasoning"] = [
            {f: _text(data, f"{p}reasoning-{j}-{f}") for f in REASONING_FIELDS}
            for j in _indices(data, f"{p}reasoning-")
        ]
        state["turns"].append(turn)
    return state


def flatten(state: FormState) -> dict[str, str]:
    """The form data a browser would post for ``state`` (unchecked boxes left out): the inverse of parse_form."""
    flat: dict[str, str] = {}
    for name in ("id", "description", "tags", "system_prompt_must_include", "priority"):
        flat[name] = state[name]
    for flag in ("pacing_enabled", "match_enabled"):
        if state[flag]:
            flat[flag] = "on"
    for group, fields in (("pacing", PACING_FIELDS), ("match", MATCH_FIELDS)):
        for f in fields:
            flat[f"{group}-{f}"] = state[group][f]
    for i, turn in enumerate(state["turns"]):
        p = f"turns-{i}-"
        for f in TURN_TEXT_FIELDS:
            flat[p + f] = turn[f]
        for f in TURN_FLAGS:
            if turn[f]:
                flat[p + f] = "on"
        for f in USAGE_FIELDS:
            flat[f"{p}usage-{f}"] = turn["usage"][f]
        for j, call in enumerate(turn["tool_calls"]):
            for f in TOOL_CALL_FIELDS:
                flat[f"{p}tool_calls-{j}-{f}"] = call[f]
        for j, segment in enumerate(turn["reasoning"]):
            for f in REASONING_FIELDS:
                flat[f"{p}reasoning-{j}-{f}"] = segment[f]
    return flat


# -- state → data for the model -----------------------------------------------------------------------------------


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
    for segment in turn["reasoning"]:
        item = {"text": segment["text"]}
        _put(item, "signature", segment["signature"])
        reasoning.append(item)
    if kind == "text":
        # Required for a text answer, and an empty answer is a valid one.
        response["assistant_text"] = turn["assistant_text"]
    else:
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
    response["reasoning"] = reasoning

    data: dict[str, Any] = {"response": response}
    _put(data, "turn", turn["turn"], number=True)
    data["expected_tools"] = split_list(turn["expected_tools"])
    data["allow_missing_tools"] = turn["allow_missing_tools"]
    for name in ("expected_temperature", "expected_top_p", "failures_before_success"):
        _put(data, name, turn[name], number=True)
    _put(data, "expected_reasoning", turn["expected_reasoning"])
    _put(data, "failure_status", turn["failure_status"])
    _put(data, "failure_message", turn["failure_message"])
    data["failure_retryable"] = turn["failure_retryable"]
    _put(data, "failure_retry_after_ms", turn["failure_retry_after_ms"], number=True)
    if turn["failure_error"].strip():
        data["failure_error"] = _json(turn["failure_error"], f"{p}failure_error", errors)
    usage: dict[str, Any] = {}
    for f in USAGE_FIELDS:
        _put(usage, f, turn["usage"][f], number=True)
    data["usage"] = usage
    _put(data, "finish_reason", turn["finish_reason"])
    return data


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
    data["turns"] = [_turn_to_data(turn, i, errors) for i, turn in enumerate(state["turns"])]
    return data, errors


# -- model → state ------------------------------------------------------------------------------------------------


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
    return {"text": "", "signature": ""}


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
    return {
        "turn": _str(turn.get("turn")),
        "kind": kind,
        "assistant_text": _str(response.get("assistant_text")),
        # A blank row is ready for a turn switched to tool-call; other kinds ignore it.
        "tool_calls": calls or [blank_tool_call()],
        "reasoning": [
            {"text": _str(s.get("text")), "signature": _str(s.get("signature"))}
            for s in (response.get("reasoning") or [])
        ],
        "report_content": _str(response.get("report_content")),
        "report_format": _str(response.get("report_format", "markdown")),
        "report_content_json": "" if report_json is None else pretty_json(report_json),
        "status": _str(response.get("status", "success")),
        "expected_tools": ", ".join(turn.get("expected_tools") or []),
        "allow_missing_tools": bool(turn.get("allow_missing_tools", False)),
        "expected_temperature": _str(turn.get("expected_temperature")),
        "expected_top_p": _str(turn.get("expected_top_p")),
        "expected_reasoning": _str(turn.get("expected_reasoning")),
        "failures_before_success": _str(turn.get("failures_before_success", 0)),
        "failure_status": _str(turn.get("failure_status", "model_error")),
        "failure_message": _str(turn.get("failure_message")),
        "failure_retryable": bool(turn.get("failure_retryable", True)),
        "failure_retry_after_ms": _str(turn.get("failure_retry_after_ms")),
        "failure_error": "" if failure_error is None else pretty_json(failure_error),
        "usage": {f: _str(usage.get(f, default)) for f, default in zip(USAGE_FIELDS, (64, 32, 96), strict=True)},
        "finish_reason": _str(turn.get("finish_reason")),
    }


def scenario_to_state(data: Mapping[str, Any]) -> FormState:
    """A scenario in canonical form (``Scenario.canonical()``, or the stored ``data``) as the editor's state."""
    pacing = data.get("pacing")
    match = data.get("match")
    return {
        "id": _str(data.get("id")),
        "description": _str(data.get("description")),
        "tags": ", ".join(data.get("tags") or []),
        "system_prompt_must_include": "\n".join(data.get("system_prompt_must_include") or []),
        "priority": _str(data.get("priority", 0)),
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


def form_problem(data: Mapping[str, Any]) -> str:
    """Why the form cannot show this (valid, canonical) scenario without changing it, or "" when it can.

    One-line inputs lose line breaks and list fields re-split their items, so a scenario written elsewhere may hold
    values the form would silently alter; the editor keeps such a scenario on the raw tab instead.
    """
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


# -- errors -------------------------------------------------------------------------------------------------------


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
    return f"{prefix}-{field}"


def field_names(state: FormState) -> list[str]:
    """Every field and error slot the editor renders for ``state``, in page order."""
    return [name for name, _ in _walk(state)]


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


# -- binding for the templates ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BoundField:
    """One form field (or error slot) as a template renders it: its name, its value, its errors."""

    name: str
    value: Any
    errors: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"f-{self.name}"

    @property
    def error_id(self) -> str:
        return f"err-{self.name}"


def _walk(state: FormState) -> Iterator[tuple[str, Any]]:
    """(name, value) for every field and error slot; slots (groups) have the value None."""
    yield ALL, None
    for name in ("id", "description", "tags", "system_prompt_must_include", "priority"):
        yield name, state[name]
    yield "pacing_enabled", state["pacing_enabled"]
    yield "pacing", None
    for f in PACING_FIELDS:
        yield f"pacing-{f}", state["pacing"][f]
    yield "match_enabled", state["match_enabled"]
    yield "match", None
    for f in MATCH_FIELDS:
        yield f"match-{f}", state["match"][f]
    yield "turns", None
    for i, turn in enumerate(state["turns"]):
        p = f"turns-{i}"
        yield p, None
        for f in (*TURN_TEXT_FIELDS, *TURN_FLAGS):
            yield f"{p}-{f}", turn[f]
        yield f"{p}-usage", None
        for f in USAGE_FIELDS:
            yield f"{p}-usage-{f}", turn["usage"][f]
        for group, fields in (("tool_calls", TOOL_CALL_FIELDS), ("reasoning", REASONING_FIELDS)):
            yield f"{p}-{group}", None
            for j, item in enumerate(turn[group]):
                yield f"{p}-{group}-{j}", None
                for f in fields:
                    yield f"{p}-{group}-{j}-{f}", item[f]


def bind(state: FormState, errors: Errors | None = None) -> dict[str, Any]:
    """The state as a tree of :class:`BoundField` for the templates (which cannot look up a computed key).

    Keys mirror the state; group slots are ``errors`` (the form), ``pacing_slot``, ``match_slot``, ``turns_slot``,
    and per turn ``card``, ``usage_slot``, ``tool_calls_slot``, ``reasoning_slot`` and per item ``slot``.
    ``all`` lists every field and slot (for the out-of-band error swaps).
    """
    errors = errors or {}
    fields = {name: BoundField(name, value, tuple(errors.get(name, ()))) for name, value in _walk(state)}

    def group(prefix: str, names: tuple[str, ...]) -> dict[str, BoundField]:
        return {f: fields[f"{prefix}-{f}"] for f in names}

    turns = []
    for i, turn in enumerate(state["turns"]):
        p = f"turns-{i}"
        bound_turn: dict[str, Any] = {
            "index": i,
            "position": i + 1,
            "card": fields[p],
            **group(p, (*TURN_TEXT_FIELDS, *TURN_FLAGS)),
            "usage": group(f"{p}-usage", USAGE_FIELDS),
            "usage_slot": fields[f"{p}-usage"],
            "tool_calls_slot": fields[f"{p}-tool_calls"],
            "reasoning_slot": fields[f"{p}-reasoning"],
            "tool_calls": [
                {"index": j, "slot": fields[f"{p}-tool_calls-{j}"], **group(f"{p}-tool_calls-{j}", TOOL_CALL_FIELDS)}
                for j in range(len(turn["tool_calls"]))
            ],
            "reasoning": [
                {"index": j, "slot": fields[f"{p}-reasoning-{j}"], **group(f"{p}-reasoning-{j}", REASONING_FIELDS)}
                for j in range(len(turn["reasoning"]))
            ],
        }
        turns.append(bound_turn)
    return {
        "errors": fields[ALL],
        **{name: fields[name] for name in ("id", "description", "tags", "system_prompt_must_include", "priority")},
        "pacing_enabled": fields["pacing_enabled"],
        "pacing_slot": fields["pacing"],
        "pacing": group("pacing", PACING_FIELDS),
        "match_enabled": fields["match_enabled"],
        "match_slot": fields["match"],
        "match": group("match", MATCH_FIELDS),
        "turns_slot": fields["turns"],
        "turns": turns,
        "all": list(fields.values()),
        "error_count": sum(len(messages) for messages in errors.values()),
    }


# -- editing the structure ----------------------------------------------------------------------------------------

OPS = (
    "add_turn",
    "remove_turn",
    "move_up",
    "move_down",
    "duplicate_turn",
    "add_tool_call",
    "remove_tool_call",
    "add_reasoning",
    "remove_reasoning",
)


def _renumber(turns: list[dict[str, Any]]) -> None:
    # The turn is the Nth answer of the conversation: after a structural change the cards' order says which.
    for position, turn in enumerate(turns, start=1):
        turn["turn"] = str(position)


def apply_op(state: FormState, op: str, turn: int | None = None, item: int | None = None) -> FormState:
    """A new state with one structural edit applied; indices out of range leave the state as it was.

    Adding, removing, moving or duplicating a turn renumbers the turns 1..N in card order.
    """
    if op not in OPS:
        raise ValueError(f"unknown editor operation {op!r}")
    state = copy.deepcopy(state)
    turns: list[dict[str, Any]] = state["turns"]
    if op == "add_turn":
        turns.append(turn_to_state(new_turn_data(len(turns) + 1)))
        _renumber(turns)
        return state
    if turn is None or not 0 <= turn < len(turns):
        return state
    card = turns[turn]
    if op == "remove_turn":
        del turns[turn]
    elif op == "move_up" and turn > 0:
        turns[turn - 1], turns[turn] = turns[turn], turns[turn - 1]
    elif op == "move_down" and turn < len(turns) - 1:
        turns[turn + 1], turns[turn] = turns[turn], turns[turn + 1]
    elif op == "duplicate_turn":
        turns.insert(turn + 1, copy.deepcopy(card))
    elif op == "add_tool_call":
        card["tool_calls"].append(blank_tool_call())
    elif op == "add_reasoning":
        card["reasoning"].append(blank_reasoning())
    elif op in ("remove_tool_call", "remove_reasoning"):
        items = card["tool_calls" if op == "remove_tool_call" else "reasoning"]
        if item is not None and 0 <= item < len(items):
            del items[item]
    if op in ("remove_turn", "move_up", "move_down", "duplicate_turn"):
        _renumber(turns)
    return state


# -- the raw tab --------------------------------------------------------------------------------------------------


class _RawDumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks (``|``), so a report or an answer reads as written."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_RawDumper.add_representer(str, _represent_str)


def to_raw(data: Any, fmt: str) -> str:
    """Scenario data as the raw tab's text: pretty JSON (as exported) or YAML, keys in model order."""
    if fmt == "yaml":
        # No folding of long lines: a one-line answer stays one line, as the author wrote it.
        return yaml.dump(data, Dumper=_RawDumper, sort_keys=False, allow_unicode=True, width=1_000_000)
    return pretty_json(data) + "\n"


def from_raw(text: str, fmt: str) -> Any:
    """The data in the raw tab's text; raises :class:`loader.ScenarioFileError` naming the line and column."""
    text = text.replace("\r\n", "\n")
    if not text.strip():
        raise loader.ScenarioFileError(f"raw {fmt.upper()}: the text is empty")
    # The loader's parser: the same duplicate-key refusal and line numbers as files get. The name is only a label.
    return loader._parse(Path(f"raw.{fmt}"), text)


def raw_errors(data: Any) -> list[str]:
    """The model's messages for raw data, one per error, each naming its field path."""
    if not isinstance(data, dict):
        return [f"expected a scenario object, found {type(data).__name__}"]
    try:
        Scenario.model_validate(data)
    except ValidationError as exc:
        return [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()]
    return []
