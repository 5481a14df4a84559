"""What both protocols share: the encoded answer, request-shape errors and small parsing helpers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import orjson

from harnessweb.engine.exchange import Block, Failure, Reply, word_chunks

# Responses are deterministic: byte-identical for the same scenario turn, so ``created`` is fixed too.
CREATED = 1735689600  # 2025-01-01T00:00:00Z
ARGUMENT_CHUNK_CHARS = 24
SSE_HEADERS = ((b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache"))
JSON_HEADERS = ((b"content-type", b"application/json"),)


@dataclass(frozen=True)
class Piece:
    """What one streamed frame adds to the answer: to block ``block`` (its position in the reply), ``text`` of
    ``kind`` (text, reasoning, arguments, or tool_call for a call's opening, with its name as text)."""

    block: int
    kind: str
    text: str


@dataclass(frozen=True)
class Encoded:
    """A response ready to send: status, headers and the body as frames (one frame per paced chunk).

    ``pieces`` runs beside ``frames`` (None for frames that add no content), so that what a client receives can be
    shown live, frame by frame, without parsing the bytes back.
    """

    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    frames: tuple[bytes, ...]
    pieces: tuple[Piece | None, ...] = ()

    @property
    def body(self) -> bytes:
        return b"".join(self.frames)

    @property
    def content_frames(self) -> int:
        """Frames that carry content (the chunk count of the response summary); a JSON body is one."""
        if not self.pieces:
            return len(self.frames)
        return sum(1 for p in self.pieces if p is not None and p.kind != "tool_call")


class WireError(Exception):
    """A request the protocol refuses: becomes a 400 in the protocol's error format, naming the field."""

    def __init__(self, message: str, param: str | None = None, status: int = 400):
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def text_of(content: Any, where: str, *, index_format: str, allowed: tuple[str, ...] = ("text",)) -> str:
    """The text of a message content: a string, null, or a list of parts of which the text parts count.

    ``index_format`` names a part in errors the protocol's way: ``"{}[{}]"`` (OpenAI) or ``"{}.{}"`` (Anthropic).
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            at = index_format.format(where, i)
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise WireError(f"{at} must be an object with a type", at)
            if part["type"] in allowed:
                if not isinstance(part.get("text"), str):
                    raise WireError(f"{at}.text must be a string", f"{at}.text")
                texts.append(part["text"])
        return "\n".join(texts)
    raise WireError(f"{where} must be a string or an array of content parts", where)


def number_or_none(body: dict[str, Any], name: str) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WireError(f"{name} must be a number", name)
    return float(value)


def bool_field(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise WireError(f"{name} must be a boolean", name)
    return value


def argument_chunks(arguments: str) -> list[str]:
    return [arguments[i : i + ARGUMENT_CHUNK_CHARS] for i in range(0, len(arguments), ARGUMENT_CHUNK_CHARS)]


def choice_finish(reply: Reply, blocks: list[Block] | tuple[Block, ...]) -> str:
    """The neutral finish of one choice: ``length`` or ``stop_sequence`` when the request's limits cut it,
    ``length`` when authored, else ``tool_calls`` iff it calls a tool."""
    cut, _ = reply.cut(blocks[0].choice if blocks else 0)
    if cut:
        return cut
    if reply.finish == "length":
        return "length"
    return "tool_calls" if any(b.type == "tool_call" for b in blocks) else "stop"


def by_choice(reply: Reply) -> dict[int, list[Block]]:
    """The reply's blocks by choice (instruction mode gives each message its own), in order, without redacted
    thinking: only Anthropic has it, and its encoder does not group by choice."""
    groups: dict[int, list[Block]] = {}
    for block in reply.blocks:
        if not block.redacted:
            groups.setdefault(block.choice, []).append(block)
    return groups


def text_chunks(reply: Reply, text: str) -> list[str]:
    return word_chunks(text, reply.chunk_words)


def retry_headers(failure: Failure) -> list[tuple[bytes, bytes]]:
    """Retry-After in whole seconds (rounded up) and retry-after-ms exact, as the SDKs read them."""
    if failure.retry_after_ms is None:
        return []
    seconds = max(1, math.ceil(failure.retry_after_ms / 1000)) if failure.retry_after_ms else 0
    return [
        (b"retry-after", str(seconds).encode()),
        (b"retry-after-ms", str(failure.retry_after_ms).encode()),
    ]


_KIND_STATUS = {
    "rate_limit": 429,
    "timeout": 504,
    "auth_error": 401,
    "permission_error": 403,
    "not_found": 404,
    "bad_request": 400,
    "request_too_large": 413,
    "server_error": 500,
    "bad_gateway": 502,
    "unavailable": 503,
    "overloaded": 503,  # Anthropic's own is 529
}


def failure_http_status(failure: Failure, overloaded: int = 503) -> int:
    """The HTTP status of a failure: the scenario's ``failure_http_status``, else its kind's."""
    if failure.http_status:
        return failure.http_status
    if failure.status == "model_error":
        return 500 if failure.retryable else 400
    if failure.status == "overloaded":
        return overloaded
    return _KIND_STATUS.get(failure.status, 500)
