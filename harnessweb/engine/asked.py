"""What a request asks for beyond the neutral request, read from its body as sent, whatever its protocol: the JSON
Schema of a structured output, the token limit, the tool it forces, and every other parameter.

Pure: no Django, no I/O.
"""

from __future__ import annotations

from typing import Any

import orjson

# Request fields a call names on its own; every other field of the body goes to ``params``.
_NAMED = {
    "model", "messages", "system", "tools", "temperature", "top_p", "max_tokens", "max_completion_tokens",
    "max_output_tokens", "stream", "input", "instructions", "prompt", "contents", "systemInstruction",
    "generationConfig", "response_format", "output_format", "output_config", "text",
}  # fmt: skip
MAX_CHOICES = 128  # OpenAI's bound on ``n``


def _dig(body: dict[str, Any], *path: str) -> Any:
    value: Any = body
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def requested_schema(body: dict[str, Any]) -> dict[str, Any] | None:
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
        cohere = _dig(body, "response_format", "json_schema")  # Cohere's: the schema itself
        return cohere if isinstance(cohere, dict) else {"type": "object"}
    if schema is not None and "title" not in schema:
        name = _dig(body, "response_format", "json_schema", "name") or _dig(body, "text", "format", "name")
        if name:
            schema = {"title": name, **schema}
    return schema


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def max_tokens_of(body: dict[str, Any]) -> int | None:
    """The answer's token budget: ``max_completion_tokens``, ``max_tokens``, ``max_output_tokens`` or Gemini's
    ``maxOutputTokens``."""
    for value in (
        body.get("max_completion_tokens"),
        body.get("max_tokens"),
        body.get("max_output_tokens"),
        _dig(body, "generationConfig", "maxOutputTokens"),
        _dig(body, "inferenceConfig", "maxTokens"),  # Bedrock's Converse
    ):
        if _count(value) is not None:
            return value
    return None


def stop_sequences(body: dict[str, Any]) -> tuple[str, ...]:
    """The sequences the answer's text stops at: ``stop`` (a string or a list), Anthropic's ``stop_sequences``,
    Gemini's ``stopSequences``, Bedrock's ``inferenceConfig.stopSequences``."""
    gemini, bedrock = _dig(body, "generationConfig", "stopSequences"), _dig(body, "inferenceConfig", "stopSequences")
    for value in (body.get("stop"), body.get("stop_sequences"), gemini, bedrock):
        if isinstance(value, str) and value:
            return (value,)
        if isinstance(value, list):
            return tuple(s for s in value if isinstance(s, str) and s)
    return ()


def choices_of(body: dict[str, Any]) -> int:
    """How many choices the answer has: ``n`` (Chat Completions, completions) or Gemini's ``candidateCount``."""
    value = body.get("n")
    if value is None:
        value = _dig(body, "generationConfig", "candidateCount")
    return min(max(_count(value) or 1, 1), MAX_CHOICES)


def logprobs_of(body: dict[str, Any]) -> int | None:
    """How many alternatives per token the answer's log-probabilities give, or None when it asks for none: Chat
    Completions' ``logprobs: true`` with ``top_logprobs``, the legacy completions' integer ``logprobs``, the
    Responses API's ``include: ["message.output_text.logprobs"]`` with ``top_logprobs``, Gemini's
    ``responseLogprobs`` with ``logprobs``."""
    value = body.get("logprobs")
    include = body.get("include")
    if value is True or (isinstance(include, list) and "message.output_text.logprobs" in include):
        return _count(body.get("top_logprobs")) or 0
    if _dig(body, "generationConfig", "responseLogprobs") is True:  # Gemini
        return _count(_dig(body, "generationConfig", "logprobs")) or 0
    return _count(value) if not isinstance(value, bool) else None


def forced_tool(body: dict[str, Any], tools: list[str]) -> str | None:
    """The tool a request forces (a named function or tool, or any tool when there is one), or None."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        name = choice.get("name") or _dig(choice, "function", "name")
        if name:
            return str(name)
        if choice.get("type") == "any" and tools:
            return tools[0]
    if choice in ("required", "REQUIRED") and tools:  # Cohere's is upper case
        return tools[0]
    bedrock = _dig(body, "toolConfig", "toolChoice")  # Bedrock's Converse: {"tool": {"name"}} or {"any": {}}
    if isinstance(bedrock, dict) and (_dig(bedrock, "tool", "name") or ("any" in bedrock and tools)):
        return str(_dig(bedrock, "tool", "name") or tools[0])
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


def tool_parameters(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each offered tool's parameter schema, by name, whatever the protocol's shape."""
    found: dict[str, dict[str, Any]] = {}
    for tool in _dig(body, "toolConfig", "tools") or ():  # Bedrock's Converse: toolSpec.inputSchema.json
        name, schema = _dig(tool, "toolSpec", "name"), _dig(tool, "toolSpec", "inputSchema", "json")
        if isinstance(name, str):
            found[name] = schema if isinstance(schema, dict) else {"type": "object"}
    for tool in body.get("tools") or ():
        if not isinstance(tool, dict):
            continue
        declarations = tool.get("functionDeclarations") or tool.get("function_declarations")
        for item in declarations if isinstance(declarations, list) else [tool.get("function", tool)]:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                continue
            schema = item.get("parameters") or item.get("input_schema") or item.get("parametersJsonSchema")
            found[item["name"]] = schema if isinstance(schema, dict) else {"type": "object"}
    return found


def demands(body: dict[str, Any], tools: tuple[str, ...]) -> dict[str, Any]:
    """What a request demands of its answer, as ``ChatRequest`` fields: its limits (token budget, stop sequences),
    its choices and log-probabilities, the forced tool, the structured output's schema, the offered tools'
    parameter schemas."""
    schema = requested_schema(body)
    parameters = tool_parameters(body)
    return {
        "max_tokens": max_tokens_of(body),
        "stop": stop_sequences(body),
        "choices": choices_of(body),
        "logprobs": logprobs_of(body),
        "forced_tool": forced_tool(body, list(tools)) or "",
        "schema_json": orjson.dumps(schema).decode() if schema is not None else "",
        "tool_schemas": tuple((name, orjson.dumps(value).decode()) for name, value in parameters.items()),
    }
