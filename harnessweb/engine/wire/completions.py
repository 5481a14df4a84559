"""OpenAI legacy text completions (``POST /v1/completions``): a ``prompt`` in, ``text_completion`` choices out,
streamed as ``data:`` chunks ending with ``data: [DONE]``. Pure.

The prompt is one user message, so a request always plays turn 1. The answer's text is what the engine's reply
says; reasoning and tool calls have no place in this API and are left out. Errors, failures and the model list are
the OpenAI platform's (:mod:`harnessweb.engine.wire.openai`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from harnessweb.engine import tokens
from harnessweb.engine.exchange import Block, ChatRequest, Message, Reply, short_id
from harnessweb.engine.wire.common import (
    CREATED,
    JSON_HEADERS,
    SSE_HEADERS,
    Encoded,
    Piece,
    WireError,
    bool_field,
    by_choice,
    choice_finish,
    dumps,
    number_or_none,
    text_chunks,
)
from harnessweb.engine.wire.openai import (
    DONE,
    REQUEST_ID_HEADER,
    encode_error,
    encode_failure,
    encode_model,
    encode_models,
)

PROTOCOL = "completions"
LABEL = "OpenAI Completions (legacy)"
PATH = "/v1/completions"
__all__ = ["REQUEST_ID_HEADER", "encode_error", "encode_failure", "encode_model", "encode_models"]


def _prompt(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list) and raw and all(isinstance(p, str) for p in raw):
        return "\n".join(raw)
    if isinstance(raw, list) and raw and all(isinstance(t, int) and not isinstance(t, bool) for t in raw):
        return " ".join(map(str, raw))  # token ids stand for the text they encode
    raise WireError("prompt must be a string, an array of strings or an array of token ids", "prompt")


def parse_request(body: Any) -> ChatRequest:
    """Read a completions body into the neutral request; raises WireError naming the bad field."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("you must provide a model parameter", "model")
    stream_options = body.get("stream_options") or {}
    if not isinstance(stream_options, dict):
        raise WireError("stream_options must be an object", "stream_options")
    return ChatRequest(
        protocol=PROTOCOL,
        model=model,
        messages=(Message(role="user", text=_prompt(body.get("prompt"))),),
        temperature=number_or_none(body, "temperature"),
        top_p=number_or_none(body, "top_p"),
        stream=bool_field(body, "stream"),
        include_usage=stream_options.get("include_usage") is True,
    )


def _finish(reply: Reply, blocks: list[Block]) -> str:
    return "length" if choice_finish(reply, blocks) == "length" else "stop"


def _usage(reply: Reply) -> dict[str, int]:
    u = reply.usage
    return {"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens, "total_tokens": u.total_tokens}


def _id(reply: Reply) -> str:
    return f"cmpl-{short_id(reply.id_seed or 'harness')}"


def _logprobs(text: str, top: int | None, position: int = 0, offset: int = 0) -> dict[str, Any] | None:
    """The legacy ``logprobs`` object of a text (``tokens``, ``token_logprobs``, ``top_logprobs``, ``text_offset``)
    when the request asked for them (``top``: alternatives per token), its tokens numbered from ``position`` and
    its characters from ``offset`` (a stream's chunk)."""
    if top is None:
        return None
    entries = tokens.logprobs(text, top, position)
    offsets = []
    for entry in entries:
        offsets.append(offset)
        offset += len(str(entry["token"]))
    return {
        "tokens": [entry["token"] for entry in entries],
        "token_logprobs": [entry["logprob"] for entry in entries],
        "top_logprobs": [{alt["token"]: alt["logprob"] for alt in entry["top_logprobs"]} for entry in entries],
        "text_offset": offsets,
    }


@lru_cache(maxsize=1024)
def encode_stream(reply: Reply, model: str, include_usage: bool, top_logprobs: int | None = None) -> Encoded:
    """The SSE chunks of a streamed completion: text chunks per choice, a last chunk per choice with its
    ``finish_reason``, the usage chunk when asked for, then ``[DONE]``."""
    head = {"id": _id(reply), "object": "text_completion", "created": CREATED}

    def frame(choices: list[dict[str, Any]], **extra: Any) -> bytes:
        return b"data: " + dumps({**head, "choices": choices, "model": model, **extra}) + b"\n\n"

    position = {id(b): i for i, b in enumerate(reply.blocks)}
    frames: list[bytes] = []
    pieces: list[Piece | None] = []
    groups = by_choice(reply) or {0: []}
    for index, blocks in groups.items():
        for block in blocks:
            if block.type != "text":
                continue
            counted = offset = 0
            for chunk in text_chunks(reply, block.text):
                logprobs = _logprobs(chunk, top_logprobs, counted, offset)
                counted, offset = counted + tokens.count(chunk), offset + len(chunk)
                frames.append(frame([{"text": chunk, "index": index, "logprobs": logprobs, "finish_reason": None}]))
                pieces.append(Piece(position[id(block)], "text", chunk))
    for index, blocks in groups.items():
        last = {"text": "", "index": index, "logprobs": None, "finish_reason": _finish(reply, blocks)}
        frames.append(frame([last]))
    if include_usage:
        frames.append(frame([], usage=_usage(reply)))
    frames.append(DONE)
    pieces += [None] * (len(frames) - len(pieces))
    return Encoded(200, SSE_HEADERS, tuple(frames), tuple(pieces))


@lru_cache(maxsize=1024)
def encode_completion(reply: Reply, model: str, top_logprobs: int | None = None) -> Encoded:
    """A non-streamed ``text_completion`` object."""
    choices = []
    for index, blocks in (by_choice(reply) or {0: []}).items():
        text = "".join(b.text for b in blocks if b.type == "text")
        choices.append(
            {
                "text": text,
                "index": index,
                "logprobs": _logprobs(text, top_logprobs),
                "finish_reason": _finish(reply, blocks),
            }
        )
    body = {
        "id": _id(reply),
        "object": "text_completion",
        "created": CREATED,
        "model": model,
        "choices": choices,
        "usage": _usage(reply),
    }
    return Encoded(200, JSON_HEADERS, (dumps(body),))


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """The answer as the request asked for it: streamed or not."""
    if request.stream:
        return encode_stream(reply, request.model, request.include_usage, request.logprobs)
    return encode_completion(reply, request.model, request.logprobs)


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure."""
    if stream:
        return Encoded(200, SSE_HEADERS, (b'data: {"id":"cmpl-broken","object":"text_completion","cho\n\n', DONE))
    return Encoded(200, JSON_HEADERS, (b'{"id":"cmpl-broken","object":"text_completion","choices":[{"te',))
