"""The Files and Batch APIs' rows read and written (sync: the consumer calls these through ``sync_to_async``): files
saved, listed by cursor and deleted; batches created, listed, claimed by the one reader that answers their lines,
given their answers (OpenAI's output and error files written then), cancelled and deleted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import close_old_connections, transaction
from django.db.models import Q, QuerySet

from harnessweb.engine.batch_objects import Answer, output_files
from harnessweb.engine.batches import Clock, Line, Upload, new_id
from runs_app.batches.models import Batch, StoredFile

CLAIM_STALE_S = 120  # a claim this old whose answers never came (its process died) is taken again


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def clock(row: Batch) -> Clock:
    """The batch's clock: its state at any moment follows from it."""
    cancelled = row.cancelled_at.timestamp() if row.cancelled_at else None
    return Clock(row.created_at.timestamp(), row.step_s, row.ending, cancelled)


def lines(row: Batch) -> list[Line]:
    return [Line.from_data(item) for item in row.lines]


def answers(row: Batch) -> list[Answer] | None:
    return None if row.answers is None else [Answer.from_data(item) for item in row.answers]


# -- files ----------------------------------------------------------------------------------------------------------


def save_file(upload: Upload, now: float) -> StoredFile:
    close_old_connections()
    return _saved(upload, now)


def _saved(upload: Upload, now: float) -> StoredFile:
    expires = _at(now + upload.expires_after_s) if upload.expires_after_s else None
    return StoredFile.objects.create(
        id=new_id("file-"), purpose=upload.purpose, filename=upload.filename, size=len(upload.content),
        content=upload.content, created_at=_at(now), expires_at=expires,
    )  # fmt: skip


def get_file(file_id: str, content: bool = False) -> StoredFile | None:
    close_old_connections()
    rows = StoredFile.objects.all() if content else StoredFile.objects.defer("content")
    return rows.filter(id=file_id).first()


def delete_file(file_id: str) -> bool:
    close_old_connections()
    return StoredFile.objects.filter(id=file_id).delete()[0] > 0


def page(
    rows: QuerySet[Any], limit: int, after: str = "", before: str = "", ascending: bool = False
) -> tuple[list[Any], bool]:
    """One page of rows by creation (newest first unless ``ascending``), after the row ``after`` (or, Anthropic's
    ``before_id``, before the row ``before``), and whether more follow. Raises LookupError for a cursor that names
    no row."""
    close_old_connections()
    order = ["created_at", "id"] if ascending else ["-created_at", "-id"]
    cursor_id = after or before
    if cursor_id:
        cursor = rows.model.objects.filter(id=cursor_id).values("created_at", "id").first()
        if cursor is None:
            raise LookupError(cursor_id)
        c, i = cursor["created_at"], cursor["id"]
        later = Q(created_at__gt=c) | Q(created_at=c, id__gt=i)
        earlier = Q(created_at__lt=c) | Q(created_at=c, id__lt=i)
        forward = (later if ascending else earlier) if after else (earlier if ascending else later)
        rows = rows.filter(forward)
    if before:  # the page just before the cursor, read backwards then put in the list's order
        reverse = [f"-{name}" if not name.startswith("-") else name[1:] for name in order]
        found = list(rows.order_by(*reverse)[: limit + 1])
        return list(reversed(found[:limit])), len(found) > limit
    found = list(rows.order_by(*order)[: limit + 1])
    return found[:limit], len(found) > limit


def files(purpose: str) -> QuerySet[StoredFile]:
    rows = StoredFile.objects.defer("content")
    return rows.filter(purpose=purpose) if purpose else rows


# -- batches --------------------------------------------------------------------------------------------------------


def create_batch(provider: str, now: float, **fields: Any) -> Batch:
    close_old_connections()
    prefix = "msgbatch_" if provider == "anthropic" else "batch_"
    return Batch.objects.create(id=new_id(prefix), provider=provider, created_at=_at(now), **fields)


def get_batch(batch_id: str, provider: str) -> Batch | None:
    close_old_connections()
    return Batch.objects.filter(id=batch_id, provider=provider).first()


def batches(provider: str) -> QuerySet[Batch]:
    return Batch.objects.filter(provider=provider)


def claim(batch_id: str) -> bool:
    """Whether this reader answers the batch's lines: one conditional UPDATE, so of readers in any number of
    processes exactly one does (again only when a claim's answers never came)."""
    close_old_connections()
    now = datetime.now(UTC)
    free = Q(claimed_at__isnull=True) | Q(claimed_at__lt=now - timedelta(seconds=CLAIM_STALE_S))
    return Batch.objects.filter(free, id=batch_id, answers__isnull=True).update(claimed_at=now) == 1


def store_answers(batch_id: str, got: list[Answer], now: float) -> Batch:
    """The lines' answers kept on the batch; an OpenAI batch's output and error files written beside them."""
    close_old_connections()
    with transaction.atomic():
        row = Batch.objects.select_for_update().get(id=batch_id)
        row.answers = [answer.as_data() for answer in got]
        if row.provider == "openai":
            output, errors = output_files(row.id, got)
            for content, purpose, name in ((output, "batch_output", "output"), (errors, "batch_output", "error")):
                if content:
                    upload = Upload(f"{row.id}_{name}.jsonl", content, purpose)
                    setattr(row, f"{name}_file_id", _saved(upload, now).id)
        row.save(update_fields=["answers", "output_file_id", "error_file_id"])
    return row


def cancel(batch_id: str, now: float) -> None:
    close_old_connections()
    Batch.objects.filter(id=batch_id, cancelled_at__isnull=True).update(cancelled_at=_at(now))


def delete_batch(batch_id: str) -> None:
    close_old_connections()
    Batch.objects.filter(id=batch_id).delete()
