"""Amazon Bedrock's Converse API: ``POST /model/{modelId}/converse`` (one JSON answer) and ``/converse-stream``
(events in the AWS event-stream framing, :mod:`~harnessweb.engine.wire.eventstream`), as boto3's
``bedrock-runtime`` client calls them. Pure.

The path names the model (URL-encoded by clients: ``anthropic.claude-3-5-sonnet-20240620-v1%3A0``) and whether to
stream. Messages hold content blocks (``text``, ``toolUse``, ``toolResult``, ``reasoningContent``), tools come in
``toolConfig.tools[].toolSpec``, limits in ``inferenceConfig``, reasoning is asked through
``additionalModelRequestFields`` (``thinking`` or ``reasoning_config``). The stream is ``messageStart``, per block
its deltas (a ``contentBlockStart`` first for a tool use; a reasoning block's text then its ``signature``) and
``contentBlockStop``, then ``messageStop`` and ``metadata`` (usage). Errors are Bedrock's: ``{"message": …}`` with
the exception named in the ``x-amzn-ErrorType`` header; a streamed request's failure is an exception event in a 200
stream (``throttlingException``…) unless the scenario gives an HTTP status, or Bedrock would refuse it before the
stream opens (auth, permission, not found).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

import orjson

from harnessweb.engine.exchange import Block, ChatRequest, Failure, Message, Reply, Thinking
from harnessweb.engine.wire import eventstream
from harnessweb.engine.wire.common import (
    JSON_HEADERS,
    Encoded,
    Piece,
    WireError,
    argument_chunks,
    choice_finish,
    dumps,
    failure_http_status,
    retry_headers,
    text_chunks,
)

PROTOCOL = "bedrock"
LABEL = "Amazon Bedrock Converse"
PATH = "/model/{modelId}/converse"
PATH_PATTERN = r"/model/(?P<param>.+)/(?P<method>converse|converse-stream)"  # an ARN as the id has slashes
REQUEST_ID_HEADER = b"x-amzn-requestid"
STREAM_HEADERS = ((b"content-type", eventstream.CONTENT_TYPE),)
_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "stop_sequence": "stop_sequence"}


def path_fields(model: str, method: str, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """The model (its id decoded: clients percent-encode the ``:`` of ``…-v1:0``) and whether to stream."""
    return {"model": unquote(model), "model_missing": False, "stream": method == "converse-stream"}


def invalid(where: str, constraint: str) -> WireError:
    """A request field Bedrock refuses, said as AWS's validation does."""
    return WireError(
        f"1 validation error detected: Value at '{where}' failed to satisfy constraint: {constraint}", where
    )


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise invalid(where, "Member must be a list")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid(where, "Member must be a structure")
    return value


def _string(block: dict[str, Any], name: str, where: str) -> str:
    value = block.get(name)
    if not isinstance(value, str):
        raise invalid(f"{where}.{name}", "Member must not be null")
    return value


def _result_text(result: dict[str, Any], where: str) -> str:
    """A tool result's content as text: its ``text`` parts, and its ``json`` parts as JSON."""
    texts = []
    for k, part in enumerate(_list(result.get("content"), f"{where}.content")):
        part = _object(part, f"{where}.content.{k}")
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif "json" in part:
            texts.append(orjson.dumps(part["json"]).decode())
    return "\n".join(texts)


def _message(raw: Any, i: int) -> Message:
    where = f"messages.{i}"
    raw = _object(raw, where)
    role = raw.get("role")
    if role not in ("user", "assistant"):
        raise invalid(f"{where}.role", "Member must satisfy enum value set: [user, assistant]")
    texts: list[str] = []
    thinking: list[Thinking] = []
    results = 0
    call_ids: list[str] = []
    result_ids: list[str] = []
    content = _list(raw.get("content"), f"{where}.content")
    for j, block in enumerate(content):
        at = f"{where}.content.{j}"
        block = _object(block, at)
        if "text" in block:
            texts.append(_string(block, "text", at))
        elif "toolResult" in block:
            result = _object(block["toolResult"], f"{at}.toolResult")
            texts.append(_result_text(result, f"{at}.toolResult"))
            results += 1
            if isinstance(result.get("toolUseId"), str):
                result_ids.append(result["toolUseId"])
        elif "toolUse" in block:
            use = _object(block["toolUse"], f"{at}.toolUse")
            call_ids.append(_string(use, "toolUseId", f"{at}.toolUse"))
            _string(use, "name", f"{at}.toolUse")
        elif "reasoningContent" in block and role == "assistant":
            reasoning = _object(block["reasoningContent"], f"{at}.reasoningContent")
            if "reasoningText" in reasoning:  # redactedContent is opaque: sent back as served
                text_block = _object(reasoning["reasoningText"], f"{at}.reasoningContent.reasoningText")
                text = _string(text_block, "text", f"{at}.reasoningContent.reasoningText")
                signature = text_block.get("signature")
                where_thinking = f"{at}.reasoningContent.reasoningText"
                thinking.append(Thinking(text, signature if isinstance(signature, str) else None, where_thinking))
    # A user turn made only of tool results is the tool's answer, not the user speaking.
    tool = role == "user" and content and results == len(content)
    return Message(
        role="tool" if tool else role,
        text="\n".join(texts),
        thinking=tuple(thinking),
        call_ids=tuple(call_ids),
        result_ids=tuple(result_ids),
    )


def _tools(config: Any) -> tuple[str, ...]:
    if config is None:
        return ()
    config = _object(config, "toolConfig")
    names = []
    for i, tool in enumerate(_list(config.get("tools"), "toolConfig.tools")):
        tool = _object(tool, f"toolConfig.tools.{i}")
        if "toolSpec" in tool:
            spec = _object(tool["toolSpec"], f"toolConfig.tools.{i}.toolSpec")
            names.append(_string(spec, "name", f"toolConfig.tools.{i}.toolSpec"))
    return tuple(names)


def _number(config: dict[str, Any], name: str) -> float | None:
    value = config.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(f"inferenceConfig.{name}", "Member must be a number")
    return float(value)


def reasoning_asked(fields: Any) -> bool:
    """Whether ``additionalModelRequestFields`` turns reasoning on: Claude's ``thinking`` or the others'
    ``reasoning_config``, of type ``enabled`` (or ``adaptive``)."""
    if not isinstance(fields, dict):
        return False
    asked = fields.get("thinking") or fields.get("reasoning_config")
    return isinstance(asked, dict) and asked.get("type") in ("enabled", "adaptive")


def parse_request(body: Any) -> ChatRequest:
    """Read a Converse body into the neutral request (the model and streaming come from the path: see
    :func:`path_fields`); raises WireError naming the bad field."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise invalid("messages", "Member must have length greater than or equal to 1")
    messages = [_message(raw, i) for i, raw in enumerate(raw_messages)]
    if messages[0].role == "assistant":
        raise WireError(
            "A conversation must start with a user message. Try again with a conversation that starts with a user "
            "message.",
            "messages.0.role",
        )
    system = []
    for i, part in enumerate(_list(body.get("system", []), "system")):
        part = _object(part, f"system.{i}")
        if "text" in part:
            system.append(_string(part, "text", f"system.{i}"))
    config = _object(body.get("inferenceConfig") or {}, "inferenceConfig")
    max_tokens = config.get("maxTokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise invalid("inferenceConfig.maxTokens", "Member must have value greater than or equal to 1")
    return ChatRequest(
        protocol=PROTOCOL,
        model="",
        system="\n".join(system),
        messages=tuple(messages),
        tools=_tools(body.get("toolConfig")),
        temperature=_number(config, "temperature"),
        top_p=_number(config, "topP"),
        reasoning_enabled=reasoning_asked(body.get("additionalModelRequestFields")),
    )


# -- the answer --------------------------------------------------------------------------------------------------


def tool_use_id(block: Block) -> str:
    # Authored ids are used verbatim; derived ones take Bedrock's prefix.
    return "tooluse_" + block.call_id.removeprefix("call_") if block.derived_id else block.call_id


def _input(arguments: str) -> Any:
    """A tool call's input; ``{}`` for arguments that ``maxTokens`` cut before they closed."""
    try:
        return orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return {}


def _redacted(block: Block) -> str:
    """Redacted reasoning as Bedrock's ``redactedContent`` blob (base64 in JSON)."""
    return base64.b64encode(block.redacted.encode()).decode()


def _content(block: Block) -> dict[str, Any]:
    if block.type == "text":
        return {"text": block.text}
    if block.redacted:
        return {"reasoningContent": {"redactedContent": _redacted(block)}}
    if block.type == "reasoning":
        return {"reasoningContent": {"reasoningText": {"text": block.text, "signature": block.signature}}}
    return {"toolUse": {"toolUseId": tool_use_id(block), "name": block.name, "input": _input(block.arguments)}}


def _usage(reply: Reply) -> dict[str, int]:
    u = reply.usage
    return {"inputTokens": u.input_tokens, "outputTokens": u.output_tokens, "totalTokens": u.total_tokens}


def stop_reason(reply: Reply) -> str:
    return _STOP_REASONS[choice_finish(reply, reply.blocks)]


@lru_cache(maxsize=2048)
def encode_response(reply: Reply) -> Encoded:
    """A non-streamed ``ConverseResponse`` (``metrics.latencyMs`` is 0: the bytes of a turn never change)."""
    body = {
        "output": {"message": {"role": "assistant", "content": [_content(b) for b in reply.blocks]}},
        "stopReason": stop_reason(reply),
        "usage": _usage(reply),
        "metrics": {"latencyMs": 0},
    }
    return Encoded(200, JSON_HEADERS, (dumps(body),))


def _deltas(reply: Reply, index: int, block: Block) -> list[tuple[dict[str, Any], Piece | None]]:
    """A block's ``contentBlockDelta`` payloads, each with what it adds for the live viewer."""
    if block.type == "text":
        return [({"text": p}, Piece(index, "text", p)) for p in text_chunks(reply, block.text)]
    if block.redacted:
        return [({"reasoningContent": {"redactedContent": _redacted(block)}}, None)]
    if block.type == "reasoning":
        deltas: list[tuple[dict[str, Any], Piece | None]] = [
            ({"reasoningContent": {"text": p}}, Piece(index, "reasoning", p)) for p in text_chunks(reply, block.text)
        ]
        return [*deltas, ({"reasoningContent": {"signature": block.signature}}, None)]
    return [({"toolUse": {"input": p}}, Piece(index, "arguments", p)) for p in argument_chunks(block.arguments)]


@lru_cache(maxsize=2048)
def encode_stream(reply: Reply) -> Encoded:
    """The ConverseStream events of an answer, one event-stream message per frame; cached, since a turn's bytes
    never change."""
    frames = [eventstream.event("messageStart", b'{"role":"assistant"}')]
    pieces: list[Piece | None] = [None]
    for index, block in enumerate(reply.blocks):
        if block.type == "tool_call":
            start = {"toolUse": {"toolUseId": tool_use_id(block), "name": block.name}}
            frames.append(eventstream.event("contentBlockStart", dumps({"contentBlockIndex": index, "start": start})))
            pieces.append(Piece(index, "tool_call", block.name))
        for delta, piece in _deltas(reply, index, block):
            frames.append(eventstream.event("contentBlockDelta", dumps({"contentBlockIndex": index, "delta": delta})))
            pieces.append(piece)
        frames.append(eventstream.event("contentBlockStop", dumps({"contentBlockIndex": index})))
        pieces.append(None)
    frames.append(eventstream.event("messageStop", dumps({"stopReason": stop_reason(reply)})))
    frames.append(eventstream.event("metadata", dumps({"usage": _usage(reply), "metrics": {"latencyMs": 0}})))
    pieces += [None, None]
    return Encoded(200, STREAM_HEADERS, tuple(frames), tuple(pieces))


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """The answer as the path asked for it: streamed or not."""
    return encode_stream(reply) if request.stream else encode_response(reply)


# -- errors ------------------------------------------------------------------------------------------------------

MISSING_TOKEN = "Missing Authentication Token"
INCOMPLETE_SIGNATURE = "Authorization header requires"  # how AWS opens its refusal of a header that is no SigV4
_EXCEPTIONS = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
# The failure kinds whose exception Bedrock gives another status than the kind's own.
_KINDS = {
    "auth_error": (403, "UnrecognizedClientException"),
    "request_too_large": (400, "ValidationException"),
    "timeout": (408, "ModelTimeoutException"),
    "overloaded": (503, "ServiceUnavailableException"),
    "bad_gateway": (502, "InternalServerException"),
}
# The failure kinds a stream carries as an exception event, and the union member that names each.
_STREAM_EXCEPTIONS = {
    "rate_limit": "throttlingException",
    "server_error": "internalServerException",
    "bad_gateway": "internalServerException",
    "unavailable": "serviceUnavailableException",
    "overloaded": "serviceUnavailableException",
    "bad_request": "validationException",
    "request_too_large": "validationException",
    "model_error": "modelStreamErrorException",
}


def exception_name(status: int, message: str = "") -> str:
    """The exception Bedrock names for a status (and, for its refusals of a key, the message)."""
    if message == MISSING_TOKEN:
        return "MissingAuthenticationTokenException"
    if message.startswith(INCOMPLETE_SIGNATURE):
        return "IncompleteSignatureException"
    return _EXCEPTIONS.get(status, "ValidationException" if status < 500 else "InternalServerException")


def encode_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    request_id: str = "",
    code: str = "",
) -> Encoded:
    """An error as Bedrock sends it: ``{"message": …}``, the exception named in ``x-amzn-ErrorType`` (botocore
    reads the code there: ``ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/``). Its
    messages name the field themselves: ``param`` is taken for the same call as every protocol's, and left out."""
    body: dict[str, Any] = {"message": message}
    body.update(extra or {})
    kind = code or exception_name(status, message)
    error_type = (b"x-amzn-errortype", f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/".encode())
    return Encoded(status, (*JSON_HEADERS, error_type, *headers), (dumps(body),))


def encode_failure(failure: Failure, request_id: str = "") -> Encoded:
    """A simulated HTTP failure as Bedrock sends it (a retryable ``model_error`` is its 500, another its 424
    ``ModelErrorException``)."""
    status, code = _KINDS.get(failure.status, (0, ""))
    if failure.status == "model_error":
        status, code = (500, "InternalServerException") if failure.retryable else (424, "ModelErrorException")
    if failure.http_status or not status:
        status, code = failure_http_status(failure), ""
    headers = tuple(retry_headers(failure))
    return encode_error(status, failure.message, extra=failure.error, headers=headers, code=code)


def encode_stream_failure(failure: Failure, request_id: str = "") -> Encoded | None:
    """A streamed request's failure as an exception event in a 200 stream (what a client raises while it reads
    the events: botocore's ``EventStreamError``), or None for a failure Bedrock gives before the stream opens (an
    HTTP status the scenario sets, or a kind no stream event names)."""
    member = _STREAM_EXCEPTIONS.get(failure.status)
    if member is None or failure.http_status:
        return None
    payload = dumps({"message": failure.message, **(failure.error or {})})
    return Encoded(200, STREAM_HEADERS, (eventstream.exception(member, payload),), (None,))


def _model(model_id: str) -> dict[str, Any]:
    provider = model_id.split(".")[0] if "." in model_id else "harness"
    return {"modelArn": f"arn:aws:bedrock:us-east-1::foundation-model/{model_id}", "modelId": model_id,
            "modelName": model_id, "providerName": provider, "responseStreamingSupported": True}  # fmt: skip


def encode_model(model_id: str) -> Encoded:
    """A model as Bedrock's control plane describes one (``modelDetails``): the harness answers any model id."""
    return Encoded(200, JSON_HEADERS, (dumps({"modelDetails": _model(model_id)}),))


def encode_models(ids: list[str]) -> Encoded:
    return Encoded(200, JSON_HEADERS, (dumps({"modelSummaries": [_model(i) for i in ids]}),))


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure (a stream's first message with a
    checksum that does not hold)."""
    if stream:
        frame = eventstream.event("messageStart", b'{"role":"assistant"}')
        return Encoded(200, STREAM_HEADERS, (frame[:-4] + b"\x00\x00\x00\x00",))
    return Encoded(200, JSON_HEADERS, (b'{"output":{"message":{"role":"assistant","content":[{"te',))
