"""What the responses being sent right now have streamed so far, for the run page's watchers.

The endpoint hands over what a client has just received of a response (:func:`send`, coalesced as it goes out). Each
piece gets a number within its attempt, from 1, and the message to the run's group (``run.chunk``) names the attempt
and the number of its last piece (``seq``). A run page's socket joins the group first, then reads :func:`snapshot`:
every piece is in the snapshot, or in a message sent after the socket joined, or in both, and the socket drops what
it already has by its number. So a page opened in the middle of a stream shows it from its first piece, then goes on
live, with no gap and nothing twice (``runs_app/live/consumers.py``).

An attempt is kept from its first piece until the request ends (:func:`end`, also when the client hung up or the request
failed): by then a whole answer's events are committed and the page reads it from the database. Kept in this process
only: with several workers behind Redis, a page whose socket reaches another worker than the response's sees what
arrives after it joined, as before.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from harnessweb.engine.redaction import redact_text
from harnessweb.engine.wire.common import Piece
from runs_app.endpoint.recorder import RunState, broadcast, group_name, watched


class Sending(Protocol):
    """What :func:`send` reads of the endpoint's consumer (one per request): its run, turn and timing so far."""

    run: RunState | None
    turn: int | None
    request_id: str
    started: float  # time.perf_counter() when the request came
    first_byte: float | None
    frame_ms: list[int]  # when each frame went out, ms after the first byte


@dataclass
class Attempt:
    sender: Sending
    run_id: str
    turn: int | None
    pieces: list[Piece] = field(default_factory=list)


_attempts: dict[str, Attempt] = {}  # by request id: the responses of this process being sent now


def payload(pieces: list[Piece]) -> list[list[Any]]:
    """Pieces as the run page's socket reads them: ``[block, kind, text]``, secrets redacted."""
    return [[p.block, p.kind, redact_text(p.text)] for p in pieces]


async def send(sender: Sending, pieces: list[Piece]) -> None:
    """Keep what the client has just received and send it to the run's watchers, numbered."""
    run = sender.run
    if not pieces or run is None:
        return
    attempt = _attempts.get(sender.request_id)
    if attempt is None:
        attempt = _attempts[sender.request_id] = Attempt(sender, str(run.id), sender.turn)
    # Kept before it is sent, on the same loop: a socket that reads the snapshot after joining the group has
    # every piece either there or in a message still to come.
    attempt.pieces.extend(pieces)
    group = group_name(run.id)
    if watched(group):
        message = {
            "type": "run.chunk",
            "run": attempt.run_id,
            "turn": sender.turn,
            "attempt": sender.request_id,
            "seq": len(attempt.pieces),
            "pieces": payload(pieces),
        }
        await broadcast(group, message)


def end(request_id: str) -> None:
    """The request is over (its events committed, or the client gone): its pieces are no longer kept."""
    _attempts.pop(request_id, None)


def streaming(run_id: str) -> bool:
    """Whether a response of the run is being sent by this process now."""
    return any(attempt.run_id == run_id for attempt in list(_attempts.values()))


def snapshot(run_id: str, *, pieces: bool = True) -> list[dict[str, Any]]:
    """What each response of the run being sent now has streamed so far: its turn, attempt, ``seq`` (the number of
    its last piece), its pieces (unless ``pieces`` is false: the timing alone) and timing (``ttfb_ms``,
    ``frame_ms``, ``elapsed_ms`` since its request came)."""
    now = time.perf_counter()
    found = []
    for key, attempt in list(_attempts.items()):  # a copy: a page's thread may read while the loop sends
        if attempt.run_id != run_id:
            continue
        sender, kept = attempt.sender, list(attempt.pieces)
        first = sender.first_byte
        found.append(
            {
                "turn": attempt.turn,
                "attempt": key,
                "seq": len(kept),
                "pieces": payload(kept) if pieces else [],
                "ttfb_ms": round((first - sender.started) * 1000, 3) if first is not None else None,
                "frame_ms": list(sender.frame_ms),
                "elapsed_ms": round((now - sender.started) * 1000, 3),
            }
        )
    return found
