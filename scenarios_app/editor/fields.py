"""The editor form's fields, and the posted form data read into a *form state* (nested dicts and lists of the
strings and booleans as typed, so that an invalid value is shown back exactly as the author left it) and back.

Pure: no Django, no database.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, get_args

from harnessweb.engine.schemas import FailureStatus, KeyPlace

FormState = dict[str, Any]


Errors = dict[str, list[str]]


KINDS = ("text", "tool-call", "final-report", "structured")
REPORT_STATUSES = ("success", "failure", "partial")
FAILURE_STATUSES = tuple(get_args(FailureStatus))
REASONING_CHOICES = ("", "enabled", "disabled")
RAW_FORMATS = ("json", "yaml")
KEY_PLACES = ("", *get_args(KeyPlace))  # "": wherever the provider reads it
# The scenario's one-line and multi-line fields, in page order (the expected API key's fingerprint and place too).
# ``kept``: the hidden field carrying, verbatim, the fields the form has no input for (scenarios_app.editor.kept);
# turn cards and reasoning segments have one each.
TOP_FIELDS = ("id", "description", "tags", "system_prompt_must_include", "priority", "expect_key_fingerprint",
              "expect_key_place", "kept")  # fmt: skip
KEPT = "kept"
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
SCOPE_FIELDS = ("protocol", "model", "key_fingerprint")  # a failure scope's lists, each a comma-separated field
TOOL_CALL_FIELDS = ("tool_name", "call_id", "arguments", "assistant_text")
REASONING_FIELDS = ("text", "signature", "kept")
TURN_TEXT_FIELDS = (
    "turn",
    "kind",
    "assistant_text",
    "report_content",
    "report_format",
    "report_content_json",
    "status",
    "data",  # a structured turn's data, as JSON text
    "expected_tools",
    "expected_temperature",
    "expected_top_p",
    "expected_reasoning",
    # The turn's ``expect`` block on the conversation the client sent: ``expect_<field>`` for each of its fields
    # (its flag, tool_calls_answered, is among TURN_FLAGS).
    "expect_last_message_contains",
    "expect_last_message_regex",
    "expect_min_earlier_messages",
    "expect_system_prompt_must_include",
    "failures_before_success",
    "failure_status",
    "failure_message",
    "failure_retry_after_ms",
    "failure_http_status",
    "failure_error",
    "failure_scope_protocol",
    "failure_scope_model",
    "failure_scope_key_fingerprint",
    "finish_reason",
    "kept",
)
TURN_FLAGS = ("allow_missing_tools", "ignore_tool_choice", "failure_retryable", "failure_throws",
              "expect_tool_calls_answered")  # fmt: skip
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
        "data",
        "failure_message",
        "failure_error",
        "expect_system_prompt_must_include",
    }
)


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
        "expect_key_fingerprint": _text(data, "expect_key_fingerprint"),
        "expect_key_place": _text(data, "expect_key_place"),
        "kept": _text(data, "kept"),
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
    for name in TOP_FIELDS:
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


def walk_fields(state: FormState) -> Iterator[tuple[str, Any]]:
    """(name, value) for every field and error slot; slots (groups) have the value None."""
    yield ALL, None
    for name in TOP_FIELDS:
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
