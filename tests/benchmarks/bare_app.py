"""The ceiling for the load benchmark: a plain ASGI app, no Django, that answers every request with the exact
status, headers and SSE frames our endpoint sent for the benchmark turn (captured by ``load.py``).

It reads the whole request body, as our endpoint does, then sends the response start and one body message per
SSE frame, so the ASGI server does the same work per request as for our app. Run from this directory::

    BENCH_CAPTURE=.work/capture.json ../../.venv/bin/uvicorn bare_app:app
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from pathlib import Path
from typing import Any

CAPTURE = Path(os.environ.get("BENCH_CAPTURE", Path(__file__).resolve().parent / ".work" / "capture.json"))


def split_frames(body: bytes) -> list[bytes]:
    """SSE events as our endpoint sends them: one frame per event, each ending with a blank line."""
    frames = [part + b"\n\n" for part in body.split(b"\n\n") if part]
    return frames or [b""]


_capture = json.loads(CAPTURE.read_text())
STATUS: int = _capture["status"]
HEADERS = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in _capture["headers"]]
PER_REQUEST = [name.encode("latin-1") for name in _capture.get("per_request_headers", [])]
FRAMES = split_frames(base64.b64decode(_capture["body"]))
LAST = len(FRAMES) - 1


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        more = message.get("more_body", False)
    # Our endpoint names the run and the request in headers; fresh ids here keep the per-request work comparable.
    headers = [*HEADERS, *((name, str(uuid.uuid4()).encode()) for name in PER_REQUEST)]
    await send({"type": "http.response.start", "status": STATUS, "headers": headers})
    for i, frame in enumerate(FRAMES):
        await send({"type": "http.response.body", "body": frame, "more_body": i != LAST})
