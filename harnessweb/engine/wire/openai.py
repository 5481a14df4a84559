"""OpenAI Chat Completions: request parser and encoders (SSE chunks, chat.completion objects, errors).

Shapes follow the real API: the first delta of a choice carries ``role``, tool calls stream with ``index`` and
with ``id``/``name`` only on their first delta, ``finish_reason`` on the last choice chunk, a ``choices: []``
usage chunk when ``stream_options.include_usage`` is set, then ``data: [DONE]``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from harnessweb.engine import tokens
from harnessweb.engine.exchange import Block, ChatRequest, Failure, Message, Reply, short_id
from harnessweb.engine.wire.common import (
    CREATED,
    JSON_HEADERS,
    SSE_HEADERS,
    Encoded,
    Piece,
    WireError,
    argument_chunks,
    bool_field,
    by_choice,
    choice_finish,
    dumps,
    failure_http_status,
    number_or_none,
    retry_headers,
    text_chunks,
    text_of,
)

PROTOCOL = "openai"
LABEL = "OpenAI Chat Completions"
PATH = "/v1/chat/completions"
REQUEST_ID_HEADER = b"x-request-id"
DONE = b"data: [DONE]\n\n"
_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


DEFAULT_MODEL = "harness-default"


def parse_request(body: Any) -> ChatRequest:
    """Read a Chat Completions body into the neutral request; raises WireError naming the bad field."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    model = body.get("model")
    # Seed 004: the model may be left out; the default is echoed, and only a scenario refuses the request then.
    model_missing = "model" not in body
    if model_missing:
        model = DEFAULT_MODEL
    elif not isinstance(model, str) or not model:
        raise WireError("you must provide a model parameter", "model")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise WireError("messages must be a non-empty array", "messages")
    system: list[str] = []
    messages: list[Message] = []
    for i, raw in enumerate(raw_messages):
        where = f"messages[{i}]"
        if not isinstance(raw, dict):
            raise WireError(f"{where} must be an object", where)
        role = raw.get("role")
        if role not in _ROLES:
            raise WireError(f"{where}.role must be one of {', '.join(sorted(_ROLES))}", f"{where}.role")
        text = text_of(raw.get("content"), f"{where}.content", index_format="{}[{}]")
        if role in ("system", "developer"):
            system.append(text)
        else:
            calls = raw.get("tool_calls") if role == "assistant" else None
            call_ids = tuple(c["id"] for c in calls or () if isinstance(c, dict) and isinstance(c.get("id"), str))
            answers = raw.get("tool_call_id") if role == "tool" else raw.get("name") if role == "function" else None
            messages.append(
                Message(
                    role="tool" if role == "function" else role,
                    text=text,
                    call_ids=call_ids if isinstance(calls, list) else (),
                    result_ids=(answers,) if isinstance(answers, str) else (),
                )
            )
    tools = []
    raw_tools = body.get("tools") or []
    if not isinstance(raw_tools, list):
        raise WireError("tools must be an array", "tools")
    for i, tool in enumerate(raw_tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str):
            raise WireError(f"tools[{i}].function.name must be a string", f"tools[{i}].function.name")
        tools.append(name)
    for i, function in enumerate(body.get("functions") or []):
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            tools.append(function["name"])
        else:
            raise WireError(f"functions[{i}].name must be a string", f"functions[{i}].name")
    stream_options = body.get("stream_options") or {}
    if not isinstance(stream_options, dict):
        raise WireError("stream_options must be an object", "stream_options")
    effort = body.get("reasoning_effort")
    reasoning = body.get("reasoning")
    reasoning_enabled = effort not in (None, "", "none") or (
        isinstance(reasoning, dict) and reasoning.get("effort", "medium") not in (None, "none")
    )
    return ChatRequest(
        protocol=PROTOCOL,
        model=model,
        system="\n".join(system),
        messages=tuple(messages),
        tools=tuple(tools),
        temperature=number_or_none(body, "temperature"),
        top_p=number_or_none(body, "top_p"),
        reasoning_enabled=reasoning_enabled,
        stream=bool_field(body, "stream"),
        include_usage=stream_options.get("include_usage") is True,
        model_missing=model_missing,
    )


def _finish(reply: Reply, blocks: list[Block]) -> str:
    finish = choice_finish(reply, blocks)
    return "stop" if finish == "stop_sequence" else finish


def _usage(reply: Reply) -> dict[str, int]:
    u = reply.usage
    return {
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.total_tokens,
    }


def _completion_id(reply: Reply) -> str:
    return f"chatcmpl-{short_id(reply.id_seed or 'harness')}"


def _logprobs(text: str, top: int | None, start: int = 0) -> dict[str, Any]:
    return {"content": tokens.logprobs(text, top or 0, start), "refusal": None}


@lru_cache(maxsize=2048)
def encode_stream(reply: Reply, model: str, include_usage: bool, top_logprobs: int | None = None) -> Encoded:
    """The SSE frames of a streamed answer, one per chunk; cached, since a turn's bytes never change.

    ``top_logprobs`` (None: the request asks for no log-probabilities) gives each content chunk its tokens'
    log-probabilities."""
    head = f'data: {{"id":"{_completion_id(reply)}","object":"chat.completion.chunk","created":{CREATED},'
    head = head.encode() + b'"model":' + dumps(model) + b',"system_fingerprint":null,'
    # With include_usage, every chunk but the last carries "usage": null, as the real API sends it.
    tail = b',"usage":null}\n\n' if include_usage else b"}\n\n"

    def frame(choice: dict[str, Any]) -> bytes:
        return head + b'"choices":[' + dumps(choice) + b"]" + tail

    frames: list[bytes] = []
    pieces: list[Piece | None] = []
    position = {id(b): i for i, b in enumerate(reply.blocks)}
    groups = by_choice(reply)
    for index, blocks in groups.items():
        deltas: list[tuple[dict[str, Any], Piece | None]] = []
        call_index = 0
        for block in blocks:
            at = position[id(block)]
            if block.type in ("text", "reasoning"):
                key = "content" if block.type == "text" else "reasoning"
                deltas += [({key: p}, Piece(at, block.type, p)) for p in text_chunks(reply, block.text)]
            else:
                opening = {
                    "index": call_index,
                    "id": block.call_id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": ""},
                }
                deltas.append(({"tool_calls": [opening]}, Piece(at, "tool_call", block.name)))
                deltas += [
                    ({"tool_calls": [{"index": call_index, "function": {"arguments": p}}]}, Piece(at, "arguments", p))
                    for p in argument_chunks(block.arguments)
                ]
                call_index += 1
        # The role rides on the choice's first delta, whatever it carries.
        if deltas:
            deltas[0] = ({"role": "assistant", **deltas[0][0]}, deltas[0][1])
        else:
            deltas = [({"role": "assistant", "content": ""}, None)]
        counted = 0  # the tokens of the choice's content so far: where a chunk's log-probabilities start
        for delta, _ in deltas:
            choice: dict[str, Any] = {"index": index, "delta": delta}
            if top_logprobs is not None:
                content = delta.get("content") or ""
                choice["logprobs"] = _logprobs(content, top_logprobs, counted) if content else None
                counted += tokens.count(content)
            frames.append(frame({**choice, "finish_reason": None}))
        pieces += [piece for _, piece in deltas]
    if reply.single_finish:  # instruction mode (seed 004): one finish chunk after all the messages
        finish = "length" if any(reason == "length" for _, reason, _ in reply.cuts) else "stop"
        frames.append(frame({"index": 0, "delta": {}, "finish_reason": finish}))
    else:
        for index, blocks in groups.items():
            frames.append(frame({"index": index, "delta": {}, "finish_reason": _finish(reply, blocks)}))
    if include_usage:
        frames.append(head + b'"choices":[],"usage":' + dumps(_usage(reply)) + b"}\n\n")
    frames.append(DONE)
    pieces += [None] * (len(frames) - len(pieces))
    return Encoded(200, SSE_HEADERS, tuple(frames), tuple(pieces))


@lru_cache(maxsize=2048)
def encode_completion(reply: Reply, model: str, top_logprobs: int | None = None) -> Encoded:
    """A non-streamed ``chat.completion`` object."""
    choices = []
    for index, blocks in by_choice(reply).items():
        text = "".join(b.text for b in blocks if b.type == "text")
        reasoning = "".join(b.text for b in blocks if b.type == "reasoning")
        calls = [
            {"id": b.call_id, "type": "function", "function": {"name": b.name, "arguments": b.arguments}}
            for b in blocks
            if b.type == "tool_call"
        ]
        message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
        if reasoning:
            message["reasoning"] = reasoning
        if calls:
            message["tool_calls"] = calls
        logprobs = _logprobs(text, top_logprobs) if top_logprobs is not None else None
        choices.append(
            {"index": index, "message": message, "logprobs": logprobs, "finish_reason": _finish(reply, blocks)}
        )
    body = {
        "id": _completion_id(reply),
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "system_fingerprint": None,
        "choices": choices,
        "usage": _usage(reply),
    }
    return Encoded(200, JSON_HEADERS, (dumps(body),))


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """The answer as the request asked for it: streamed or not."""
    if request.stream:
        return encode_stream(reply, request.model, request.include_usage, request.logprobs)
    return encode_completion(reply, request.model, request.logprobs)


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    409: "invalid_request_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "requests",
    500: "server_error",
    502: "server_error",
    503: "server_error",
    504: "timeout",
}
# The ``code`` a failure kind carries, as the real API's (other kinds carry their own name).
_FAILURE_CODES = {
    "rate_limit": "rate_limit_exceeded",
    "auth_error": "invalid_api_key",
    "permission_error": "unsupported_country_region_territory",
    "not_found": "model_not_found",
}


def encode_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    request_id: str = "",
) -> Encoded:
    """An error in OpenAI's format: ``{"error": {"message", "type", "param", "code"}}`` (the request id travels in
    the ``x-request-id`` header only)."""
    error: dict[str, Any] = {
        "message": message,
        "type": _ERROR_TYPES.get(status, "server_error"),
        "param": param,
        "code": code,
    }
    error.update(extra or {})
    return Encoded(status, JSON_HEADERS + headers, (dumps({"error": error}),))


def encode_failure(failure: Failure, request_id: str = "") -> Encoded:
    """A simulated HTTP failure as OpenAI sends it.

    ``request_id`` keeps the signature the same on both protocols; OpenAI carries it only in ``x-request-id``.
    """
    status = failure_http_status(failure)
    headers = list(retry_headers(failure))
    if not failure.retryable:
        headers.append((b"x-should-retry", b"false"))
    code = _FAILURE_CODES.get(failure.status, failure.status)
    return encode_error(status, failure.message, code=code, extra=failure.error, headers=tuple(headers))


def _model(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": CREATED, "owned_by": "harness"}


def encode_model(model_id: str) -> Encoded:
    """``GET /v1/models/{id}``: the harness answers any model name, so any id is a model."""
    return Encoded(200, JSON_HEADERS, (dumps(_model(model_id)),))


def encode_models(ids: list[str]) -> Encoded:
    data = [_model(i) for i in ids]
    return Encoded(200, JSON_HEADERS, (dumps({"object": "list", "data": data}),))


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure."""
    if stream:
        return Encoded(
            200,
            SSE_HEADERS,
            (b'data: {"id":"chatcmpl-broken","object":"chat.completion.chunk","cho\n\n', DONE),
        )
    return Encoded(200, JSON_HEADERS, (b'{"id":"chatcmpl-broken","object":"chat.completion","choices":[{"ind',))
