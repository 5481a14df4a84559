"""How one request to a fake endpoint becomes what goes out, for every host of the engine: the server's consumer
and the pytest plugin's in-process transport share these steps, so both send the same bytes for the same request.

Pure: the hosts do the waiting, the sending and the keeping (a database, or a dict).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from harnessweb.engine import asked, keys, routes
from harnessweb.engine.exchange import ChatRequest, Decision, Failure, Message, Reply, conversation_seed, evolved
from harnessweb.engine.schemas import Scenario
from harnessweb.engine.wire import anthropic, embeddings
from harnessweb.engine.wire.common import Encoded, WireError
from harnessweb.engine.wire.embeddings import EmbeddingRequest


@dataclass(frozen=True)
class Outgoing:
    """A response and how it leaves: ``hold_ms`` before it (a held timeout), ``stall_ms`` between its headers and
    its first frame (a slow first byte), ``interval_ms`` between frames (pacing), and ``drop_after`` frames, then
    the connection cut (a simulated network error)."""

    encoded: Encoded
    interval_ms: int = 0
    hold_ms: int = 0
    drop_after: int | None = None
    stall_ms: int = 0


# Failure kinds that send the answer with a 200 but broken: the client must notice it.
BROKEN_BODY_KINDS = frozenset(
    {"wrong_content_type", "missing_content_type", "invalid_json_in_stream", "invalid_utf8", "truncated_stream"}
)
SLOW_FIRST_BYTE_MS = 5000  # slow_first_byte's stall when the scenario gives no time


def read_request(route: routes.Route, body: bytes) -> tuple[Any, ChatRequest | EmbeddingRequest | Encoded]:
    """The JSON payload and what it asks: the conversation to play, the texts to embed, or (count_tokens) the
    answer itself.

    Raises :class:`WireError` for a body the provider would refuse (not JSON, a missing field, a wrong type).
    """
    if route.kind == "answer":  # a small answer its protocol makes from the path's word (Ollama's /api/version)
        return None, route.wire.encode_answer(route.param, body, **dict(route.fields))
    if hasattr(route.wire, "read_body"):  # a form upload (OpenAI's audio transcriptions): its fields, not JSON
        payload = route.wire.read_body(body)
        request = evolved(route.wire.parse_request(payload), **dict(route.fields))
        return payload, evolved(request, family=route.wire.PROTOCOL)
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise WireError(f"The request body is not valid JSON: {exc}") from None
    if route.kind == "embeddings":
        if route.param and isinstance(payload, dict) and "model" not in payload:  # Azure: the deployment is the model
            payload = {**payload, "model": route.param}
        parse = getattr(route.wire, "parse_embeddings", embeddings.parse_request)  # Cohere's has its own shape
        return payload, parse(payload)
    if route.kind == "count_tokens":
        return payload, anthropic.encode_token_count(anthropic.parse_count_request(payload))
    request = route.wire.parse_request(payload)
    if route.fields:  # what the path says of the request (Gemini's model, whether it streams)
        request = evolved(request, **dict(route.fields))
    # A protocol whose demands sit in fields of its own (Ollama's ``format``, ``options``) says them the common way.
    as_asked = getattr(route.wire, "asked_body", None)
    demands = asked.demands(as_asked(payload) if as_asked else payload, request.tools)
    return payload, evolved(request, family=route.wire.PROTOCOL, **demands)


@dataclass(frozen=True)
class KeyRefusal:
    """A provider's refusal of a request whose key did not arrive: its status and message (what a run records), and
    the response in the provider's format."""

    status: int
    message: str
    encoded: Encoded


def key_refusal(
    route: routes.Route,
    headers: Mapping[str, str],
    query_key: str,
    required: bool,
    scenario: Scenario | None = None,
    request_id: str = "",
) -> KeyRefusal | None:
    """The key check of every route that plays a provider (conversations, embeddings, token counts, model lists),
    the same in the server and in-process: keys must arrive when the host requires them (``required``:
    ``HARNESS_REQUIRE_KEY``, the plugin's ``harness_require_key``), the request's ``X-Harness-Require-Key: 1``
    asks, or the scenario that answers says ``require_key``. Then a key missing, or in a header the route's provider
    does not read, gets that provider's refusal in its format (Azure's on every ``/openai/`` route); None when the
    request goes through."""
    required = required or headers.get(routes.REQUIRE_KEY_HEADER) == "1" or bool(scenario and scenario.require_key)
    refused = keys.refusal(route.provider.PROTOCOL, headers, query_key) if required else None
    if refused is None:
        return None
    encoded = route.provider.encode_error(*refused, request_id=request_id)
    return KeyRefusal(*refused, encoded)


def reply_outgoing(wire: Any, reply: Reply, request: ChatRequest) -> Outgoing:
    """A reply as it leaves: paced only when streamed."""
    return Outgoing(wire.encode_reply(reply, request), interval_ms=reply.interval_ms if request.stream else 0)


def failure_outgoing(
    wire: Any, failure: Failure, decision: Decision, request: ChatRequest, request_id: str, timeout_hold_ms: int
) -> Outgoing:
    """A failure as the provider (or the network) gives it: a held timeout, a connection cut halfway through the
    answer, a body the client cannot parse, or the provider's error with its retry headers; a protocol that says
    its failures as data (``FAILURES_AS_DATA``: the harness's own, whose model acts them out) says each at once."""
    if getattr(wire, "FAILURES_AS_DATA", False):
        return Outgoing(wire.encode_failure(failure, request_id))
    if failure.status == "timeout":
        hold = failure.retry_after_ms if failure.retry_after_ms is not None else timeout_hold_ms
        return Outgoing(wire.encode_failure(failure, request_id), hold_ms=hold)
    if failure.status == "network_error":
        full = wire.encode_reply(decision.reply, request)
        if not request.stream:  # cut the JSON body in two
            body = full.body
            full = Encoded(full.status, full.headers, (body[: len(body) // 2], body[len(body) // 2 :]))
        return Outgoing(full, drop_after=max(1, len(full.frames) // 2))
    if failure.status == "invalid_response":
        return Outgoing(wire.malformed(request.stream))
    if failure.status == "slow_first_byte":
        stall = failure.retry_after_ms if failure.retry_after_ms is not None else SLOW_FIRST_BYTE_MS
        out = reply_outgoing(wire, decision.reply, request)
        return replace(out, stall_ms=stall)
    if failure.status in BROKEN_BODY_KINDS:
        encoded = wire.encode_reply(decision.reply, request)
        return Outgoing(broken(failure.status, encoded, request.stream, decision.reply.text))
    # A protocol whose streams carry their errors (Bedrock's exception events) sends a streamed failure that way.
    in_stream = getattr(wire, "encode_stream_failure", None) if request.stream else None
    if in_stream is not None and (encoded := in_stream(failure, request_id)) is not None:
        return Outgoing(encoded)
    return Outgoing(wire.encode_failure(failure, request_id))


def _middle(encoded: Encoded) -> int:
    """The frame in the middle of the content (the middle frame when no frame carries content)."""
    content = [i for i, piece in enumerate(encoded.pieces) if piece is not None and piece.text]
    return content[len(content) // 2] if content else len(encoded.frames) // 2


def _corrupt_json(frame: bytes) -> bytes:
    """A frame whose JSON is cut in two: an SSE event keeps its ``data:`` line (and event name), ending cleanly."""
    at = frame.find(b"data: ")
    if at < 0:
        return frame[: len(frame) // 2]
    payload = frame[at + 6 :].rstrip(b"\n")
    return frame[: at + 6] + payload[: len(payload) // 2] + b"\n\n"


def _invalid_utf8(frame: bytes, text: str) -> bytes:
    """A frame with bytes that are not UTF-8 inside its text (or, lacking text, inside its JSON)."""
    needle = orjson.dumps(text)[1:-1] if text else b""
    at = frame.find(needle) if needle else -1
    if at < 0:
        at = frame.find(b"{") + 1
    return frame[:at] + b"\xff\xfe" + frame[at:]


def broken(kind: str, encoded: Encoded, stream: bool, text: str = "") -> Encoded:
    """The answer, sent with a 200 but broken the way ``kind`` says: under the wrong content type, under none, with
    a data line that is not JSON, with bytes that are not UTF-8 in the middle, or ending cleanly before its
    terminator (no ``[DONE]``, ``message_stop`` or ``response.completed``; a JSON body cut short)."""
    frames, pieces = list(encoded.frames), list(encoded.pieces) or [None] * len(encoded.frames)
    headers = tuple(h for h in encoded.headers if h[0] != b"content-type")
    if kind == "wrong_content_type":
        return replace(encoded, headers=((b"content-type", b"text/plain; charset=utf-8"), *headers))
    if kind == "missing_content_type":
        return replace(encoded, headers=headers)
    if not stream:  # one JSON body: break it whole
        body = encoded.body
        if kind == "invalid_utf8":
            return replace(encoded, frames=(_invalid_utf8(body, text[:16]),), pieces=())
        return replace(encoded, frames=(body[: len(body) // 2],), pieces=())
    if kind == "truncated_stream":
        return replace(encoded, frames=tuple(frames[:-1]), pieces=tuple(pieces[:-1]))
    at = _middle(encoded)
    piece = pieces[at]
    if kind == "invalid_utf8":
        frames[at] = _invalid_utf8(frames[at], piece.text if piece is not None else "")
    else:  # invalid_json_in_stream
        frames[at] = _corrupt_json(frames[at])
    return replace(encoded, frames=tuple(frames), pieces=tuple(pieces))


# ---------------------------------------------------------------------------------------------------------------
# Answers clients refer back to by id


def own_reply(request: ChatRequest, reply: Reply) -> Reply:
    """The reply with ids of this conversation: a scripted turn's reply is shared by every run that plays it, but an
    answer a client refers back to must have an id no other conversation has."""
    return replace(reply, id_seed=f"{reply.id_seed}:{conversation_seed(request)}")


def kept(wire: Any, request: ChatRequest, reply: Reply) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """What to keep of an answer a client may refer back to: its id, its conversation (system prompt, tools, the
    request's messages, then the answer) and the response object."""
    # The answer's tool calls by the ids its client saw (Anthropic's derived ones re-prefixed), so that a request
    # continuing it can be checked for their results (expectations' ``tool_calls_answered``).
    call_id = getattr(wire, "served_call_id", lambda block: block.call_id)
    answer = Message("assistant", reply.text, call_ids=tuple(call_id(b) for b in reply.blocks if b.type == "tool_call"))
    messages = [_kept_message(m) for m in (*request.messages, answer)]
    conversation = {"system": request.system, "tools": list(request.tools), "messages": messages}
    return wire.answer_id(request, reply), conversation, wire.response_object(request, reply)


def continued(wire: Any, request: ChatRequest, conversation: dict[str, Any]) -> ChatRequest:
    """The request after the kept conversation it continues, as the protocol carries it over."""
    earlier = replace(
        request,
        system=conversation["system"],
        tools=tuple(conversation["tools"]),
        messages=tuple(_message_kept(entry) for entry in conversation["messages"]),
    )
    return wire.continued(request, earlier)


def _kept_message(message: Message) -> list[Any]:
    """A message as a kept conversation holds it: role and text, then its call and result ids when it has any."""
    if message.call_ids or message.result_ids:
        return [message.role, message.text, list(message.call_ids), list(message.result_ids)]
    return [message.role, message.text]


def _message_kept(entry: list[Any]) -> Message:
    """A kept conversation's message back (conversations kept before the ids were kept hold role and text only)."""
    role, text, *ids = entry
    calls, results = (ids + [[], []])[:2]
    return Message(role=role, text=text, call_ids=tuple(calls), result_ids=tuple(results))


def response_summary(decision: Decision, encoded: Encoded) -> dict[str, Any]:
    """What a served reply was, for the run's timeline and the call history."""
    reply = decision.reply
    return {
        "text": reply.text,
        "reasoning": reply.reasoning,
        "tool_calls": reply.tool_calls,
        "finish_reason": reply.finish,
        "usage": vars(reply.usage),
        "chunks": encoded.content_frames,
    }
