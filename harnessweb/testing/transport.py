"""The in-process transport: an httpx (or httpx2, which today's ``openai`` and ``anthropic`` SDKs are built on)
transport whose requests the harness answers directly. The SDK reads the same status, headers and frames the
server would send, paced, held or cut as over the network: a cut stream raises the ``RemoteProtocolError`` a dropped
connection raises, a timeout longer than the client's read timeout raises its ``ReadTimeout``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from functools import cache
from types import ModuleType
from typing import Any

from harnessweb.engine.respond import Outgoing


def _parts(lib: ModuleType, harness: Any, request: Any) -> tuple[Outgoing, list[tuple[bytes, bytes]], Any]:
    url = request.url
    query = url.query.decode("latin-1") if isinstance(url.query, bytes) else str(url.query)
    headers = dict(request.headers.items())  # httpx's names lower-case, repeated ones joined
    try:
        return harness.exchange(request.method, url.path, query, headers, request.read())
    except (OSError, TimeoutError) as exc:
        # A configured network-like exception leaves as the transport's own error, which every SDK wraps as it
        # wraps a real one (openai.APIConnectionError, APITimeoutError...); the original stays its __cause__.
        error = lib.ReadTimeout if isinstance(exc, TimeoutError) else lib.ConnectError
        raise error(str(exc) or type(exc).__name__, request=request) from exc


def _read_timeout(request: Any) -> float | None:
    return (request.extensions.get("timeout") or {}).get("read")


def _held_too_long(out: Outgoing, request: Any) -> float | None:
    """The client's read timeout, when the held failure outlasts it (the client gives up first)."""
    if not out.hold_ms:
        return None
    limit = _read_timeout(request)
    return limit if limit is not None and out.hold_ms / 1000 > limit else None


def _paced(out: Outgoing) -> Iterator[tuple[float, bytes]]:
    """The frames that go out, each with the pause before it (seconds); a cut response stops at the cut."""
    frames = out.encoded.frames if out.drop_after is None else out.encoded.frames[: out.drop_after]
    for i, frame in enumerate(frames):
        yield (out.interval_ms / 1000 if i else out.stall_ms / 1000), frame


def _stalled_too_long(lib: ModuleType, pause: float, request: Any) -> float | None:
    """The client's read timeout, when a pause between frames outlasts it (the client gives up first)."""
    if not pause:  # most frames: none outlasts a timeout
        return None
    limit = _read_timeout(request)
    return limit if limit is not None and pause > limit else None


def _ended(lib: ModuleType, out: Outgoing, request: Any, call: Any) -> None:
    """After the last frame: the call's duration, and for a cut response the error a dropped connection raises."""
    if call is not None:
        call.finish()
    if out.drop_after is not None:
        raise lib.RemoteProtocolError("peer closed connection without sending complete message body", request=request)


@cache
def transports(lib: ModuleType) -> tuple[type, type]:
    """The sync and async transport classes for one HTTP library (``httpx`` or ``httpx2``)."""

    class Stream(lib.SyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, out: Outgoing, request: Any, call: Any) -> None:
            self.out, self.request, self.call = out, request, call

        def __iter__(self) -> Iterator[bytes]:
            for pause, frame in _paced(self.out):
                if (limit := _stalled_too_long(lib, pause, self.request)) is not None:
                    time.sleep(limit)
                    raise lib.ReadTimeout("timed out", request=self.request)
                if pause:
                    time.sleep(pause)
                yield frame
            _ended(lib, self.out, self.request, self.call)

    class AsyncStream(lib.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, out: Outgoing, request: Any, call: Any) -> None:
            self.out, self.request, self.call = out, request, call

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for pause, frame in _paced(self.out):
                if (limit := _stalled_too_long(lib, pause, self.request)) is not None:
                    await asyncio.sleep(limit)
                    raise lib.ReadTimeout("timed out", request=self.request)
                if pause:
                    await asyncio.sleep(pause)
                yield frame
            _ended(lib, self.out, self.request, self.call)

    class Transport(lib.BaseTransport):  # type: ignore[name-defined,misc]
        def __init__(self, harness: Any) -> None:
            self.harness = harness

        def handle_request(self, request: Any) -> Any:
            out, extra, call = _parts(lib, self.harness, request)
            limit = _held_too_long(out, request)
            if limit is not None:
                time.sleep(limit)
                raise lib.ReadTimeout("timed out", request=request)
            if out.hold_ms:
                time.sleep(out.hold_ms / 1000)
            headers = [*out.encoded.headers, *extra]
            return lib.Response(out.encoded.status, headers=headers, stream=Stream(out, request, call), request=request)

    class AsyncTransport(lib.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        def __init__(self, harness: Any) -> None:
            self.harness = harness

        async def handle_async_request(self, request: Any) -> Any:
            await request.aread()
            out, extra, call = _parts(lib, self.harness, request)
            limit = _held_too_long(out, request)
            if limit is not None:
                await asyncio.sleep(limit)
                raise lib.ReadTimeout("timed out", request=request)
            if out.hold_ms:
                await asyncio.sleep(out.hold_ms / 1000)
            headers = [*out.encoded.headers, *extra]
            stream = AsyncStream(out, request, call)
            return lib.Response(out.encoded.status, headers=headers, stream=stream, request=request)

    return Transport, AsyncTransport


def library(name: str) -> ModuleType:
    """``httpx2`` (what the openai and anthropic SDKs use) or ``httpx`` (google-genai, most other clients)."""
    import importlib

    return importlib.import_module(name)
