"""Deterministic JSON valid against a JSON Schema: what a forced tool's arguments or a structured output hold when no
scenario says (lorem and instruction mode). The same schema and seed give the same value on every machine.

Covers what clients send (OpenAI strict schemas, pydantic's ``model_json_schema()``, Anthropic tool input
schemas, Gemini's OpenAPI subset): types (and lists of them), ``required`` and optional properties, ``enum`` and
``const``, nested objects and arrays (``minItems``/``maxItems``), string formats and lengths, number bounds and
``multipleOf``, ``$ref`` into ``$defs``/``definitions``, ``anyOf``/``oneOf`` (the first branch), ``allOf`` (merged).
Not ``pattern``: a regular expression has no general example, so a string under one may not match it.

Pure: no Django, no I/O.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima")
FORMATS = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "duration": "P1D",
}
MAX_DEPTH = 12


def _pick(seed: str, count: int) -> int:
    return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:4], "big") % count


def instance(schema: dict[str, Any], seed: str) -> Any:
    """A value valid against ``schema``, the same for the same schema and seed."""
    schema = normalized(schema)
    return _value(schema, schema, seed, 0)


def _resolve(root: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in schema and seen < MAX_DEPTH:
        path = schema["$ref"].removeprefix("#").strip("/").split("/")
        target: Any = root
        for part in path:
            target = target.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(target, dict) else {}
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        seen += 1
    return schema


def _merged(root: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    schema = _resolve(root, schema)
    for part in schema.get("allOf", ()):
        part = _merged(root, part)
        props = {**schema.get("properties", {}), **part.get("properties", {})}
        required = [*schema.get("required", ()), *part.get("required", ())]
        schema = {**part, **schema, "properties": props, "required": required}
    return {k: v for k, v in schema.items() if k != "allOf"}


def _value(root: dict[str, Any], schema: Any, seed: str, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    schema = _merged(root, schema)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][_pick(seed, len(schema["enum"]))]
    for key in ("anyOf", "oneOf"):
        branches = [b for b in schema.get(key, ()) if _merged(root, b).get("type") != "null"] or schema.get(key, ())
        if branches:
            return _value(root, {**{k: v for k, v in schema.items() if k != key}, **branches[0]}, seed, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((t for t in kind if t != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if kind == "object":
        return _object(root, schema, seed, depth)
    if kind == "array":
        items = schema.get("items", {})
        low = int(schema.get("minItems", 1))
        count = max(low, min(2, int(schema.get("maxItems", 2))))
        values = [_value(root, items, f"{seed}[{i}]", depth + 1) for i in range(count)]
        if schema.get("uniqueItems") and len({repr(v) for v in values}) < len(values):
            values = values[:1]
        return values
    if kind in ("integer", "number"):
        return _number(schema, seed, kind == "integer")
    if kind == "boolean":
        return _pick(seed, 2) == 0
    if kind == "null":
        return None
    return _string(schema, seed)


def _object(root: dict[str, Any], schema: dict[str, Any], seed: str, depth: int) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    required = list(schema.get("required") or ())
    if not required and properties and schema.get("additionalProperties") is not False:
        required = list(properties)  # an optional property filled in shows the shape; strict schemas list all
    names = [n for n in properties if n in required] + [n for n in required if n not in properties]
    if not names and not properties and int(schema.get("minProperties", 0)) > 0:
        names = ["key"]
    return {name: _value(root, properties.get(name, {"type": "string"}), f"{seed}.{name}", depth + 1) for name in names}


def _number(schema: dict[str, Any], seed: str, integer: bool) -> int | float:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    low = float(low) if isinstance(low, int | float) else None
    high = float(high) if isinstance(high, int | float) else None
    if low is not None and "exclusiveMinimum" in schema and "minimum" not in schema:
        low += 1 if integer else 0.5
    if high is not None and "exclusiveMaximum" in schema and "maximum" not in schema:
        high -= 1 if integer else 0.5
    start = low if low is not None else (high - 10 if high is not None else 0.0)
    end = high if high is not None else start + 100
    value = start + (end - start) * (_pick(seed, 1000) / 1000) if end > start else start
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0:
        value = math.ceil(value / step) * step
        if high is not None and value > high:
            value -= step
    if integer:
        value = math.ceil(value) if low is not None else round(value)
        return int(min(value, high) if high is not None else value)
    return round(value, 2) if not step else value


def _string(schema: dict[str, Any], seed: str) -> str:
    if schema.get("format") in FORMATS:
        return FORMATS[schema["format"]]
    low = int(schema.get("minLength", 0))
    high = int(schema.get("maxLength", max(low, 24)))
    words = [WORDS[_pick(f"{seed}:{i}", len(WORDS))] for i in range(3)]
    text = " ".join(words)
    while len(text) < low:
        text += " " + WORDS[_pick(f"{seed}:{len(text)}", len(WORDS))]
    return text[: max(high, low)] if high else text


def normalized(schema: Any) -> Any:
    """The schema with Gemini's upper-case type names (``OBJECT``, ``STRING``) in JSON Schema's lower case."""
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else normalized(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [normalized(v) for v in schema]
    return schema


def problem(value: Any, schema: dict[str, Any]) -> str:
    """Why ``value`` does not validate against ``schema`` (the first error, with where: ``$.items[0].name``), or ""
    when it does. A real validator (``jsonschema``), the schema's own draft."""
    import jsonschema

    schema = normalized(schema)
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return ""
    where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"at {where}: {error.message}"
