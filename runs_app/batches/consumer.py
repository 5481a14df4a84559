"""The Files and Batch APIs' paths on the fake endpoint: OpenAI's ``/v1/files`` and ``/v1/batches``, Anthropic's
``/v1/messages/batches``. Thin: the body read (413 past ``HARNESS_MAX_BODY_BYTES``), the route and its key check as
every fake endpoint takes them (it is a :class:`FakeEndpointConsumer`), the rows through ``store.py``, the objects
from ``harnessweb/engine/batch_objects.py``.

A batch's state follows from its clock; the read that first finds it past ``validating`` answers its lines
(``play.py``) and keeps their answers, so no thread runs in the background and every worker shows the same state.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import orjson
from asgiref.sync import sync_to_async
from django.conf import settings

from harnessweb.engine import batch_objects as objects
from harnessweb.engine import batches, keys, routes
from harnessweb.engine.batches import Phase
from harnessweb.engine.redaction import redact_headers
from harnessweb.engine.wire.common import JSON_HEADERS, Encoded, WireError
from runs_app.batches import store
from runs_app.batches.models import Batch
from runs_app.batches.play import answer_lines
from runs_app.endpoint import current
from runs_app.endpoint.consumer import FakeEndpointConsumer
from scenarios_app.catalog import cached_catalog, current_catalog

db = sync_to_async


def _json(obj: Any, status: int = 200) -> Encoded:
    return Encoded(status, JSON_HEADERS, (orjson.dumps(obj),))


def _body(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise WireError(f"The request body is not valid JSON: {exc}") from None


class BatchesConsumer(FakeEndpointConsumer):
    """Files, OpenAI's batches and Anthropic's Message Batches."""

    async def handle(self, body: bytes) -> None:
        self.query = self.scope.get("query_string", b"").decode("latin-1")
        self.query_key = ""
        method = self.scope["method"]
        route = routes.resolve(method, self.scope["path"], self.headers, self.query)
        self.protocol = route.wire
        if isinstance(route, routes.Refusal):
            return await self.reply(self._error(route.status, route.message))
        self.route = route
        if (refused := await self.key_refusal()) is not None:
            return await self.reply(refused.encoded)
        action = ACTIONS[(route.kind, method, route.wire.PROTOCOL)]
        try:
            await self.reply(await action(self, route.param, body))
        except WireError as exc:
            await self.reply(self._error(exc.status, exc.message, exc.param))

    # -- helpers -------------------------------------------------------------------------------------------------

    def params(self) -> dict[str, str]:
        return {name: values[-1] for name, values in parse_qs(self.query).items()}

    def limit(self, default: int, most: int) -> int:
        raw = self.params().get("limit")
        if raw is None:
            return default
        if not raw.isdigit() or not 1 <= int(raw) <= most:
            raise WireError(f"Invalid value for 'limit': '{raw[:20]}'. Use 1 to {most}.", "limit")
        return int(raw)

    async def page(self, rows: Any, limit: int, after: str, before: str = "", ascending: bool = False) -> Any:
        try:
            return await db(store.page)(rows, limit, after, before, ascending)
        except LookupError:
            name = "before_id" if before else ("after_id" if self.protocol.PROTOCOL == "anthropic" else "after")
            raise WireError(
                f"Invalid value for '{name}': no object has the id '{(after or before)[:80]}'.", name
            ) from None

    def context(self) -> dict[str, Any]:
        """What the lines are played with: the headers (redacted; never the key), where the key came and its
        fingerprint, and the run the request names (else the session run)."""
        headers = {k: v for k, v in self.headers.items() if k not in ("content-length", "content-type")}
        key = keys.presented(self.headers)
        run = current.run_of(keys.run_named(self.headers))
        return {"headers": redact_headers(headers), "key": vars(key) if key else None, "run": str(run) if run else ""}

    async def outcome(self, lines: list[batches.Line]) -> tuple[str, str, int]:
        """How the batch ends (its scenario's ``batch``, else completed), the message and the lines answered."""
        catalog = cached_catalog() or await db(current_catalog)()
        scripted = batches.scripted_outcome(catalog, lines, self.headers)
        if scripted is None:
            return "completed", "", 0
        return scripted.status, scripted.message or "", scripted.answered

    async def advanced(self, row: Batch) -> tuple[Batch, Phase]:
        """The batch at this moment, its lines answered when it has reached ``in_progress`` and nobody has yet."""
        now = time.time()
        phase = batches.phase(store.clock(row), now, answered=row.answers is not None)
        if phase.answers and row.answers is None and await db(store.claim)(row.id):
            answered = row.answered_before_expiry if row.ending == "expired" else None
            got = await answer_lines(row.id, store.lines(row), row.context, answered)
            row = await db(store.store_answers)(row.id, got, time.time())
            phase = batches.phase(store.clock(row), now)
        return row, phase

    async def found(self, batch_id: str) -> Batch:
        row = await db(store.get_batch)(batch_id, self.protocol.PROTOCOL)
        if row is None:
            raise WireError(f"No batch found with id '{batch_id}'.", "batch_id", status=404)
        return row

    # -- files ---------------------------------------------------------------------------------------------------

    async def upload(self, _: str, body: bytes) -> Encoded:
        upload = batches.read_upload(self.headers.get("content-type", ""), body)
        row = await db(store.save_file)(upload, time.time())
        return _json(_file(row))

    async def list_files(self, _: str, body: bytes) -> Encoded:
        params = self.params()
        order = params.get("order", "desc")
        if order not in ("asc", "desc"):
            raise WireError(f"Invalid value for 'order': '{order[:20]}'. Use 'asc' or 'desc'.", "order")
        rows = store.files(params.get("purpose", ""))
        found, more = await self.page(rows, self.limit(10_000, 10_000), params.get("after", ""), "", order == "asc")
        return _json(objects.page([_file(row) for row in found], more))

    async def file(self, file_id: str, body: bytes) -> Encoded:
        row = await db(store.get_file)(file_id)
        if row is None:
            raise WireError(f"No such File object: {file_id}", "id", status=404)
        return _json(_file(row))

    async def delete_file(self, file_id: str, body: bytes) -> Encoded:
        if not await db(store.delete_file)(file_id):
            raise WireError(f"No such File object: {file_id}", "id", status=404)
        return _json(objects.deleted_file(file_id))

    async def file_content(self, file_id: str, body: bytes) -> Encoded:
        row = await db(store.get_file)(file_id, True)
        if row is None:
            raise WireError(f"No such File object: {file_id}", "id", status=404)
        disposition = f'attachment; filename="{row.filename}"'.encode("latin-1", "replace")
        headers = ((b"content-type", b"application/octet-stream"), (b"content-disposition", disposition))
        return Encoded(200, headers, (bytes(row.content),))

    # -- OpenAI's batches ----------------------------------------------------------------------------------------

    async def create_batch(self, _: str, body: bytes) -> Encoded:
        payload = batches.required_fields(_body(body), ("input_file_id", "endpoint", "completion_window"))
        endpoint, window = payload["endpoint"], payload["completion_window"]
        if endpoint not in batches.OPENAI_ENDPOINTS:
            served = ", ".join(batches.OPENAI_ENDPOINTS)
            raise WireError(f"Invalid value for 'endpoint': '{str(endpoint)[:80]}'. Batches here take {served}.",
                            "endpoint")  # fmt: skip
        if window != "24h":
            raise WireError(f"Invalid value for 'completion_window': '{str(window)[:20]}'. Use '24h'.",
                            "completion_window")  # fmt: skip
        metadata = batches.check_metadata(payload.get("metadata"))
        step = batches.step_of(self.headers, settings.HARNESS_BATCH_STEP_S)
        source = await db(store.get_file)(str(payload["input_file_id"]), True)
        if source is None:
            raise WireError(f"No such File object: {payload['input_file_id']}", "input_file_id", status=404)
        if source.purpose != "batch":
            message = f"The input file {source.id} has purpose '{source.purpose}': a batch's input file has 'batch'."
            raise WireError(message, "input_file_id")
        lines, errors = batches.parse_lines(bytes(source.content), endpoint)
        ending, message, answered = await self.outcome(lines) if not errors else ("failed", "", 0)
        if ending == "failed" and not errors:
            errors = [batches.LineError("batch_failed", message or objects.FAILED_MESSAGE)]
        row = await db(store.create_batch)(
            "openai", time.time(), endpoint=endpoint, input_file_id=source.id, completion_window=window,
            metadata=metadata, step_s=step, ending=ending, ending_message=message, answered_before_expiry=answered,
            errors=[e.as_data() for e in errors[:1000]], lines=[line.as_data() for line in lines],
            context=self.context(),
        )  # fmt: skip
        return _json(_batch(row, batches.created(store.clock(row))))

    async def list_batches(self, _: str, body: bytes) -> Encoded:
        rows, more = await self.page(store.batches("openai"), self.limit(20, 100), self.params().get("after", ""))
        shown = [_batch(*await self.advanced(row)) for row in rows]
        return _json(objects.page(shown, more))

    async def batch(self, batch_id: str, body: bytes) -> Encoded:
        return _json(_batch(*await self.advanced(await self.found(batch_id))))

    async def cancel_batch(self, batch_id: str, body: bytes) -> Encoded:
        row, phase = await self.advanced(await self.found(batch_id))
        if not batches.cancellable(phase.status):
            raise WireError(f"Cannot cancel a batch with status '{phase.status}'.", "batch_id")
        await db(store.cancel)(row.id, time.time())
        return _json(_batch(*await self.advanced(await self.found(batch_id))))

    # -- Anthropic's Message Batches -----------------------------------------------------------------------------

    async def create_message_batch(self, _: str, body: bytes) -> Encoded:
        lines = batches.parse_message_requests(_body(body))
        step = batches.step_of(self.headers, settings.HARNESS_BATCH_STEP_S)
        ending, message, answered = await self.outcome(lines)
        row = await db(store.create_batch)(
            "anthropic", time.time(), endpoint=batches.ANTHROPIC_PATH, step_s=step, ending=ending,
            ending_message=message, answered_before_expiry=answered, lines=[line.as_data() for line in lines],
            context=self.context(),
        )  # fmt: skip
        return _json(self.message_batch(row, batches.created(store.clock(row))))

    def message_batch(self, row: Batch, phase: Phase) -> dict[str, Any]:
        host = self.headers.get("host", "localhost")
        url = f"{self.scope.get('scheme', 'http')}://{host}/v1/messages/batches/{row.id}/results"
        created = row.created_at.timestamp()
        return objects.message_batch(row.id, created, phase, store.lines(row), store.answers(row), url)

    async def list_message_batches(self, _: str, body: bytes) -> Encoded:
        params = self.params()
        after, before = params.get("after_id", ""), params.get("before_id", "")
        rows, more = await self.page(store.batches("anthropic"), self.limit(20, 1000), after, before)
        return _json(objects.message_page([self.message_batch(*await self.advanced(row)) for row in rows], more))

    async def message_batch_of(self, batch_id: str, body: bytes) -> Encoded:
        return _json(self.message_batch(*await self.advanced(await self.found(batch_id))))

    async def cancel_message_batch(self, batch_id: str, body: bytes) -> Encoded:
        row, phase = await self.advanced(await self.found(batch_id))
        if batches.cancellable(phase.status):
            await db(store.cancel)(row.id, time.time())
            row, phase = await self.advanced(await self.found(batch_id))
        return _json(self.message_batch(row, phase))  # (a batch that ended, or is canceling, stays as it is)

    async def message_results(self, batch_id: str, body: bytes) -> Encoded:
        row, phase = await self.advanced(await self.found(batch_id))
        if not phase.ended:
            raise WireError(f"Message batch {batch_id} has not ended yet: its results come once processing ends.")
        found = objects.results(phase, store.lines(row), store.answers(row), row.ending_message)
        return Encoded(200, ((b"content-type", b"application/x-jsonl"),), (objects.jsonl(found),))

    async def delete_message_batch(self, batch_id: str, body: bytes) -> Encoded:
        row, phase = await self.advanced(await self.found(batch_id))
        if not phase.ended:
            raise WireError(f"Message batch {batch_id} is still processing: cancel it, then delete it once it ended.")
        await db(store.delete_batch)(row.id)
        return _json(objects.deleted_message_batch(row.id))


def _file(row: Any) -> dict[str, Any]:
    expires = row.expires_at.timestamp() if row.expires_at else None
    return objects.file_object(row.id, row.filename, row.purpose, row.size, row.created_at.timestamp(), expires)


def _batch(row: Batch, phase: Phase) -> dict[str, Any]:
    lines = store.lines(row)
    fields = objects.BatchRow(
        row.id, row.endpoint, row.input_file_id, row.completion_window, row.created_at.timestamp(), row.metadata,
        len(lines), tuple(row.errors), batches.batch_model(lines), row.output_file_id or None,
        row.error_file_id or None,
    )  # fmt: skip
    return objects.batch_object(fields, phase, store.answers(row))


Action = Callable[[BatchesConsumer, str, bytes], Awaitable[Encoded]]
# (route kind, method, protocol) → what answers it; the routes are in harnessweb/engine/routes.py's table.
ACTIONS: dict[tuple[str, str, str], Action] = {
    ("files", "POST", "openai"): BatchesConsumer.upload,
    ("files", "GET", "openai"): BatchesConsumer.list_files,
    ("file", "GET", "openai"): BatchesConsumer.file,
    ("file", "DELETE", "openai"): BatchesConsumer.delete_file,
    ("file_content", "GET", "openai"): BatchesConsumer.file_content,
    ("batches", "POST", "openai"): BatchesConsumer.create_batch,
    ("batches", "GET", "openai"): BatchesConsumer.list_batches,
    ("batch", "GET", "openai"): BatchesConsumer.batch,
    ("batch_cancel", "POST", "openai"): BatchesConsumer.cancel_batch,
    ("batches", "POST", "anthropic"): BatchesConsumer.create_message_batch,
    ("batches", "GET", "anthropic"): BatchesConsumer.list_message_batches,
    ("batch", "GET", "anthropic"): BatchesConsumer.message_batch_of,
    ("batch", "DELETE", "anthropic"): BatchesConsumer.delete_message_batch,
    ("batch_cancel", "POST", "anthropic"): BatchesConsumer.cancel_message_batch,
    ("batch_results", "GET", "anthropic"): BatchesConsumer.message_results,
}
