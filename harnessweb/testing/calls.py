"""The call history a test reads: the calls that reached the harness (through a provider's wire or at the ``llm``
boundary; :class:`~harnessweb.engine.calls.Call`, built in the core so that the server answers a run's calls with the
same fields), a call as the calls upload takes it, and the assertions on them, whose failure message shows the
closest call and the fields that differ.

Pure: no Django, no I/O.
"""

from __future__ import annotations

from typing import Any

# The plugin's history is read here: its calls and how a request becomes one live in the core.
from harnessweb.engine.calls import UNSET, Call, call_from, call_later, schema_name

__all__ = [
    "Call", "assert_called_with", "call_from", "call_later", "call_out", "describe", "differences", "schema_name",
]  # fmt: skip


def call_out(call: Call) -> dict[str, Any]:
    """A call as ``POST /api/runs/{id}/calls`` takes it."""
    body = call.body or {"model": call.model, "messages": call.messages, **call.params}
    return {
        "protocol": call.protocol,
        "model": call.model,
        "path": call.path,
        "body": body,
        "turn": sum(1 for m in call.messages if m["role"] == "assistant") + 1,
        "answered_by": call.answered_by,
        "response": call.response,
        "error": call.error,
        "timestamp": call.timestamp,
        "duration_ms": call.duration_ms,
    }


# ---------------------------------------------------------------------------------------------------------------
# Assertions


def _schema_matches(expected: Any, actual: dict[str, Any] | None) -> bool:
    if expected is None:
        return actual is None
    if actual is None:
        return False
    if isinstance(expected, str):
        return schema_name(actual) == expected
    if isinstance(expected, dict):
        return {k: v for k, v in actual.items() if k != "title"} == {k: v for k, v in expected.items() if k != "title"}
    json_schema = getattr(expected, "model_json_schema", None)  # a pydantic model class
    if json_schema is not None:
        return _schema_matches(json_schema(), actual) or schema_name(actual) == expected.__name__
    return False


def differences(call: Call, **wanted: Any) -> list[str]:
    """The fields of ``call`` that differ from what is wanted, each as one readable line."""
    found = []
    for name, value in wanted.items():
        if value is UNSET:
            continue
        if name == "prompt_contains":
            texts = [call.prompt, call.system, *(m["content"] for m in call.messages)]
            if not any(value in text for text in texts):
                found.append(f"prompt_contains: {value!r} is in no message (last user message: {call.prompt!r})")
        elif name == "tools":
            if sorted(value) != sorted(call.tools):
                found.append(f"tools: wanted {sorted(value)}, sent {sorted(call.tools)}")
        elif name == "schema":
            if not _schema_matches(value, call.schema):
                found.append(f"schema: wanted {getattr(value, '__name__', value)!r}, sent {call.schema!r}")
        elif getattr(call, name) != value:
            found.append(f"{name}: wanted {value!r}, sent {getattr(call, name)!r}")
    return found


def assert_called_with(calls: list[Call], **wanted: Any) -> Call:
    """The first call that matches every field given; else an AssertionError showing the closest call and what
    differs in it."""
    wanted = {k: v for k, v in wanted.items() if v is not UNSET}
    if not calls:
        raise AssertionError(f"No call reached the harness (wanted one with {_shown(wanted)})")
    scored = [(differences(call, **wanted), i, call) for i, call in enumerate(calls)]
    for diffs, _, call in scored:
        if not diffs:
            return call
    diffs, index, call = min(scored, key=lambda row: (len(row[0]), row[1]))
    lines = "\n".join(f"  - {line}" for line in diffs)
    raise AssertionError(
        f"No call matches {_shown(wanted)} among {len(calls)} call(s). "
        f"Closest: call {index} ({call.protocol} {call.model!r}, prompt {call.prompt[:80]!r}), which differs in:\n"
        f"{lines}"
    )


def _shown(wanted: dict[str, Any]) -> str:
    return ", ".join(f"{k}={getattr(v, '__name__', v)!r}" for k, v in wanted.items()) or "anything"


def describe(calls: list[Call]) -> str:
    """The calls, one line each, for a failure message."""
    if not calls:
        return "  (none)"
    return "\n".join(
        f"  {i}: {c.protocol} {c.model!r} {c.prompt[:60]!r} ({c.answered_by})" for i, c in enumerate(calls)
    )
