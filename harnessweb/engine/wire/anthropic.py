"""Anthropic Messages: request parser and encoders (SSE events, message objects, errors).

The stream is shaped after real recordings: ``message_start``, then per block ``content_block_start`` (a ``ping``
after the first), deltas (``text_delta``, ``thinking_delta`` then one ``signature_delta``, ``input_json_delta``
starting with an empty one; none for ``redacted_thinking``, whole in its start), ``content_block_stop``, then
``message_delta`` with the stop reason and ``message_stop``. Each event is ``event: NAME\\ndata: JSON\\n\\n``.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

import orjson

from harnessweb.engine.exchange import Block, ChatRequest, Failure, Message, Reply, Thinking, short_id
from harnessweb.engine.tokens import prompt_tokens
from harnessweb.engine.wire.common import (
    JSON_HEADERS,
    SSE_HEADERS,
    Encoded,
    Piece,
    WireError,
    argument_chunks,
    bool_field,
    choice_finish,
    dumps,
    failure_http_status,
    number_or_none,
    retry_headers,
    text_chunks,
    text_of,
)

PROTOCOL = "anthropic"
LABEL = "Anthropic Messages"
PATH = "/v1/messages"
REQUEST_ID_HEADER = b"request-id"
_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "stop_sequence": "stop_sequence",
}


def parse_request(body: Any) -> ChatRequest:
    """Read a Messages body into the neutral request; raises WireError naming the bad field."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("model: Field required", "model")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise WireError("max_tokens: Field required (an integer)", "max_tokens")
    keep, continues = _thread(body.get("thread"))
    raw_messages = body.get("messages")
    # A thread's continuation sends only what the server lacks, which may be nothing (after a pause_turn).
    if not isinstance(raw_messages, list) or (not raw_messages and not continues):
        raise WireError("messages: at least one message is required", "messages")
    messages = [_parse_message(raw, i) for i, raw in enumerate(raw_messages)]
    system = text_of(body.get("system"), "system", index_format="{}.{}")
    tools = []
    raw_tools = body.get("tools") or []
    if not isinstance(raw_tools, list):
        raise WireError("tools: Input should be a valid list", "tools")
    for i, tool in enumerate(raw_tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise WireError(f"tools.{i}.name: Field required", f"tools.{i}.name")
        tools.append(tool["name"])
    thinking = body.get("thinking")
    if thinking is not None and not isinstance(thinking, dict):
        raise WireError("thinking: Input should be an object", "thinking")
    return ChatRequest(
        protocol=PROTOCOL,
        model=model,
        system=system,
        messages=tuple(messages),
        tools=tuple(tools),
        temperature=number_or_none(body, "temperature"),
        top_p=number_or_none(body, "top_p"),
        reasoning_enabled=bool(thinking) and thinking.get("type") in ("enabled", "adaptive"),
        stream=bool_field(body, "stream"),
        keep=keep,
        continues=continues,
    )


def _thread(raw: Any) -> tuple[bool, str]:
    """A message thread (beta ``message-threads-2026-08-12``): ``{"type": "create"}`` keeps this answer's
    conversation, ``{"type": "continue", "previous_message_id"}`` continues one (and keeps the answer too)."""
    if raw is None:
        return False, ""
    if not isinstance(raw, dict) or raw.get("type") not in ("create", "continue"):
        raise WireError("thread: Input should be {'type': 'create'} or {'type': 'continue', …}", "thread")
    if raw["type"] == "create":
        return True, ""
    previous = raw.get("previous_message_id")
    if not isinstance(previous, str) or not previous:
        raise WireError("thread.previous_message_id: Field required", "thread.previous_message_id")
    return True, previous


def _parse_message(raw: Any, i: int) -> Message:
    where = f"messages.{i}"
    if not isinstance(raw, dict):
        raise WireError(f"{where}: Input should be an object", where)
    role = raw.get("role")
    if role not in ("user", "assistant"):
        raise WireError(f"{where}.role: Input should be 'user' or 'assistant'", f"{where}.role")
    content = raw.get("content")
    if isinstance(content, str):
        return Message(role=role, text=content)
    if not isinstance(content, list):
        raise WireError(f"{where}.content: Input should be a string or a list of blocks", f"{where}.content")
    texts: list[str] = []
    thinking: list[Thinking] = []
    call_ids: list[str] = []
    result_ids: list[str] = []
    only_tool_results = bool(content)
    for j, block in enumerate(content):
        at = f"{where}.content.{j}"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise WireError(f"{at}: Input should be an object with a type", at)
        kind = block["type"]
        if kind != "tool_result":
            only_tool_results = False
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise WireError(f"{at}.text: Field required", f"{at}.text")
            texts.append(block["text"])
        elif kind == "thinking" and role == "assistant":
            if not isinstance(block.get("thinking"), str):
                raise WireError(f"{at}.thinking: Field required", f"{at}.thinking")
            signature = block.get("signature")
            thinking.append(Thinking(block["thinking"], signature if isinstance(signature, str) else None, at))
        elif kind == "redacted_thinking" and role == "assistant":
            # Sent back as served: its data is opaque (no text, no signature to check), but it must be there.
            if not isinstance(block.get("data"), str):
                raise WireError(f"{at}.data: Field required", f"{at}.data")
        elif kind == "tool_result":
            texts.append(text_of(block.get("content"), f"{at}.content", index_format="{}.{}"))
            if isinstance(block.get("tool_use_id"), str):
                result_ids.append(block["tool_use_id"])
        elif kind == "tool_use" and role == "assistant" and isinstance(block.get("id"), str):
            call_ids.append(block["id"])
    # A user turn made only of tool results is the tool's answer, not the user speaking.
    return Message(
        role="tool" if role == "user" and only_tool_results else role,
        text="\n".join(texts),
        thinking=tuple(thinking),
        call_ids=tuple(call_ids),
        result_ids=tuple(result_ids),
    )


def _message_id(reply: Reply) -> str:
    return f"msg_{short_id(reply.id_seed or 'harness')}"


def _tool_id(block: Block) -> str:
    # Authored ids are used verbatim; derived ones take Anthropic's prefix.
    return "toolu_" + block.call_id.removeprefix("call_") if block.derived_id else block.call_id


served_call_id = _tool_id  # the id a tool call is served with (a kept conversation's answer keeps it)


def _input(arguments: str) -> Any:
    """A tool call's input; ``{}`` for arguments that ``max_tokens`` cut before they closed (the stream carries the
    partial JSON itself)."""
    try:
        return orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return {}


def _met(reply: Reply) -> str | None:
    """The stop sequence the answer met, if a request's ``stop_sequences`` cut it."""
    return reply.cut()[1] or None


def _event(name: bytes, data: dict[str, Any]) -> bytes:
    return b"event: " + name + b"\ndata: " + dumps(data) + b"\n\n"


def _message_usage(reply: Reply, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": reply.usage.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }


@lru_cache(maxsize=2048)
def encode_stream(reply: Reply, model: str) -> Encoded:
    """The SSE events of a streamed answer, one frame per event; cached, since a turn's bytes never change."""
    start = {
        "id": _message_id(reply),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _message_usage(reply, 1),
    }
    frames = [_event(b"message_start", {"type": "message_start", "message": start})]
    pieces: list[Piece | None] = [None]
    for index, block in enumerate(reply.blocks):
        if block.type == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in text_chunks(reply, block.text)]
        elif block.redacted:
            # Redacted thinking comes whole in its content_block_start, with no deltas.
            opening = {"type": "redacted_thinking", "data": block.redacted}
            deltas = []
        elif block.type == "reasoning":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in text_chunks(reply, block.text)]
            deltas.append({"type": "signature_delta", "signature": block.signature})
        else:
            opening = {"type": "tool_use", "id": _tool_id(block), "name": block.name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [{"type": "input_json_delta", "partial_json": p} for p in argument_chunks(block.arguments)]
        frames.append(
            _event(
                b"content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        pieces.append(Piece(index, "tool_call", block.name) if block.type == "tool_call" else None)
        if index == 0:
            frames.append(b'event: ping\ndata: {"type": "ping"}\n\n')
            pieces.append(None)
        for delta in deltas:
            frames.append(
                _event(b"content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
            pieces.append(_piece(index, delta))
        frames.append(_event(b"content_block_stop", {"type": "content_block_stop", "index": index}))
        pieces.append(None)
    frames.append(
        _event(
            b"message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": _STOP_REASONS[choice_finish(reply, reply.blocks)],
                    "stop_sequence": _met(reply),
                },
                "usage": _message_usage(reply, reply.usage.output_tokens),
            },
        )
    )
    frames.append(_event(b"message_stop", {"type": "message_stop"}))
    pieces += [None, None]
    return Encoded(200, SSE_HEADERS, tuple(frames), tuple(pieces))


def _piece(index: int, delta: dict[str, Any]) -> Piece | None:
    """What a delta adds, for the live viewer: nothing for the empty opening input_json_delta or a signature."""
    if delta.get("text"):
        return Piece(index, "text", delta["text"])
    if delta.get("thinking"):
        return Piece(index, "reasoning", delta["thinking"])
    if delta.get("partial_json"):
        return Piece(index, "arguments", delta["partial_json"])
    return None


@lru_cache(maxsize=2048)
def encode_message(reply: Reply, model: str) -> Encoded:
    """A non-streamed ``message`` object."""
    content: list[dict[str, Any]] = []
    for block in reply.blocks:
        if block.type == "text":
            content.append({"type": "text", "text": block.text})
        elif block.redacted:
            content.append({"type": "redacted_thinking", "data": block.redacted})
        elif block.type == "reasoning":
            content.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
        else:
            content.append(
                {
                    "type": "tool_use",
                    "id": _tool_id(block),
                    "name": block.name,
                    "input": _input(block.arguments),
                }
            )
    body = {
        "id": _message_id(reply),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _STOP_REASONS[choice_finish(reply, reply.blocks)],
        "stop_sequence": _met(reply),
        "usage": _message_usage(reply, reply.usage.output_tokens),
    }
    return Encoded(200, JSON_HEADERS, (dumps(body),))


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """The answer as the request asked for it: streamed or not."""
    if request.stream:
        return encode_stream(reply, request.model)
    return encode_message(reply, request.model)


# -- message threads: answers a later request continues by id --------------------------------------------------------


def answer_id(request: ChatRequest, reply: Reply) -> str:
    """The message's id, which a thread's next request names in ``previous_message_id``."""
    return _message_id(reply)


def response_object(request: ChatRequest, reply: Reply) -> dict[str, Any]:
    """The message object, as a non-streamed request gets it."""
    return orjson.loads(encode_message(reply, request.model).body)


def continued(request: ChatRequest, earlier: ChatRequest) -> ChatRequest:
    """The request after the thread's conversation. The server takes ``system`` and ``tools`` from the thread (the
    SDK sends them only when it creates one): a continuation that sends them anyway has its own."""
    return replace(
        request,
        system=request.system or earlier.system,
        tools=request.tools or earlier.tools,
        messages=(*earlier.messages, *request.messages),
    )


def encode_unknown_answer(answer_id: str, request_id: str = "") -> Encoded:
    """The answer to a thread continued from a message the server does not hold: ``thread_not_found``, on which the
    SDK sends the whole history again under a new thread."""
    details = {"error_code": "thread_not_found", "previous_message_id": answer_id}
    message = f"thread.previous_message_id: no thread holds message '{answer_id}'"
    return encode_error(400, message, extra={"details": details}, request_id=request_id)


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def encode_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    request_id: str = "",
) -> Encoded:
    """An error in Anthropic's format: ``{"type":"error","error":{"type","message"},"request_id"}`` (its errors
    name no parameter: ``param`` is taken for the same call as every protocol's, and left out)."""
    error: dict[str, Any] = {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}
    error.update(extra or {})
    body = {"type": "error", "error": error, "request_id": request_id or None}
    if 400 <= status < 500 and status not in (408, 409, 429) and not any(k == b"x-should-retry" for k, _ in headers):
        headers += ((b"x-should-retry", b"false"),)  # as the real API marks a request that will never succeed
    return Encoded(status, JSON_HEADERS + headers, (dumps(body),))


def encode_failure(failure: Failure, request_id: str = "") -> Encoded:
    """A simulated HTTP failure as Anthropic sends it (``overloaded`` is its 529 ``overloaded_error``)."""
    headers = list(retry_headers(failure))
    if not failure.retryable:
        headers.append((b"x-should-retry", b"false"))
    return encode_error(
        failure_http_status(failure, overloaded=529),
        failure.message,
        extra=failure.error,
        headers=tuple(headers),
        request_id=request_id,
    )


def _model(model_id: str) -> dict[str, Any]:
    return {"type": "model", "id": model_id, "display_name": model_id, "created_at": "2025-01-01T00:00:00Z"}


def encode_model(model_id: str) -> Encoded:
    """``GET /v1/models/{id}``: the harness answers any model name, so any id is a model."""
    return Encoded(200, JSON_HEADERS, (dumps(_model(model_id)),))


def parse_count_request(body: Any) -> ChatRequest:
    """A ``count_tokens`` body: a Messages body that needs no ``max_tokens``."""
    if isinstance(body, dict) and "max_tokens" not in body:
        body = {**body, "max_tokens": 1}
    return parse_request(body)


def encode_token_count(request: ChatRequest) -> Encoded:
    """``POST /v1/messages/count_tokens``: ``{"input_tokens"}``, the prompt's tokens (deterministic)."""
    return Encoded(200, JSON_HEADERS, (dumps({"input_tokens": prompt_tokens(request)}),))


def encode_models(ids: list[str]) -> Encoded:
    data = [_model(i) for i in ids]
    body = {
        "data": data,
        "has_more": False,
        "first_id": ids[0] if ids else None,
        "last_id": ids[-1] if ids else None,
    }
    return Encoded(200, JSON_HEADERS, (dumps(body),))


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure."""
    if stream:
        return Encoded(200, SSE_HEADERS, (b'event: message_start\ndata: {"type":"message_start","message":{"id\n\n',))
    return Encoded(200, JSON_HEADERS, (b'{"id":"msg_broken","type":"message","content":[{"ty',))
