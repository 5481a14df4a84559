"""The stream router: seed 003's StreamSummary of a run's responses and of a stored cassette's interactions, and a
run exported as a VCR cassette (``GET /api/runs/{id}/stream-summary``, ``/api/runs/{id}/cassette``,
``/api/cassettes/{id}/stream-summary``)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils.http import content_disposition_header
from ninja import Router
from ninja.errors import HttpError

from harnessweb.apikit import ErrorOut, RowId
from harnessweb.judging.transcript import SOCKET_WIRES
from runs_app.ci.conversion import ConversionError, load_cassette
from runs_app.ci.recordings import cassette_summaries
from runs_app.ci.run_streams import cassette_file_name, run_cassette, run_summaries, socket_refusal
from runs_app.models import Cassette, Run

router = Router()
ERRORS: dict[int, Any] = {404: ErrorOut, 422: ErrorOut}


@router.get(
    "/runs/{run_id}/stream-summary",
    response={200: dict[str, Any], **ERRORS},
    summary="A run's responses as stream summaries",
)
def run_stream_summary(request: HttpRequest, run_id: uuid.UUID) -> Any:
    """One StreamSummary per response the run served (timeline, event_count, has_start, has_done, has_error_event,
    text, thinking, tool_calls, text_deltas, stop_reason, stream_error…), from the response's bytes as the engine
    encodes them again from the recorded events; ``skipped`` names the requests whose bytes cannot be made again."""
    return run_summaries(get_object_or_404(Run, pk=run_id))


@router.get(
    "/runs/{run_id}/cassette",
    response={200: dict[str, Any], **ERRORS},
    summary="Export a run as a VCR cassette",
)
def export_run_cassette(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """The run's requests and responses as a cassette in seed 003's format (secret headers redacted), as a JSON
    attachment; its interactions' summaries are the run's. A socket session's run (Realtime's, Live's) is refused
    with a 422 saying why: its responses are no HTTP exchanges."""
    run = get_object_or_404(Run, pk=run_id)
    cassette = run_cassette(run)
    if cassette is None and run.protocol in SOCKET_WIRES:
        raise HttpError(422, f"Run {run_id} is no cassette: {socket_refusal(run.protocol, run_id)}.")
    if cassette is None:
        raise HttpError(404, f"Run {run_id} served no response that can be exported.")
    return HttpResponse(
        json.dumps(cassette, indent=2, ensure_ascii=False).encode("utf-8"),
        content_type="application/json",
        headers={"Content-Disposition": content_disposition_header(True, cassette_file_name(run.id))},
    )


@router.get(
    "/cassettes/{cassette_id}/stream-summary",
    response={200: dict[str, Any], **ERRORS},
    summary="A cassette's interactions as stream summaries",
)
def cassette_stream_summary(request: HttpRequest, cassette_id: RowId) -> Any:
    """One StreamSummary per recorded interaction, from its response's bytes."""
    row = get_object_or_404(Cassette, pk=cassette_id)
    try:
        data = load_cassette(bytes(row.content), row.name)
    except ConversionError as exc:
        raise HttpError(422, str(exc)) from None
    summaries = [summary.model_dump() for summary in cassette_summaries(data)]
    return {"cassette_id": row.pk, "name": row.name, "interactions": summaries}
