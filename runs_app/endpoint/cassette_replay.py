"""Cassettes through the fake endpoint: a request that names one (``X-Harness-Cassette``, ``X-Harness-Record``, or a
scenario's ``cassette``) is replayed from a stored :class:`~runs_app.models.Cassette` byte for byte, or forwarded to
the real provider (``HARNESS_UPSTREAM_<PROVIDER>_URL``), streamed back chunk by chunk as it arrives and stored as a
cassette with its secrets redacted. ``HARNESS_VCR_MODE`` and ``HARNESS_VCR_STRICT`` decide which
(:func:`harnessweb.engine.vcr.plan`); the matching and the bytes are the pure :mod:`harnessweb.engine.vcr`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from typing import Any

import httpx2
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from harnessweb.engine import vcr
from harnessweb.engine.cassette_format import CassetteFileError, read_cassette
from harnessweb.engine.redaction import SECRET_HEADERS, redact_url
from harnessweb.engine.routes import CASSETTE_HEADER, RECORD_HEADER
from harnessweb.engine.schemas import Scenario
from runs_app.ci.cassettes import CassetteFile, cassette_file_name, leaked_secrets, parse_cassette_name
from runs_app.endpoint.recorder import get_recorder
from runs_app.lifecycle import Replied, next_status
from runs_app.models import Cassette, Provider

# The provider whose real API a protocol's requests are forwarded to: HARNESS_UPSTREAM_<PROVIDER>_URL.
UPSTREAM_OF = {"openai": "openai", "responses": "openai", "completions": "openai", "anthropic": "anthropic"}
UPSTREAM_OF["azure_completions"] = "azure"  # a deployment's legacy completions: the same Azure resource
UPSTREAM_OF["bedrock_claude"] = "bedrock"  # Claude through InvokeModel: the same Bedrock runtime as Converse
UPSTREAM_OF["vertex_claude"] = "vertex"  # Claude on Vertex AI: the same regional endpoint as Gemini's there
UPSTREAM_TIMEOUT = httpx2.Timeout(300.0, connect=10.0)

log = logging.getLogger(__name__)


def upstream_provider(protocol: str) -> str:
    return UPSTREAM_OF.get(protocol, protocol)


def named(headers: Mapping[str, str]) -> str:
    """The cassette a request's headers name (``X-Harness-Record``, else ``X-Harness-Cassette``; "" for none)."""
    return headers.get(RECORD_HEADER, "").strip() or headers.get(CASSETTE_HEADER, "").strip()


async def intercept(consumer: Any, body: bytes) -> bool:
    """Answer a request whose headers name a cassette (True), or leave it to the engine (False)."""
    consumer.raw_body = body  # a scenario that names a cassette may need to forward it, after parsing
    name = named(consumer.headers)
    if not name:
        return False
    return await answer(consumer, name, body, record=bool(consumer.headers.get(RECORD_HEADER, "").strip())) is not None


async def from_scenario(consumer: Any, scenario: Scenario | None) -> bool:
    """Answer a request whose scenario (the one it plays, from the catalog the engine decided with) names a
    cassette (True), or leave it to the scenario (False)."""
    if scenario is None or not scenario.cassette:
        return False
    status = await answer(consumer, scenario.cassette, getattr(consumer, "raw_body", b""), record=False, fallback=True)
    if status is None:
        return False
    run = consumer.run
    if run is not None:  # the run's request, match and validation are recorded already: its response too
        recorder = get_recorder()
        recorder.event(run, "response", consumer.turn, {"status": status, "cassette": scenario.cassette})
        change = next_status(run.status, Replied("", (), True)) if status < 400 else None
        if change is not None:
            finished = {"finished_at": timezone.now()} if change.finished else {}
            recorder.update(run, status=change.status, status_reason=change.reason, **finished)
    return True


# Where the server looks for a cassette a request names, and how one gets there: the end of its 404.
WHERE = (
    "the server has none of that name; upload it (POST /api/cassettes, manage.py load_cassettes DIR) or record it "
    f"({RECORD_HEADER} with the provider's HARNESS_UPSTREAM_<PROVIDER>_URL set)"
)


async def answer(consumer: Any, name: str, body: bytes, *, record: bool, fallback: bool = False) -> int | None:
    """Replay, record or refuse, as :func:`harnessweb.engine.vcr.outcome` says, and return the status sent; None
    lets the engine answer (only for a scenario's own cassette, ``fallback``)."""
    stored = await sync_to_async(load)(name)
    header = None if fallback else (RECORD_HEADER if record else CASSETTE_HEADER)
    method, path = consumer.scope["method"], consumer.scope["path"]
    then = vcr.outcome(
        name, stored, method, path, body, mode=settings.HARNESS_VCR_MODE, strict=settings.HARNESS_VCR_STRICT,
        record=record, header=header, fallback=fallback, where=WHERE,
    )  # fmt: skip
    if then.action == "engine":
        return None
    if then.action == "refuse":
        return await refuse(consumer, then.status, then.message, then.param)
    if then.action == "replay":
        assert then.replay is not None
        return await send_replay(consumer, then.replay)
    return await forward(consumer, then.name, body)


async def refuse(consumer: Any, status: int, message: str, param: str | None = None) -> int:
    await consumer.reply(consumer._error(status, message, param))
    return status


def load(name: str) -> tuple[str, dict[str, Any]] | str | None:
    """The newest stored cassette of that name (with or without ``.json``) as ``(name, cassette)``; None when none
    is stored; a message when the stored bytes are not a cassette."""
    row = Cassette.objects.newest(name)
    if row is None:
        return None
    try:
        return row.name, read_cassette(bytes(row.content), f"Cassette '{row.name}' (#{row.pk}) is stored but")
    except CassetteFileError as exc:
        return str(exc)[:400]


async def send_replay(consumer: Any, replay: vcr.Replay) -> int:
    """The recorded response as the provider sent it: its status and headers, then each recorded chunk as a frame."""
    await consumer.send_headers(status=replay.status, headers=list(replay.headers))
    for chunk in replay.chunks:
        await consumer.send_body(chunk, more_body=True)
    await consumer.send_body(b"", more_body=False)
    return replay.status


# -- recording -------------------------------------------------------------------------------------------------------


def forwarded_headers(scope_headers: list[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """The request's headers as sent to the provider: the harness's own and the connection's left out, and the
    body asked for unencoded, so the chunks recorded are the chunks sent on."""
    headers = []
    for raw_name, raw_value in scope_headers:
        name = raw_name.decode("latin-1").lower()
        if name.startswith("x-harness-") or name in vcr.CONNECTION_HEADERS or name in ("host", "accept-encoding"):
            continue
        headers.append((name, raw_value.decode("latin-1")))
    return [*headers, ("accept-encoding", "identity")]


async def forward(consumer: Any, name: str, body: bytes) -> int:
    """Send the request to the real provider, stream its answer back unchanged as it arrives, and store the exchange
    as a cassette (before the last frame, so a client that has read the answer can replay it at once)."""
    provider = upstream_provider(consumer.protocol.PROTOCOL)
    base = settings.HARNESS_UPSTREAM.get(provider, "")
    if not base:
        message = (
            f"Recording cassette '{name}' needs the provider's address: set HARNESS_UPSTREAM_{provider.upper()}_URL "
            "(its scheme and host, e.g. https://api.openai.com; the request's path is appended) where the harness runs"
        )
        return await refuse(consumer, 400, message, RECORD_HEADER)
    method, query = consumer.scope["method"], consumer.scope.get("query_string", b"").decode("latin-1")
    url = base.rstrip("/") + consumer.scope["path"] + (f"?{query}" if query else "")
    headers = forwarded_headers(consumer.scope["headers"])
    started, chunks = False, []
    try:
        async with (
            httpx2.AsyncClient(timeout=UPSTREAM_TIMEOUT) as client,
            client.stream(method, url, headers=headers, content=body) as response,
        ):
            received = response.headers.multi_items()
            await consumer.send_headers(status=response.status_code, headers=list(vcr.sendable_headers(received)))
            started = True
            async for chunk in response.aiter_bytes():
                if chunk:
                    chunks.append(chunk)
                    await consumer.send_body(chunk, more_body=True)
    except httpx2.HTTPError as exc:
        if started:  # the provider broke off: the client gets what came, nothing is stored
            await consumer.send_body(b"", more_body=False)
            return response.status_code
        message = f"Recording cassette '{name}': the provider at {redact_url(url)} could not be reached ({exc})"
        return await refuse(consumer, 502, message)
    interaction = {
        "request": vcr.recorded_request(method, url, headers, body, SECRET_HEADERS),
        "response": vcr.recorded_response(response.status_code, received, chunks, SECRET_HEADERS),
    }
    try:
        await sync_to_async(store)(name, interaction, provider)
    except Exception:  # the client still gets the end of what the provider sent
        log.exception("Recording cassette %r: could not store the interaction", name)
    finally:
        await consumer.send_body(b"", more_body=False)
    return response.status_code


def store(name: str, interaction: dict[str, Any], provider: str) -> Cassette:
    """Add a recorded interaction to the cassette of that name, stored as a new row (the newest of a name is the one
    replayed; earlier ones stay as they were uploaded or recorded). Recordings of one name take turns (SQLite's
    write lock, a PostgreSQL advisory lock), so that none loses another's interaction."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_advisory_xact_lock(%s)", [int(hashlib.sha256(name.encode()).hexdigest()[:15], 16)]
                )
        return _stored(name, interaction, provider)


def _stored(name: str, interaction: dict[str, Any], provider: str) -> Cassette:
    latest = Cassette.objects.newest(name)
    previous = json.loads(bytes(latest.content)) if latest is not None else None
    file_name = latest.name if latest is not None else cassette_file_name(vcr.file_name(name))[:300]
    cassette = vcr.with_interaction(previous, file_name, interaction, timezone.now().isoformat(timespec="milliseconds"))
    leaks = list(leaked_secrets(CassetteFile.model_validate(cassette)))
    assert not leaks, leaks  # recorded_request / recorded_response redact every secret header
    data = vcr.dump(cassette)
    parsed = parse_cassette_name(file_name, Provider.objects.values_list("name", flat=True))
    cassette_provider, scenario = parsed or (provider, file_name.removesuffix(".json"))
    fields = {"name": file_name, "provider": cassette_provider[:100], "scenario": scenario[:200]}
    digest = hashlib.sha256(data).hexdigest()
    row, _ = Cassette.objects.get_or_create(digest=digest, defaults={**fields, "content": data, "size": len(data)})
    return row
