"""The harness's own protocol, which the npm package's AI SDK provider speaks (``POST /harness/v1/generate``): the
neutral request a language model's call options carry in, the engine's decision out as JSON, never streamed (the
provider makes the stream parts from the whole answer, as seed 000's test provider does).

The request is the AI SDK's prompt as it stands (``system``, ``user``, ``assistant`` and ``tool`` messages with
their text, reasoning, tool-call and tool-result parts) beside the call's settings under the names every protocol's
reader knows (``tools`` with their ``input_schema``, ``tool_choice``, ``temperature``, ``top_p``, ``max_tokens``,
``stop``, ``output_format``), ``reasoning`` (whether the call asks for it) and ``stream`` (whether the model was
asked for a stream: recorded, the answer is the same JSON).

The answer is ``{"id", "model", "content", "finishReason", "usage"}`` in the specification's vocabulary (content
parts ``reasoning`` with the signature as ``providerMetadata.anthropic``, ``text``, ``tool-call`` with its id and
JSON input), and a failure ``{"status", "message", "retryable", "retryAfterMs", "throws"}`` with the kind's HTTP
status. Failures are said, never acted out (no held timeout, no cut connection, no broken body): the model acts
them out. ``throws`` is true for a turn's ``failure_throws`` (seed 000's ``failureThrows``, a dropped connection on
every other protocol), which the model throws as ``Error(message)``; a scripted ``network_error`` is not thrown (the
model rejects with the AI SDK's own error for a connection that failed).
"""

from __future__ import annotations

from typing import Any

import orjson

from harnessweb.engine.exchange import Block, ChatRequest, Failure, Message, Reply, Thinking, short_id
from harnessweb.engine.wire.common import (
    JSON_HEADERS,
    Encoded,
    WireError,
    bool_field,
    choice_finish,
    dumps,
    failure_http_status,
    number_or_none,
    retry_headers,
)

PROTOCOL = "harness"
LABEL = "Harness (AI SDK provider)"
PATH = "/harness/v1/generate"
REQUEST_ID_HEADER = b"x-request-id"
# Failures go out as the JSON the model acts on (respond.failure_outgoing reads this).
FAILURES_AS_DATA = True
_FINISH = {"stop": "stop", "tool_calls": "tool-calls", "length": "length", "stop_sequence": "stop"}
_ROLES = ("system", "user", "assistant", "tool")


def parse_request(body: Any) -> ChatRequest:
    """Read a request into the neutral one; raises WireError naming the bad field (``prompt.1.content.0.text``)."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("model: Field required (the model's id)", "model")
    prompt = body.get("prompt")
    if not isinstance(prompt, list) or not prompt:
        raise WireError("prompt: at least one message is required", "prompt")
    system: list[str] = []
    messages: list[Message] = []
    for i, raw in enumerate(prompt):
        where = f"prompt.{i}"
        if not isinstance(raw, dict) or raw.get("role") not in _ROLES:
            raise WireError(f"{where}.role: Input should be one of {', '.join(_ROLES)}", f"{where}.role")
        if raw["role"] == "system":
            if not isinstance(raw.get("content"), str):
                raise WireError(f"{where}.content: a system message's content is a string", f"{where}.content")
            system.append(raw["content"])
        else:
            messages.append(_message(raw, where))
    return ChatRequest(
        protocol=PROTOCOL,
        model=model,
        system="\n".join(system),
        messages=tuple(messages),
        tools=tuple(_tool_names(body.get("tools"))),
        temperature=number_or_none(body, "temperature"),
        top_p=number_or_none(body, "top_p"),
        reasoning_enabled=bool_field(body, "reasoning"),
        stream=bool_field(body, "stream"),
    )


def _tool_names(raw: Any) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise WireError("tools: Input should be a list", "tools")
    names = []
    for i, tool in enumerate(raw):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
            raise WireError(f"tools.{i}.name: Field required", f"tools.{i}.name")
        schema = tool.get("input_schema")
        if schema is not None and not isinstance(schema, dict):
            raise WireError(f"tools.{i}.input_schema: Input should be a JSON Schema object", f"tools.{i}.input_schema")
        names.append(tool["name"])
    return names


def _message(raw: dict[str, Any], where: str) -> Message:
    """A user, assistant or tool message: its content a string (user) or a list of the SDK's parts."""
    role = raw["role"]
    content = raw.get("content")
    if isinstance(content, str) and role == "user":
        return Message("user", content)
    if not isinstance(content, list):
        raise WireError(f"{where}.content: Input should be a list of parts", f"{where}.content")
    texts: list[str] = []
    thinking: list[Thinking] = []
    call_ids: list[str] = []
    result_ids: list[str] = []
    for j, part in enumerate(content):
        at = f"{where}.content.{j}"
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str):
            raise WireError(f"{at}: Input should be an object with a type", at)
        if kind == "text":
            texts.append(_string(part, "text", at))
        elif kind == "reasoning" and role == "assistant":
            signature = _signature(part, at)
            if signature is not None:  # reasoning without its signature is left out, as seed 000's provider does
                thinking.append(Thinking(_string(part, "text", at), signature, at))
        elif kind == "tool-call" and role == "assistant":
            call_ids.append(_string(part, "toolCallId", at))
            _string(part, "toolName", at)
        elif kind == "tool-result" and role in ("assistant", "tool"):
            result_ids.append(_string(part, "toolCallId", at))
            texts.append(_output_text(part.get("output"), f"{at}.output"))
        elif kind in ("reasoning-file", "custom") and role == "assistant":
            continue  # AI SDK 7's (V4) reasoning files and provider-specific parts: nothing the engine reads
        elif kind not in ("file", "tool-approval-response"):
            raise WireError(f"{at}.type: a {role} message has no {kind!r} part", f"{at}.type")
    return Message(
        role,
        "\n".join(t for t in texts if t),
        thinking=tuple(thinking),
        call_ids=tuple(call_ids),
        result_ids=tuple(result_ids),
    )


def _string(part: dict[str, Any], name: str, at: str) -> str:
    value = part.get(name)
    if not isinstance(value, str):
        raise WireError(f"{at}.{name}: Field required (a string)", f"{at}.{name}")
    return value


def _signature(part: dict[str, Any], at: str) -> str | None:
    """The signature a reasoning part carries back (``providerOptions.anthropic.signature``, as the SDK turns the
    answer's ``providerMetadata`` into the next prompt's options); None without one, or for redacted reasoning."""
    for name in ("providerOptions", "providerMetadata"):
        options = part.get(name)
        anthropic = options.get("anthropic") if isinstance(options, dict) else None
        if isinstance(anthropic, dict):
            if anthropic.get("redactedData"):
                return None
            signature = anthropic.get("signature")
            if signature is not None and not isinstance(signature, str):
                raise WireError(f"{at}.{name}.anthropic.signature: Input should be a string", f"{at}.{name}")
            if signature:
                return signature
    return None


def _output_text(output: Any, at: str) -> str:
    """A tool result's output as text: ``text`` / ``error-text`` as given, ``json`` / ``error-json`` as JSON, a
    ``content`` list's text items."""
    if not isinstance(output, dict) or not isinstance(output.get("type"), str):
        raise WireError(f"{at}: Input should be an object with a type (text, json, content, …)", at)
    value = output.get("value")
    if output["type"] in ("text", "error-text"):
        if not isinstance(value, str):
            raise WireError(f"{at}.value: Field required (a string)", f"{at}.value")
        return value
    if output["type"] == "content" and isinstance(value, list):
        return "\n".join(i["text"] for i in value if isinstance(i, dict) and isinstance(i.get("text"), str))
    return orjson.dumps(value).decode()


def _part(block: Block) -> dict[str, Any]:
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "reasoning":
        meta = {"redactedData": block.redacted} if block.redacted else {"signature": block.signature}
        return {"type": "reasoning", "text": block.text, "providerMetadata": {"anthropic": meta}}
    return {"type": "tool-call", "toolCallId": block.call_id, "toolName": block.name, "input": block.arguments}


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """The answer as one JSON body, whether or not the model was asked for a stream."""
    blocks = [b for b in reply.blocks if b.choice == 0]
    body = {
        "id": f"gen_{short_id(reply.id_seed or 'harness')}",
        "model": request.model,
        "content": [_part(b) for b in blocks],
        "finishReason": _FINISH[choice_finish(reply, blocks)],
        "usage": {
            "inputTokens": reply.usage.input_tokens,
            "outputTokens": reply.usage.output_tokens,
            "totalTokens": reply.usage.total_tokens,
        },
    }
    return Encoded(200, JSON_HEADERS, (dumps(body),))


def encode_failure(failure: Failure, request_id: str = "") -> Encoded:
    """A failure as the model acts it out, with the kind's HTTP status and retry headers."""
    body: dict[str, Any] = {
        "status": failure.status,
        "message": failure.message,
        "retryable": failure.retryable,
        "retryAfterMs": failure.retry_after_ms,
        "throws": failure.throws,
    }
    if failure.error:  # the scenario's own error object, as authored
        body["details"] = failure.error
    return Encoded(failure_http_status(failure), JSON_HEADERS + tuple(retry_headers(failure)), (dumps(body),))


def encode_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    request_id: str = "",
) -> Encoded:
    """An error: ``{"error": {"message", "param", "requestId"}}``."""
    error: dict[str, Any] = {"message": message, "param": param, "requestId": request_id or None, **(extra or {})}
    return Encoded(status, JSON_HEADERS + headers, (dumps({"error": error}),))


def encode_model(model_id: str) -> Encoded:
    """Any id is a model: the harness answers every model name."""
    return Encoded(200, JSON_HEADERS, (dumps({"id": model_id}),))


def encode_models(ids: list[str]) -> Encoded:
    return Encoded(200, JSON_HEADERS, (dumps({"data": [{"id": i} for i in ids]}),))


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure kind on other protocols."""
    return Encoded(200, JSON_HEADERS, (b'{"id":"gen_broken","content":[{"ty',))
