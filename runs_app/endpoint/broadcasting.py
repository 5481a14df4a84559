"""What the recorder tells the run pages (through the channel layer): each run's group and the runs list's, the
events as their sockets read them, and sending only where someone may be listening."""

from __future__ import annotations

import contextlib
import functools
import uuid
from typing import Any

from channels.layers import InMemoryChannelLayer, get_channel_layer

from runs_app.endpoint.writes import PendingEvent
from runs_app.models import RunEvent

RUNS_GROUP = "runs"


@functools.lru_cache(maxsize=4096)
def group_name(run_id: uuid.UUID | str) -> str:
    return f"run-{run_id}"


def watched(group: str) -> bool:
    """Whether a message to a group may reach anyone: the in-memory layer knows its groups (and sweeps all its
    channels on every send, so the groups nobody watches are skipped, their messages not even built); another
    layer is always sent to."""
    layer = get_channel_layer()
    return layer is not None and (not isinstance(layer, InMemoryChannelLayer) or group in layer.groups)


async def broadcast(group: str, message: dict[str, Any]) -> None:
    if not watched(group):
        return
    with contextlib.suppress(Exception):  # a full or unreachable layer must not stop recording or streaming
        await get_channel_layer().group_send(group, message)


def event_payload(event: PendingEvent | RunEvent) -> dict[str, Any]:
    return {
        "run": str(event.run_id),
        "seq": event.seq,
        "timestamp": event.timestamp.isoformat(),
        "kind": event.kind,
        "turn": event.turn,
        "data": event.data,
    }
