"""The AWS event-stream binary framing (``application/vnd.amazon.eventstream``), in which Amazon Bedrock streams
ConverseStream and InvokeModelWithResponseStream answers: written byte for byte, and read back with both its
checksums checked. Pure.

A message is a prelude (total length and headers length, two big-endian uint32, then the CRC32 of those eight
bytes), the headers (each: a one-byte name length, the name, a type byte, then for a string, type 7, a big-endian
uint16 length and the UTF-8 value), the payload, and the CRC32 of everything before it. Bedrock's events carry
``:event-type`` (the member of the stream's union: ``messageStart``, ``chunk``…), ``:content-type`` and
``:message-type`` (``event``, or ``exception`` with ``:exception-type`` naming the error).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

CONTENT_TYPE = b"application/vnd.amazon.eventstream"
_PRELUDE = 12  # total length, headers length, prelude CRC
_STRING = 7  # the header value type of a UTF-8 string


class FramingError(ValueError):
    """Bytes that are no event-stream message: a length or a checksum that does not hold, a header type not read."""


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode("utf-8"), value.encode("utf-8")
    return bytes((len(raw_name),)) + raw_name + bytes((_STRING,)) + struct.pack(">H", len(raw_value)) + raw_value


def message(headers: tuple[tuple[str, str], ...], payload: bytes) -> bytes:
    """One event-stream message: the headers (string values) and the payload, framed with both checksums."""
    encoded = b"".join(_header(name, value) for name, value in headers)
    total = _PRELUDE + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + encoded + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event(event_type: str, payload: bytes) -> bytes:
    """An ``event`` message of the stream's union member ``event_type`` with a JSON payload."""
    return message(
        ((":event-type", event_type), (":content-type", "application/json"), (":message-type", "event")), payload
    )


def exception(exception_type: str, payload: bytes) -> bytes:
    """An ``exception`` message: the stream's error member ``exception_type`` (``throttlingException``…), its JSON
    payload ``{"message": …}``; the client raises it where it reads the event."""
    headers = ((":exception-type", exception_type), (":content-type", "application/json"))
    return message((*headers, (":message-type", "exception")), payload)


def _headers(raw: bytes) -> dict[str, str]:
    found: dict[str, str] = {}
    at = 0
    while at < len(raw):
        size = raw[at]
        name = raw[at + 1 : at + 1 + size].decode("utf-8")
        at += 1 + size
        kind = raw[at] if at < len(raw) else -1
        if kind != _STRING:
            raise FramingError(f"header {name!r} has value type {kind}, not a string (7)")
        (length,) = struct.unpack(">H", raw[at + 1 : at + 3])
        found[name] = raw[at + 3 : at + 3 + length].decode("utf-8")
        at += 3 + length
    return found


def messages(body: bytes) -> Iterator[tuple[dict[str, str], bytes]]:
    """Each message of a body, as ``(headers, payload)``, its checksums checked; raises :class:`FramingError` at
    the first that does not hold (a body that ends inside a message ends the iteration there, as a client waits
    for the rest)."""
    at = 0
    while len(body) - at >= _PRELUDE:
        total, headers_length, prelude_crc = struct.unpack(">III", body[at : at + _PRELUDE])
        if zlib.crc32(body[at : at + 8]) != prelude_crc:
            raise FramingError(f"prelude checksum mismatch in the message at byte {at}")
        if total < _PRELUDE + headers_length + 4:
            raise FramingError(f"the message at byte {at} is shorter than its headers")
        if len(body) - at < total:
            return
        (message_crc,) = struct.unpack(">I", body[at + total - 4 : at + total])
        if zlib.crc32(body[at : at + total - 4]) != message_crc:
            raise FramingError(f"message checksum mismatch in the message at byte {at}")
        try:
            headers = _headers(body[at + _PRELUDE : at + _PRELUDE + headers_length])
        except (IndexError, struct.error, UnicodeDecodeError) as exc:
            raise FramingError(f"unreadable headers in the message at byte {at}: {exc}") from None
        yield headers, body[at + _PRELUDE + headers_length : at + total - 4]
        at += total


def is_eventstream(body: bytes) -> bool:
    """Whether a body opens with an event-stream message (a prelude whose checksum holds)."""
    if len(body) < _PRELUDE:
        return False
    (prelude_crc,) = struct.unpack(">I", body[8:_PRELUDE])
    return zlib.crc32(body[:8]) == prelude_crc
