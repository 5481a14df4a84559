"""Answers clients refer back to by id (a stored Responses API response, an Anthropic message thread): keeping each
one's conversation before it is sent, and giving it back to continue it or to read the answer again."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from channels.db import database_sync_to_async

from runs_app.models import KeptAnswer
from scenarios_app.exchange import ChatRequest, Message, Reply, conversation_seed


def _keep(answer_id: str, protocol: str, conversation: dict[str, Any], response: dict[str, Any]) -> None:
    KeptAnswer.objects.update_or_create(
        id=answer_id, defaults={"protocol": protocol, "conversation": conversation, "response": response}
    )


def _conversation(answer_id: str, protocol: str) -> dict[str, Any] | None:
    rows = KeptAnswer.objects.filter(id=answer_id, protocol=protocol)
    return rows.values_list("conversation", flat=True).first()


def _response(answer_id: str, protocol: str) -> dict[str, Any] | None:
    return KeptAnswer.objects.filter(id=answer_id, protocol=protocol).values_list("response", flat=True).first()


keep_answer = database_sync_to_async(_keep)
kept_conversation = database_sync_to_async(_conversation)
kept_response = database_sync_to_async(_response)


def own_reply(request: ChatRequest, reply: Reply) -> Reply:
    """The reply with ids of this conversation: a scripted turn's reply is shared by every run that plays it, but an
    answer a client refers back to must have an id no other conversation has."""
    return replace(reply, id_seed=f"{reply.id_seed}:{conversation_seed(request)}")


async def remember(wire: Any, request: ChatRequest, reply: Reply) -> None:
    """Keep this answer's conversation (system prompt, tools, the request's messages, then the answer) under the id
    the protocol gives it, with the response object."""
    messages = [[m.role, m.text] for m in (*request.messages, Message(role="assistant", text=reply.text))]
    conversation = {"system": request.system, "tools": list(request.tools), "messages": messages}
    await keep_answer(wire.answer_id(request, reply), wire.PROTOCOL, conversation, wire.response_object(request, reply))


async def continued(wire: Any, request: ChatRequest) -> ChatRequest | None:
    """The request after the conversation it continues, as the protocol carries it over; None when no answer of
    this protocol has that id."""
    kept = await kept_conversation(request.continues, wire.PROTOCOL)
    if kept is None:
        return None
    earlier = replace(
        request,
        system=kept["system"],
        tools=tuple(kept["tools"]),
        messages=tuple(Message(role=role, text=text) for role, text in kept["messages"]),
    )
    return wire.continued(request, earlier)
