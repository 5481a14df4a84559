"""Google Gemini (``POST /v1/models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse``, google-genai's
default, and the same under ``/v1beta/``): ``contents`` of ``parts`` in, ``candidates`` out, streamed as ``data:``
chunks. Pure.

The model and whether to stream come from the path (:func:`path_fields`). Text, function calls
(``functionCall`` parts, answered by ``functionResponse`` parts), thought parts (``thought: true`` with a
``thoughtSignature``), ``usageMetadata`` and ``finishReason`` as the real API sends them; errors in Google's format
(``{"error": {"code", "message", "status"}}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import orjson

from harnessweb.engine import tokens
from harnessweb.engine.exchange import Block, ChatRequest, Failure, Message, Reply, short_id
from harnessweb.engine.wire.common import (
    JSON_HEADERS,
    SSE_HEADERS,
    Encoded,
    Piece,
    WireError,
    by_choice,
    choice_finish,
    dumps,
    failure_http_status,
    retry_headers,
    text_chunks,
)

PROTOCOL = "gemini"
LABEL = "Google Gemini"
PATH = "/v1beta/models/{model}:generateContent"
# Both API versions, both methods: the model is a path segment, the method after its colon.
PATH_PATTERN = r"/(?:v1|v1beta)/models/(?P<param>[^/:]+):(?P<method>generateContent|streamGenerateContent)"
REQUEST_ID_HEADER = b"x-goog-request-id"
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "INVALID_ARGUMENT",
    413: "INVALID_ARGUMENT",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def path_fields(model: str, method: str, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """What the path and query say of a request: its model, whether it streams, and how: ``alt=sse`` (what
    google-genai asks) gets server-sent events, anything else (``alt=json``, ``$alt=json;enum-encoding=int`` as
    google-api-core asks, or none) one JSON array of responses written as it grows."""
    alt = (query.get("alt") or query.get("$alt") or [""])[0]
    stream = method == "streamGenerateContent"
    return {"model": model, "stream": stream, "framing": "sse" if alt == "sse" else "json"}


def _get(raw: dict[str, Any], camel: str, snake: str) -> Any:
    """A field by its camelCase name (the REST API's) or its snake_case one (which the API accepts too)."""
    return raw.get(camel, raw.get(snake))


def _parts(raw: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise WireError(f"{where}.parts must be an array", f"{where}.parts")
    for j, part in enumerate(raw):
        if not isinstance(part, dict):
            raise WireError(f"{where}.parts[{j}] must be an object", f"{where}.parts[{j}]")
    return raw


def _text(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))


def _message(content: Any, i: int) -> Message:
    where = f"contents[{i}]"
    if not isinstance(content, dict):
        raise WireError(f"{where} must be an object", where)
    role = content.get("role", "user")
    if role not in ("user", "model", "function"):
        raise WireError(f"{where}.role must be user or model", f"{where}.role")
    parts = _parts(content.get("parts", []), where)
    responses = [p for p in parts if _get(p, "functionResponse", "function_response") is not None]
    if role == "model":
        calls = [_get(p, "functionCall", "function_call") for p in parts]
        return Message(role="assistant", text=_text(parts), call_ids=_call_keys(calls))
    answers = _call_keys([_get(p, "functionResponse", "function_response") for p in responses])
    if role == "function" or (responses and len(responses) == len(parts)):
        # The tool's answer, not the user speaking.
        texts = [
            orjson.dumps(_get(p, "functionResponse", "function_response").get("response")).decode() for p in responses
        ]
        return Message(role="tool", text="\n".join(texts), result_ids=answers)
    return Message(role="user", text=_text(parts), result_ids=answers)


def _call_keys(items: list[Any]) -> tuple[str, ...]:
    """What ties a function call to its response: the call's ``id`` when it has one, else its function's name (a
    call needs no id, and its response names the function)."""
    keys = []
    for item in items:
        if isinstance(item, dict):
            key = item.get("id") or item.get("name")
            if isinstance(key, str) and key:
                keys.append(key)
    return tuple(keys)


def _tools(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise WireError("tools must be an array", "tools")
    names = []
    for i, tool in enumerate(raw):
        if not isinstance(tool, dict):
            raise WireError(f"tools[{i}] must be an object", f"tools[{i}]")
        for j, declaration in enumerate(_get(tool, "functionDeclarations", "function_declarations") or []):
            if not isinstance(declaration, dict) or not isinstance(declaration.get("name"), str):
                where = f"tools[{i}].functionDeclarations[{j}].name"
                raise WireError(f"{where} must be a string", where)
            names.append(declaration["name"])
    return tuple(names)


def _number(config: dict[str, Any], camel: str, snake: str) -> float | None:
    value = _get(config, camel, snake)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WireError(f"generationConfig.{camel} must be a number", f"generationConfig.{camel}")
    return float(value)


def parse_request(body: Any) -> ChatRequest:
    """Read a generateContent body into the neutral request (model and streaming come from the path: see
    :func:`path_fields`); raises WireError naming the bad field."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise WireError("contents must be a non-empty array", "contents")
    messages = [_message(content, i) for i, content in enumerate(contents)]
    system_raw = _get(body, "systemInstruction", "system_instruction")
    system = ""
    if isinstance(system_raw, dict):
        system = _text(_parts(system_raw.get("parts", []), "systemInstruction"))
    elif isinstance(system_raw, str):
        system = system_raw
    elif system_raw is not None:
        raise WireError("systemInstruction must be a content object", "systemInstruction")
    config = _get(body, "generationConfig", "generation_config") or {}
    if not isinstance(config, dict):
        raise WireError("generationConfig must be an object", "generationConfig")
    thinking = _get(config, "thinkingConfig", "thinking_config") or {}
    budget = _get(thinking, "thinkingBudget", "thinking_budget") if isinstance(thinking, dict) else None
    include = _get(thinking, "includeThoughts", "include_thoughts") if isinstance(thinking, dict) else None
    return ChatRequest(
        protocol=PROTOCOL,
        model=str(body.get("model") or ""),
        system=system,
        messages=tuple(messages),
        tools=_tools(body.get("tools")),
        temperature=_number(config, "temperature", "temperature"),
        top_p=_number(config, "topP", "top_p"),
        reasoning_enabled=bool(include) or (budget is not None and budget != 0),
    )


# -- the answer --------------------------------------------------------------------------------------------------


def _part(block: Block) -> dict[str, Any]:
    if block.type == "reasoning":
        return {"text": block.text, "thought": True, "thoughtSignature": block.signature}
    if block.type == "text":
        return {"text": block.text}
    return {"functionCall": {"name": block.name, "args": orjson.loads(block.arguments)}}


def _finish(reply: Reply, blocks: list[Block]) -> str:
    return "MAX_TOKENS" if choice_finish(reply, blocks) == "length" else "STOP"


def _usage(reply: Reply) -> dict[str, int]:
    u = reply.usage
    usage = {
        "promptTokenCount": u.input_tokens,
        "candidatesTokenCount": u.output_tokens,
        "totalTokenCount": u.total_tokens,
    }
    thoughts = sum(len(b.text.split()) for b in reply.blocks if b.type == "reasoning")
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def _response_id(reply: Reply) -> str:
    return short_id(reply.id_seed or "harness", 22)


def _logprobs(text: str, top: int | None, start: int = 0) -> dict[str, Any]:
    """A candidate's ``logprobsResult`` and ``avgLogprobs`` for its text, when the request set ``responseLogprobs``
    (``top``: the ``logprobs`` alternatives per token)."""
    if top is None or not text:
        return {}
    entries = tokens.logprobs(text, top, start)
    chosen = [{"token": e["token"], "logProbability": e["logprob"]} for e in entries]
    alternatives = [
        {"candidates": [{"token": a["token"], "logProbability": a["logprob"]} for a in e["top_logprobs"]]}
        for e in entries
    ]
    average = round(sum(c["logProbability"] for c in chosen) / len(chosen), 5)
    return {"logprobsResult": {"topCandidates": alternatives, "chosenCandidates": chosen}, "avgLogprobs": average}


@lru_cache(maxsize=1024)
def encode_response(reply: Reply, model: str, top_logprobs: int | None = None) -> Encoded:
    """A non-streamed ``GenerateContentResponse``."""
    candidates = [
        {
            "content": {"role": "model", "parts": [_part(b) for b in blocks]},
            "finishReason": _finish(reply, blocks),
            "index": index,
            **_logprobs("".join(b.text for b in blocks if b.type == "text"), top_logprobs),
        }
        for index, blocks in (by_choice(reply) or {0: []}).items()
    ]
    body = {
        "candidates": candidates,
        "usageMetadata": _usage(reply),
        "modelVersion": model,
        "responseId": _response_id(reply),
    }
    return Encoded(200, JSON_HEADERS, (dumps(body),))


@lru_cache(maxsize=1024)
def encode_stream(reply: Reply, model: str, top_logprobs: int | None = None) -> Encoded:
    """The ``data:`` chunks of a streamed answer: a part per chunk (text and thoughts split by words, a function
    call whole); the last chunk of each candidate carries its ``finishReason``, the last of all ``usageMetadata``."""
    tail = {"modelVersion": model, "responseId": _response_id(reply)}
    position = {id(b): i for i, b in enumerate(reply.blocks)}
    chunks: list[tuple[int, dict[str, Any], Piece]] = []
    groups = by_choice(reply) or {0: []}
    for index, blocks in groups.items():
        for block in blocks:
            at = position[id(block)]
            if block.type == "tool_call":
                chunks.append((index, _part(block), Piece(at, "tool_call", block.name)))
                continue
            texts = text_chunks(reply, block.text) or [""]
            for n, text in enumerate(texts):
                part: dict[str, Any] = {"text": text}
                if block.type == "reasoning":
                    part["thought"] = True
                    if n == len(texts) - 1:  # the signature closes the thought
                        part["thoughtSignature"] = block.signature
                chunks.append((index, part, Piece(at, block.type, text)))
    last_of = {index: max((k for k, (i, _, _) in enumerate(chunks) if i == index), default=-1) for index in groups}
    frames: list[bytes] = []
    counted: dict[int, int] = {}  # each candidate's text tokens so far: where a chunk's log-probabilities start
    for k, (index, part, _) in enumerate(chunks):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": index}
        if "text" in part and not part.get("thought"):
            candidate.update(_logprobs(part["text"], top_logprobs, counted.get(index, 0)))
            counted[index] = counted.get(index, 0) + tokens.count(part["text"])
        if last_of.get(index) == k:
            candidate["finishReason"] = _finish(reply, groups[index])
        event: dict[str, Any] = {"candidates": [candidate]}
        if k == len(chunks) - 1:
            event["usageMetadata"] = _usage(reply)
        frames.append(b"data: " + dumps({**event, **tail}) + b"\n\n")
    if not chunks:
        event = {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP", "index": 0}]}
        frames.append(b"data: " + dumps({**event, "usageMetadata": _usage(reply), **tail}) + b"\n\n")
    return Encoded(200, SSE_HEADERS, tuple(frames), tuple(piece for _, _, piece in chunks))


def encode_json_stream(reply: Reply, model: str, top_logprobs: int | None = None) -> Encoded:
    """A stream framed as one JSON array (``alt`` other than ``sse``): ``[`` and the first response, then
    ``,`` and each next one, then ``]``, with the same responses the server-sent events carry."""
    events = encode_stream(reply, model, top_logprobs)
    frames = [b"[" if i == 0 else b",\r\n" for i in range(len(events.frames))]
    bodies = tuple(
        f + frame.removeprefix(b"data: ").removesuffix(b"\n\n") for f, frame in zip(frames, events.frames, strict=True)
    )
    return Encoded(200, JSON_HEADERS, (*bodies, b"]"), (*events.pieces, None))


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """The answer as the request asked for it (the path said whether to stream, the query how)."""
    if request.stream:
        return (
            encode_stream(reply, request.model, request.logprobs)
            if request.framing == "sse"
            else encode_json_stream(reply, request.model, request.logprobs)
        )
    return encode_response(reply, request.model, request.logprobs)


def encode_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    request_id: str = "",
) -> Encoded:
    """An error in Google's format: ``{"error": {"code", "message", "status"}}`` (Google's errors name the field in
    the message: ``param`` is taken for the same call as every protocol's, and left out)."""
    error: dict[str, Any] = {"code": status, "message": message, "status": _STATUS_NAMES.get(status, "UNKNOWN")}
    error.update(extra or {})
    return Encoded(status, JSON_HEADERS + headers, (dumps({"error": error}),))


def encode_failure(failure: Failure, request_id: str = "") -> Encoded:
    """A simulated HTTP failure as Gemini sends it."""
    status = failure_http_status(failure)
    if failure.status == "model_error" and failure.retryable and not failure.http_status:
        status = 503  # Gemini's retryable overload: UNAVAILABLE
    return encode_error(status, failure.message, extra=failure.error, headers=tuple(retry_headers(failure)))


def _model(model_id: str) -> dict[str, Any]:
    return {
        "name": f"models/{model_id}",
        "version": "001",
        "displayName": model_id,
        "inputTokenLimit": 1048576,
        "outputTokenLimit": 65536,
        "supportedGenerationMethods": ["generateContent", "countTokens"],
    }


def encode_model(model_id: str) -> Encoded:
    """``GET /v1beta/models/{id}``: the harness answers any model name, so any id is a model."""
    return Encoded(200, JSON_HEADERS, (dumps(_model(model_id.removeprefix("models/"))),))


def encode_models(ids: list[str]) -> Encoded:
    return Encoded(200, JSON_HEADERS, (dumps({"models": [_model(i) for i in ids]}),))


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure."""
    if stream:
        return Encoded(200, SSE_HEADERS, (b'data: {"candidates":[{"content":{"role":"model","par\n\n',))
    return Encoded(200, JSON_HEADERS, (b'{"candidates":[{"content":{"role":"model","parts":[{"te',))
