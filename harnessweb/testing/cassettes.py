"""Cassettes in-process: a folder of VCR cassettes (seed 003's ``tests/fixtures/vcr``; ``harness_cassettes = DIR`` or
``--harness-cassettes DIR``) that ``harness.use_cassette(name)`` and the ``X-Harness-Cassette`` header name by a
file's stem, replayed through the in-process transport byte for byte as the server replays a stored one: the same
rule (:func:`harnessweb.engine.vcr.outcome`), the same matching, the same errors in the protocol's format.

In-process the harness only plays back (the server records: ``X-Harness-Record`` with ``harness.serve()``), and a
request that names a cassette gets that cassette or an error naming it and where it was looked for, never the
engine's answer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from harnessweb.engine import respond, routes, vcr
from harnessweb.engine.cassette_format import CassetteFileError, read_cassette
from harnessweb.engine.exchange import ChatRequest
from harnessweb.engine.routes import CASSETTE_HEADER, RECORD_HEADER
from harnessweb.engine.wire.common import Encoded, WireError
from harnessweb.testing import calls as history

NO_FOLDER = (
    "no cassette folder is set: harness_cassettes = DIR in the pytest ini, --harness-cassettes DIR on the command "
    "line, or Options(cassettes=DIR)"
)


def where(folder: str) -> str:
    """Where a name was looked for, for the end of a 404 (or of the error ``use_cassette`` raises)."""
    return f"looked for its file in {folder} (harness_cassettes)" if folder else NO_FOLDER


def _file_of(folder: str, name: str) -> Path | None:
    """The cassette file a name means: ``<stem>.json`` in the folder (a name is a file's stem, with or without
    ``.json``; never a path, which could leave the folder)."""
    name = name.strip()
    if not folder or not name or Path(name).name != name or name in (".", ".."):
        return None
    path = Path(folder) / vcr.file_name(name)
    return path if path.is_file() else None


@lru_cache(maxsize=256)
def _read(path: str, changed: int, size: int) -> dict[str, Any] | str:
    # Read once per version of the file (its modification time and size are part of the key): a test session
    # replays the same cassettes many times.
    try:
        return read_cassette(Path(path).read_bytes(), path)
    except (CassetteFileError, OSError) as exc:
        return str(exc)


def load(folder: str, name: str) -> tuple[str, dict[str, Any]] | str | None:
    """The cassette a name means in the folder, as ``(file name, cassette)``; None when there is no such file; a
    message naming the file and its error when it is not a cassette."""
    path = _file_of(folder, name)
    if path is None:
        return None
    stat = os.stat(path)
    read = _read(str(path), stat.st_mtime_ns, stat.st_size)
    return read if isinstance(read, str) else (path.name, read)


def check(folder: str, name: str) -> str:
    """``use_cassette``'s name, checked at once: a message naming it and where it was looked for ("" when it is
    there and a cassette)."""
    stored = load(folder, name)
    if stored is None:
        return f"Cassette '{name}' is not stored: {where(folder)}"
    return stored if isinstance(stored, str) else ""


def named(harness: Any, headers: Mapping[str, str]) -> str:
    """The cassette a request names: its ``X-Harness-Record`` or ``X-Harness-Cassette`` header, else the test's
    ``use_cassette`` ("" for none)."""
    header = headers.get(RECORD_HEADER, "").strip() or headers.get(CASSETTE_HEADER, "").strip()
    return header or (harness.cassette or "")


def intercept(
    harness: Any, route: Any, method: str, path: str, headers: dict[str, str], body: bytes, request_id: str
) -> tuple[respond.Outgoing, history.Call | None] | None:
    """What a request naming a cassette (its ``X-Harness-Cassette`` / ``X-Harness-Record`` header, else the test's
    ``use_cassette``) gets in-process: the recorded response, or the error the server would send. None when it names
    none: the engine answers. A replayed call joins the test's history (``answered_by == "cassette"``) when its body
    is a conversation."""
    recording = headers.get(RECORD_HEADER, "").strip()
    header = RECORD_HEADER if recording else CASSETTE_HEADER if headers.get(CASSETTE_HEADER, "").strip() else None
    name = named(harness, headers)
    if not name:
        return None
    folder = harness.options.cassettes
    then = vcr.outcome(
        name, load(folder, name), method, path, body, mode="playback", strict=False, record=bool(recording),
        header=header, where=where(folder),
    )  # fmt: skip
    if then.action == "record":  # never "engine": that is only a scenario's own cassette (from_scenario)
        message = (
            f"Recording cassette '{name}' needs the harness server: in-process the harness only plays back; record "
            f"with harness.serve() (or make run), the {RECORD_HEADER} header and HARNESS_UPSTREAM_<PROVIDER>_URL set"
        )
        then = vcr.Outcome("refuse", name, status=400, message=message, param=RECORD_HEADER)
    out = _sent(then, route, request_id)
    return out, (_call(harness, route, path, body) if then.action == "replay" else None)


def _sent(then: vcr.Outcome, route: Any, request_id: str) -> respond.Outgoing:
    """A replay as the recording's status, headers and chunks (one frame each); a refusal in the protocol's format."""
    if then.replay is not None:
        return respond.Outgoing(Encoded(then.replay.status, then.replay.headers, then.replay.chunks))
    return respond.Outgoing(route.wire.encode_error(then.status, then.message, param=then.param, request_id=request_id))


def _call(harness: Any, route: Any, path: str, body: bytes) -> history.Call | None:
    if isinstance(route, routes.Refusal) or route.kind != "play":
        return None
    try:
        body_json, request = respond.read_request(route, body)
    except WireError:
        return None
    if not isinstance(request, ChatRequest):
        return None
    call = harness._begin(request, body_json, path)
    call.answered_by = "cassette"
    return call


def from_scenario(
    harness: Any, route: Any, call: history.Call, decision: Any, path: str, body: bytes, request_id: str
) -> respond.Outgoing | None:
    """A request whose scenario names a cassette (``"cassette"``), as the server answers it: replayed from the
    session's folder, or refused (a stored file that is no cassette), the call then answered by ``"cassette"`` as a
    header's replay is (a refusal on it as its error); a cassette not there, or with nothing recorded for this
    request, leaves the answer to the scenario (None)."""
    scenario = harness._catalog.by_id.get(decision.scenario_id)
    if scenario is None or not scenario.cassette:
        return None
    folder = harness.options.cassettes
    # A conversation the engine decided on is always a POST.
    then = vcr.outcome(
        scenario.cassette, load(folder, scenario.cassette), "POST", path, body, mode="playback", strict=False,
        fallback=True, where=where(folder),
    )  # fmt: skip
    if then.action not in ("replay", "refuse"):
        return None
    call.answered_by = "cassette"
    if then.action == "refuse":
        call.error = {"status": then.status, "kind": "rejected", "message": then.message}
    return _sent(then, route, request_id)
