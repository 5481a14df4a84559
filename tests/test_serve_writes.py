"""``harnessweb.serve.write_at_once``: daphne's TCP connections send a frame at once when nothing waits in their
buffer (no loop turn, no writer registered), and buffer as Twisted does otherwise, the bytes in their order."""

from __future__ import annotations

import socket

import pytest
from twisted.internet import tcp

from harnessweb.serve import write_at_once


class Reactor:
    """What a connection asks of its reactor here: the writers it registers (none is run: the test drives them)."""

    def __init__(self) -> None:
        self.writers: set[object] = set()

    def addWriter(self, writer: object) -> None:  # noqa: N802 (Twisted's name)
        self.writers.add(writer)

    def removeWriter(self, writer: object) -> None:  # noqa: N802
        self.writers.discard(writer)


@pytest.fixture
def pair(monkeypatch: pytest.MonkeyPatch) -> tuple[tcp.Connection, socket.socket, Reactor]:
    monkeypatch.setattr(tcp.Connection, "write", tcp.Connection.write)  # (restored after the test)
    write_at_once()
    ours, theirs = socket.socketpair()
    theirs.settimeout(2)  # (a frame left in the buffer fails the test rather than hang it)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    reactor = Reactor()
    connection = tcp.Connection(ours, None, reactor)
    connection.connected = True
    yield connection, theirs, reactor
    ours.close()
    theirs.close()


def read_all(theirs: socket.socket, size: int, connection: tcp.Connection) -> bytes:
    """What the peer reads, the connection's buffer written out as the loop would (``doWrite``) meanwhile."""
    theirs.setblocking(False)
    got = bytearray()
    while len(got) < size:
        try:
            got += theirs.recv(65536)
        except BlockingIOError:
            connection.doWrite()
    return bytes(got)


def test_a_frame_goes_out_at_once_without_a_writer(pair) -> None:
    connection, theirs, reactor = pair
    connection.write(b"data: one\n\n")
    assert theirs.recv(100) == b"data: one\n\n"
    assert reactor.writers == set() and connection._tempDataLen == 0


def test_what_the_socket_does_not_take_is_buffered_and_the_order_kept(pair) -> None:
    connection, theirs, reactor = pair
    big = bytes(range(256)) * 16384  # 4 MB: far more than the socket's buffers take
    connection.write(big)
    assert reactor.writers == {connection}  # the rest waits for the loop
    connection.write(b"tail")  # not sent ahead of what waits
    assert read_all(theirs, len(big) + 4, connection) == big + b"tail"
    assert reactor.writers == set()  # all written: the writer is gone
    connection.write(b"again")
    assert theirs.recv(100) == b"again"
