"""Answers clients refer back to by id: keeping each one's conversation (before the answer is sent) and giving it
back to continue it (``previous_response_id``) or to read the answer again (``GET /v1/responses/{id}``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from channels.db import database_sync_to_async

from runs_app.models import KeptAnswer
from scenarios_app.exchange import ChatRequest, Message, Reply


def _keep(answer_id: str, protocol: str, conversation: list[list[str]], response: dict[str, Any]) -> None:
    KeptAnswer.objects.update_or_create(
        id=answer_id, defaults={"protocol": protocol, "conversation": conversation, "response": response}
    )


def _conversation(answer_id: str) -> list[list[str]] | None:
    return KeptAnswer.objects.filter(id=answer_id).values_list("conversation", flat=True).first()


def _response(answer_id: str) -> dict[str, Any] | None:
    return KeptAnswer.objects.filter(id=answer_id).values_list("response", flat=True).first()


keep_answer = database_sync_to_async(_keep)
kept_conversation = database_sync_to_async(_conversation)
kept_response = database_sync_to_async(_response)


async def remember(wire: Any, request: ChatRequest, reply: Reply) -> None:
    """Keep this answer's conversation (the request's messages, then the answer) under the id the protocol gives
    it, with the response object."""
    conversation = [[m.role, m.text] for m in (*request.messages, Message(role="assistant", text=reply.text))]
    await keep_answer(wire.answer_id(request, reply), wire.PROTOCOL, conversation, wire.response_object(request, reply))


async def continued(request: ChatRequest) -> ChatRequest | None:
    """The request with the conversation it continues before its own messages; None when that answer is unknown.
    The system prompt stays the request's own (instructions are not carried over)."""
    earlier = await kept_conversation(request.continues)
    if earlier is None:
        return None
    messages = tuple(Message(role=role, text=text) for role, text in earlier)
    return replace(request, messages=(*messages, *request.messages))
