"""The call history a test reads: one :class:`Call` per request that reached the harness (through a provider's wire
or at the ``llm`` boundary), what each request asked for as sent, and the assertions on them, whose failure message
shows the closest call and the fields that differ.

Pure: no Django, no I/O.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

# Request fields a call names on its own; every other field of the body goes to ``params``.
_NAMED = {
    "model", "messages", "system", "tools", "temperature", "top_p", "max_tokens", "max_completion_tokens",
    "max_output_tokens", "stream", "input", "instructions", "prompt", "contents", "systemInstruction",
    "generationConfig", "response_format", "output_format", "output_config", "text",
}  # fmt: skip


@dataclass
class Call:
    """One request as the code under test sent it, and what it got. Reads as attributes or, as seed 002's call
    records do, as a dict (``call["prompt"]``)."""

    protocol: str
    model: str
    path: str
    messages: list[dict[str, str]]
    system: str
    prompt: str
    tools: list[str]
    schema: dict[str, Any] | None
    temperature: float | None
    top_p: float | None
    max_tokens: int | None
    params: dict[str, Any]
    stream: bool
    timestamp: str
    response: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    duration_ms: float | None = None
    # How it was answered: "configured" (set_response/set_error), "scenario", "instruction", "lorem" or "default".
    answered_by: str = ""
    started: float = field(default_factory=time.perf_counter, repr=False, compare=False)

    @property
    def prompt_length(self) -> int:
        return len(self.prompt)

    @property
    def kwargs(self) -> dict[str, Any]:
        """Seed 002's ``kwargs``: the schema by name, temperature, model and every other parameter."""
        return {"schema": schema_name(self.schema), "temperature": self.temperature, "model": self.model, **self.params}

    def __getitem__(self, name: str) -> Any:
        if name in ("prompt_length", "kwargs"):
            return getattr(self, name)
        if name not in self.__dataclass_fields__:
            raise KeyError(name)
        return getattr(self, name)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["started"]
        return {**data, "prompt_length": self.prompt_length}

    def finish(self) -> None:
        """The call's response has been read to its end (or cut): its duration is known."""
        self.duration_ms = round((time.perf_counter() - self.started) * 1000, 3)


def schema_name(schema: dict[str, Any] | None) -> str | None:
    if schema is None:
        return None
    return str(schema.get("title") or schema.get("name") or "schema")


# ---------------------------------------------------------------------------------------------------------------
# What a request asked for, read from its body as sent


def _dig(body: dict[str, Any], *path: str) -> Any:
    value: Any = body
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def requested_schema(protocol: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON Schema a request asks its answer to follow (structured outputs), or None."""
    candidates = (
        _dig(body, "response_format", "json_schema", "schema"),  # Chat Completions
        _dig(body, "text", "format", "schema"),  # Responses
        _dig(body, "output_config", "format", "schema"),  # Anthropic structured outputs
        _dig(body, "output_format", "schema"),
        _dig(body, "generationConfig", "responseSchema"),  # Gemini
        _dig(body, "generationConfig", "responseJsonSchema"),
    )
    schema = next((c for c in candidates if isinstance(c, dict)), None)
    if schema is None and _dig(body, "response_format", "type") == "json_object":
        return {"type": "object"}
    if schema is not None and "title" not in schema:
        name = _dig(body, "response_format", "json_schema", "name") or _dig(body, "text", "format", "name")
        if name:
            schema = {"title": name, **schema}
    return schema


def max_tokens_of(body: dict[str, Any]) -> int | None:
    for value in (
        body.get("max_completion_tokens"),
        body.get("max_tokens"),
        body.get("max_output_tokens"),
        _dig(body, "generationConfig", "maxOutputTokens"),
    ):
        if isinstance(value, int):
            return value
    return None


def forced_tool(body: dict[str, Any], tools: list[str]) -> str | None:
    """The tool a request forces (a named function or tool, or any tool when there is one), or None."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        name = choice.get("name") or _dig(choice, "function", "name")
        if name:
            return str(name)
        if choice.get("type") == "any" and tools:
            return tools[0]
    if choice == "required" and tools:
        return tools[0]
    mode = _dig(body, "toolConfig", "functionCallingConfig", "mode")
    if mode == "ANY" and tools:
        names = _dig(body, "toolConfig", "functionCallingConfig", "allowedFunctionNames") or tools
        return str(names[0])
    return None


def params_of(body: dict[str, Any]) -> dict[str, Any]:
    """Every request parameter the call does not name on its own, as sent."""
    params = {key: value for key, value in body.items() if key not in _NAMED}
    config = body.get("generationConfig")
    if isinstance(config, dict):
        params.update({k: v for k, v in config.items() if k not in ("temperature", "topP", "maxOutputTokens")})
    return params


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# ---------------------------------------------------------------------------------------------------------------
# Assertions


_UNSET: Any = object()


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
        if value is _UNSET:
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
    wanted = {k: v for k, v in wanted.items() if v is not _UNSET}
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
