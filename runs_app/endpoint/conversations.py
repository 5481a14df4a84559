"""Answers clients refer back to by id (a stored Responses API response, an Anthropic message thread): keeping each
one's conversation before it is sent, and giving it back to continue it or to read the answer again."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from harnessweb.engine import respond
from harnessweb.engine.exchange import ChatRequest, Reply
from harnessweb.engine.redaction import redact_json
from runs_app.models import KeptAnswer


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


async def remember(wire: Any, request: ChatRequest, reply: Reply) -> None:
    """Keep this answer's conversation under the id the protocol gives it, with the response object."""
    answer_id, conversation, response = respond.kept(wire, request, reply)
    # Kept redacted, as everything stored: a conversation continued later carries the marker, not the key.
    await keep_answer(answer_id, wire.PROTOCOL, redact_json(conversation), redact_json(response))


async def continued(wire: Any, request: ChatRequest) -> ChatRequest | None:
    """The request after the conversation it continues; None when no answer of this protocol has that id."""
    conversation = await kept_conversation(request.continues, wire.PROTOCOL)
    return None if conversation is None else respond.continued(wire, request, conversation)
