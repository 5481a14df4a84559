"""A small Server-Sent Events parser that reads a stream the way real clients do: by lines, not by network chunk.

Chunks may split an event (or a line, or a UTF-8 sequence) anywhere, or hold several events. Lines end in
``\\n``, ``\\r\\n`` or ``\\r``; ``event:`` names the event, ``data:`` lines accumulate (joined by ``\\n``), a
leading ``:`` marks a comment, a single space after the colon is dropped, and a blank line dispatches the event
(an event without data is not dispatched). An unterminated event at the end of the stream is dropped.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable


class SSEParser:
    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._buffer = ""
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes | str) -> list[tuple[str | None, str]]:
        """Take one chunk; return the events it completed, in order."""
        text = self._decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        self._buffer += text
        events: list[tuple[str | None, str]] = []
        while True:
            cut = self._line_end()
            if cut is None:
                break
            line, end = cut
            self._buffer = self._buffer[end:]
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[tuple[str | None, str]]:
        """End of stream: flush the decoder; a final event without its blank line is discarded."""
        self._buffer += self._decoder.decode(b"", final=True)
        events = self.feed("")
        if self._buffer.endswith("\r"):
            events += self.feed("\n")
        self._buffer, self._event, self._data = "", None, []
        return events

    def _line_end(self) -> tuple[str, int] | None:
        for i, ch in enumerate(self._buffer):
            if ch == "\n":
                return self._buffer[:i], i + 1
            if ch == "\r":
                if i + 1 == len(self._buffer):
                    return None  # a "\r\n" may be split across chunks: wait for the next one
                return self._buffer[:i], i + 2 if self._buffer[i + 1] == "\n" else i + 1
        return None

    def _line(self, line: str) -> tuple[str | None, str] | None:
        if line == "":
            event = (self._event, "\n".join(self._data)) if self._data else None
            self._event, self._data = None, []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None


def parse_sse(chunks: Iterable[bytes | str]) -> list[tuple[str | None, str]]:
    """All the events of a stream given as chunks (bytes or text)."""
    parser = SSEParser()
    events: list[tuple[str | None, str]] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events + parser.close()
