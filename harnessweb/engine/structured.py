"""A structured answer served where the request asks for it: a scenario turn's ``structured`` kind and the plugin's
``set_response(json=...)`` both come here, so the two answer alike.

The data goes, in this order: into the arguments of the tool the request requires (a named ``tool_choice`` forces
one; under ``required`` / ``any`` the offered tool whose parameters take the data); else into the text as JSON,
checked against the structured output's schema when the request carries one (``response_format`` json_schema or
json_object, the Responses API's ``text.format``, Anthropic's ``output_config``, Gemini's ``responseSchema``,
Bedrock Converse's ``outputConfig``: :func:`harnessweb.engine.asked.requested_schema`). The check is
:func:`harnessweb.engine.shapes.problem`, the one the engine uses for text answers too.

Pure: no Django, no I/O.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from harnessweb.engine import shapes
from harnessweb.engine.exchange import Block, ChatRequest, short_id


def _schema(text: str | None) -> dict[str, Any] | None:
    value = orjson.loads(text) if text else None
    return value if isinstance(value, dict) else None


def _names_every_key(data: Any, schema: dict[str, Any] | None) -> bool:
    """Whether the schema names every key of the data as a property: a tool with no parameters of its own takes any
    object, so it must not win over the tool whose parameters describe the data (pydantic-ai's ``final_result``
    among its function tools)."""
    properties = (schema or {}).get("properties")
    return isinstance(data, dict) and isinstance(properties, dict) and set(data) <= set(properties)


def tool_for(data: Any, request: ChatRequest) -> str:
    """The tool whose arguments carry the data, or "" for the text: the forced tool; under ``required`` / ``any``
    the first offered tool whose parameters take the data and name each of its keys, else the first that takes it,
    else the first allowed (whose check then says why it does not fit)."""
    names = request.required_tools
    if not names:
        return ""
    if len(names) == 1:
        return names[0]
    schemas = dict(request.tool_schemas)
    fitting = [n for n in names if not shapes.problem(data, _schema(schemas.get(n)) or {})]
    return next(
        (n for n in fitting if _names_every_key(data, _schema(schemas.get(n)))), fitting[0] if fitting else names[0]
    )


def check(data: Any, request: ChatRequest) -> tuple[str, str]:
    """What the request asks of the data, in words (``"JSON valid against 'Person'"``, ``"arguments valid for
    'final_result'"``, or "" when it asks nothing), and why the data fails it ("" when it fits)."""
    tool = tool_for(data, request)
    if tool:
        schema = _schema(dict(request.tool_schemas).get(tool))
        asked_for = f"a call to {tool!r} with arguments valid against its parameters"
        if not isinstance(data, dict):
            return asked_for, f"tool arguments must be a JSON object, the data is {type(data).__name__}"
        return asked_for, shapes.problem(data, schema) if schema is not None else ""
    schema = _schema(request.schema_json)
    if schema is None:
        return "", ""
    name = schema.get("title")
    asked_for = f"JSON valid against {name!r}" if name else "JSON valid against the requested schema"
    return asked_for, shapes.problem(data, schema)


def blocks(data: Any, request: ChatRequest, seed: str) -> tuple[Block, ...]:
    """The data as the request wants it: one call to the tool :func:`tool_for` picks, its arguments the data, or one
    text block holding the data as JSON. Deterministic: the call's id comes from ``seed``."""
    text = json.dumps(data)
    tool = tool_for(data, request)
    if tool:
        return (Block("tool_call", call_id=f"call_{short_id(f'{seed}:structured')}", derived_id=True, name=tool,
                      arguments=text),)  # fmt: skip
    return (Block("text", text=text),)
