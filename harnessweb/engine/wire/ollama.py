"""Ollama's native API, as the ``ollama`` Python package (and ollama-js, LangChain's ``ChatOllama``, litellm's
``ollama_chat/``) calls it: ``POST /api/chat`` and ``POST /api/generate`` (request parser and encoders), Ollama's
errors, and the endpoints beside them (embeddings, the model list, ``show``, ``ps``, ``version``), which live in
:mod:`~harnessweb.engine.wire.ollama_endpoints` and are served from here. Pure.

``stream`` is true unless the body says false: a stream is NDJSON (``application/x-ndjson``, one JSON object a line),
each line ``{"model", "created_at", "message": {"role", "content"[, "thinking"][, "tool_calls"]}, "done": false}``
(``/api/generate``: ``"response"`` in place of ``"message"``), the last ``"done": true`` with ``done_reason`` and the
counts and durations (nanoseconds, derived from the token counts, so the same answer always reports the same
numbers). Tool calls come whole, one line each, their ``arguments`` an object; a tool result comes back as
``{"role": "tool", "content", "tool_name"}``. ``format`` (``"json"`` or a JSON Schema) asks for the structured answer;
``think`` puts the reasoning in ``thinking``. Errors are ``{"error": "..."}``.

Ollama has no choices: instruction mode's messages follow one another. The prefix ``/ollama`` before ``/api/`` is
accepted too (a host given with a path keeps it: the ``ollama`` package's ``_parse_host``); the route table strips it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import orjson

from harnessweb.engine import tokens
from harnessweb.engine.exchange import Block, ChatRequest, Failure, Message, Reply, short_id
from harnessweb.engine.wire.common import (
    Encoded,
    Piece,
    WireError,
    choice_finish,
    dumps,
    failure_http_status,
    number_or_none,
    retry_headers,
    text_chunks,
)
from harnessweb.engine.wire.ollama_endpoints import (
    CREATED_AT,
    EMBED_PATH,
    EMBEDDINGS_PATH,
    JSON_HEADERS,
    LOAD_NS,
    NDJSON_HEADERS,
    PROMPT_TOKEN_NS,
    encode_answer,
    encode_embeddings,
    encode_model,
    encode_models,
    parse_embeddings,
)

__all__ = [
    "EMBED_PATH",
    "EMBEDDINGS_PATH",
    "encode_answer",
    "encode_embeddings",
    "encode_model",
    "encode_models",
    "parse_embeddings",
]

PROTOCOL = "ollama"
LABEL = "Ollama"
PATH = "/api/chat"
GENERATE_PATH = "/api/generate"
PATH_PATTERN = r"/api/(?P<method>chat|generate)"
PREFIX = "/ollama"  # a host with a path: http://host:port/ollama
REQUEST_ID_HEADER = b"x-request-id"  # Ollama sends none; the harness's own, for the run page
_ROLES = ("system", "user", "assistant", "tool")
EVAL_TOKEN_NS = 20_000_000  # each token of the answer (50 a second); a load and the prompt's: ollama_endpoints


def path_fields(param: str = "", method: str = "chat", query: Any = None) -> dict[str, Any]:
    """What the path says of the request: ``/api/generate`` answers in generate's shape (``framing``)."""
    return {"framing": "generate"} if method == "generate" else {}


# -- the request ---------------------------------------------------------------------------------------------------


def _string(raw: dict[str, Any], name: str, where: str) -> str:
    value = raw.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise WireError(f"{where}.{name} must be a string", f"{where}.{name}")
    return value


def _tool_calls(raw: Any, where: str) -> list[tuple[str, bool]]:
    """An assistant message's tool calls, checked: what a result may answer each by, its ``id`` (LangChain's
    ``ChatOllama`` sends its own) or else its name, and whether it came with an id."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise WireError(f"{where}.tool_calls must be an array", f"{where}.tool_calls")
    calls = []
    for j, call in enumerate(raw):
        function = call.get("function") if isinstance(call, dict) else None
        at = f"{where}.tool_calls[{j}].function"
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise WireError(f"{at}.name must be a string", f"{at}.name")
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise WireError(f"{at}.arguments must be an object", f"{at}.arguments")
        given = call.get("id") if isinstance(call.get("id"), str) and call["id"] else ""
        calls.append((given or function["name"], bool(given)))
    return calls


def _messages(raw_messages: Any) -> tuple[str, list[Message]]:
    if not isinstance(raw_messages, list):
        raise WireError("messages must be an array", "messages")
    system: list[str] = []
    messages: list[Message] = []
    calls: list[tuple[str, bool]] = []  # the last assistant message's, and how many results followed it
    results = 0
    for i, raw in enumerate(raw_messages):
        where = f"messages[{i}]"
        if not isinstance(raw, dict):
            raise WireError(f"{where} must be an object", where)
        role = raw.get("role")
        if role not in _ROLES:
            raise WireError(f"{where}.role must be one of {', '.join(_ROLES)}", f"{where}.role")
        text = _string(raw, "content", where)
        if role == "system":
            system.append(text)
        elif role == "tool":
            # A result answers by the call's id or its tool's name; a call that came without an id (the ollama
            # package drops them before sending) is answered by the result in its place, as Ollama pairs them.
            placed = calls[results][0] if results < len(calls) and not calls[results][1] else ""
            given = (_string(raw, "tool_call_id", where), _string(raw, "tool_name", where), placed)
            messages.append(Message("tool", text, result_ids=tuple(dict.fromkeys(filter(None, given)))))
            results += 1
        else:
            made = _tool_calls(raw.get("tool_calls"), where) if role == "assistant" else []
            if role == "assistant":
                calls, results = made, 0
            messages.append(Message(role, text, call_ids=tuple(key for key, _ in made)))
    return "\n".join(system), messages


def _tools(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise WireError("tools must be an array", "tools")
    names = []
    for i, tool in enumerate(raw):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise WireError(f"tools[{i}].function.name must be a non-empty string", f"tools[{i}].function.name")
        names.append(function["name"])
    return tuple(names)


def _options(body: dict[str, Any]) -> dict[str, Any]:
    options = body.get("options")
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise WireError("options must be an object", "options")
    stop = options.get("stop")
    if stop is not None and not (isinstance(stop, list) and all(isinstance(s, str) for s in stop)):
        raise WireError("options.stop must be an array of strings", "options.stop")
    predict = options.get("num_predict")
    if predict is not None and (isinstance(predict, bool) or not isinstance(predict, int)):
        raise WireError("options.num_predict must be an integer", "options.num_predict")
    return options


def parse_request(body: Any) -> ChatRequest:
    """Read a chat body (``messages``) or a generate body (``prompt``, ``system``) into the neutral request; raises
    WireError naming the bad field."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("model is required", "model")
    if "messages" in body:
        system, messages = _messages(body["messages"])
    elif "prompt" in body:
        system, prompt = _string(body, "system", "body"), _string(body, "prompt", "body")
        messages = [Message("user", prompt)]
    else:
        raise WireError("messages (/api/chat) or prompt (/api/generate) is required", "messages")
    format_ = body.get("format")
    if format_ not in (None, "", "json") and not isinstance(format_, dict):
        raise WireError('format must be "json" or a JSON schema object', "format")
    think = body.get("think")
    if think is not None and think not in (True, False, "low", "medium", "high"):
        raise WireError('think must be a boolean or one of "low", "medium", "high"', "think")
    stream = body.get("stream", True)
    if stream is not None and not isinstance(stream, bool):
        raise WireError("stream must be a boolean", "stream")
    options = _options(body)
    return ChatRequest(
        protocol=PROTOCOL,
        model=model,
        system=system,
        messages=tuple(messages),
        tools=_tools(body.get("tools")),
        temperature=number_or_none(options, "temperature"),
        top_p=number_or_none(options, "top_p"),
        reasoning_enabled=think not in (None, False),
        stream=stream is not False,
    )


def asked_body(body: dict[str, Any]) -> dict[str, Any]:
    """The body as :mod:`harnessweb.engine.asked` reads any protocol's demands: ``format`` as a structured output
    (``"json"`` any object, else the schema), ``options.num_predict`` as the token budget (-1 and -2: none),
    ``options.stop`` as the stop sequences, the tools (OpenAI's shape already) and the log-probabilities."""
    options = body.get("options") if isinstance(body.get("options"), dict) else {}
    asked: dict[str, Any] = {key: body[key] for key in ("tools", "logprobs", "top_logprobs") if key in body}
    format_ = body.get("format")
    if format_ == "json":
        asked["response_format"] = {"type": "json_object"}
    elif isinstance(format_, dict):
        asked["response_format"] = {"type": "json_schema", "json_schema": {"schema": format_}}
    if isinstance(options.get("num_predict"), int) and options["num_predict"] >= 0:
        asked["max_tokens"] = options["num_predict"]
    if options.get("stop"):
        asked["stop"] = options["stop"]
    return asked


# -- the answer ----------------------------------------------------------------------------------------------------


def _blocks(reply: Reply) -> list[Block]:
    return [b for b in reply.blocks if not b.redacted]


def _done_reason(reply: Reply, blocks: list[Block]) -> str:
    """Ollama's ``done_reason``: ``length`` when the token budget cut the answer, else ``stop`` (a tool call too)."""
    return "length" if choice_finish(reply, blocks) == "length" else "stop"


def stats(reply: Reply) -> dict[str, int]:
    """The last line's counts and durations (nanoseconds): fixed per token, so they never change for an answer."""
    prompt, answer = reply.usage.input_tokens, reply.usage.output_tokens
    prompt_ns, eval_ns = prompt * PROMPT_TOKEN_NS, answer * EVAL_TOKEN_NS
    return {
        "total_duration": LOAD_NS + prompt_ns + eval_ns,
        "load_duration": LOAD_NS,
        "prompt_eval_count": prompt,
        "prompt_eval_duration": prompt_ns,
        "eval_count": answer,
        "eval_duration": eval_ns,
    }


def _arguments(text: str) -> Any:
    try:
        return orjson.loads(text or "{}")
    except orjson.JSONDecodeError:
        return {}


def _call(block: Block, index: int) -> dict[str, Any]:
    function = {"index": index, "name": block.name, "arguments": _arguments(block.arguments)}
    return {"id": block.call_id, "function": function}


def context_of(reply: Reply) -> list[int]:
    """``/api/generate``'s ``context``: token ids of the answer (deterministic), which a client may send back."""
    return [int(short_id(token, 6), 16) % 128000 for token in tokens.tokens(reply.text)]


def _line(head: bytes, payload: dict[str, Any]) -> bytes:
    return head + dumps(payload)[1:] + b"\n"


@lru_cache(maxsize=1024)
def encode_stream(reply: Reply, model: str, generate: bool = False) -> Encoded:
    """The NDJSON lines of a streamed answer: thinking, text and each tool call as they come, then the ``done``
    line; cached, since a turn's bytes never change."""
    head = b'{"model":' + dumps(model) + b',"created_at":' + dumps(CREATED_AT) + b","
    position = {id(b): i for i, b in enumerate(reply.blocks)}
    blocks = _blocks(reply)
    lines: list[tuple[dict[str, Any], Piece | None]] = []
    call_index = 0
    for block in blocks:
        at = position[id(block)]
        if block.type == "tool_call":
            if not generate:  # /api/generate has no tools
                message = {"role": "assistant", "content": "", "tool_calls": [_call(block, call_index)]}
                lines.append(({"message": message}, Piece(at, "tool_call", block.name)))
                call_index += 1
            continue
        for piece in text_chunks(reply, block.text):
            said = {"content": piece} if block.type == "text" else {"content": "", "thinking": piece}
            if generate:
                said = {"response": piece} if block.type == "text" else {"response": "", "thinking": piece}
            else:
                said = {"message": {"role": "assistant", **said}}
            lines.append((said, Piece(at, block.type, piece)))
    end: dict[str, Any] = {"response": ""} if generate else {"message": {"role": "assistant", "content": ""}}
    end.update(done=True, done_reason=_done_reason(reply, blocks))
    if generate:
        end["context"] = context_of(reply)
    end.update(stats(reply))
    frames = [_line(head, {**said, "done": False}) for said, _ in lines] + [_line(head, end)]
    return Encoded(200, NDJSON_HEADERS, tuple(frames), (*(p for _, p in lines), None))


@lru_cache(maxsize=1024)
def encode_response(reply: Reply, model: str, generate: bool = False) -> Encoded:
    """A non-streamed answer: one object, the whole message (or ``response``) with the ``done`` line's fields."""
    blocks = _blocks(reply)
    text = "".join(b.text for b in blocks if b.type == "text")
    thinking = "".join(b.text for b in blocks if b.type == "reasoning")
    body: dict[str, Any] = {"model": model, "created_at": CREATED_AT}
    if generate:
        body["response"] = text
        if thinking:
            body["thinking"] = thinking
    else:
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if thinking:
            message["thinking"] = thinking
        calls = [_call(b, i) for i, b in enumerate(b for b in blocks if b.type == "tool_call")]
        if calls:
            message["tool_calls"] = calls
        body["message"] = message
    body.update(done=True, done_reason=_done_reason(reply, blocks))
    if generate:
        body["context"] = context_of(reply)
    body.update(stats(reply))
    return Encoded(200, JSON_HEADERS, (dumps(body),))


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """The answer as the request asked for it (streamed unless ``stream: false``), in chat's or generate's shape."""
    generate = request.framing == "generate"
    if request.stream:
        return encode_stream(reply, request.model, generate)
    return encode_response(reply, request.model, generate)


def encode_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    request_id: str = "",
) -> Encoded:
    """An error as Ollama sends it: ``{"error": "..."}`` (Ollama names the field in the message: ``param`` is added
    to it when the message does not already name it)."""
    if param and param not in message:
        message = f"{message} ({param})"
    body: dict[str, Any] = {"error": message, **(extra or {})}
    return Encoded(status, JSON_HEADERS + headers, (dumps(body),))


def encode_failure(failure: Failure, request_id: str = "") -> Encoded:
    """A simulated HTTP failure as Ollama sends it, with the retry headers a scenario gives."""
    return encode_error(failure_http_status(failure), failure.message, extra=failure.error,
                        headers=tuple(retry_headers(failure)))  # fmt: skip


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure."""
    if stream:
        return Encoded(200, NDJSON_HEADERS, (b'{"model":"broken","created_at":"2025-01-01T00:00:00Z","mess\n',))
    return Encoded(200, JSON_HEADERS, (b'{"model":"broken","message":{"role":"assistant","con',))
