"""What a request asks for beyond the neutral request, read from its body as sent, whatever its protocol: the JSON
Schema of a structured output, the token limit, the tools it requires a call to, and every other parameter.

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
# The members ``demands`` reads (each at the body's top): a body with none of them, or only a token limit among them
# (Anthropic's required ``max_tokens``), demands nothing else.
_LIMITS = frozenset({"max_completion_tokens", "max_tokens", "max_output_tokens"})
_DEMANDING = frozenset({
    "response_format", "text", "output_config", "output_format", "generationConfig", "outputConfig",
    "max_completion_tokens", "max_tokens", "max_output_tokens", "inferenceConfig", "stop", "stop_sequences", "n",
    "logprobs", "include", "top_logprobs", "tool_choice", "toolConfig", "tools",
})  # fmt: skip
_NOTHING_DEMANDED: dict[str, Any] = {
    "max_tokens": None, "stop": (), "choices": 1, "logprobs": None, "required_tools": (), "schema_json": "",
    "tool_schemas": (),
}  # fmt: skip


def _dig(body: dict[str, Any], *path: str) -> Any:
    value: Any = body
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _bedrock_schema(body: dict[str, Any]) -> Any:
    """Bedrock Converse's ``outputConfig.textFormat``: its JSON Schema arrives as a string of JSON."""
    text = _dig(body, "outputConfig", "textFormat", "structure", "jsonSchema", "schema")
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def requested_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON Schema a request asks its answer to follow (structured outputs), or None."""
    candidates = (
        _dig(body, "response_format", "json_schema", "schema"),  # Chat Completions
        _dig(body, "text", "format", "schema"),  # Responses
        _dig(body, "output_config", "format", "schema"),  # Anthropic structured outputs
        _dig(body, "output_format", "schema"),
        _dig(body, "generationConfig", "responseSchema"),  # Gemini
        _dig(body, "generationConfig", "responseJsonSchema"),
        _bedrock_schema(body),
    )
    schema = next((c for c in candidates if isinstance(c, dict)), None)
    if schema is None and _dig(body, "response_format", "type") == "json_object":
        cohere = _dig(body, "response_format", "json_schema")  # Cohere's: the schema itself
        return cohere if isinstance(cohere, dict) else {"type": "object"}
    if schema is not None and "title" not in schema:
        name = (
            _dig(body, "response_format", "json_schema", "name")
            or _dig(body, "text", "format", "name")
            or _dig(body, "outputConfig", "textFormat", "structure", "jsonSchema", "name")
        )
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


def _names(items: Any) -> list[str]:
    """The tool names of an ``allowed_tools`` list (Chat Completions' ``{"function": {"name"}}``, the Responses
    API's ``{"name"}``)."""
    names = (_dig(item, "function", "name") or _dig(item, "name") for item in items if isinstance(item, dict))
    return [str(name) for name in names if name]


def required_tools(body: dict[str, Any], tools: list[str]) -> tuple[str, ...]:
    """The tools a request requires the answer to call one of, in the order offered, or () when a call is not
    required. A named tool (OpenAI's ``{"type": "function", ...}``, Anthropic's ``{"type": "tool"}``, Bedrock's
    ``{"tool": {"name"}}``) is the one name: it is forced. OpenAI's ``"required"``, Anthropic's ``{"type": "any"}``,
    Cohere's ``REQUIRED`` and Bedrock's ``{"any": {}}`` allow any offered tool; Gemini's ``ANY`` any of its
    ``allowedFunctionNames`` (all offered when it lists none), so one allowed name forces that tool; OpenAI's
    ``allowed_tools`` in ``required`` mode any of those it lists."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        if choice.get("type") == "allowed_tools":  # Chat Completions nests it, the Responses API does not
            allowed = choice.get("allowed_tools") if isinstance(choice.get("allowed_tools"), dict) else choice
            listed = allowed.get("tools")
            return tuple(_names(listed)) if allowed.get("mode") == "required" and isinstance(listed, list) else ()
        name = choice.get("name") or _dig(choice, "function", "name")
        if name:
            return (str(name),)
        if choice.get("type") == "any":
            return tuple(tools)
    if choice in ("required", "REQUIRED"):  # Cohere's is upper case
        return tuple(tools)
    bedrock = _dig(body, "toolConfig", "toolChoice")  # Bedrock's Converse: {"tool": {"name"}} or {"any": {}}
    if isinstance(bedrock, dict):
        name = _dig(bedrock, "tool", "name")
        if name or "any" in bedrock:
            return (str(name),) if name else tuple(tools)
    if _dig(body, "toolConfig", "functionCallingConfig", "mode") == "ANY":
        allowed = _dig(body, "toolConfig", "functionCallingConfig", "allowedFunctionNames")
        return tuple(str(n) for n in allowed) if isinstance(allowed, list) and allowed else tuple(tools)
    return ()


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
    its choices and log-probabilities, the tools it requires a call to, the structured output's schema, the offered
    tools' parameter schemas."""
    if isinstance(body, dict) and body.keys() & _DEMANDING <= _LIMITS:  # most bodies: a model, messages, a limit
        return {**_NOTHING_DEMANDED, "max_tokens": max_tokens_of(body)}
    schema = requested_schema(body)
    parameters = tool_parameters(body)
    return {
        "max_tokens": max_tokens_of(body),
        "stop": stop_sequences(body),
        "choices": choices_of(body),
        "logprobs": logprobs_of(body),
        "required_tools": required_tools(body, list(tools)),
        "schema_json": orjson.dumps(schema).decode() if schema is not None else "",
        "tool_schemas": tuple((name, orjson.dumps(value).decode()) for name, value in parameters.items()),
    }
