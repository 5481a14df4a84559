"""Claude on Amazon Bedrock through InvokeModel: Anthropic's Messages (:mod:`~harnessweb.engine.wire.anthropic`'s
parser and encoders) at ``POST /model/{modelId}/invoke`` and ``/invoke-with-response-stream``, as
``anthropic.AnthropicBedrock`` calls them. Pure.

The path names the model and whether to stream; the body is a Messages body without ``model`` or ``stream``, with
``anthropic_version`` (``bedrock-2023-05-31``) in it. The streamed answer is Anthropic's events, each event's JSON
base64-encoded in ``{"bytes": …}`` and sent as an event-stream ``chunk`` event
(:mod:`~harnessweb.engine.wire.eventstream`); the last carries ``amazon-bedrock-invocationMetrics``, as Bedrock's
does. Errors are Bedrock's (:func:`harnessweb.engine.wire.bedrock.encode_error`), a streamed failure an exception
event.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

import orjson

from harnessweb.engine.exchange import ChatRequest, Reply
from harnessweb.engine.wire import anthropic, bedrock, eventstream
from harnessweb.engine.wire.bedrock import (
    REQUEST_ID_HEADER,
    encode_error,
    encode_failure,
    encode_model,
    encode_models,
    encode_stream_failure,
)
from harnessweb.engine.wire.common import JSON_HEADERS, Encoded, Piece, WireError, dumps

__all__ = ["REQUEST_ID_HEADER", "encode_error", "encode_failure", "encode_model", "encode_models",
           "encode_stream_failure"]  # fmt: skip

PROTOCOL = "bedrock_claude"
LABEL = "Claude on Amazon Bedrock (InvokeModel)"
PATH = "/model/{modelId}/invoke"
PATH_PATTERN = r"/model/(?P<param>.+)/(?P<method>invoke|invoke-with-response-stream)"
STREAM_HEADERS = (*bedrock.STREAM_HEADERS, (b"x-amzn-bedrock-content-type", b"application/json"))
# Keys a Messages body has elsewhere that Bedrock's does not take: the path says them, or Bedrock has no threads.
_EXTRANEOUS = ("model", "stream", "thread")


def path_fields(model: str, method: str, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """The model (its id decoded) and whether to stream."""
    return {"model": unquote(model), "model_missing": False, "stream": method == "invoke-with-response-stream"}


def _malformed(detail: str, param: str | None) -> WireError:
    return WireError(f"Malformed input request: {detail}, please reformat your input and try again.", param)


def parse_request(body: Any) -> ChatRequest:
    """Read an InvokeModel body (Anthropic's Messages with ``anthropic_version``) into the neutral request; raises
    WireError in Bedrock's words, naming the field."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    if not isinstance(body.get("anthropic_version"), str):
        raise _malformed("#: required key [anthropic_version] not found", "anthropic_version")
    for key in _EXTRANEOUS:
        if key in body:
            raise _malformed(f"#: extraneous key [{key}] is not permitted", key)
    try:
        request = anthropic.parse_request({**body, "model": "bedrock"})
    except WireError as exc:
        raise _malformed(f"#: {exc.message}", exc.param) from None
    return replace(request, protocol=PROTOCOL, model="")


def _headers(reply: Reply) -> tuple[tuple[bytes, bytes], ...]:
    u = reply.usage
    return (
        (b"x-amzn-bedrock-input-token-count", str(u.input_tokens).encode()),
        (b"x-amzn-bedrock-output-token-count", str(u.output_tokens).encode()),
        (b"x-amzn-bedrock-invocation-latency", b"0"),
    )


def _chunk(data: bytes) -> bytes:
    return eventstream.event("chunk", dumps({"bytes": base64.b64encode(data).decode()}))


@lru_cache(maxsize=2048)
def encode_stream(reply: Reply, model: str) -> Encoded:
    """Anthropic's events (no ``ping``: Bedrock sends none), each as an event-stream ``chunk``."""
    events = anthropic.encode_stream(reply, model)
    frames: list[bytes] = []
    pieces: list[Piece | None] = []
    for frame, piece in zip(events.frames, events.pieces, strict=True):
        name, _, data = frame.removeprefix(b"event: ").partition(b"\ndata: ")
        if name == b"ping":
            continue
        data = data.rstrip(b"\n")
        if name == b"message_stop":
            metrics = {
                "inputTokenCount": reply.usage.input_tokens,
                "outputTokenCount": reply.usage.output_tokens,
                "invocationLatency": 0,
                "firstByteLatency": 0,
            }
            data = dumps({**orjson.loads(data), "amazon-bedrock-invocationMetrics": metrics})
        frames.append(_chunk(data))
        pieces.append(piece)
    return Encoded(200, STREAM_HEADERS + _headers(reply), tuple(frames), tuple(pieces))


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """The answer as the path asked for it: Anthropic's message object, or its events in chunks."""
    if request.stream:
        return encode_stream(reply, request.model)
    message = anthropic.encode_message(reply, request.model)
    return Encoded(200, JSON_HEADERS + _headers(reply), message.frames)


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure."""
    if stream:
        return bedrock.malformed(True)
    return Encoded(200, JSON_HEADERS, anthropic.malformed(False).frames)
