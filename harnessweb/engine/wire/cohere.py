"""Cohere's v2 Chat (``POST /v2/chat``) and Embed (``POST /v2/embed``), as the ``cohere`` SDK's ``ClientV2`` calls
them: request parsers and encoders (typed SSE events, the chat response object, errors; Embed's, embeddings by
type, live in :mod:`~harnessweb.engine.wire.cohere_embed` and are served from here, with this module's errors). Pure.

The stream is server-sent events, each ``event: NAME\\ndata: JSON\\n\\n`` with the same name as the JSON's ``type``:
``message-start``, then per content item (thinking, then text) ``content-start``, ``content-delta``\\ s and
``content-end``; when the answer calls tools, its text comes as ``tool-plan-delta``\\ s (Cohere's ``tool_plan``) and
each call as ``tool-call-start`` (id, name), ``tool-call-delta``\\ s (argument pieces) and ``tool-call-end``; then
``message-end`` with ``finish_reason`` (``COMPLETE``, ``MAX_TOKENS``, ``STOP_SEQUENCE``, ``TOOL_CALL``) and ``usage``
(``billed_units`` and ``tokens``). No ``[DONE]`` follows: ``message-end`` ends the stream. Tool results come back
as ``{"role": "tool", "tool_call_id", "content"}``. Errors are Cohere's ``{"id", "message"}``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import orjson

from harnessweb.engine import tokens
from harnessweb.engine.exchange import Block, ChatRequest, Failure, Message, Reply, short_id
from harnessweb.engine.wire.cohere_embed import PATH as EMBED_PATH
from harnessweb.engine.wire.cohere_embed import encode_embeddings, invalid, parse_embeddings, uuid_of
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
)

__all__ = ["EMBED_PATH", "encode_embeddings", "parse_embeddings"]

PROTOCOL = "cohere"
LABEL = "Cohere v2 Chat"
PATH = "/v2/chat"
REQUEST_ID_HEADER = b"x-debug-trace-id"
_ROLES = ("system", "user", "assistant", "tool")
_FINISH = {"stop": "COMPLETE", "length": "MAX_TOKENS", "stop_sequence": "STOP_SEQUENCE", "tool_calls": "TOOL_CALL"}


def _text(content: Any, where: str, allowed: tuple[str, ...]) -> str:
    """The text of a message content: a string, or a list of items whose ``text`` items count (``document`` items,
    in a tool result, count as their data: an object's JSON, or a string as sent)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(f"{where} must be a string or a list of content items", where)
    texts = []
    for i, item in enumerate(content):
        at = f"{where}[{i}]"
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in allowed:
            raise invalid(f"{at}.type must be one of {', '.join(allowed)}", f"{at}.type")
        if kind == "text":
            if not isinstance(item.get("text"), str):
                raise invalid(f"{at}.text must be a string", f"{at}.text")
            texts.append(item["text"])
        elif kind == "document":
            data = _document_data(item.get("document"), f"{at}.document")
            texts.append(data if isinstance(data, str) else orjson.dumps(data).decode())
    return "\n".join(texts)


def _document_data(document: Any, where: str) -> dict[str, Any] | str:
    """A document's ``data``: an object, or a string (Cohere's tool-use guide and haystack send ``json.dumps`` of
    the result, which the API takes as the document's text)."""
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, dict | str):
        raise invalid(f"{where}.data must be an object or a string", f"{where}.data")
    return data


def _message(raw: Any, i: int) -> tuple[str, Message | None]:
    """One message: the system text it adds, or the neutral message it is."""
    where = f"messages[{i}]"
    if not isinstance(raw, dict):
        raise invalid(f"{where} must be an object", where)
    role = raw.get("role")
    if role not in _ROLES:
        raise invalid(f"{where}.role must be one of {', '.join(_ROLES)}", f"{where}.role")
    content = raw.get("content")
    if role == "system":
        return _text(content, f"{where}.content", ("text",)), None
    if role == "user":
        if content is None:
            raise invalid(f"{where}.content is required", f"{where}.content")
        return "", Message(role="user", text=_text(content, f"{where}.content", ("text", "image_url", "document")))
    if role == "tool":
        if not isinstance(raw.get("tool_call_id"), str) or not raw["tool_call_id"]:
            raise invalid(f"{where}.tool_call_id is required", f"{where}.tool_call_id")
        text = _text(content, f"{where}.content", ("text", "document"))
        return "", Message(role="tool", text=text, result_ids=(raw["tool_call_id"],))
    calls = raw.get("tool_calls") or []
    if not isinstance(calls, list):
        raise invalid(f"{where}.tool_calls must be a list", f"{where}.tool_calls")
    for j, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            at = f"{where}.tool_calls[{j}].function.name"
            raise invalid(f"{at} must be a string", at)
    plan = raw.get("tool_plan")
    if plan is not None and not isinstance(plan, str):
        raise invalid(f"{where}.tool_plan must be a string", f"{where}.tool_plan")
    text = _text(content, f"{where}.content", ("text", "thinking"))
    call_ids = tuple(c["id"] for c in calls if isinstance(c.get("id"), str))
    return "", Message(role="assistant", text=text or plan or "", call_ids=call_ids)


def _tools(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise invalid("tools must be a list", "tools")
    names = []
    for i, tool in enumerate(raw):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise invalid(f"tools[{i}].function.name must be a non-empty string", f"tools[{i}].function.name")
        names.append(function["name"])
    return tuple(names)


def _documents(raw: Any) -> None:
    """``documents`` (for grounded answers) are checked, and kept with the request's other parameters."""
    if raw is None:
        return
    if not isinstance(raw, list):
        raise invalid("documents must be a list", "documents")
    for i, document in enumerate(raw):
        if isinstance(document, dict):
            _document_data(document, f"documents[{i}]")
        elif not isinstance(document, str):
            raise invalid(f"documents[{i}] must be a string or an object with data", f"documents[{i}]")


def parse_request(body: Any) -> ChatRequest:
    """Read a v2 Chat body into the neutral request; raises WireError naming the bad field."""
    if not isinstance(body, dict):
        raise WireError("invalid request: the body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise invalid("model must be a non-empty string", "model")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise invalid("messages must be a non-empty list", "messages")
    system: list[str] = []
    messages: list[Message] = []
    for i, raw in enumerate(raw_messages):
        said, message = _message(raw, i)
        if message is None:
            system.append(said)
        else:
            messages.append(message)
    _documents(body.get("documents"))
    format_ = body.get("response_format")
    if format_ is not None and (not isinstance(format_, dict) or format_.get("type") not in ("text", "json_object")):
        raise invalid("response_format.type must be text or json_object", "response_format.type")
    thinking = body.get("thinking")
    if thinking is not None and not isinstance(thinking, dict):
        raise invalid("thinking must be an object", "thinking")
    try:
        numbers = {"temperature": number_or_none(body, "temperature"), "top_p": number_or_none(body, "p")}
        stream = bool_field(body, "stream")
    except WireError as exc:
        raise invalid(exc.message, exc.param or "") from None
    return ChatRequest(
        protocol=PROTOCOL,
        model=model,
        system="\n".join(system),
        messages=tuple(messages),
        tools=_tools(body.get("tools")),
        reasoning_enabled=isinstance(thinking, dict) and thinking.get("type") == "enabled",
        stream=stream,
        **numbers,
    )


# -- the answer --------------------------------------------------------------------------------------------------


def _blocks(reply: Reply) -> list[Block]:
    """The answer's blocks: Cohere has no choices (instruction mode's messages follow one another) and no redacted
    thinking."""
    return [b for b in reply.blocks if not b.redacted]


def _finish(reply: Reply, blocks: list[Block]) -> str:
    return _FINISH[choice_finish(reply, blocks)]


def _usage(reply: Reply) -> dict[str, Any]:
    counts = {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens}
    return {"billed_units": counts, "tokens": counts}


def _response_id(reply: Reply) -> str:
    return uuid_of(reply.id_seed or "harness")


def _call_id(block: Block) -> str:
    """A derived call id the way Cohere names them (``get_weather_…``); an authored one as authored."""
    return f"{block.name}_{block.call_id.removeprefix('call_')[:12]}" if block.derived_id else block.call_id


def _call(block: Block) -> dict[str, Any]:
    return {"id": _call_id(block), "type": "function", "function": {"name": block.name, "arguments": block.arguments}}


def _logprobs(text: str, start: int = 0) -> dict[str, Any]:
    """Cohere's log-probabilities of a piece of text (``logprobs: true``): its tokens' ids and log-probabilities, the
    deterministic ones of :func:`harnessweb.engine.tokens.logprobs`, numbered from ``start``."""
    entries = tokens.logprobs(text, 0, start)
    ids = [int(short_id(str(e["token"]), 5), 16) % 256000 for e in entries]
    return {"text": text, "token_ids": ids, "logprobs": [e["logprob"] for e in entries]}


@lru_cache(maxsize=1024)
def encode_response(reply: Reply, logprobs: bool = False) -> Encoded:
    """A non-streamed chat response: ``{"id", "message", "finish_reason", "usage"}`` (and ``logprobs``, one item per
    token, when asked). An answer that calls tools carries its text as the ``tool_plan``, as Cohere's does."""
    blocks = _blocks(reply)
    calls = [_call(b) for b in blocks if b.type == "tool_call"]
    text = "".join(b.text for b in blocks if b.type == "text")
    content: list[dict[str, Any]] = [{"type": "thinking", "thinking": b.text} for b in blocks if b.type == "reasoning"]
    message: dict[str, Any] = {"role": "assistant"}
    if calls:
        message.update(tool_plan=text, tool_calls=calls)
    elif text or not content:
        content.append({"type": "text", "text": text})
    if content:
        message["content"] = content
    body = {"id": _response_id(reply), "message": message, "finish_reason": _finish(reply, blocks),
            "usage": _usage(reply)}  # fmt: skip
    if logprobs and text and not calls:
        body["logprobs"] = [_logprobs(t, n) for n, t in enumerate(tokens.tokens(text))]
    return Encoded(200, JSON_HEADERS, (dumps(body),))


def _event(payload: dict[str, Any]) -> bytes:
    return b"event: " + payload["type"].encode() + b"\ndata: " + dumps(payload) + b"\n\n"


@lru_cache(maxsize=1024)
def encode_stream(reply: Reply, logprobs: bool = False) -> Encoded:
    """The typed events of a streamed answer, one frame per event (each text delta with its ``logprobs`` when
    asked); cached, since a turn's bytes never change."""
    position = {id(b): i for i, b in enumerate(reply.blocks)}
    blocks = _blocks(reply)
    calling = any(b.type == "tool_call" for b in blocks)
    start = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
    events: list[tuple[dict[str, Any], Piece | None]] = [
        ({"id": _response_id(reply), "type": "message-start", "delta": {"message": start}}, None)
    ]
    content_index = call_index = 0
    for block in blocks:
        at = position[id(block)]
        pieces = text_chunks(reply, block.text)
        if block.type == "text" and calling:  # the text of an answer that calls tools is its plan
            events += [
                ({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": p}}}, Piece(at, "text", p))
                for p in pieces
            ]
        elif block.type in ("text", "reasoning"):
            key = "text" if block.type == "text" else "thinking"
            opening = {"message": {"content": {"type": key, key: ""}}}
            events.append(({"type": "content-start", "index": content_index, "delta": opening}, None))
            counted = 0  # the text's tokens so far: where a delta's log-probabilities start
            for p in pieces:
                delta = {"type": "content-delta", "index": content_index, "delta": {"message": {"content": {key: p}}}}
                if logprobs and block.type == "text":
                    delta["logprobs"] = _logprobs(p, counted)
                    counted += tokens.count(p)
                events.append((delta, Piece(at, block.type, p)))
            events.append(({"type": "content-end", "index": content_index}, None))
            content_index += 1
        else:
            opening = {**_call(block), "function": {"name": block.name, "arguments": ""}}
            events.append(
                (
                    {"type": "tool-call-start", "index": call_index, "delta": {"message": {"tool_calls": opening}}},
                    Piece(at, "tool_call", block.name),
                )
            )
            events += [
                (
                    {
                        "type": "tool-call-delta",
                        "index": call_index,
                        "delta": {"message": {"tool_calls": {"function": {"arguments": p}}}},
                    },
                    Piece(at, "arguments", p),
                )
                for p in argument_chunks(block.arguments)
            ]
            events.append(({"type": "tool-call-end", "index": call_index}, None))
            call_index += 1
    end = {"finish_reason": _finish(reply, blocks), "usage": _usage(reply)}
    events.append(({"type": "message-end", "delta": end}, None))
    return Encoded(200, SSE_HEADERS, tuple(_event(e) for e, _ in events), tuple(p for _, p in events))


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """The answer as the request asked for it: streamed or not."""
    logprobs = request.logprobs is not None
    return encode_stream(reply, logprobs) if request.stream else encode_response(reply, logprobs)


def encode_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    request_id: str = "",
) -> Encoded:
    """An error in Cohere's format, ``{"id", "message"}`` (Cohere names the field in the message: ``param`` is added
    to it when the message does not already name it)."""
    if param and param not in message:
        message = f"{message} ({param})"
    body: dict[str, Any] = {"id": request_id or uuid_of(message), "message": message}
    body.update(extra or {})
    return Encoded(status, JSON_HEADERS + headers, (dumps(body),))


def encode_failure(failure: Failure, request_id: str = "") -> Encoded:
    """A simulated HTTP failure as Cohere sends it (it has no 529: ``overloaded`` is a 503)."""
    return encode_error(
        failure_http_status(failure),
        failure.message,
        extra=failure.error,
        headers=tuple(retry_headers(failure)),
        request_id=request_id,
    )


def _model(model_id: str) -> dict[str, Any]:
    return {
        "name": model_id,
        "is_deprecated": False,
        "endpoints": ["chat", "embed"],
        "finetuned": False,
        "context_length": 128000,
        "features": ["tools"],
    }


def encode_model(model_id: str) -> Encoded:
    """``GET /v1/models/{id}`` from a Cohere client: the harness answers any model name, so any id is a model."""
    return Encoded(200, JSON_HEADERS, (dumps(_model(model_id)),))


def encode_models(ids: list[str]) -> Encoded:
    return Encoded(200, JSON_HEADERS, (dumps({"models": [_model(i) for i in ids], "next_page_token": None}),))


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure."""
    if stream:
        return Encoded(200, SSE_HEADERS, (b'event: message-start\ndata: {"id":"broken","type":"message-sta\n\n',))
    return Encoded(200, JSON_HEADERS, (b'{"id":"broken","message":{"role":"assistant","content":[{"ty',))
