"""The OpenAI Responses API (``POST /v1/responses``): ``input`` items and ``instructions`` in, ``output`` items out
(``reasoning``, ``message``, ``function_call``), streamed as typed events each with a ``sequence_number``. Pure.

A response's id is derived from its whole conversation and answer, so the same conversation gets the same bytes,
and a later request that names it in ``previous_response_id`` continues that conversation: the endpoint keeps
each answer's conversation (:func:`conversation_after`) and prepends it to the new input. Errors, failures and the
model list are the OpenAI platform's (:mod:`harnessweb.engine.wire.openai`).
"""

from __future__ import annotations

from dataclasses import replace
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
    argument_chunks,
    bool_field,
    dumps,
    number_or_none,
    text_chunks,
    text_of,
)
from harnessweb.engine.wire.openai import (
    REQUEST_ID_HEADER,
    encode_error,
    encode_failure,
    encode_model,
    encode_models,
)

PROTOCOL = "responses"
LABEL = "OpenAI Responses"
PATH = "/v1/responses"
__all__ = ["REQUEST_ID_HEADER", "encode_error", "encode_failure", "encode_model", "encode_models"]
_TEXT_PARTS = ("input_text", "output_text", "text")
_SYSTEM_ROLES = ("system", "developer")


# -- the request -------------------------------------------------------------------------------------------------


def _output_text(raw: Any, where: str) -> str:
    if raw is None or isinstance(raw, str):
        return raw or ""
    return text_of(raw, where, index_format="{}[{}]", allowed=_TEXT_PARTS)


def _input_messages(raw: Any) -> tuple[list[Message], list[str]]:
    """``input`` as neutral messages, and the system text its system/developer messages carry.

    The items an earlier answer produced (an assistant message, reasoning, function calls) run together into one
    assistant message, as they were one answer: the turn is the number of answers so far plus one.
    """
    if isinstance(raw, str):
        return [Message(role="user", text=raw)], []
    if not isinstance(raw, list) or not raw:
        raise WireError("input must be a string or a non-empty array of input items", "input")
    messages: list[Message] = []
    system: list[str] = []
    answer: list[str] | None = None  # texts of the assistant answer being read
    calls: list[str] = []  # the call ids of its function calls

    def close_answer() -> None:
        nonlocal answer
        if answer is not None:
            text = "\n".join(t for t in answer if t)
            messages.append(Message(role="assistant", text=text, call_ids=tuple(calls)))
            answer = None
            calls.clear()

    for i, item in enumerate(raw):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise WireError(f"{where} must be an object", where)
        kind = item.get("type", "message")
        role = item.get("role")
        if kind == "message":
            if role not in ("user", "assistant", *_SYSTEM_ROLES):
                raise WireError(f"{where}.role must be one of assistant, developer, system, user", f"{where}.role")
            text = text_of(item.get("content"), f"{where}.content", index_format="{}[{}]", allowed=_TEXT_PARTS)
            if role in _SYSTEM_ROLES:
                system.append(text)
            elif role == "assistant":
                answer = [*(answer or []), text]
            else:
                close_answer()
                messages.append(Message(role="user", text=text))
        elif not isinstance(kind, str):
            raise WireError(f"{where}.type must be a string", f"{where}.type")
        elif kind == "function_call_output" or kind.endswith("_call_output"):
            close_answer()
            answers = (item["call_id"],) if isinstance(item.get("call_id"), str) else ()
            messages.append(
                Message(role="tool", text=_output_text(item.get("output"), f"{where}.output"), result_ids=answers)
            )
        elif kind == "reasoning" or kind.endswith("_call"):
            if kind == "function_call" and not isinstance(item.get("name"), str):
                raise WireError(f"{where}.name must be a string", f"{where}.name")
            answer = [*(answer or []), ""]
            if kind.endswith("_call") and isinstance(item.get("call_id"), str):
                calls.append(item["call_id"])
        elif kind != "item_reference":
            raise WireError(f"{where}.type {kind!r} is not an input item this server reads", f"{where}.type")
    close_answer()
    return messages, system


def _tools(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise WireError("tools must be an array", "tools")
    names = []
    for i, tool in enumerate(raw):
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise WireError(f"tools[{i}].type must be a string", f"tools[{i}].type")
        if tool["type"] == "function":
            if not isinstance(tool.get("name"), str):
                raise WireError(f"tools[{i}].name must be a string", f"tools[{i}].name")
            names.append(tool["name"])
        else:
            names.append(tool["type"])  # a built-in tool (web_search, file_search, …) goes by its type
    return tuple(names)


def parse_request(body: Any) -> ChatRequest:
    """Read a Responses body into the neutral request (``input`` only: the endpoint adds the conversation that
    ``previous_response_id`` names, kept in ``continues``); raises WireError naming the bad field."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("you must provide a model parameter", "model")
    messages, system = _input_messages(body.get("input"))
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise WireError("instructions must be a string", "instructions")
    previous = body.get("previous_response_id")
    if previous is not None and (not isinstance(previous, str) or not previous):
        raise WireError("previous_response_id must be a string", "previous_response_id")
    reasoning = body.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, dict):
        raise WireError("reasoning must be an object", "reasoning")
    return ChatRequest(
        protocol=PROTOCOL,
        model=model,
        system="\n".join(t for t in (instructions or "", *system) if t),
        messages=tuple(messages),
        tools=_tools(body.get("tools")),
        temperature=number_or_none(body, "temperature"),
        top_p=number_or_none(body, "top_p"),
        reasoning_enabled=reasoning is not None and reasoning.get("effort", "medium") not in (None, "none"),
        stream=bool_field(body, "stream"),
        include_usage=True,
        keep=body.get("store") is not False,
        continues=previous or "",
    )


# -- the answer --------------------------------------------------------------------------------------------------


def answer_id(request: ChatRequest, reply: Reply) -> str:
    """The response's id (the endpoint gives a stored answer's reply a seed of its own conversation)."""
    return f"resp_{short_id(reply.id_seed or 'harness', 48)}"


def continued(request: ChatRequest, earlier: ChatRequest) -> ChatRequest:
    """The request after the conversation of the response it names. Instructions and tools are not carried over
    (as the real API does not): they are this request's."""
    return replace(request, messages=(*earlier.messages, *request.messages))


def encode_unknown_answer(answer_id: str, request_id: str = "") -> Encoded:
    """The API's answer to a ``previous_response_id`` it does not hold."""
    message = f"Previous response with id '{answer_id}' not found."
    return encode_error(400, message, param="previous_response_id", request_id=request_id)


def _item_id(prefix: str, response_id: str, index: int) -> str:
    return f"{prefix}_{short_id(f'{response_id}:{index}', 48)}"


def _logprobs(request: ChatRequest, text: str, start: int = 0) -> list[dict[str, Any]]:
    """An output text's log-probabilities when the request includes ``message.output_text.logprobs``, else none."""
    return tokens.logprobs(text, request.logprobs, start) if request.logprobs is not None else []


def _items(request: ChatRequest, reply: Reply, response_id: str) -> list[tuple[Block, dict[str, Any]]]:
    """Each block as its finished output item (instruction mode's choices follow one another); redacted thinking,
    which the Responses API does not have, is left out."""
    items = []
    for index, block in enumerate(reply.blocks):
        if block.redacted:
            continue
        if block.type == "reasoning":
            item: dict[str, Any] = {
                "id": _item_id("rs", response_id, index),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": block.text}],
            }
        elif block.type == "text":
            item = {
                "id": _item_id("msg", response_id, index),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {
                        "type": "output_text",
                        "annotations": [],
                        "logprobs": _logprobs(request, block.text),
                        "text": block.text,
                    }
                ],  # fmt: skip
            }
        else:
            item = {
                "id": _item_id("fc", response_id, index),
                "type": "function_call",
                "status": "completed",
                "arguments": block.arguments,
                "call_id": block.call_id,
                "name": block.name,
            }
        items.append((block, item))
    return items


def response_object(request: ChatRequest, reply: Reply, *, status: str = "completed") -> dict[str, Any]:
    """The ``response`` object, as ``responses.create`` returns it and ``GET /v1/responses/{id}`` gives it back."""
    response_id = answer_id(request, reply)
    incomplete = reply.finish == "length"
    u = reply.usage
    done = status == "completed"
    return {
        "id": response_id,
        "object": "response",
        "created_at": CREATED,
        "status": ("incomplete" if incomplete else "completed") if done else status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete and done else None,
        "instructions": request.system or None,
        "max_output_tokens": None,
        "model": request.model,
        "output": [item for _, item in _items(request, reply, response_id)] if done else [],
        "parallel_tool_calls": True,
        "previous_response_id": request.continues or None,
        "reasoning": {"effort": "medium" if request.reasoning_enabled else None, "summary": None},
        "store": True,
        "temperature": request.temperature if request.temperature is not None else 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": request.top_p if request.top_p is not None else 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": u.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": u.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": u.total_tokens,
        }
        if done
        else None,
        "user": None,
        "metadata": {},
    }


def encode_object(response: dict[str, Any]) -> Encoded:
    """A stored response object as JSON (``GET /v1/responses/{id}``)."""
    return Encoded(200, JSON_HEADERS, (dumps(response),))


def _events(request: ChatRequest, reply: Reply) -> list[tuple[dict[str, Any], Piece | None]]:
    """The stream's events in order (without their sequence numbers), each with what it adds to the answer."""
    response_id = answer_id(request, reply)
    events: list[tuple[dict[str, Any], Piece | None]] = []
    opening = response_object(request, reply, status="in_progress")
    events.append(({"type": "response.created", "response": opening}, None))
    events.append(({"type": "response.in_progress", "response": opening}, None))
    for index, (block, item) in enumerate(_items(request, reply, response_id)):
        at = {"item_id": item["id"], "output_index": index}
        if block.type == "reasoning":
            part = {"type": "summary_text", "text": ""}
            events.append(
                ({"type": "response.output_item.added", "output_index": index, "item": {**item, "summary": []}}, None)
            )
            events.append(
                ({"type": "response.reasoning_summary_part.added", **at, "summary_index": 0, "part": part}, None)
            )
            for chunk in text_chunks(reply, block.text):
                delta = {"type": "response.reasoning_summary_text.delta", **at, "summary_index": 0, "delta": chunk}
                events.append((delta, Piece(index, "reasoning", chunk)))
            done_text = {"type": "response.reasoning_summary_text.done", **at, "summary_index": 0, "text": block.text}
            events.append((done_text, None))
            done_part = {**part, "text": block.text}
            events.append(
                ({"type": "response.reasoning_summary_part.done", **at, "summary_index": 0, "part": done_part}, None)
            )
        elif block.type == "text":
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            added = {**item, "status": "in_progress", "content": []}
            events.append(({"type": "response.output_item.added", "output_index": index, "item": added}, None))
            events.append(({"type": "response.content_part.added", **at, "content_index": 0, "part": part}, None))
            counted = 0  # the text's tokens so far: where a delta's log-probabilities start
            for chunk in text_chunks(reply, block.text):
                logprobs = _logprobs(request, chunk, counted)
                counted += tokens.count(chunk)
                delta = {"type": "response.output_text.delta", **at, "content_index": 0, "delta": chunk,
                         "logprobs": logprobs}  # fmt: skip
                events.append((delta, Piece(index, "text", chunk)))
            done_text = {
                "type": "response.output_text.done",
                **at,
                "content_index": 0,
                "text": block.text,
                "logprobs": _logprobs(request, block.text),
            }
            events.append((done_text, None))
            done_part = {**part, "text": block.text}
            events.append(({"type": "response.content_part.done", **at, "content_index": 0, "part": done_part}, None))
        else:
            added = {**item, "status": "in_progress", "arguments": ""}
            events.append(
                (
                    {"type": "response.output_item.added", "output_index": index, "item": added},
                    Piece(index, "tool_call", block.name),
                )
            )
            for chunk in argument_chunks(block.arguments):
                delta = {"type": "response.function_call_arguments.delta", **at, "delta": chunk}
                events.append((delta, Piece(index, "arguments", chunk)))
            done_args = {
                "type": "response.function_call_arguments.done",
                **at,
                "name": block.name,
                "arguments": block.arguments,
            }
            events.append((done_args, None))
        events.append(({"type": "response.output_item.done", "output_index": index, "item": item}, None))
    events.append(({"type": "response.completed", "response": response_object(request, reply)}, None))
    return events


def encode_stream(request: ChatRequest, reply: Reply) -> Encoded:
    """The typed event stream: ``event: <type>`` then ``data:`` with the event and its ``sequence_number``."""
    frames = []
    pieces = []
    for number, (event, piece) in enumerate(_events(request, reply)):
        data = dumps({"type": event["type"], "sequence_number": number, **event})
        frames.append(b"event: " + event["type"].encode() + b"\ndata: " + data + b"\n\n")
        pieces.append(piece)
    return Encoded(200, SSE_HEADERS, tuple(frames), tuple(pieces))


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """The answer as the request asked for it: the event stream, or the response object."""
    if request.stream:
        return encode_stream(request, reply)
    return encode_object(response_object(request, reply))


def malformed(stream: bool) -> Encoded:
    """A 200 whose body no client can parse: the ``invalid_response`` failure."""
    if stream:
        return Encoded(200, SSE_HEADERS, (b'event: response.created\ndata: {"type":"response.created","respo\n\n',))
    return Encoded(200, JSON_HEADERS, (b'{"id":"resp_broken","object":"response","output":[{"ty',))
