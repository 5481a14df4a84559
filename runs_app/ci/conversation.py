"""The REST router of what a CI job uploads beside its run: its conversation (``/api/runs/{id}/messages``) and the
pages or texts it generated (``/api/runs/{id}/artifacts``). Both are idempotent: a retried upload stores nothing
twice."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router
from ninja.errors import HttpError
from ninja.responses import Status
from pydantic import ValidationError as PydanticValidationError

from harnessweb.apikit import (
    BatchOut,
    ErrorOut,
    inline_schema,
    invalid,
    invalid_from,
    json_body_doc,
    read_json,
    store_items,
    unstorable_path,
)
from runs_app.ci.messages import MessageError, digest, normalise
from runs_app.ci.schemas import ArtifactIn, ArtifactOut, MessageOut, MessagesIn, MessagesOut
from runs_app.models import Artifact, Run, RunMessage

router = Router()

ERRORS: dict[int, Any] = {404: ErrorOut, 409: ErrorOut, 413: ErrorOut, 422: ErrorOut}


# -- the conversation ------------------------------------------------------------------------------------------------

_MESSAGES_BODY = json_body_doc({"anyOf": [{"type": "array", "items": {"type": "object"}}, inline_schema(MessagesIn)]})


def _read_conversation(request: HttpRequest) -> tuple[list[dict[str, Any]], int, list[tuple[Any, ...]]]:
    """The uploaded conversation normalised, the position of its first message, and the field each came as."""
    data = read_json(request)
    if found := unstorable_path(data):
        path, reason = found
        raise invalid(("body", *path), reason, "string_unstorable")
    if isinstance(data, dict) and "role" in data and "messages" not in data:
        data = [data]  # one message alone
    loc: tuple[Any, ...] = ("body",)
    if isinstance(data, list):
        envelope = MessagesIn(messages=data)
    else:
        try:
            envelope = MessagesIn.model_validate(data)
        except PydanticValidationError as exc:
            raise invalid_from(exc, "body") from exc
        loc = ("body", "messages")
    if envelope.system not in (None, "", []) and envelope.start:
        raise invalid(("body", "system"), "The system prompt comes first: send it with start 0.")
    try:
        normalised = normalise(envelope.messages, system=envelope.system, shape=envelope.format, loc=loc)
    except MessageError as exc:
        raise invalid(exc.loc, exc.message, exc.kind) from exc
    fields = [(*loc, index) for index in range(len(envelope.messages))]
    if len(normalised) > len(fields):  # the top-level system prompt is the first message stored
        fields.insert(0, ("body", "system"))
    return normalised, envelope.start, fields


def _conflict(field: tuple[Any, ...], row: RunMessage, stored: int) -> dict[str, Any]:
    name = ".".join(map(str, field))
    message = (
        f"Position {row.position} of this run's conversation already holds a different {row.role} message: send "
        f"the conversation as stored, or only the new messages with start {stored}."
    )
    return {"detail": "Conflict", "errors": [{"field": name, "message": message, "type": "conflict"}]}


@router.post(
    "/runs/{run_id}/messages",
    response={200: MessagesOut, 201: MessagesOut, **ERRORS},
    summary="Upload the run's conversation (OpenAI or Anthropic messages)",
    openapi_extra=_MESSAGES_BODY,
)
def upload_messages(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """The conversation as a list of messages in OpenAI's Chat Completions or Anthropic's Messages shape (roles,
    content, tool calls and tool results), or ``{messages, system, format, start}``; stored normalised to one shape,
    one message per position from ``start`` (0). Send the whole conversation again, or only the new messages with
    the position of the first: a message already stored at its position is a duplicate (200 when nothing was new),
    a different one there is a 409 naming it. A message that cannot be read is a 422 naming the field."""
    run = get_object_or_404(Run, id=run_id)
    normalised, start, fields_sent = _read_conversation(request)
    digests = [digest(message) for message in normalised]
    end = start + len(normalised)
    stored = {row.position: row for row in run.messages.filter(position__gte=start, position__lt=end)}
    for index, message_digest in enumerate(digests):
        row = stored.get(start + index)
        if row is not None and row.digest != message_digest:
            return Status(409, _conflict(fields_sent[index], row, run.messages.count()))
    created = 0
    rows = []
    with transaction.atomic():
        for index, message in enumerate(normalised):
            fields = {
                "role": message["role"],
                "parts": message["parts"],
                "name": str(message.get("name", ""))[:200],
                "format": message["format"],
                "digest": digests[index],
            }
            # The unique (run, position) settles retries racing each other: one stores it, the other reads it.
            row, new = RunMessage.objects.get_or_create(run=run, position=start + index, defaults=fields)
            if not new and row.digest != digests[index]:  # another upload got there between the check and now
                raise HttpError(409, _conflict(fields_sent[index], row, start)["errors"][0]["message"])
            created += new
            rows.append(row)
    body = {"run_id": run.id, "created": created, "duplicates": len(rows) - created, "messages": rows}
    return Status(201 if created else 200, body)


@router.get("/runs/{run_id}/messages", response={200: list[MessageOut], 404: ErrorOut}, summary="A run's conversation")
def list_messages(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """The run's uploaded conversation in its normalised shape, in order."""
    run = get_object_or_404(Run, id=run_id)
    return list(run.messages.order_by("position"))


# -- artifacts -------------------------------------------------------------------------------------------------------


def store_artifact(run: Run, item: ArtifactIn) -> Artifact:
    """Store an artifact under its name; the same content again is the stored row, new content replaces it. Over
    ``HARNESS_ARTIFACT_MAX_BYTES`` it is a 413 and nothing of the upload is stored."""
    data = item.content.encode("utf-8")
    limit = settings.HARNESS_ARTIFACT_MAX_BYTES
    if len(data) > limit:
        raise HttpError(
            413,
            f"The artifact {item.name!r} is {len(data)} bytes, over the limit of {limit} bytes "
            "(HARNESS_ARTIFACT_MAX_BYTES)",
        )
    fields = {"content": item.content, "kind": item.resolved_kind(), "size": len(data)}
    fields["digest"] = hashlib.sha256(data).hexdigest()
    row, created = Artifact.objects.get_or_create(run=run, name=item.name, defaults=fields)
    row.duplicate = not created and row.digest == fields["digest"] and row.kind == fields["kind"]
    if not created and not row.duplicate:
        for key, value in fields.items():
            setattr(row, key, value)
        row.save(update_fields=[*fields, "updated_at"])
    return row


@router.post(
    "/runs/{run_id}/artifacts",
    response={201: ArtifactOut, 207: BatchOut, **ERRORS},
    summary="Upload artifacts (generated pages, texts): one or a list",
    openapi_extra=json_body_doc(inline_schema(ArtifactIn), many=True),
)
def upload_artifacts(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """One ``{name, content, kind}`` answers 201 (``name`` may be a URL, ``kind`` ``html`` or ``text``, told from
    the name and content when not given); a list answers 207 with a result per item. An artifact over
    ``HARNESS_ARTIFACT_MAX_BYTES`` (2 MB) is a 413. The same name again keeps one artifact: the latest content."""
    run = get_object_or_404(Run, id=run_id)
    return store_items(request, ArtifactIn, lambda item: store_artifact(run, item), lambda row: row)


@router.get("/runs/{run_id}/artifacts", response={200: list[ArtifactOut], 404: ErrorOut}, summary="A run's artifacts")
def list_artifacts(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """The run's artifacts by name: their kind, size and the address of their content (not the content)."""
    run = get_object_or_404(Run, id=run_id)
    return list(run.artifacts.defer("content").order_by("name"))
