"""A conversation a CI job uploads (``POST /api/runs/{id}/messages``), in OpenAI's Chat Completions or Anthropic's
Messages shape, normalised to one shape: ``{"role", "parts", "format"}`` per message, each part one of

- ``{"type": "text", "text"}``
- ``{"type": "tool_call", "id", "name", "arguments"}`` (arguments parsed when they are JSON text)
- ``{"type": "tool_result", "tool_call_id", "content", "is_error"}``
- ``{"type": "reasoning", "text"}``, ``{"type": "image", "source"}``, ``{"type": "other", "kind", "data"}``

A message of tool results alone gets the role ``tool`` whichever shape sent it. Secrets are redacted on the way in.
What cannot be read raises :class:`MessageError` naming the field, as ``("body", 3, "tool_calls", 0, ...)``. Pure:
no Django.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harnessweb.engine.redaction import redact_json, redact_text

FORMATS = ("openai", "anthropic")
OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
ANTHROPIC_ROLES = ("system", "user", "assistant")  # "system": the top-level system prompt, sent as a message
# Content part types only one of the two shapes uses: they tell a conversation's shape when it is not given.
ANTHROPIC_PARTS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"})
OPENAI_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})
TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
MAX_MESSAGES = 10_000


class MessageError(ValueError):
    """A message that cannot be read: where (a field path) and why."""

    def __init__(self, loc: tuple[Any, ...], message: str, kind: str = "value_error") -> None:
        super().__init__(message)
        self.loc, self.message, self.kind = loc, message, kind


def _shape_of(message: Any) -> str:
    """Which shape a message shows it is in ("" when it could be either: a plain text message)."""
    if not isinstance(message, dict):
        return ""
    if message.get("role") in ("developer", "tool", "function") or any(
        key in message for key in ("tool_calls", "tool_call_id", "function_call")
    ):
        return "openai"
    content = message.get("content")
    kinds = {part.get("type") for part in content if isinstance(part, dict)} if isinstance(content, list) else set()
    if kinds & ANTHROPIC_PARTS:
        return "anthropic"
    if kinds & OPENAI_PARTS:
        return "openai"
    return ""


def detect_format(messages: list[Any], given: str | None = None) -> str:
    """The conversation's shape: the one given, else the first message that shows one, else OpenAI's."""
    if given:
        return given
    return next((shape for shape in map(_shape_of, messages) if shape), "openai")


def _text(value: Any, loc: tuple[Any, ...]) -> str:
    if not isinstance(value, str):
        raise MessageError(loc, "must be a string", "string_type")
    return redact_text(value)


def _arguments(raw: Any) -> Any:
    """Tool-call arguments as JSON when they are JSON text (OpenAI sends a string), as sent otherwise; redacted."""
    if isinstance(raw, str):
        try:
            return redact_json(json.loads(raw))
        except ValueError:
            return redact_text(raw)
    return redact_json(raw)


def _source(part: dict[str, Any]) -> str:
    """Where an image came from, without its bytes: a URL, or ``data:<type>;base64 (N characters)``."""
    if isinstance(part.get("image_url"), dict):  # OpenAI
        url = str(part["image_url"].get("url", ""))
    else:  # Anthropic: {"source": {"type": "base64", "media_type", "data"} | {"type": "url", "url"}}
        source = part.get("source") if isinstance(part.get("source"), dict) else {}
        url = str(source.get("url") or f"data:{source.get('media_type', '')};base64,{source.get('data', '')}")
    if url.startswith("data:"):
        head, _, data = url.partition(",")
        return f"{head} ({len(data)} characters)"
    return redact_text(url)


def _result_text(content: Any, loc: tuple[Any, ...]) -> str:
    """A tool result's content (a string or text parts) as one text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return redact_text(content)
    if not isinstance(content, list):
        raise MessageError(loc, "must be a string or a list of content parts", "type_error")
    texts = []
    for index, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") in TEXT_PARTS:
            texts.append(_text(part.get("text"), (*loc, index, "text")))
        else:
            texts.append(json.dumps(redact_json(part), ensure_ascii=False))
    return "\n".join(texts)


def _part(part: Any, loc: tuple[Any, ...]) -> dict[str, Any]:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        raise MessageError(loc, "a content part must be an object with a type", "type_error")
    kind = part["type"]
    if kind in TEXT_PARTS:
        return {"type": "text", "text": _text(part.get("text"), (*loc, "text"))}
    if kind == "refusal":
        return {"type": "text", "text": _text(part.get("refusal"), (*loc, "refusal"))}
    if kind in ("image_url", "image"):
        return {"type": "image", "source": _source(part)}
    if kind == "tool_use":
        return {
            "type": "tool_call",
            "id": _text(part.get("id", ""), (*loc, "id")),
            "name": _name(part.get("name"), (*loc, "name")),
            "arguments": _arguments(part.get("input", {})),
        }
    if kind == "tool_result":
        call_id = part.get("tool_use_id")
        if not isinstance(call_id, str) or not call_id:
            raise MessageError((*loc, "tool_use_id"), "a tool result names the tool call it answers", "missing")
        return {
            "type": "tool_result",
            "tool_call_id": call_id,
            "content": _result_text(part.get("content"), (*loc, "content")),
            "is_error": bool(part.get("is_error", False)),
        }
    if kind == "thinking":
        return {"type": "reasoning", "text": _text(part.get("thinking", ""), (*loc, "thinking"))}
    if kind == "redacted_thinking":
        return {"type": "reasoning", "text": "(redacted thinking)"}
    return {"type": "other", "kind": kind, "data": redact_json(part)}


def _name(value: Any, loc: tuple[Any, ...]) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MessageError(loc, "a tool call needs the tool's name", "missing")
    return value


def _content(content: Any, loc: tuple[Any, ...]) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": redact_text(content)}] if content else []
    if isinstance(content, list):
        return [_part(part, (*loc, index)) for index, part in enumerate(content)]
    raise MessageError(loc, "must be a string, a list of content parts or null", "type_error")


def _tool_calls(message: dict[str, Any], loc: tuple[Any, ...]) -> list[dict[str, Any]]:
    """OpenAI's ``tool_calls`` (and the older ``function_call``) as tool-call parts."""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise MessageError((*loc, "tool_calls"), "must be a list of tool calls", "list_type")
    parts = []
    for index, call in enumerate(calls):
        where = (*loc, "tool_calls", index)
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise MessageError((*where, "function"), "a tool call is {id, type: function, function: {name, arguments}}")
        parts.append(
            {
                "type": "tool_call",
                "id": _text(call.get("id", ""), (*where, "id")),
                "name": _name(function.get("name"), (*where, "function", "name")),
                "arguments": _arguments(function.get("arguments", {})),
            }
        )
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        name = _name(legacy.get("name"), (*loc, "function_call", "name"))
        parts.append({"type": "tool_call", "id": "", "name": name, "arguments": _arguments(legacy.get("arguments"))})
    return parts


def normalise_message(message: Any, shape: str, loc: tuple[Any, ...]) -> dict[str, Any]:
    """One message of a conversation in ``shape`` ("openai" or "anthropic") in the normalised shape."""
    if not isinstance(message, dict):
        raise MessageError(loc, "a message must be an object with a role and content", "type_error")
    role = message.get("role")
    roles = OPENAI_ROLES if shape == "openai" else ANTHROPIC_ROLES
    if role not in roles:
        other = f"; the rest of the conversation is in the {shape} shape" if role in OPENAI_ROLES else ""
        raise MessageError((*loc, "role"), f"must be one of {', '.join(roles)}, not {role!r}{other}", "enum")
    if "content" not in message and not (message.get("tool_calls") or message.get("function_call")):
        raise MessageError((*loc, "content"), "a message needs content (or, from the assistant, tool calls)", "missing")
    parts = _content(message.get("content"), (*loc, "content"))
    if shape == "openai":
        parts += _tool_calls(message, loc)
        if role in ("tool", "function"):
            call_id = message.get("tool_call_id") if role == "tool" else message.get("name")
            if not isinstance(call_id, str) or not call_id:
                field = "tool_call_id" if role == "tool" else "name"
                raise MessageError((*loc, field), "a tool message names the tool call it answers", "missing")
            text = "\n".join(p["text"] if p["type"] == "text" else json.dumps(p, ensure_ascii=False) for p in parts)
            parts = [{"type": "tool_result", "tool_call_id": call_id, "content": text, "is_error": False}]
    normalised_role = {"developer": "system", "function": "tool"}.get(role, role)
    if parts and all(p["type"] == "tool_result" for p in parts):
        normalised_role = "tool"
    result: dict[str, Any] = {"role": normalised_role, "parts": parts, "format": shape}
    if isinstance(message.get("name"), str) and role != "function":
        result["name"] = redact_text(message["name"])
    return result


def normalise(
    messages: Any, *, system: Any = None, shape: str | None = None, loc: tuple[Any, ...] = ("body",)
) -> list[dict[str, Any]]:
    """A conversation as uploaded (a list of messages; Anthropic's top-level ``system`` prompt beside them) in the
    normalised shape, the system prompt first. ``shape`` forces one shape; by default the messages tell it."""
    if not isinstance(messages, list):
        raise MessageError(loc, "must be a list of messages", "list_type")
    if len(messages) > MAX_MESSAGES:
        raise MessageError(loc, f"at most {MAX_MESSAGES} messages in one upload", "too_long")
    if shape is not None and shape not in FORMATS:
        raise MessageError(("body", "format"), f"must be one of {', '.join(FORMATS)}", "enum")
    shape = detect_format(messages, shape)
    result = [normalise_message(message, shape, (*loc, index)) for index, message in enumerate(messages)]
    if system not in (None, "", []):
        parts = _content(system, ("body", "system"))
        result.insert(0, {"role": "system", "parts": parts, "format": shape})
    return result


def digest(message: dict[str, Any]) -> str:
    """A normalised message's SHA-256, the same for the same message uploaded again (a retry)."""
    return hashlib.sha256(json.dumps(message, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
