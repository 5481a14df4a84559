"""The scenario's fields the editor form does not show, carried through the form verbatim.

The form has inputs for most of a scenario, not all of it (a Realtime turn's ``audio``, an image fixture, MCP
servers, provider metadata…). Whatever it does not show travels in a hidden ``kept`` field as compact JSON, one
for the scenario, one per turn card and one per reasoning segment, so that it moves with its card when turns are
reordered, duplicated or removed; :func:`overlay` then starts from the kept fields and lays the form's own on top.
A field the form shows is never taken from ``kept``: one the author cleared stays cleared. Pure: no Django.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scenarios_app.editor.fields import Errors

# The keys the form has inputs for, at each level; every other key of the stored data is kept as it is.
SCENARIO_SHOWN = frozenset(
    {"id", "description", "tags", "system_prompt_must_include", "pacing", "match", "priority", "expect_key", "turns"}
)
TURN_SHOWN = frozenset(
    {
        "turn",
        "response",
        "expected_tools",
        "allow_missing_tools",
        "ignore_tool_choice",
        "expected_temperature",
        "expected_top_p",
        "expected_reasoning",
        "expect",
        "failures_before_success",
        "failure_status",
        "failure_throws",
        "failure_http_status",
        "failure_message",
        "failure_retryable",
        "failure_retry_after_ms",
        "failure_error",
        "failure_scope",
        "usage",
        "finish_reason",
    }
)
RESPONSE_SHOWN = frozenset(
    {
        "kind",
        "assistant_text",
        "tool_calls",
        "reasoning",
        "report_content",
        "report_format",
        "report_content_json",
        "status",
        "data",
    }
)
REASONING_SHOWN = frozenset({"text", "signature"})
RESPONSE = "response"  # the key of a turn's kept response fields, inside the turn's kept object


def _unshown(data: Mapping[str, Any], shown: frozenset[str]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in shown}


def _dump(kept: Mapping[str, Any]) -> str:
    # Compact and ASCII-only: no line break or carriage return a browser could rewrite in a hidden input.
    return json.dumps(kept, separators=(",", ":"), sort_keys=True) if kept else ""


def scenario_kept(data: Mapping[str, Any]) -> str:
    """The scenario-level fields the form does not show (``mcp``, ``batch``, ``cassette``…) as the hidden field's
    text; "" when there are none."""
    return _dump(_unshown(data, SCENARIO_SHOWN))


def turn_kept(turn: Mapping[str, Any]) -> str:
    """A turn's fields the form does not show (``audio``, ``image``…), with its response's (``provider_metadata``)
    under ``response``, as the hidden field's text; "" when there are none."""
    kept = _unshown(turn, TURN_SHOWN)
    response = _unshown(turn.get(RESPONSE) or {}, RESPONSE_SHOWN)
    if response:
        kept[RESPONSE] = response
    return _dump(kept)


def segment_kept(segment: Mapping[str, Any]) -> str:
    """A reasoning segment's fields the form does not show (``redacted_data``, ``provider_metadata``)."""
    return _dump(_unshown(segment, REASONING_SHOWN))


def read_kept(text: str, slot: str, errors: Errors) -> dict[str, Any]:
    """The kept fields posted in a hidden field; an error under ``slot`` (and nothing kept) when the text is not a
    JSON object, which only a changed page can post."""
    if not text.strip():
        return {}
    try:
        kept = json.loads(text)
    except json.JSONDecodeError as exc:
        kept = exc
    if not isinstance(kept, dict):
        errors.setdefault(slot, []).append(
            "The fields kept from the stored scenario (edited on the raw tab) were not posted as a JSON object: "
            "reload the page, or edit the scenario on the raw tab."
        )
        return {}
    return kept


def overlay(kept: Mapping[str, Any], shown: Mapping[str, Any], names: frozenset[str]) -> dict[str, Any]:
    """The kept fields with the form's on top; a kept key the form has an input for is ignored (the form decides
    it, cleared or not)."""
    return {**_unshown(kept, names), **shown}


def kept_names(text: str) -> list[str]:
    """The names of the fields a hidden field keeps (a response's as ``response.<name>``), for the form to say
    which fields it carries without showing them; empty ones (every scenario's ``embeddings: []``) go unsaid."""
    try:
        kept = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return []
    if not isinstance(kept, dict):
        return []
    names = [key for key, value in kept.items() if key != RESPONSE and value not in ([], {}, "")]
    response = kept.get(RESPONSE)
    if isinstance(response, dict):
        names += [f"{RESPONSE}.{key}" for key, value in response.items() if value not in ([], {}, "")]
    return sorted(names)
